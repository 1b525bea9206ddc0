#!/usr/bin/env bash
# Terminal benchmark, in one run on one session of a real stack (nginx, agentd-api,
# agentd-bridge, tmux), the pane running /bin/sh:
#   (a) throughput: `cat` of a 64 MiB file in the pane until an end marker arrives, by a WebSocket
#       client through nginx vs a local process reading its own direct `tmux attach` PTY;
#   (b) keystroke echo round trip p50/p99, the same two ways;
#   (c) the bridge's RSS with 50 attached WebSocket clients, per client (tmux's own client
#       processes are separate processes and not counted).
#   (d) when root with bwrap (BENCH_CAGED, 1; 0 skips): keystroke echo through the WebSocket into
#       a caged pane's shell (agentd-cage, bwrap, the session's uid and cgroup) vs the uncaged
#       pane of (b), alternating rounds.
# Targets: (a) >= 0.8x direct, (b) < 1 ms added at p50, (c) < 64 KiB per client and < 32 KiB
# private memory for the first client, (d) <= 100 us added at p50; each is a check,
# so a missed target makes the script exit 1. The figures are printed either way.
#
#   tests/bench/terminal_bench.sh   builds build-bench (release) unless AGENTD_TEST_BUILD_DIR
#                                   names a build (which is then used as it is)
# Environment: BENCH_REPS (timed throughput pairs, 5), BENCH_KEYS (timed keystrokes each way, 400),
#              BENCH_ROUNDS (keystroke rounds each way, 8), BENCH_CLIENTS (50), BENCH_MIB (64),
#              BENCH_MEMORY_ONLY=1 (only (c)).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/build.sh"

# The machine may be shared: the 1-minute load average before the bench (and at its end, which
# includes the bench itself) says how far the figures can be trusted.
LOAD0=$(cut -d' ' -f1 /proc/loadavg)

# shellcheck source=../integration/lib.sh
source "$REPO/tests/integration/lib.sh"
# shellcheck source=../integration/terminal/lib_terminal.sh
source "$REPO/tests/integration/terminal/lib_terminal.sh"

REPS=${BENCH_REPS:-5}
KEYS=${BENCH_KEYS:-400}
ROUNDS=${BENCH_ROUNDS:-8}
CLIENTS=${BENCH_CLIENTS:-50}
MIB=${BENCH_MIB:-64}
WARMUP_KEYS=10
COLS=200
ROWS=50
WS_JS=$REPO/tests/bench/terminal/ws_bench.js
PTY_PY=$REPO/tests/bench/terminal/pty_bench.py
TMUX_BIN=$(command -v tmux)

# Processes the bench starts besides the stack and the harness's clients; stopped first on exit.
HOLD=
HOLD_FD=
bench_cleanup() {
	local rc=$?
	[ -n "$HOLD_FD" ] && eval "exec $HOLD_FD>&-"
	if [ -n "$HOLD" ]; then
		kill -TERM "$HOLD" 2>/dev/null
		wait "$HOLD" 2>/dev/null
	fi
	kill_clients
	(exit "$rc")
	cleanup
}
trap bench_cleanup EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
pct() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) exit; i = int(NR * p / 100 + 0.999); if (i < 1) i = 1; print v[i] }'; }
calc() { awk "BEGIN { $1 }" </dev/null; }
rss_kb() { awk -v k="${2:-VmRSS}" '$1 == k ":" { print $2 }' "/proc/$1/status"; }

# ---------------------------------------------------------------------------------------------
# the stack, one session whose pane runs a plain shell

CAGED=${BENCH_CAGED:-1}
if [ "$CAGED" != 0 ] && { [ "$(id -u)" -ne 0 ] || ! command -v bwrap >/dev/null; }; then
	log "no caged pane (d): it needs root and bwrap"
	CAGED=0
fi
if [ "$CAGED" != 0 ]; then
	mkdir -p "$T/secrets" && chmod 0700 "$T/secrets"
	start_stack AGENTD_CAGE=auto AGENTD_CLAUDE="$REPO/tests/bench/terminal/agent" \
		AGENTD_SECRETS_DIR="$T/secrets" AGENTD_HOMES_DIR="$T/homes" || exit 1
else
	start_stack || exit 1
fi
if ! new_session acme bench 1; then
	fail "session bench-1 runs" "$BODY"
	exit 1
fi
BRIDGE=$(wait_bridge 10) || {
	fail "agentd-bridge runs"
	exit 1
}
# A plain shell in the same session: the kernel echoes keys, cat writes the file.
tmx respawn-pane -k -t "=$SID:" -- /bin/sh
pane_has "$SID" '^[$#] ?$' 10 || {
	fail "the pane runs /bin/sh" "$(tmx capture-pane -p -t "=$SID:" 2>&1 | tail -5)"
	exit 1
}
URL=$(ws_url "/sessions/$SID/terminal?cols=$COLS&rows=$ROWS")

FILE=$T/work/big.txt
head -c $((MIB * 1024 * 1024 * 3 / 4 + 1048576)) /dev/urandom | base64 -w 100 |
	head -c $((MIB * 1024 * 1024)) >"$FILE"
log "file: $(stat -c %s "$FILE") bytes in lines of 100, pane ${COLS}x${ROWS}, bridge pid $BRIDGE"
CMD="cat $FILE; echo END\$((6*7))"
MARK=END42

# ---------------------------------------------------------------------------------------------
# (c) memory per attached client, first. The baseline is the bridge after one client came and
# went: what the first client makes it load or allocate once (libcrypto's and wslay's pages, the
# shared PTY read buffer) is not per client. The cold figure is printed too. The marginal cost
# (from CLIENTS/2 to CLIENTS clients) is checked as well as the average.

RSS_COLD=$(rss_kb "$BRIDGE")
node "$WS_JS" rtt "$URL" 0 0 >/dev/null || fail "a first WebSocket client attaches"
wait_tmux_clients "$SID" 0 10
sleep 0.5
RSS0=$(rss_kb "$BRIDGE")
ANON0=$(rss_kb "$BRIDGE" RssAnon)
HALF=$((CLIENTS / 2))
mkfifo "$T/hold.in"
node "$WS_JS" hold "$URL" <"$T/hold.in" >"$T/hold.out" 2>&1 &
HOLD=$!
exec {HOLD_FD}>"$T/hold.in"
# hold_open K TOTAL: K more clients, then wait until TOTAL are attached and tmux counts them.
hold_open() {
	local deadline=$((SECONDS + 120))
	printf 'open %d\n' "$1" >&"$HOLD_FD"
	until grep -qx "ready $2" "$T/hold.out"; do
		if [ $SECONDS -ge $deadline ] || ! kill -0 "$HOLD" 2>/dev/null; then
			fail "$2 WebSocket clients attached" "$(cat "$T/hold.out")"
			return 1
		fi
		sleep 0.2
	done
	wait_tmux_clients "$SID" "$2" 30 || fail "$2 tmux clients" "$(tmux_clients "$SID") attached"
	sleep 1
}
# The first attached client on its own: what one client costs a bridge that served one before,
# in private memory (RssAnon). The file-backed rest of RSS is shared libc code (one 64 KiB
# fault-around window of its text): printed, not checked.
hold_open 1 1
RSS_FIRST=$(rss_kb "$BRIDGE")
ANON_FIRST=$(rss_kb "$BRIDGE" RssAnon)
FIRST=$((RSS_FIRST - RSS0))
FIRST_ANON=$((ANON_FIRST - ANON0))
hold_open $((HALF - 1)) "$HALF"
RSS_HALF=$(rss_kb "$BRIDGE")
hold_open $((CLIENTS - HALF)) "$CLIENTS"
RSS_IDLE=$(rss_kb "$BRIDGE")
ANON_IDLE=$(rss_kb "$BRIDGE" RssAnon)
# Every client then gets a few screens of output through its own PTY and queue.
tmx send-keys -t "=$SID:" 'seq 1 20000' Enter
pane_has "$SID" '^20000$' 30 || fail "seq output in the pane"
sleep 2
RSS_BUSY=$(rss_kb "$BRIDGE")
HWM_C=$(rss_kb "$BRIDGE" VmHWM)
exec {HOLD_FD}>&-
HOLD_FD=
wait "$HOLD"
HOLD_RC=$?
HOLD=
if [ "$HOLD_RC" -ne 0 ] || grep -q 'closed early' "$T/hold.out"; then
	fail "the $CLIENTS clients stay attached until the end" "$(cat "$T/hold.out")"
fi
wait_tmux_clients "$SID" 0 30 || fail "every tmux client ended" "$(tmux_clients "$SID") left"
sleep 0.5
RSS_AFTER=$(rss_kb "$BRIDGE")
PER_IDLE=$(calc "printf \"%.1f\", ($RSS_IDLE - $RSS0) / $CLIENTS")
PER_BUSY=$(calc "printf \"%.1f\", ($RSS_BUSY - $RSS0) / $CLIENTS")
PER_ANON=$(calc "printf \"%.1f\", ($ANON_IDLE - $ANON0) / $CLIENTS")
SLOPE=$(calc "printf \"%.1f\", ($RSS_IDLE - $RSS_HALF) / ($CLIENTS - $HALF)")

report_memory() {
	cat <<EOF
(c) bridge RSS: $RSS_COLD kB cold, $RSS0 kB with no client after one came and went (anon $ANON0); 1 client: $RSS_FIRST kB (anon $ANON_FIRST); $HALF clients: $RSS_HALF kB; $CLIENTS clients: $RSS_IDLE kB (anon $ANON_IDLE), $RSS_BUSY kB after output, peak $HWM_C kB; $RSS_AFTER kB after they left
    first client: $FIRST_ANON KiB private (anon), $FIRST KiB RSS with shared code pages (target: private < 32)
    per client: $PER_IDLE KiB attached (anon $PER_ANON), $PER_BUSY KiB after output, $SLOPE KiB marginal ($HALF -> $CLIENTS) (target < 64)
EOF
}
check_memory() {
	if [ "$FIRST_ANON" -lt 32 ]; then
		pass "(c) first client $FIRST_ANON KiB private < 32"
	else
		fail "(c) first client $FIRST_ANON KiB private < 32"
	fi
	if calc "exit !($PER_IDLE < 64 && $PER_BUSY < 64 && $SLOPE < 64)"; then
		pass "(c) per client $PER_IDLE attached / $PER_BUSY after output / $SLOPE marginal KiB < 64"
	else
		fail "(c) per client $PER_IDLE attached / $PER_BUSY after output / $SLOPE marginal KiB < 64"
	fi
}
# BENCH_MEMORY_ONLY=1: (c) alone, for iterating on memory.
if [ -n "${BENCH_MEMORY_ONLY:-}" ]; then
	echo
	echo "terminal benchmark, memory only ($(date -u +%FT%TZ), $(nproc) cores, load $LOAD0 before / $(cut -d' ' -f1 /proc/loadavg) after)"
	report_memory
	check_memory
	exit
fi

# ---------------------------------------------------------------------------------------------
# (a) throughput: one untimed run each way (the pane's history fills up), then REPS pairs, the
# side that goes first alternating.

# Each run starts with no client attached (the bridge ends its tmux clients asynchronously).
idle() { wait_tmux_clients "$SID" 0 10 || fail "no client attached" "$(tmux_clients "$SID") left"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
direct_tp() {
	idle
	python3 "$PTY_PY" throughput "$TMUX_BIN" "$TMUX_SOCK" "$SID" $COLS $ROWS "$CMD" "$MARK"
}
ws_tp() {
	idle
	node "$WS_JS" throughput "$URL" "$CMD" "$MARK"
}

if ! direct_tp >"$T/warm.tp" || ! ws_tp >>"$T/warm.tp"; then
	fail "warm-up throughput runs" "$(cat "$T/warm.tp")"
fi
log "warm-up:     $(awk '{printf "%ss/%dB ", $4, $2}' "$T/warm.tp")"
: >"$T/direct.tp"
: >"$T/ws.tp"
CPU0=$(cpu_ticks "$BRIDGE")
for r in $(seq 1 "$REPS"); do
	if [ $((r % 2)) -eq 1 ]; then
		direct_tp >>"$T/direct.tp" || fail "direct throughput run $r"
		ws_tp >>"$T/ws.tp" || fail "WebSocket throughput run $r"
	else
		ws_tp >>"$T/ws.tp" || fail "WebSocket throughput run $r"
		direct_tp >>"$T/direct.tp" || fail "direct throughput run $r"
	fi
done
CPU_TP=$(($(cpu_ticks "$BRIDGE") - CPU0))
log "direct runs: $(awk '{printf "%ss/%dB ", $4, $2}' "$T/direct.tp")"
log "ws runs:     $(awk '{printf "%ss/%dB/%d frames ", $4, $2, $6}' "$T/ws.tp")"
D_SECS=$(awk '{print $4}' "$T/direct.tp" | median)
W_SECS=$(awk '{print $4}' "$T/ws.tp" | median)
D_WIRE=$(awk '{print $2}' "$T/direct.tp" | median)
W_WIRE=$(awk '{print $2}' "$T/ws.tp" | median)
D_MIBS=$(calc "printf \"%.2f\", $MIB / ${D_SECS:-0}" 2>/dev/null)
W_MIBS=$(calc "printf \"%.2f\", $MIB / ${W_SECS:-0}" 2>/dev/null)
D_WMIBS=$(calc "printf \"%.2f\", ${D_WIRE:-0} / 1048576 / ${D_SECS:-0}" 2>/dev/null)
W_WMIBS=$(calc "printf \"%.2f\", ${W_WIRE:-0} / 1048576 / ${W_SECS:-0}" 2>/dev/null)
TP_RATIO=$(calc "printf \"%.2f\", ${W_MIBS:-0} / ${D_MIBS:-1}" 2>/dev/null)
# ws MiB/s over direct MiB/s of each pair = direct seconds over ws seconds.
TP_PAIR=$(paste "$T/direct.tp" "$T/ws.tp" | awk 'NF >= 8 && $8 > 0 { print $4 / $8 }' | median)
TP_PAIR=$(calc "printf \"%.2f\", ${TP_PAIR:-0}")
W_TOTAL=$(awk '{ s += $4 } END { print s + 0 }' "$T/ws.tp")
CPU_TP=$(calc "printf \"%.2f s, %.0f%% of their %.1f s\", $CPU_TP / $(getconf CLK_TCK), $CPU_TP / $(getconf CLK_TCK) * 100 / ($W_TOTAL + 1e-9), $W_TOTAL")

# ---------------------------------------------------------------------------------------------
# (b) keystroke echo: ROUNDS rounds of KEYS/ROUNDS keys each way, the side that goes first
# alternating; each attach types WARMUP_KEYS untimed keys first.

PER_ROUND=$(((KEYS + ROUNDS - 1) / ROUNDS))
: >"$T/direct.rtt"
: >"$T/ws.rtt"
direct_rtt() {
	idle
	python3 "$PTY_PY" rtt "$TMUX_BIN" "$TMUX_SOCK" "$SID" $COLS $ROWS "$PER_ROUND" "$WARMUP_KEYS"
}
ws_rtt() {
	idle
	node "$WS_JS" rtt "$URL" "$PER_ROUND" "$WARMUP_KEYS"
}
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) -eq 1 ]; then
		direct_rtt >>"$T/direct.rtt" || fail "direct round trips, round $r"
		ws_rtt >>"$T/ws.rtt" || fail "WebSocket round trips, round $r"
	else
		ws_rtt >>"$T/ws.rtt" || fail "WebSocket round trips, round $r"
		direct_rtt >>"$T/direct.rtt" || fail "direct round trips, round $r"
	fi
done
D_N=$(grep -c . "$T/direct.rtt")
W_N=$(grep -c . "$T/ws.rtt")
D_P50=$(pct 50 <"$T/direct.rtt")
D_P99=$(pct 99 <"$T/direct.rtt")
W_P50=$(pct 50 <"$T/ws.rtt")
W_P99=$(pct 99 <"$T/ws.rtt")
ADDED_P50=$(calc "printf \"%.0f\", ${W_P50:-1e9} - ${D_P50:-0}")
ADDED_P99=$(calc "printf \"%.0f\", ${W_P99:-1e9} - ${D_P99:-0}")
RTT_RATIO=$(calc "printf \"%.2f\", ${W_P50:-0} / ${D_P50:-1}")

# ---------------------------------------------------------------------------------------------
# (d) the caged pane's keystroke echo against the uncaged one's, both through the WebSocket:
# ROUNDS rounds each way, alternating.

C_TXT=
if [ "$CAGED" != 0 ]; then
	SID0=$SID
	create acme bench 2
	CSID=$(printf '%s' "$BODY" | jq -r .id)
	if wait_state "$CSID" running 30 && pane_has "$CSID" '^[$#] ?$' 10; then
		CURL_=$(ws_url "/sessions/$CSID/terminal?cols=$COLS&rows=$ROWS")
		cage_cmd=$(tmx display -p -t "=$CSID:" '#{pane_start_command}')
		[[ $cage_cmd == *agentd-cage* ]] || fail "(d) the second pane runs under agentd-cage" "$cage_cmd"
		: >"$T/uncaged.rtt"
		: >"$T/caged.rtt"
		c_idle() { wait_tmux_clients "$1" 0 10 || fail "no client attached" "$(tmux_clients "$1") left"; }
		u_rtt() { c_idle "$SID0" && node "$WS_JS" rtt "$URL" "$PER_ROUND" "$WARMUP_KEYS"; }
		c_rtt() { c_idle "$CSID" && node "$WS_JS" rtt "$CURL_" "$PER_ROUND" "$WARMUP_KEYS"; }
		for r in $(seq 1 "$ROUNDS"); do
			if [ $((r % 2)) -eq 1 ]; then
				u_rtt >>"$T/uncaged.rtt" || fail "(d) uncaged round trips, round $r"
				c_rtt >>"$T/caged.rtt" || fail "(d) caged round trips, round $r"
			else
				c_rtt >>"$T/caged.rtt" || fail "(d) caged round trips, round $r"
				u_rtt >>"$T/uncaged.rtt" || fail "(d) uncaged round trips, round $r"
			fi
		done
		U_P50=$(pct 50 <"$T/uncaged.rtt")
		C_P50=$(pct 50 <"$T/caged.rtt")
		U_P99=$(pct 99 <"$T/uncaged.rtt")
		C_P99=$(pct 99 <"$T/caged.rtt")
		C_ADDED=$(calc "printf \"%.0f\", ${C_P50:-1e9} - ${U_P50:-0}")
		C_TXT="(d) keystroke echo via WebSocket, $(grep -c . "$T/uncaged.rtt") / $(grep -c . "$T/caged.rtt") keys, microseconds: uncaged p50 $U_P50 p99 $U_P99, caged p50 $C_P50 p99 $C_P99; added at p50 $C_ADDED us (target <= 100)"
	else
		fail "(d) a caged session runs a shell" "$(tmx capture-pane -p -t "=$CSID:" 2>&1 | tail -5)"
	fi
fi

# ---------------------------------------------------------------------------------------------
# report

HWM=$(rss_kb "$BRIDGE" VmHWM)
cat <<EOF

terminal benchmark ($(date -u +%FT%TZ), $(nproc) cores, load $LOAD0 before / $(cut -d' ' -f1 /proc/loadavg) after, build $(basename "$AGENTD_TEST_BUILD_DIR"))
(a) throughput, cat of $MIB MiB, median of $REPS    direct PTY    WebSocket via nginx
    seconds until the end marker              $(printf '%-13s %s' "$D_SECS" "$W_SECS")
    MiB/s of the file                         $(printf '%-13s %s' "$D_MIBS" "$W_MIBS")   ratio $TP_RATIO, median of pair ratios $TP_PAIR (target >= 0.8)
    bytes received (tmux's rendering)         $(printf '%-13s %s' "$D_WIRE" "$W_WIRE")
    MiB/s received                            $(printf '%-13s %s' "$D_WMIBS" "$W_WMIBS")
    bridge CPU during the timed WebSocket runs: $CPU_TP
(b) keystroke echo, $D_N / $W_N keys, microseconds
    p50                                       $(printf '%-13s %s' "$D_P50" "$W_P50")   added $ADDED_P50 us, ratio $RTT_RATIO (target: added < 1000)
    p99                                       $(printf '%-13s %s' "$D_P99" "$W_P99")   added $ADDED_P99 us
$(report_memory)
    bridge peak RSS over the whole run: $HWM kB
EOF
[ -n "$C_TXT" ] && printf '%s\n' "$C_TXT"

if calc "exit !($TP_PAIR >= 0.8)"; then
	pass "(a) throughput ratio $TP_PAIR >= 0.8"
else
	fail "(a) throughput ratio $TP_PAIR >= 0.8"
fi
if calc "exit !($ADDED_P50 < 1000)"; then
	pass "(b) added p50 $ADDED_P50 us < 1000"
else
	fail "(b) added p50 $ADDED_P50 us < 1000"
fi
check_memory
if [ -n "$C_TXT" ]; then
	if calc "exit !($C_ADDED <= 100)"; then
		pass "(d) caged echo added $C_ADDED us <= 100"
	else
		fail "(d) caged echo added $C_ADDED us <= 100"
	fi
fi

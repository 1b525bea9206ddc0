#!/usr/bin/env bash
# 200 connect/disconnect cycles through nginx (every second one dropped without a close frame)
# leave the bridge as it was: the same open fds, no zombie children, flat memory, no
# tmux client attached, and the record back at running with clients 0. Connections beyond the
# bridge's client limit get 503 and cost nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

CYCLES=200
# Under AddressSanitizer freed memory sits in a quarantine (256 MB by default) and fake stack
# frames pile up for detect_stack_use_after_return; both would read as growth: turn them off so
# RSS means what it means in a release build (every other check of ASan stays on).
start_stack "ASAN_OPTIONS=$ASAN_OPTIONS:quarantine_size_mb=0:thread_local_quarantine_size_kb=0:detect_stack_use_after_return=0" \
	AGENTD_BRIDGE_MAX_CLIENTS=4 || exit 1
new_session acme widgets 1 || fail "session widgets-1 runs" "$BODY"
URL=$(ws_url "/sessions/$SID/terminal")
BRIDGE=$(wait_bridge 10) || fail "a bridge runs"

fds() { find "/proc/$BRIDGE/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$BRIDGE/status"; }
zombies() { ps -o stat= --ppid "$BRIDGE" 2>/dev/null | grep -c '^Z'; }
children() { ps -o pid= --ppid "$BRIDGE" 2>/dev/null | wc -l; }

# settle: no tmux client, no child left, the record written back.
settle() {
	wait_tmux_clients "$SID" 0 15
	local deadline=$((SECONDS + 15))
	while [ "$(children)" != 0 ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
	wait_record "$SID" '"\(.state) \(.clients)"' "running 0" 15
}

# Warm up (first allocations, libuv's thread pool), then measure.
out=$(node "$CLIENT_JS" cycles "$URL" 10 --abrupt)
assert_eq "10 warm-up cycles succeed" "cycles 10 0" "$out"
settle
FD0=$(fds)
RSS0=$(rss)
log "before: $FD0 fds, ${RSS0} kB"

START=$SECONDS
out=$(node "$CLIENT_JS" cycles "$URL" "$CYCLES" --abrupt)
assert_eq "$CYCLES connect/disconnect cycles succeed" "cycles $CYCLES 0" "$out"
log "$CYCLES cycles took $((SECONDS - START)) s"
settle
FD1=$(fds)
RSS1=$(rss)
log "after: $FD1 fds, ${RSS1} kB"

assert_eq "no leaked fds" "$FD0" "$FD1"
assert_eq "no zombie children" 0 "$(zombies)"
assert_eq "no child left at all" 0 "$(children)"
if [ $((RSS1 - RSS0)) -lt 1024 ]; then
	pass "memory is flat (${RSS0} kB -> ${RSS1} kB)"
else
	fail "memory is flat" "${RSS0} kB -> ${RSS1} kB"
fi
assert_eq "no tmux client is attached" 0 "$(tmux_clients "$SID")"
assert_record "the record is back at running with no clients" "$SID" '"\(.state) \(.clients)"' "running 0"
if grep -q 'tmux client .* exited with status' "$T/logs/up.log"; then
	log "(tmux clients report status 1 when their terminal hangs up: expected)"
fi

# A second round must not drift either (a slow leak shows as growth between rounds).
out=$(node "$CLIENT_JS" cycles "$URL" "$CYCLES")
assert_eq "another $CYCLES clean cycles succeed" "cycles $CYCLES 0" "$out"
settle
FD2=$(fds)
RSS2=$(rss)
log "after the second round: $FD2 fds, ${RSS2} kB"
assert_eq "still no leaked fds" "$FD0" "$FD2"
if [ $((RSS2 - RSS1)) -lt 512 ]; then
	pass "memory stays flat in the second round (${RSS1} kB -> ${RSS2} kB)"
else
	fail "memory stays flat in the second round" "${RSS1} kB -> ${RSS2} kB"
fi
assert_eq "the bridge never restarted" "$BRIDGE" "$(bridge_pid)"

# --- the client limit (4 in this test) ----------------------------------------------------------
for i in 1 2 3 4; do start_client "h$i" "/sessions/$SID/terminal"; done
for i in 1 2 3 4; do wait_line "h$i" '^(open|status|closed|error)' 10; done
assert_eq "4 clients open" "open open open open" "$(for i in 1 2 3 4; do head -n 1 "$T/h$i.log"; done | tr '\n' ' ' | sed 's/ $//')"
start_client h5 "/sessions/$SID/terminal"
wait_line h5 '^(open|status|closed|error)' 10
assert_match "a fifth is refused with 503" '^status 503 .*"code":"busy"' "$(head -n 1 "$T/h5.log")"
stop_client h1
start_client h6 "/sessions/$SID/terminal"
wait_line h6 '^(open|status|closed|error)' 10
assert_eq "once one left, a new client opens" open "$(head -n 1 "$T/h6.log")"
for i in 2 3 4 6; do stop_client "h$i"; done
settle
assert_eq "no leaked fds after the refusals" "$FD0" "$(fds)"

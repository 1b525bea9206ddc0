# Helpers of the terminal tests (sourced after tests/integration/lib.sh).
#
# A client is a background `node client.js ws` process driven through a FIFO:
#   start_client c1 /sessions/widgets-1/terminal [--origin O] [--no-read]
#   client_cmd c1 'send "hello\r"'
#   wait_output c1 'fake claude got: hello' 10      (the bytes it received, escapes removed)
#   wait_line c1 '^closed 1000' 10                  (its status lines: open, status, closed, pong)
#   stop_client c1                                  (EOF: close handshake, then wait for exit)
# Every client still running is killed when the script exits.
# shellcheck shell=bash disable=SC2034

CLIENT_JS=$REPO/tests/integration/terminal/client.js
declare -A CLIENT_PID=() CLIENT_FD=()

if ! command -v node >/dev/null || [ ! -d "$REPO/tests/node_modules/ws" ]; then
	fail "node and the npm package ws are installed (tests/run runs npm ci in tests/)" \
		"node: $(command -v node || echo missing); $REPO/tests/node_modules/ws missing?"
	exit 1
fi

# ws_url PATH: through nginx; a PATH that is already a URL (ws+unix://...) is kept.
ws_url() {
	case $1 in
	ws*) printf '%s' "$1" ;;
	*) printf 'ws://127.0.0.1:%s%s' "$PORT" "$1" ;;
	esac
}

# start_client NAME PATH [client options]
start_client() {
	local name=$1 path=$2 fd
	shift 2
	rm -f "$T/$name.in"
	mkfifo "$T/$name.in"
	: >"$T/$name.out"
	: >"$T/$name.log"
	(
		# Other clients' command FIFOs must not stay open in this one (no EOF for them).
		for fd in "${CLIENT_FD[@]}"; do [ -n "$fd" ] && eval "exec $fd>&-"; done
		exec node "$CLIENT_JS" ws "$(ws_url "$path")" --out "$T/$name.out" "$@"
	) <"$T/$name.in" >"$T/$name.log" 2>&1 &
	CLIENT_PID[$name]=$!
	exec {fd}>"$T/$name.in"
	CLIENT_FD[$name]=$fd
}

client_cmd() {
	local fd=${CLIENT_FD[$1]:-}
	[ -n "$fd" ] && printf '%s\n' "$2" >&"$fd" 2>/dev/null
}

# plain_output NAME: the received bytes with terminal escape sequences removed; a cursor jump
# (tmux redraws a screen line by line with them) becomes a line break.
plain_output() {
	perl -pe 's/\e\[[0-9;]*[HfdEF]/\n/g; s/\e\[[0-9;?>=!]*[ -\/]*[\@-~]//g; s/\e[\]P_^][^\a\e]*(?:\a|\e\\)//g;
		s/\e[()*+][0-9A-Za-z]//g; s/\e[=>78DEHMNOc]//g; s/\r//g' "$T/$1.out" 2>/dev/null
}

# wait_output NAME REGEX TIMEOUT: the client received text matching REGEX (grep -E).
wait_output() {
	local deadline=$((SECONDS + $3))
	while :; do
		plain_output "$1" | grep -aEq -- "$2" && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# wait_line NAME REGEX TIMEOUT: a status line of the client matches.
wait_line() {
	local deadline=$((SECONDS + $3))
	while :; do
		grep -aEq -- "$2" "$T/$1.log" 2>/dev/null && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

client_line() { grep -aE -- "$2" "$T/$1.log" 2>/dev/null | head -n 1; }

client_alive() { kill -0 "${CLIENT_PID[$1]:-0}" 2>/dev/null; }

# stop_client NAME [TIMEOUT]: EOF on its commands (it closes normally) and wait for it.
stop_client() {
	local name=$1 deadline=$((SECONDS + ${2:-10})) fd=${CLIENT_FD[$1]:-} pid=${CLIENT_PID[$1]:-}
	if [ -n "$fd" ]; then
		exec {fd}>&-
		CLIENT_FD[$name]=
	fi
	[ -n "$pid" ] || return 0
	while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	CLIENT_PID[$name]=
}

kill_clients() {
	local n
	for n in "${!CLIENT_PID[@]}"; do
		[ -n "${CLIENT_PID[$n]}" ] && kill -KILL "${CLIENT_PID[$n]}" 2>/dev/null
	done
	for n in "${!CLIENT_FD[@]}"; do
		[ -n "${CLIENT_FD[$n]}" ] && eval "exec ${CLIENT_FD[$n]}>&-"
	done
}
trap 'rc=$?; kill_clients; (exit $rc); cleanup' EXIT

# upgrade_status PATH [curl args]: the status of an upgrade request through nginx (no client).
upgrade_status() {
	local path=$1
	shift
	curl -s -o "$T/upgrade.body" -w '%{http_code}' -m 10 --http1.1 \
		-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
		-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$@" "$BASE_URL$path"
}


# wait_bridge TIMEOUT [NOT_PID]: a bridge runs (other than NOT_PID) and its socket answers.
wait_bridge() {
	local deadline=$((SECONDS + $1)) p
	while [ $SECONDS -lt $deadline ]; do
		p=$(bridge_pid)
		if [ -n "$p" ] && [ "$p" != "${2:-}" ] && [ -S "$T/run/bridge.sock" ]; then
			echo "$p"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# record_field ID JQ: a field of the session record on disk.
record_field() { jq -r "$2" "$T/state/sessions/$1.json" 2>/dev/null; }

# wait_record ID JQ EXPECTED TIMEOUT
wait_record() {
	local deadline=$((SECONDS + $4))
	while :; do
		[ "$(record_field "$1" "$2")" == "$3" ] && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# assert_record DESC ID JQ EXPECTED [TIMEOUT]
assert_record() {
	if wait_record "$2" "$3" "$4" "${5:-10}"; then
		pass "$1"
	else
		fail "$1" "expected $3 == $4" "record: $(cat "$T/state/sessions/$2.json" 2>/dev/null)"
	fi
}

# tmux_clients NAME: how many tmux clients are attached to session NAME.
tmux_clients() { tmx list-clients -t "=$1" 2>/dev/null | wc -l; }

wait_tmux_clients() {
	local deadline=$((SECONDS + $3))
	while :; do
		[ "$(tmux_clients "$1")" == "$2" ] && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

pane_size() { tmx display -p -t "=$1:" '#{pane_width}x#{pane_height}' 2>/dev/null; }

wait_pane_size() {
	local deadline=$((SECONDS + $3))
	while :; do
		[ "$(pane_size "$1")" == "$2" ] && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# pane_has NAME REGEX TIMEOUT: the pane's text (with history) matches.
pane_has() {
	local deadline=$((SECONDS + $3))
	while :; do
		tmx capture-pane -p -J -S - -t "=$1:" 2>/dev/null | grep -aEq -- "$2" && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# new_session OWNER NAME ISSUE: creates it, waits for running; prints nothing, sets SID.
new_session() {
	make_remote "$1" "$2" || return 1
	create "$1" "$2" "$3"
	SID=$(printf '%s' "$BODY" | jq -r .id)
	wait_state "$SID" running 30
}

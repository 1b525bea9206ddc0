# Helpers of the structured-mode tests (sourced after tests/integration/lib.sh).
#
#   sid=$(structured_session acme widgets 1)     create, wait for running, POST /mode structured
#   sse_start p1 POST /sessions/$sid/prompt '{"prompt":"hi"}' [sse.py options]
#   sse_wait_event p1 '.event == "result"' 20    (a jq filter on one event line)
#   sse_wait_end p1 20                            (the client exited; its last line says how)
#   sse_events p1                                 (the event lines it received so far)
#   sse_run p1 POST PATH BODY [options]           (sse_start + sse_wait_end 30)
# Events are JSON lines {"id","event","data"} ("data" the raw text) in $T/<name>.events; the
# client's own lines ("status N", "body ...", "end eof|stopped|timeout") in $T/<name>.log.
# shellcheck shell=bash disable=SC2034

SSE_PY=$REPO/tests/integration/structured/sse.py
declare -A SSE_PID=()

# structured_session OWNER NAME ISSUE: prints the id of a running session in structured mode.
structured_session() {
	local id=$2-$3
	create "$1" "$2" "$3"
	wait_state "$id" running 60 || {
		fail "session $id runs" "$STATUS ${BODY:0:300}"
		return 1
	}
	api POST "/sessions/$id/mode" '{"mode":"structured"}'
	if [ "$STATUS" != 200 ]; then
		fail "session $id switches to structured mode" "$STATUS ${BODY:0:300}"
		return 1
	fi
	echo "$id"
}

# sse_start NAME METHOD PATH [BODY|-] [sse.py options...]: a background client ("-": no body).
sse_start() {
	local name=$1 method=$2 path=$3 body=${4:--}
	shift 3
	[ $# -gt 0 ] && shift
	local args=("$method" "$BASE_URL$path" --out "$T/$name.events")
	[ "$body" != - ] && args+=(--data "$body")
	: >"$T/$name.events"
	: >"$T/$name.log"
	python3 "$SSE_PY" "${args[@]}" "$@" >"$T/$name.log" 2>&1 &
	SSE_PID[$name]=$!
}

# sse_wait_end NAME TIMEOUT: waits for the client to exit (returns 1 when it did not).
sse_wait_end() {
	local pid=${SSE_PID[$1]:-} deadline=$((SECONDS + $2))
	[ -n "$pid" ] || return 0
	while kill -0 "$pid" 2>/dev/null; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
	wait "$pid" 2>/dev/null
	SSE_PID[$1]=
	return 0
}

sse_run() {
	sse_start "$@"
	sse_wait_end "$1" 40
}

# sse_status NAME: the HTTP status the client saw (or nothing).
sse_status() { sed -n 's/^status //p' "$T/$1.log" | head -n 1; }
sse_body() { sed -n 's/^body //p' "$T/$1.log"; }
sse_end() { sed -n 's/^end //p' "$T/$1.log" | tail -n 1; }

# sse_events NAME: the events received (comments left out), one JSON line each.
sse_events() { jq -c 'select(has("comment") | not)' "$T/$1.events" 2>/dev/null; }

# sse_names NAME: the event names received, space-separated.
sse_names() { sse_events "$1" | jq -r .event | tr '\n' ' ' | sed 's/ $//'; }

# sse_wait_event NAME FILTER TIMEOUT [N]: waits for N (default 1) event lines matching the jq
# FILTER.
sse_wait_event() {
	local deadline=$((SECONDS + $3))
	while :; do
		# -s: jq -e alone succeeds on empty input.
		if sse_events "$1" | jq -s -e "map(select($2)) | length >= ${4:-1}" >/dev/null 2>&1; then
			return 0
		fi
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
}

# sse_permission_ids NAME: the requestIds of the permission events received, one a line.
sse_permission_ids() {
	sse_events "$1" | jq -r 'select(.event == "permission") | .data | fromjson | .requestId'
}

# assert_sse_event DESC NAME FILTER TIMEOUT [N]
assert_sse_event() {
	if sse_wait_event "$2" "$3" "$4" "${5:-1}"; then
		pass "$1"
	else
		fail "$1" "no event matching $3 within $4 s" "events: $(sse_names "$2")" \
			"log: $(head -c 600 "$T/$2.log")"
	fi
}

# assert_ids_contiguous DESC NAME: the event ids are strictly increasing by one.
assert_ids_contiguous() {
	local ids
	ids=$(sse_events "$2" | jq -s -c '[.[].id]')
	assert_jq "$1" '. as $a | length > 0 and ([range(1; length) | $a[.] == $a[. - 1] + 1] | all)' \
		"$ids"
}

# --- /stream clients (node stream.js, driven through a FIFO) -----------------------------------
#   ws_start w1 /sessions/$sid/stream [--origin O] [--header 'Last-Event-ID: 3']
#   ws_send w1 '{"type":"prompt","prompt":"hi"}'
#   ws_wait_frame w1 '.event == "result"' 20 [N]     (jq filter on the frames, one JSON a line)
#   ws_wait_line w1 '^closed 1001' 10                 (its status lines: open, status, closed)
#   ws_stop w1                                        (close handshake, wait for exit)
STREAM_JS=$REPO/tests/integration/structured/stream.js
declare -A WS_PID=() WS_FD=()

ws_start() {
	local name=$1 path=$2 fd
	shift 2
	rm -f "$T/$name.in"
	mkfifo "$T/$name.in"
	: >"$T/$name.frames"
	: >"$T/$name.log"
	(
		for fd in "${WS_FD[@]}"; do [ -n "$fd" ] && eval "exec $fd>&-"; done
		exec node "$STREAM_JS" "ws://127.0.0.1:$PORT$path" --out "$T/$name.frames" "$@"
	) <"$T/$name.in" >"$T/$name.log" 2>&1 &
	WS_PID[$name]=$!
	exec {fd}>"$T/$name.in"
	WS_FD[$name]=$fd
}

ws_send() {
	local fd=${WS_FD[$1]:-}
	[ -n "$fd" ] && printf 'send %s\n' "$2" >&"$fd" 2>/dev/null
}

ws_cmd() {
	local fd=${WS_FD[$1]:-}
	[ -n "$fd" ] && printf '%s\n' "$2" >&"$fd" 2>/dev/null
}

# ws_frames NAME: the text frames received, one a line (only whole lines).
ws_frames() { jq -c . "$T/$1.frames" 2>/dev/null; }

ws_wait_frame() {
	local deadline=$((SECONDS + $3))
	while :; do
		if ws_frames "$1" | jq -s -e "map(select($2)) | length >= ${4:-1}" >/dev/null 2>&1; then
			return 0
		fi
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
}

assert_ws_frame() {
	if ws_wait_frame "$2" "$3" "$4" "${5:-1}"; then
		pass "$1"
	else
		fail "$1" "no frame matching $3 within $4 s" \
			"frames: $(ws_frames "$2" | cut -c 1-200 | tail -n 12)" "log: $(cat "$T/$2.log")"
	fi
}

ws_wait_line() {
	local deadline=$((SECONDS + $3))
	while ! grep -Eq "$2" "$T/$1.log" 2>/dev/null; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
}

assert_ws_line() {
	if ws_wait_line "$2" "$3" "$4"; then
		pass "$1"
	else
		fail "$1" "no line matching $3 within $4 s" "log: $(cat "$T/$2.log")"
	fi
}

ws_stop() {
	local fd=${WS_FD[$1]:-} pid=${WS_PID[$1]:-} deadline=$((SECONDS + 10))
	[ -n "$fd" ] && eval "exec $fd>&-"
	WS_FD[$1]=
	[ -n "$pid" ] || return 0
	while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	WS_PID[$1]=
}


kill_sse_clients() {
	local p
	for p in "${SSE_PID[@]}" "${WS_PID[@]}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
}

# Clients still running when the script ends are killed before the stack is stopped.
trap 'rc=$?; kill_sse_clients; (exit $rc); cleanup' EXIT

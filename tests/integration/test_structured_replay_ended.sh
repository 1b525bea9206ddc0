#!/usr/bin/env bash
# Structured mode: the history of a session that no longer runs. Once its agent exited (the host
# killed: agent_exited) or its tmux session is gone (session_lost), GET /sessions/<id>/events and
# /stream still replay what its event log holds, from Last-Event-ID 0 or from an id in the
# middle (or ?after=), each event with its id and the log's data (a log larger than what the
# bridge queues for a client at once too), and then end with one event
# without id saying why (`error`, code agent_exited / session_lost); the WebSocket sends the same
# frames, then closes with 1001 and the code as the reason. A live follow is what needs a host.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

make_remote acme widgets || exit 1
start_stack || exit 1

# history SID CODE: the checks on the replays of session SID, whose stream ends with CODE.
history() {
	local sid=$1 code=$2 log n mid tag
	log=$(host_log "$sid")
	n=$(wc -l <"$log")
	mid=$((n / 2))
	tag="$code"
	check "$tag: the log holds the turns (at least 8 events)" test "$n" -ge 8
	log "$tag: $n events, $(wc -c <"$log") bytes in the log"

	# SSE from 0: every event, then the end.
	sse_run "$sid-0" GET "/sessions/$sid/events" - --header 'Last-Event-ID: 0' --timeout 10
	assert_eq "$tag: SSE from Last-Event-ID 0 answers 200" 200 "$(sse_status "$sid-0")"
	assert_eq "$tag: SSE from 0: every logged event, ids 1..N, with the log's data" \
		"$(jq -c '[.id, .event, .data]' "$log")" \
		"$(sse_events "$sid-0" | jq -c 'select(.id != null) | [.id, .event, (.data | fromjson)]')"
	assert_jq "$tag: SSE from 0: then one event without id says why" \
		".[-1].id == null and .[-1].event == \"error\" and
		 (.[-1].data | fromjson | .code == \"$code\" and (.error | length > 0))" \
		"$(sse_events "$sid-0" | jq -s -c .)"
	assert_eq "$tag: SSE from 0: the server ends the stream" eof "$(sse_end "$sid-0")"

	# SSE from the middle, by header and by ?after=.
	sse_run "$sid-m" GET "/sessions/$sid/events" - --header "Last-Event-ID: $mid" --timeout 10
	assert_eq "$tag: SSE from Last-Event-ID $mid: events $((mid + 1))..$n" \
		"$(seq $((mid + 1)) "$n" | jq -s -c .)" \
		"$(sse_events "$sid-m" | jq -s -c 'map(select(.id != null) | .id)')"
	assert_jq "$tag: SSE from the middle: then the end, saying why" \
		".[-1].event == \"error\" and (.[-1].data | fromjson | .code == \"$code\")" \
		"$(sse_events "$sid-m" | jq -s -c .)"
	sse_run "$sid-q" GET "/sessions/$sid/events?after=$n" - --timeout 10
	assert_eq "$tag: SSE ?after=<last>: nothing to replay, only the end" "error:$code" \
		"$(sse_events "$sid-q" | jq -r '"\(.event):\(.data | fromjson | .code)"' | tr '\n' ' ' |
			sed 's/ $//')"

	# WebSocket from 0 and from the middle.
	ws_start "$sid-w0" "/sessions/$sid/stream?after=0"
	assert_ws_line "$tag: WebSocket from 0: closed 1001 with the reason" "$sid-w0" "^closed 1001 $code\$" 10
	assert_eq "$tag: WebSocket from 0: every logged event as a frame" \
		"$(jq -c '[.id, .event, .data]' "$log")" \
		"$(ws_frames "$sid-w0" | jq -c 'select(.id != null) | [.id, .event, .data]')"
	assert_jq "$tag: WebSocket from 0: then a frame saying why" \
		".event == \"error\" and .data.code == \"$code\" and (.data.error | length > 0)" \
		"$(ws_frames "$sid-w0" | tail -n 1)"
	ws_stop "$sid-w0"
	ws_start "$sid-wm" "/sessions/$sid/stream" --header "Last-Event-ID: $mid"
	assert_ws_line "$tag: WebSocket from $mid: closed 1001 with the reason" "$sid-wm" "^closed 1001 $code\$" 10
	assert_eq "$tag: WebSocket from $mid: events $((mid + 1))..$n" \
		"$(seq $((mid + 1)) "$n" | jq -s -c .)" \
		"$(ws_frames "$sid-wm" | jq -s -c 'map(select(.id != null) | .id)')"
	assert_jq "$tag: WebSocket from $mid: then a frame saying why" \
		".event == \"error\" and .data.code == \"$code\"" "$(ws_frames "$sid-wm" | tail -n 1)"
	ws_stop "$sid-wm"

	# What needs a live host still says why it cannot.
	sse_run "$sid-p" POST "/sessions/$sid/prompt" '{"prompt":"hi"}'
	assert_eq "$tag: a prompt still gets 409 $code" "409 $code" \
		"$(sse_status "$sid-p") $(sse_body "$sid-p" | jq -r .code 2>/dev/null)"
}

# --- an agent that exited: the host killed ------------------------------------------------------
S1=$(structured_session acme widgets 1) || exit 1
sse_run a1 POST "/sessions/$S1/prompt" '{"prompt":"one"}'
sse_run a2 POST "/sessions/$S1/prompt" '{"prompt":"two"}'
assert_eq "exited: two turns ran" "system user assistant result" "$(sse_names a2)"
# A log larger than what the bridge queues for a client at once (a 1 MB line).
sse_run a3 POST "/sessions/$S1/prompt" '{"prompt":"BIGLINE"}'
assert_eq "exited: a turn with a 1 MB line ran" "system user assistant result" "$(sse_names a3)"
kill -KILL "$(pane_pid "$S1")"
assert_state "exited: the session says so" "$S1" exited 15
history "$S1" agent_exited

# --- a session lost: its tmux session killed --------------------------------------------------------
S2=$(structured_session acme widgets 2) || exit 1
sse_run b1 POST "/sessions/$S2/prompt" '{"prompt":"one"}'
sse_run b2 POST "/sessions/$S2/prompt" '{"prompt":"two"}'
assert_eq "lost: two turns ran" "system user assistant result" "$(sse_names b2)"
tmx kill-session -t "=$S2"
assert_state "lost: the session says so" "$S2" lost 15
history "$S2" session_lost

#!/usr/bin/env bash
# GET /events: one stream of every session's changes, through real nginx. A client
# without an id gets the snapshot, then `session` created/updated/deleted events for sessions
# made and deleted over REST; Last-Event-ID replays exactly what was missed; the WebSocket gets
# the same events as text frames; after a kill -9 of the bridge the ids go on above the old ones
# and what changed while no bridge ran arrives after reconnecting with the old id; an id older
# than the rotated log gets the snapshot; a malformed id is 400 and a foreign Origin 403; the
# attention hub's permission, permission_resolved and result events share the stream.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

make_remote acme widgets
start_stack || exit 1
LOG=$T/state/events.log

# ev_ids NAME: the ids of the events received, as a JSON array.
ev_ids() { sse_events "$1" | jq -s -c '[.[].id]'; }
# ev_changes NAME: "change id state" of each session event, one a line.
ev_changes() {
	sse_events "$1" | jq -r 'select(.event == "session") | .data | fromjson |
		"\(.change) \(.session.id) \(.session.state)"'
}
# bridge_answers TIMEOUT [NOT_PID]: a bridge (other than NOT_PID) runs and answers /events (a
# malformed id is answered 400 by the bridge at once; nginx says 502 while none listens).
bridge_answers() {
	local deadline=$((SECONDS + $1)) p
	while [ $SECONDS -lt $deadline ]; do
		p=$(bridge_pid)
		if [ -n "$p" ] && [ "$p" != "${2:-}" ]; then
			api GET /events -H 'Last-Event-ID: x'
			if [ "$STATUS" == 400 ]; then
				echo "$p"
				return 0
			fi
		fi
		sleep 0.1
	done
	return 1
}
# wait_logged TEXT TIMEOUT: events.log has a line with TEXT (the bridge logged an event).
wait_logged() {
	local deadline=$((SECONDS + $2))
	until grep -qF "$1" "$LOG" 2>/dev/null; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
}
# wait_change NAME FILTER TIMEOUT: waits for a session event whose data matches FILTER.
wait_change() {
	sse_wait_event "$1" "select(.event == \"session\") | .data | fromjson | $2" "$3"
}

# --- a fresh client: the snapshot, then the changes ---------------------------------------------
sse_start s1 GET /events - --timeout 120
assert_sse_event "no id: a snapshot first" s1 '.event == "snapshot"' 10
assert_jq "the snapshot is marked and lists no session yet" \
	'.data | fromjson | .snapshot == true and .sessions == []' "$(sse_events s1 | head -n 1)"
assert_eq "the snapshot's id is the last id (an empty log: 0)" 0 "$(sse_events s1 | head -n 1 | jq .id)"

create acme widgets 1
assert_status "create widgets-1" 201
if wait_change s1 '.change == "updated" and .session.id == "widgets-1" and .session.state == "running"' 60; then
	pass "created, then updated to running"
else
	fail "created, then updated to running" "$(ev_changes s1)"
fi
assert_eq "the first session event is created" "created widgets-1 creating" "$(ev_changes s1 | head -n 1)"
assert_jq "a session event carries the API session object" \
	'.data | fromjson | .session | has("repo") and has("tmuxName") and (has("launched") | not)' \
	"$(sse_events s1 | sed -n 2p)"
api DELETE /sessions/widgets-1
assert_status "delete widgets-1" 200
if wait_change s1 '.change == "deleted" and .session.id == "widgets-1"' 20; then
	pass "deleted, with the last object"
else
	fail "deleted, with the last object" "$(ev_changes s1)"
fi
assert_ids_contiguous "snapshot and events: ids without gap or duplicate" s1
N1=$(sse_events s1 | wc -l)
assert_eq "the log holds every event sent (no snapshot)" $((N1 - 1)) "$(wc -l <"$LOG")"
# Only real changes: no two consecutive created/updated events of a session with the same object
# (ignoring updatedAt and lastActivity; deleted repeats the last object).
assert_jq "each session event is a real change" \
	'[.[] | select(.event == "session") | .data | fromjson | select(.change != "deleted") |
	  .session | del(.updatedAt, .lastActivity)] as $s |
	  [range(1; $s | length) | $s[.] != $s[. - 1]] | all' \
	"$(sse_events s1 | jq -s -c .)"

# --- Last-Event-ID replays exactly the missed events ---------------------------------------------
MID=$(sse_events s1 | sed -n 2p | jq .id)
WANT=$(sse_events s1 | jq -s -c --argjson m "$MID" '[.[] | select(.id > $m) | .id]')
COUNT=$(jq length <<<"$WANT")
sse_run r1 GET /events - --header "Last-Event-ID: $MID" --stop-after "$COUNT" --timeout 10
assert_eq "Last-Event-ID: every later event, no gap, no duplicate" "$WANT" "$(ev_ids r1)"
assert_eq "Last-Event-ID: the same events" \
	"$(sse_events s1 | jq -c --argjson m "$MID" 'select(.id > $m)')" "$(sse_events r1)"
sse_run r2 GET "/events?after=$MID" - --stop-after "$COUNT" --timeout 10
assert_eq "?after=N works the same" "$WANT" "$(ev_ids r2)"
LAST=$(sse_events s1 | tail -n 1 | jq .id)
sse_start r3 GET /events - --header "Last-Event-ID: $LAST" --timeout 30
create acme widgets 2
wait_state widgets-2 running 60 || fail "widgets-2 runs" "$BODY"
sse_wait_event r3 'select(.event == "session") | .data | fromjson | .session.state == "running"' 20
assert_eq "the last id: nothing replayed, then live events" \
	"$(sse_events s1 | jq -c --argjson m "$LAST" 'select(.id > $m)')" "$(sse_events r3)"
kill "${SSE_PID[r3]}" 2>/dev/null

# --- the WebSocket: the same events as text frames ------------------------------------------------
ws_start w1 /events --header 'Last-Event-ID: 0'
assert_ws_line "WebSocket: open" w1 '^open' 10
ws_wait_frame w1 "select(.id == $(sse_events s1 | tail -n 1 | jq .id))" 10
assert_eq "WebSocket: every event from id 1, each the log line" \
	"$(head -n "$(sse_events s1 | tail -n 1 | jq .id)" "$LOG" | jq -c .)" \
	"$(ws_frames w1 | head -n "$(sse_events s1 | tail -n 1 | jq .id)")"
assert_eq "WebSocket: the same events as SSE" \
	"$(sse_events s1 | head -n "$N1" | tail -n +2 | jq -c '[.id, .event, (.data | fromjson)]')" \
	"$(ws_frames w1 | head -n "$((N1 - 1))" | jq -c '[.id, .event, .data]')"
ws_start w2 /events
assert_ws_frame "WebSocket without an id: the snapshot, with widgets-2" w2 \
	'.event == "snapshot" and .data.snapshot and ([.data.sessions[].id] == ["widgets-2"])' 10
ws_stop w1
ws_stop w2

# --- refusals --------------------------------------------------------------------------------------
api GET /events -H 'Last-Event-ID: 12x'
assert_status "a malformed Last-Event-ID: 400" 400
assert_jq "... as JSON invalid_event_id" '.code == "invalid_event_id"'
api GET '/events?after=-1'
assert_status "a malformed ?after=: 400" 400
api GET /events -H 'Last-Event-ID: 123456789012345678901234'
assert_status "an id of more than 20 digits: 400" 400
api GET /events -H 'Origin: http://evil.example'
assert_status "a foreign Origin: 403" 403
assert_jq "... as JSON" '.code == "forbidden_origin"'
ws_start w3 /events --origin http://evil.example
assert_ws_line "WebSocket from a foreign Origin: 403" w3 '^status 403' 10
ws_stop w3
api POST /events ''
assert_status "POST /events: 405" 405

# --- kill -9 of the bridge; changes while none runs arrive after reconnecting ---------------------
kill "${SSE_PID[s1]}" 2>/dev/null
sse_start s2 GET /events - --header "Last-Event-ID: $LAST" --timeout 120
sse_wait_event s2 'select(.event == "session") | .data | fromjson | .session.id == "widgets-2" and .session.state == "running"' 20
BEFORE=$(sse_events s2 | tail -n 1 | jq .id)
OLD=$(bridge_pid)
# deploy/up is held while the bridge is dead, so that it stays dead while the REST calls run.
kill -STOP "$UP_PID"
kill -KILL "$OLD"
sse_wait_end s2 10
assert_eq "the stream ends with the bridge" eof "$(sse_end s2)"
api DELETE /sessions/widgets-2
assert_status "delete widgets-2 while no bridge runs" 200
create acme widgets 3
assert_status "create widgets-3 while no bridge runs" 201
wait_state widgets-3 running 60 || fail "widgets-3 runs" "$BODY"
kill -CONT "$UP_PID"
NEW=$(bridge_answers 30 "$OLD")
assert_ne "deploy/up starts a new bridge, which answers" "" "$NEW"
sse_run s3 GET /events - --header "Last-Event-ID: $BEFORE" --stop-after 2 --timeout 10
# The deleted session is the record its DELETE left (stopping, with who deleted it).
assert_eq "after the restart: the missed changes" \
	"created widgets-3 running
deleted widgets-2 stopping" "$(ev_changes s3 | sort)"
assert_eq "... with the ids going on above the old ones" \
	"[$((BEFORE + 1)),$((BEFORE + 2))]" "$(ev_ids s3)"
sse_run s4 GET /events - --stop-after 1 --timeout 10
assert_jq "the new bridge's snapshot: id the last one, widgets-3 only" \
	".id == $((BEFORE + 2)) and (.data | fromjson | [.sessions[].id] == [\"widgets-3\"])" \
	"$(sse_events s4)"

# --- the attention hub publishes on the same stream ------------------------------------------------
SID=$(structured_session acme widgets 7) || exit 1
wait_logged "\"id\":\"$SID\"" 10
FROM=$(tail -n 1 "$LOG" | jq .id)
sse_start a1 GET /events - --header "Last-Event-ID: $FROM" --timeout 90
sse_start p1 POST "/sessions/$SID/prompt" '{"prompt":"RUNBASH touch from-the-hub"}'
assert_sse_event "a structured session's permission request is on /events" a1 '.event == "permission"' 30
PERM=$(sse_events a1 | jq -c 'select(.event == "permission")' | head -n 1)
RID=$(jq -r '.data | fromjson | .requestId' <<<"$PERM")
assert_jq "... naming its session" ".data | fromjson | .session == \"$SID\"" "$PERM"
api POST "/sessions/$SID/permissions/$RID" '{"behavior":"allow"}'
assert_status "the request is answered" 200
assert_sse_event "permission_resolved follows on /events" a1 '.event == "permission_resolved"' 20
assert_sse_event "then the turn's result" a1 '.event == "result"' 30
assert_ids_contiguous "hub and session events share one id sequence" a1
kill "${SSE_PID[a1]}" 2>/dev/null
sse_wait_end p1 30

# --- rotation: an id older than the log gets the snapshot ----------------------------------------
stop_stack
start_stack AGENTD_BRIDGE_EVENTS_LOG_MAX=4096 || exit 1
TOP=$(jq -s 'map(.id) | max' "$LOG")
for i in 4 5 6; do
	create acme widgets $i
	wait_state widgets-$i running 60 || fail "widgets-$i runs" "$BODY"
done
# Deleted through the stream's eyes: one event each for stopping and deleted.
for i in 4 5; do
	api DELETE /sessions/widgets-$i
	assert_status "delete widgets-$i" 200
done
if wait_logged '"change":"deleted","session":{"id":"widgets-5"' 20; then
	pass "the deletions are logged"
else
	fail "the deletions are logged" "$(tail -n 3 "$LOG" | cut -c 1-200)"
fi
check "the log was rotated to events.log.1" test -s "$LOG.1"
check "events.log stays near its bound" test "$(stat -c %s "$LOG")" -le 8192
OLDEST=$(head -n 1 "$LOG.1" | jq .id)
assert_jq "the rotated file starts above id 1" ". > 1" "$OLDEST"
assert_eq "ids go on across the two files" "$((OLDEST))..$(jq -s 'map(.id) | max' "$LOG")" \
	"$(cat "$LOG.1" "$LOG" | jq -s -r '"\(.[0].id)..\(.[-1].id)"')"
check "the ids of both files are contiguous" bash -c \
	"cat '$LOG.1' '$LOG' | jq -s -e '. as \$a | [range(1; length) | \$a[.].id == \$a[. - 1].id + 1] | all'"
LASTID=$(tail -n 1 "$LOG" | jq .id)
sse_run o1 GET /events - --header 'Last-Event-ID: 1' --stop-after 1 --timeout 10
assert_jq "an id older than the log: the snapshot" \
	".event == \"snapshot\" and .id == $LASTID" \
	"$(sse_events o1)"
assert_jq "... listing every session" \
	'.data | fromjson | [.sessions[].id] | sort == ["widgets-3","widgets-6","widgets-7"]' \
	"$(sse_events o1)"
sse_run o2 GET /events - --header "Last-Event-ID: $((LASTID + 5))" --stop-after 1 --timeout 10
assert_eq "an id newer than the last: the snapshot" snapshot "$(sse_events o2 | jq -r .event)"
sse_run o3 GET /events - --header "Last-Event-ID: $OLDEST" --stop-after $((LASTID - OLDEST)) --timeout 10
assert_eq "an id the rotated file holds: replayed across both files" \
	"$(seq $((OLDEST + 1)) "$LASTID" | jq -s -c .)" "$(ev_ids o3)"
assert_jq "ids after the restart went on above the first stack's" ". > $TOP" "$LASTID"

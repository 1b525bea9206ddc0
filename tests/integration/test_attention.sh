#!/usr/bin/env bash
# Attention in structured mode: GET /sessions shows what the agent does (activity,
# activityAt, pending) as the stream-json fake claude works; a pending request survives a kill -9
# of the bridge and is answered exactly once when three clients race; an ended agent lists
# nothing and says exited.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

make_remote acme widgets
start_stack || exit 1

# assert_activity NAME ID JQ [SECONDS]
assert_activity() {
	if wait_activity "$2" "$3" "${4:-10}"; then
		pass "$1"
	else
		fail "$1" "want $3; got ${BODY:0:600}"
	fi
}

# One client holds GET /events from the start (it ends with the bridge's kill; a second one goes
# on from its last id).
sse_start ev1 GET /events
SID=$(structured_session acme widgets 1) || exit 1
WT=$T/code/widgets-issue-1

assert_activity "a new structured session is idle, nothing pending" "$SID" \
	'.activity == "idle" and .pending == [] and (.activityAt | test("^[0-9-]+T[0-9:]+\\.[0-9]{3}Z$"))'
api GET /sessions
assert_jq "GET /sessions lists activity and pending too" \
	".[] | select(.id == \"$SID\") | has(\"activity\") and has(\"activityAt\") and has(\"pending\")" "$BODY"

# --- a session created with a prompt works from its creation, until its bootstrap turn ends ------
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":7,"mode":"structured","prompt":"SLOW boot"}'
assert_status "a structured session with a prompt: created" 201
assert_jq "... working from its creation (its prompt is on its way)" '.activity == "working"'
BOOT=widgets-7
get_session "$BOOT"
assert_jq "... and working before its bootstrap turn began" '.activity == "working"'
assert_state "... running" "$BOOT" running 60
sse_start boot GET /sessions/$BOOT/events
assert_sse_event "... its bootstrap turn starts" boot '.event == "system"' 20
assert_activity "... still working while its bootstrap turn runs" "$BOOT" '.activity == "working"'
api POST /sessions/$BOOT/interrupt
assert_activity "its bootstrap turn ended: idle" "$BOOT" '.activity == "idle"' 20
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":8,"prompt":"hello"}'
assert_status "a terminal session with a prompt: created" 201
assert_jq "... working from its creation (until claude's Stop hook)" '.activity == "working"'
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":9,"prompt":""}'
assert_jq "a session with an empty prompt: idle" '.activity == "idle"'

# --- a turn: working, then idle with its result ----------------------------------------------
sse_start s1 POST /sessions/$SID/prompt '{"prompt":"SLOW hello"}'
assert_sse_event "slow turn: it starts" s1 '.event == "system"' 20
assert_activity "a running turn: working" "$SID" '.activity == "working" and .pending == []'
AT1=$(jq -r .activityAt <<<"$BODY")
api POST /sessions/$SID/interrupt
assert_status "interrupt: 200" 200
sse_wait_end s1 20
assert_activity "the turn ended: idle" "$SID" '.activity == "idle"'
AT2=$(jq -r .activityAt <<<"$BODY")
check "activityAt moves with each change" test "$AT2" \> "$AT1"

# --- a permission request: waiting, with the request listed ----------------------------------
sse_start p1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch raced-file"}'
assert_sse_event "permission: the request arrives" p1 '.event == "permission"' 20
RID=$(sse_permission_ids p1 | head -n 1)
assert_activity "a pending permission: waiting, listed with tool and description" "$SID" \
	".activity == \"waiting\" and (.pending | length) == 1 and .pending[0].requestId == \"$RID\"
	 and .pending[0].toolName == \"Bash\" and (.pending[0].description | type) == \"string\""
api GET /sessions
assert_jq "the list view shows it waiting too" \
	".[] | select(.id == \"$SID\") | .activity == \"waiting\" and .pending[0].requestId == \"$RID\"" "$BODY"

# --- kill -9 of the bridge: the request stays listed and answerable --------------------------
OLD=$(bridge_pid)
kill -KILL "$OLD"
DEADLINE=$((SECONDS + 30))
while { NEW=$(bridge_pid); [ -z "$NEW" ] || [ "$NEW" == "$OLD" ] || [ ! -S "$T/run/bridge.sock" ]; } &&
	[ $SECONDS -lt $DEADLINE ]; do sleep 0.2; done
assert_ne "bridge kill: deploy/up started a new bridge" "$OLD" "${NEW:-$OLD}"
sse_wait_end ev1 10
LAST=$(sse_events ev1 | jq -s 'map(select(.id != null) | .id | tonumber) | max')
sse_start ev2 GET /events - --header "Last-Event-ID: $LAST"
sleep 1.5 # the new bridge has subscribed again (its host replays the pending request)
assert_activity "after the bridge restart: still waiting, the same request listed" "$SID" \
	".activity == \"waiting\" and [.pending[].requestId] == [\"$RID\"]"

# --- three clients race: exactly one answer wins ---------------------------------------------
RACERS=()
for i in 1 2 3; do
	curl -s -o "$T/race$i.body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data '{"behavior":"allow"}' "$BASE_URL/sessions/$SID/permissions/$RID" \
		>"$T/race$i.status" &
	RACERS+=($!)
done
wait "${RACERS[@]}" # not the SSE clients, which run on
STATUSES=$(for i in 1 2 3; do cat "$T/race$i.status"; echo; done | sort | tr '\n' ' ')
assert_eq "three answers at once: one 200, two 409" "200 409 409 " "$STATUSES"
for i in 1 2 3; do
	if [ "$(cat "$T/race$i.status")" == 409 ]; then
		assert_jq "a losing answer says who answered first" \
			'.code == "already_answered" and (.error | test("allow"))' "$(cat "$T/race$i.body")"
		break
	fi
done
sse_wait_end p1 20
check "the allowed tool ran once" test -e "$WT/raced-file"
assert_activity "answered and finished: idle, nothing pending" "$SID" '.activity == "idle" and .pending == []'
api POST /sessions/$SID/permissions/$RID '{"behavior":"deny"}'
assert_status "a later answer: 409" 409

# --- the agent ends: exited, nothing listed ---------------------------------------------------
sse_start p2 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch never-file"}'
assert_sse_event "a second request arrives" p2 '.event == "permission"' 20
assert_activity "waiting again" "$SID" '.activity == "waiting"'
HOST_PID=$(pane_pid "$SID") # the pane runs agentd-host; claude is its child
check "the pane runs agentd-host" test "$(readlink -f "/proc/$HOST_PID/exe")" == \
	"$(readlink -f "$BUILD_DIR/host/agentd-host")"
pkill -KILL -P "$HOST_PID"
assert_activity "claude killed: exited, its request no longer listed" "$SID" \
	'.activity == "exited" and .pending == []' 20
check_not "the withdrawn tool never ran" test -e "$WT/never-file"

# --- /events: the same story, for every session, across the bridge's restart --------------------
# agentd-api restarts too: /events is the bridge's, and goes on (ids continue).
kill_api KILL
api POST /sessions "$(create_body acme widgets 2)"
assert_status "after agentd-api's restart: a session is created" 201
assert_sse_event "/events: the new session arrives after agentd-api's restart" ev2 \
	'.event == "session" and (.data | fromjson | .change == "created" and .session.id == "widgets-2")' 20
cat "$T/ev1.events" "$T/ev2.events" >"$T/ev12.events"
assert_ids_contiguous "/events across the bridge's kill: no gap, no duplicate" ev12
EV=$(sse_events ev12 | jq -s -c .)
assert_jq "/events: the first client got a snapshot first" \
	'map(select(.event != "ping"))[0].event == "snapshot"' "$(sse_events ev1 | jq -s -c .)"
assert_jq "/events: the raced request's permission, with its session" \
	"any(.[]; .event == \"permission\" and (.data | fromjson | .requestId == \"$RID\" and .session == \"$SID\"))" "$EV"
# by: who answered (the harness's token, itest: docs/API.md Access).
assert_jq "/events: resolved once, allowed by the client that won (itest)" \
	"[.[] | select(.event == \"permission_resolved\") | .data | fromjson | select(.requestId == \"$RID\")] |
	 length == 1 and .[0].behavior == \"allow\" and .[0].by == \"itest\"" "$EV"
assert_jq "/events: turns' results, cut to 4 KiB, with usage" \
	"any(.[]; .event == \"result\" and (.data | fromjson | .session == \"$SID\" and has(\"usage\") and (.result | length) <= 4096))" "$EV"
assert_jq "/events: the session went waiting and idle" \
	"any(.[]; .event == \"session\" and (.data | fromjson | .session.activity == \"waiting\")) and
	 any(.[]; .event == \"session\" and (.data | fromjson | .session.activity == \"idle\"))" "$EV"
assert_jq "/events: the killed agent's request was withdrawn" \
	"any(.[]; .event == \"permission_resolved\" and (.data | fromjson | .behavior == \"withdrawn\"))" "$EV"

stop_stack
scan_sanitizers

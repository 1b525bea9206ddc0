#!/usr/bin/env bash
# Structured mode: nothing is lost when clients or the bridge go away. A client that drops a
# prompt stream reads the rest from /events with Last-Event-ID (no gap, no duplicate); after a
# kill -9 of the bridge the turn goes on and is replayed; the whole log replays from ?after=0; an
# unanswered permission is denied after AGENTD_PERMISSION_TIMEOUT (meanwhile ": ping" keeps the
# stream alive); 1 MB lines go through; a session created in structured mode is waited for.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

make_remote acme widgets
make_remote acme gadgets
# 16 s: long enough for the 15 s SSE ping to show while a permission waits.
start_stack AGENTD_PERMISSION_TIMEOUT=16 || exit 1

# --- created in structured mode: the relay waits for `running`, the first turn replays --------
api POST /sessions '{"repo":{"owner":"acme","name":"gadgets"},"issue":2,"mode":"structured"}'
assert_status "create in structured mode: 201" 201
sse_run boot GET /sessions/gadgets-2/events - --until result --timeout 60
assert_eq "events of a session still creating: 200 once it runs" 200 "$(sse_status boot)"
assert_eq "the bootstrap prompt's turn is replayed" "system user assistant result" "$(sse_names boot)"
sse_run g1 POST /sessions/gadgets-2/prompt '{"prompt":"hi"}'
assert_eq "then a prompt runs a turn" "system user assistant result" "$(sse_names g1)"

SID=$(structured_session acme widgets 1) || exit 1
WT=$T/code/widgets-issue-1
LOG=$T/state/agents/$SID/events.log

# --- the client drops the prompt stream mid-turn --------------------------------------------
sse_run c1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch after-drop"}' --stop-after 2
assert_eq "dropped stream: the client left after two events" stopped "$(sse_end c1)"
LAST=$(sse_events c1 | tail -n 1 | jq .id)
sse_start e1 GET /sessions/$SID/events - --header "Last-Event-ID: $LAST" --until result
assert_sse_event "dropped stream: /events from Last-Event-ID shows the permission" e1 \
	'.event == "permission"' 20
api POST "/sessions/$SID/permissions/$(sse_permission_ids e1 | head -n 1)" '{"behavior":"allow"}'
assert_status "dropped stream: the permission is answered" 200
sse_wait_end e1 20
assert_eq "dropped stream: the turn went on to its result" \
	"system user | assistant permission permission_resolved user assistant result" \
	"$(sse_names c1) | $(sse_names e1)"
cat "$T/c1.events" "$T/e1.events" >"$T/c1e1.events"
assert_ids_contiguous "dropped stream: no gap and no duplicate across both streams" c1e1
check "dropped stream: the tool ran" test -e "$WT/after-drop"

# --- kill -9 of the bridge mid-turn -----------------------------------------------------------
sse_start k1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch after-kill"}'
assert_sse_event "bridge kill: the turn waits for a permission" k1 '.event == "permission"' 20
OLD=$(bridge_pid)
kill -KILL "$OLD"
sse_wait_end k1 10
assert_ne "bridge kill: the stream ended with the bridge" timeout "$(sse_end k1)"
DEADLINE=$((SECONDS + 30))
while { NEW=$(bridge_pid); [ -z "$NEW" ] || [ "$NEW" == "$OLD" ] || [ ! -S "$T/run/bridge.sock" ]; } &&
	[ $SECONDS -lt $DEADLINE ]; do sleep 0.2; done
assert_ne "bridge kill: deploy/up started a new bridge" "$OLD" "${NEW:-$OLD}"
RID=$(sse_permission_ids k1 | head -n 1)
for _ in $(seq 50); do
	api POST "/sessions/$SID/permissions/$RID" '{"behavior":"allow"}'
	[ "$STATUS" == 502 ] || break # nginx until the new bridge listens
	sleep 0.2
done
assert_status "bridge kill: the pending permission is answered through the new bridge" 200
LAST=$(sse_events k1 | tail -n 1 | jq .id)
sse_run k2 GET "/sessions/$SID/events?after=$LAST" - --until result
assert_eq "bridge kill: the rest of the turn is replayed" \
	"permission_resolved user assistant result" "$(sse_names k2)"
cat "$T/k1.events" "$T/k2.events" >"$T/k1k2.events"
assert_ids_contiguous "bridge kill: no gap and no duplicate" k1k2
check "bridge kill: the tool ran" test -e "$WT/after-kill"

# --- the whole log replays, then live events follow ------------------------------------------
N=$(wc -l <"$LOG")
sse_start all GET "/sessions/$SID/events?after=0" - --stop-after $((N + 4))
sse_wait_event all true 10 "$N"
sse_run live POST /sessions/$SID/prompt '{"prompt":"live one"}'
sse_wait_end all 20
assert_eq "replay: every logged event, then the live turn" $((N + 4)) "$(sse_events all | wc -l)"
assert_ids_contiguous "replay: ids 1..N+4 without a gap" all
assert_eq "replay: starts at id 1" 1 "$(sse_events all | head -n 1 | jq .id)"
assert_eq "replay: each event's data is the logged line's data" \
	"$(head -n "$N" "$LOG" | jq -c '[.id, .event, .data]')" \
	"$(sse_events all | head -n "$N" | jq -c '[.id, .event, (.data | fromjson)]')"
assert_eq "replay: the live turn follows" "system user assistant result" \
	"$(sse_events all | tail -n 4 | jq -r .event | tr '\n' ' ' | sed 's/ $//')"
FROM=$((N - 1))
sse_run tail GET "/sessions/$SID/events" - --header "Last-Event-ID: $FROM" --header 'Last-Event-ID: 1' --stop-after 2
assert_eq "replay: Last-Event-ID wins (first value)" "$N" "$(sse_events tail | head -n 1 | jq .id)"
sse_run q GET "/sessions/$SID/events?after=$FROM" - --stop-after 1
assert_eq "replay: ?after= works too" "$N" "$(sse_events q | jq .id)"

# --- an unanswered permission is denied after the timeout; pings fill the silence -------------
sse_start to1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch timed-out"}'
assert_sse_event "timeout: a permission event arrives" to1 '.event == "permission"' 20
sse_wait_end to1 40
assert_eq "timeout: the turn ends by itself" eof "$(sse_end to1)"
assert_jq "timeout: the permission was resolved by the timeout, saying so" \
	'.data | fromjson | .by == "timeout" and .behavior == "deny" and
	 (.message | test("AGENTD_PERMISSION_TIMEOUT"))' \
	"$(sse_events to1 | jq -c 'select(.event == "permission_resolved")')"
assert_jq "timeout: the result lists the denial" \
	'.data | fromjson | (.permission_denials | length) == 1' "$(sse_events to1 | tail -n 1)"
check_not "timeout: the tool did not run" test -e "$WT/timed-out"
assert_jq "timeout: \": ping\" came while the stream was idle" \
	'map(select(.comment == "ping")) | length >= 1' "$(jq -s -c . "$T/to1.events")"
api POST "/sessions/$SID/permissions/$(sse_permission_ids to1 | head -n 1)" '{"behavior":"allow"}'
assert_status "timeout: a late answer is 409" 409

# --- 1 MB lines ---------------------------------------------------------------------------------
sse_run big POST /sessions/$SID/prompt '{"prompt":"BIGLINE"}'
assert_eq "1 MB line: the turn streams" "system user assistant result" "$(sse_names big)"
assert_jq "1 MB line: the assistant text arrives whole" \
	'.data | fromjson | .message.content[0].text | length == 1048576 and test("^x+$")' \
	"$(sse_events big | jq -c 'select(.event == "assistant")')"
ID=$(sse_events big | jq 'select(.event == "assistant") | .id')
sse_run bigr GET "/sessions/$SID/events?after=$((ID - 1))" - --stop-after 1
assert_eq "1 MB line: its replay is the same event" \
	"$(sse_events big | jq -c 'select(.event == "assistant")' | sha256sum)" \
	"$(sse_events bigr | sha256sum)"

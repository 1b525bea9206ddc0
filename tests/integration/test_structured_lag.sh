#!/usr/bin/env bash
# A reader that falls far behind is never dropped: a turn of 20,000 events through
# nginx to an SSE client that reads nothing for a while and then reads slowly arrives whole: every
# event, in order, no gap, ending with the turn's result and no error. agentd-host sends a
# subscriber that is behind from its event log instead of queueing the events in memory (it used
# to drop one 8 MiB behind, and the prompt then ended without its result). The lines are about
# 1 KB (20 MB in all): nginx's socket buffers to the client take up to 4 MB of what the client
# leaves unread, so a smaller turn would not get the host that far behind. Then a replay the host
# cannot finish (its log cut short) ends with an `error` event rather than a bare end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

N=20000
make_remote acme widgets
start_stack || exit 1
SID=$(structured_session acme widgets 1) || exit 1

# The prompt's stream: nothing read for 8 s (claude writes the whole turn meanwhile), then at
# most 4 MiB/s.
sse_start lag POST "/sessions/$SID/prompt" "{\"prompt\":\"MANY $N 600\"}" --pause 8 --rate 4096 \
	--timeout 240
sse_wait_end lag 240 || fail "the slow reader finished within 240 s" "$(tail -n 3 "$T/lag.log")"
assert_eq "the prompt answered 200" 200 "$(sse_status lag)"
assert_eq "the stream ended when the server closed it" eof "$(sse_end lag)"
sse_events lag | jq -s -c '{n: length, first: .[0].event, last: .[-1].event,
	assistants: [.[] | select(.event == "assistant")] | length,
	errors: [.[] | select(.event == "error")] | length}' >"$T/lag.summary"
SUMMARY=$(cat "$T/lag.summary")
assert_jq "every event arrived: system, the prompt's replay, $N assistant lines, result" \
	".n == $N + 3 and .assistants == $N and .first == \"system\"" "$SUMMARY"
assert_jq "it ends with the turn's result" '.last == "result"' "$SUMMARY"
assert_jq "no error event" '.errors == 0' "$SUMMARY"
assert_ids_contiguous "the event ids have no gap" lag
ORDER=$(sse_events lag | jq -r 'select(.event == "assistant") | .data | fromjson |
	.message.content[0].text | split(" ")[1]' | awk -v n=$N '$1 != NR - 1 { bad++ }
	END { print (NR == n && bad == 0) ? "in order" : "out of order: " NR " lines, " bad " misplaced" }')
assert_eq "the assistant lines came in claude's order" "in order" "$ORDER"
LOGGED=$(grep -c '"event":"assistant"' "$T/state/agents/$SID/events.log")
assert_eq "the event log holds the whole turn" "$N" "$LOGGED"

# --- a stream that cannot go on ends with an error event ------------------------------------------
# A replay of the whole log to a reader that waits; meanwhile the log is cut short behind the
# host's back (the one way to make it unreadable here), so the host cannot send the rest.
sse_start cut GET "/sessions/$SID/events?after=0" - --pause 6 --rate 8192 --timeout 120
sleep 2
truncate -s 0 "$T/state/agents/$SID/events.log"
sse_wait_end cut 120 || fail "the cut reader finished within 120 s" "$(tail -n 3 "$T/cut.log")"
LAST=$(sse_events cut | tail -n 1)
assert_jq "the stream ends with an error event (log_error)" \
	'.event == "error" and (.data | fromjson | .code == "log_error" and (.error | length > 0))' \
	"$LAST"
assert_jq "... without an id" 'has("id") | not' "$LAST"

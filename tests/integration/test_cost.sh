#!/usr/bin/env bash
# What a session cost: each structured turn's result (the fake claude's total_cost_usd 0.0001,
# usage 10 in / 5 out) is summed into the session's `cost` once, also across a kill -9 of the
# bridge (which replays the host's events from the record's cursor) and a mode switch.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

make_remote acme widgets || exit 1
start_stack || exit 1

# wait_cost DESC JQ: the session's cost passes JQ within 20 s.
wait_cost() {
	local deadline=$((SECONDS + 20))
	while [ $SECONDS -lt $deadline ]; do
		get_session widgets-1
		jq -e ".cost | $2" <<<"$BODY" >/dev/null 2>&1 && break
		sleep 0.2
	done
	assert_jq "$1" ".cost | $2"
}

SID=$(structured_session acme widgets 1) || exit 1
get_session "$SID"
assert_json "a new session has cost nothing" '.cost' \
	'{"usd":0,"inputTokens":0,"outputTokens":0,"cacheReadTokens":0,"turns":0}'
sse_run p1 POST "/sessions/$SID/prompt" '{"prompt":"one"}'
assert_eq "turn 1 ends" eof "$(sse_end p1)"
wait_cost "one turn: its result's cost and usage" \
	'. == {"usd":0.0001,"inputTokens":10,"outputTokens":5,"cacheReadTokens":0,"turns":1}'
sse_run p2 POST "/sessions/$SID/prompt" '{"prompt":"two"}'
wait_cost "two turns: summed" '.usd == 0.0002 and .inputTokens == 20 and .turns == 2'
api GET /sessions
assert_jq "the list shows the cost" '.[] | select(.id == "widgets-1") | .cost.turns == 2'

# kill -9 of the bridge: the new one replays from the record's cursor and counts nothing twice.
OLD=$(bridge_pid)
kill -KILL "$OLD"
deadline=$((SECONDS + 30))
until NEW=$(bridge_pid) && [ -n "$NEW" ] && [ "$NEW" != "$OLD" ]; do
	[ $SECONDS -ge $deadline ] && break
	sleep 0.2
done
assert_ne "deploy/up starts a new bridge" "$OLD" "$NEW"
sse_run p3 POST "/sessions/$SID/prompt" '{"prompt":"three"}'
assert_eq "turn 3 after the restart ends" eof "$(sse_end p3)"
wait_cost "after a bridge restart: three turns, each counted once" \
	'.usd == 0.0003 and .inputTokens == 30 and .outputTokens == 15 and .turns == 3'

api POST "/sessions/$SID/mode" '{"mode":"terminal"}'
assert_status "switch to terminal: 200" 200
assert_jq "a mode switch keeps the cost" '.cost.turns == 3 and .cost.usd == 0.0003'

#!/usr/bin/env bash
# What a session cost: each structured turn's result (the fake claude's total_cost_usd 0.0001,
# usage 10 in / 5 out) is summed into the session's `cost` once, also across a kill -9 of the
# bridge (which replays the host's events from the record's cursor) and a mode switch; a budget
# (budgetUsd, AGENTD_SESSION_BUDGET_USD) refuses new prompts with 402 once the cost reached it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

make_remote acme widgets || exit 1
# A default budget no turn here reaches: every session created without budgetUsd gets it.
start_stack AGENTD_SESSION_BUDGET_USD=5 || exit 1

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
assert_json "AGENTD_SESSION_BUDGET_USD is its budget" '[.budgetUsd, .overBudget]' '[5,false]'
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

# ---- a budget: past it, new prompts get 402 with the figures; the session says so ----------
for bad in 0 -1 '"0.5"' 1000001 0.0000001 true; do
	api POST /sessions "{\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},\"issue\":9,\"budgetUsd\":$bad}"
	assert_status "budgetUsd $bad: 400" 400
	assert_json "budgetUsd $bad: code" '.code' '"invalid_budget"'
done
api GET /sessions/widgets-9
assert_status "a refused budget made no session" 404

api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":2,"budgetUsd":0.00015}'
assert_status "create with a budget: 201" 201
assert_json "the session shows its budget" '.budgetUsd' '0.00015'
assert_json "not over it yet" '.overBudget' 'false'
wait_state widgets-2 running 60 || fail "widgets-2 runs" "$STATUS ${BODY:0:300}"
api POST /sessions/widgets-2/mode '{"mode":"structured"}'
assert_status "widgets-2 to structured: 200" 200
sse_run b1 POST /sessions/widgets-2/prompt '{"prompt":"one"}'
assert_eq "under the budget a prompt runs" 200 "$(sse_status b1)"
assert_eq "its turn ends" eof "$(sse_end b1)"
wait_for_cost() {
	local deadline=$((SECONDS + 20))
	while [ $SECONDS -lt $deadline ]; do
		get_session "$1"
		jq -e "$2" <<<"$BODY" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}
wait_for_cost widgets-2 '.cost.turns == 1'
assert_jq "one turn: 0.0001 of 0.00015, not over" '.cost.usd == 0.0001 and .overBudget == false'
sse_run b2 POST /sessions/widgets-2/prompt '{"prompt":"two"}'
assert_eq "still under the budget: the prompt runs" 200 "$(sse_status b2)"
wait_for_cost widgets-2 '.cost.turns == 2'
assert_jq "two turns: 0.0002 reached the budget" '.cost.usd == 0.0002 and .overBudget == true'
api GET /sessions
assert_jq "the list says it is over budget" \
	'.[] | select(.id == "widgets-2") | .overBudget == true and .budgetUsd == 0.00015'
sse_run b3 POST /sessions/widgets-2/prompt '{"prompt":"three"}'
assert_eq "over the budget: 402" 402 "$(sse_status b3)"
B3=$(sse_body b3)
assert_jq "402: the code" '.code == "budget_exceeded"' "$B3"
assert_jq "402: the figures" '.costUsd == 0.0002 and .budgetUsd == 0.00015' "$B3"
assert_match "402: the sentence says the figures" '0\.000200.*0\.000150' "$B3"
ws_start w1 /sessions/widgets-2/stream
ws_wait_line w1 '^open$' 10
ws_send w1 '{"type":"prompt","prompt":"four"}'
assert_ws_frame "over the budget: /stream's prompt frame gets the same 402" w1 \
	'.type == "error" and .request == "prompt" and .status == 402 and
	 .code == "budget_exceeded" and (.error | test("0\\.000200"))' 10
ws_stop w1
get_session widgets-2
assert_jq "a refused prompt costs nothing" '.cost.turns == 2'

# ---- GET /usage: the sessions' costs per repository and per UTC day --------------------------
TODAY=$(date -u +%F)
api GET /usage
assert_status "GET /usage: 200" 200
assert_jq "the last week by default: 8 days, today last" \
	"(.days | length) == 8 and .days[-1].day == \"$TODAY\""
assert_jq "every turn of both sessions is today's" \
	'.total.turns == 5 and .total.usd == 0.0005 and .days[-1].cost.turns == 5 and
	 ([.days[:-1][].cost.turns] | add) == 0 and .sessions == 2'
assert_json "per repository" '[.repos[] | [.repo.owner, .repo.name, .sessions, .cost.turns]]' \
	'[["acme","widgets",2,5]]'
api GET "/usage?since=$TODAY"
assert_jq "since a date: from that day" \
	"(.days | length) == 1 and .since == \"${TODAY}T00:00:00Z\" and .total.turns == 5"
api GET "/usage?since=$(date -u +%FT%TZ)"
assert_jq "since a time: from its day" '(.days | length) == 1 and .total.turns == 5'
api GET "/usage?since=$(date -u -d '+1 hour' +%FT%TZ)"
assert_status "since a time to come: 400" 400
api GET "/usage?since=1d"
assert_jq "since a duration: 2 days" '(.days | length) == 2 and .total.turns == 5'
for bad in yesterday 40d 2099-01-01 "" 1w "$(printf '9%.0s' {1..60})"; do
	api GET "/usage?since=$bad"
	assert_status "since=${bad:0:20}: 400" 400
	assert_json "since=${bad:0:20}: code" '.code' '"invalid_since"'
done
VIEWER=$("$BUILD_DIR/fcgi-app/agentd-api" token add viewer --read-only)
code=$(curl -q -s -o "$T/usage.ro" -w '%{http_code}' -H "Authorization: Bearer $VIEWER" \
	"$BASE_URL/usage?since=1d")
assert_eq "a read-only token reads the usage" 200 "$code"
assert_jq "... the same totals" '.total.turns == 5' "$(cat "$T/usage.ro")"
api POST /usage '{}'
assert_status "POST /usage: 405" 405

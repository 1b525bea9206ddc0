#!/usr/bin/env bash
# The REAL claude CLI: "allow for this session". In structured mode, a Bash tool use
# asks for permission; the client allows it with the permission event's rule suggestions
# ("addRules") as "updatedPermissions" (their destination set to "session": nothing is written to
# the settings files); the same tool use in the next turn then runs without asking again. Before the fix the
# bridge dropped updatedPermissions and claude asked again.
# The CLI and the fake Messages API are set up as in test_real_claude.sh (real_claude/lib_real_claude.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/real_claude/lib_real_claude.sh"

install_claude || exit 1
start_fake_api || exit 1
make_remote acme widgets
ISSUE=2
WORKTREE=$T/code/widgets-issue-$ISSUE
seed_home "$WORKTREE"
start_real_stack || exit 1

api POST /sessions "$(jq -cn --argjson i "$ISSUE" \
	'{repo: {owner: "acme", name: "widgets"}, issue: $i, mode: "structured", prompt: "say hello BOOT"}')"
assert_status "POST /sessions (structured) answers 201" 201
SID=$(printf '%s' "$BODY" | jq -r .id)
assert_state "the session is running" "$SID" running 60
# The bootstrap prompt is a turn of its own: the next prompt waits for its result.
EVLOG=$T/state/agents/$SID/events.log
deadline=$((SECONDS + TURN_WAIT))
until grep -q '"event":"result"' "$EVLOG" 2>/dev/null || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
check "the bootstrap turn ended with a result" grep -q '"event":"result"' "$EVLOG"

PROMPT="please RUNBASH touch allowed-for-the-session"
FILE=$WORKTREE/allowed-for-the-session

# --- first turn: asked, allowed for the session ---------------------------------------------------
sse_start "$SID" "$PROMPT"
wait_sse_until '^event: (permission|result)'
assert_eq "first turn: POST /prompt answers 200" 200 "$(sse_status)"
PERM=$(sse_data permission)
RID=$(printf '%s' "$PERM" | jq -r '.requestId // empty' 2>/dev/null)
assert_jq "first turn: the Bash tool use asks for permission, with suggestions" \
	'.toolName == "Bash" and .input.command == "touch allowed-for-the-session" and
	 (.suggestions | type == "array" and any(.[]; .type == "addRules"))' \
	"${PERM:-null}"
log "suggestions: $(printf '%s' "$PERM" | jq -c .suggestions 2>/dev/null)"
# Activity with the real CLI: the pending request is listed, the session waits.
for _ in $(seq 50); do
	get_session "$SID"
	jq -e '.activity == "waiting"' >/dev/null 2>&1 <<<"$BODY" && break
	sleep 0.1
done
assert_jq "real CLI: a permission request makes the session waiting, the request listed" \
	".activity == \"waiting\" and [.pending[].requestId] == [\"${RID:-none}\"] and
	 .pending[0].toolName == \"Bash\"" "$BODY"
# Only the rule suggestions: another suggestion (setMode acceptEdits) would let a touch run by
# itself, and the test is about the rule reaching claude.
ANSWER=$(printf '%s' "${PERM:-null}" | jq -c '{behavior: "allow",
	updatedPermissions: [(.suggestions // [])[] | select(.type == "addRules") | .destination = "session"]}')
api POST "/sessions/$SID/permissions/${RID:-none}" "$ANSWER"
assert_status "allow with updatedPermissions (the suggestions) answers 200" 200
wait_sse_until '^event: result'
deadline=$((SECONDS + 10))
while sse_running && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
log "first turn events: $(sse_events)"
assert_json "first turn: the result is a success saying Done." '[.subtype, .result]' \
	'["success","Done."]' "$(sse_data result)"
check "first turn: the allowed command ran in the worktree" test -f "$FILE"
for _ in $(seq 50); do
	get_session "$SID"
	jq -e '.activity == "idle"' >/dev/null 2>&1 <<<"$BODY" && break
	sleep 0.1
done
assert_jq "real CLI: answered and ended, the session is idle with nothing pending" \
	'.activity == "idle" and .pending == []' "$BODY"
rm -f "$FILE"
check_not "settings files were not touched (destination session)" \
	test -e "$WORKTREE/.claude/settings.local.json"

# --- second turn: the same tool use is not asked again -----------------------------------------------
sse_start "$SID" "$PROMPT"
if wait_sse_until '^event: (permission|result)' && grep -q '^event: permission' "$T/sse.out"; then
	fail "second turn: the same Bash tool use is not asked again" \
		"a permission event came: $(sse_data permission)"
	# End the turn so that the test does not wait for the permission timeout.
	RID2=$(sse_data permission | jq -r '.requestId // empty' 2>/dev/null)
	api POST "/sessions/$SID/permissions/${RID2:-none}" '{"behavior":"deny","message":"test"}'
	wait_sse_until '^event: result'
else
	pass "second turn: the same Bash tool use is not asked again"
fi
deadline=$((SECONDS + 10))
while sse_running && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
log "second turn events: $(sse_events)"
assert_match "second turn: the tool ran (tool_use, tool_result, then the result)" \
	'(^| )assistant .*user .*assistant .*result $' "$(sse_events)"
assert_json "second turn: the result is a success saying Done." '[.subtype, .result]' \
	'["success","Done."]' "$(sse_data result)"
check "second turn: the command ran again without a question" test -f "$FILE"

# --- a deny cannot carry updatedPermissions ---------------------------------------------------------
api POST "/sessions/$SID/permissions/r-none" '{"behavior":"deny","message":"x","updatedPermissions":[{"type":"setMode","mode":"default","destination":"session"}]}'
assert_status "a deny with updatedPermissions: 400" 400

api DELETE "/sessions/$SID?force=true"
assert_status "DELETE ?force=true answers 200" 200
deadline=$((SECONDS + 10))
while [ -n "$(test_claudes)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_eq "no claude of this test is left" "" "$(test_claudes)"

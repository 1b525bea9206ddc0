#!/usr/bin/env bash
# REST through nginx: sessions that fail (claude missing, clone failing) say why, are started
# over by a new POST, can be deleted; AGENTD_MAX_SESSIONS (default 16) answers 429 beyond it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1

# --- a missing claude ------------------------------------------------------------------------------
start_stack AGENTD_CLAUDE=/nonexistent/claude || exit 1
create acme widgets 1
assert_status "POST with a missing claude still answers 201 (creation is asynchronous)" 201
assert_state "missing claude: session becomes failed" widgets-1 failed 15
assert_jq "missing claude: error names claude" \
	'.error | type == "string" and (test("claude"; "i") or test("/nonexistent"))'
assert_jq "failed session still has every field (prompt, tmuxName, ...)" \
	'has("prompt") and has("tmuxName") and has("worktree") and has("createdAt")'
create acme widgets 1
assert_status "a failed session POSTed again is started over: 201" 201
assert_json "started over: state creating" '.state' '"creating"'
assert_state "started over with claude still missing: failed again" widgets-1 failed 15
api DELETE /sessions/widgets-1
assert_status "DELETE of a failed session: 200" 200
get_session widgets-1
assert_status "deleted failed session: 404" 404
stop_stack || fail "deploy/up stops on SIGTERM"
tmx kill-server >/dev/null 2>&1
rm -rf "$T/run" "$T/code"
mkdir -p "$T/run" "$T/code"

# --- a clone that fails ---------------------------------------------------------------------------
start_stack AGENTD_CLAUDE="$FAKE_CLAUDE" || exit 1
create ghost nothing 1
assert_status "POST for a repository without remote: 201" 201
assert_state "clone failure: session becomes failed" nothing-1 failed 15
assert_jq "clone failure: error names the URL" \
	".error | type == \"string\" and contains(\"file://$T/remotes/ghost/nothing.git\")"
check_not "clone failure: no worktree" test -e "$T/code/nothing-issue-1"
check_not "clone failure: no tmux session" tmux_has nothing-1
api GET /sessions
assert_json "failed session is listed with its state" '[.[] | select(.id == "nothing-1") | .state]' \
	'["failed"]'

make_remote ghost nothing || fail "make the missing remote"
create ghost nothing 1
assert_status "failed session POSTed again after fixing the remote: 201" 201
assert_state "started-over session becomes running" nothing-1 running 15
assert_jq "running session after start-over has no error" '(.error // "") == ""'
check "started-over session has its tmux session" tmux_has nothing-1
REC=$(claude_record nothing-1 10)
assert_json "started-over claude gets a --session-id first" '.argv[0] | startswith("--session-id=")' \
	true "$REC"

# --- AGENTD_MAX_SESSIONS (default 16): nothing-1 + widgets 1..15 = 16 ------------------------------
for i in $(seq 1 15); do
	create acme widgets "$i"
	[ "$STATUS" == 201 ] || fail "create widgets-$i for the limit: 201" "got $STATUS ${BODY:0:300}"
done
for i in $(seq 1 15); do
	wait_state "widgets-$i" running 60 || fail "widgets-$i becomes running" "${BODY:0:300}"
done
assert_eq "16 tmux sessions run" 16 "$(tmux_count)"
create acme widgets 16
assert_status "17th session: 429" 429
assert_error_body "429 has an error body"
get_session widgets-16
assert_status "17th session has no record" 404
check_not "17th session has no worktree" test -e "$T/code/widgets-issue-16"
check_not "17th session has no tmux session" tmux_has widgets-16
create acme widgets 7
assert_status "an existing session is still answered at the limit: 200" 200
api GET /healthz
assert_json "healthz counts 16" '.sessions' 16

api DELETE /sessions/widgets-15
assert_status "delete one at the limit: 200" 200
create acme widgets 16
assert_status "after a delete there is room again: 201" 201
assert_state "the new session becomes running" widgets-16 running 15

# --- a record that cannot be written --------------------------------------------------------------
# The waiting worker gets the session before its record is written; when the write fails (here:
# its directory made immutable once the lock file exists), the POST answers 500 and the worker,
# finding no record, starts no claude.
api DELETE /sessions/widgets-16
assert_status "make room: 200" 200
SESS=$T/state/sessions
touch "$SESS/widgets-30.lock"
if chattr +i "$SESS" 2>"$T/chattr.err"; then
	create acme widgets 30
	chattr -i "$SESS"
	assert_status "a record that cannot be written: 500" 500
	assert_json "its error says store_error" '.code' '"store_error"'
	check "the worker it was handed to says so" wait_for 15 grep -q \
		"the record of widgets-30 is missing; claude not started" "$T/logs/up.log"
	check_not "no tmux session for it" tmux_has widgets-30
	get_session widgets-30
	assert_status "no record for it: 404" 404
	create acme widgets 30
	assert_status "once the store can be written, the same POST creates it: 201" 201
	assert_state "and it runs (in the worktree the first attempt made)" widgets-30 running 15
else
	fail "chattr +i on the records dir (needed to make a record write fail)" "$(cat "$T/chattr.err")"
fi

#!/usr/bin/env bash
# REST through nginx: DELETE loses no work. Each of the three cases that the
# old DELETE answered "removed" while losing data — a commit on a detached HEAD, an uncommitted
# change inside a submodule, ignored files (now removed but counted) — plus a worktree on another
# branch and an ordinary directory at the worktree path; ?force=true keeps HEAD's commits under
# refs/agentd/kept/; kept worktrees are listed and removed with DELETE /worktrees/<dir>;
# DELETE /branches/<owner>/<name>/feat/issue-<N> deletes only what origin has. The work in the
# worktrees is done as the agents' user, as an agent does it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1
make_remote acme lib || exit 1
start_stack || exit 1
BARE=$(kept_repo acme widgets)

# start ISSUE: creates acme/widgets#ISSUE and waits until it runs; prints nothing.
start() {
	create acme widgets "$1"
	assert_status "create widgets-$1: 201" 201
	assert_state "widgets-$1 becomes running" "widgets-$1" running 30
}

# --- a commit on a detached HEAD ------------------------------------------------------------------
start 1
WT1=$T/code/widgets-issue-1
agent_sh "$WT1" 'git checkout -q --detach && echo lost >lost.txt && git add lost.txt &&
	git commit -q -m "made on a detached HEAD"' || fail "commit on a detached HEAD"
SHA1=$(git -C "$WT1" rev-parse HEAD)
api DELETE /sessions/widgets-1
assert_status "DELETE with a detached HEAD: 200" 200
if [ "$GIT_LAYOUT" = store ]; then
	# The store layout keeps the commit in the store, so the repository may go.
	assert_jq "detached HEAD: removed, with the store's ref that keeps the commit" \
		'.status == "stopped" and .worktree == "removed" and .ignoredRemoved == 0 and
		 .keptCommits == 1 and (.keptRef | test("^refs/agentd/kept/widgets-1-[0-9]+$"))'
	KEPT=$(jq -r .keptRef <<<"$BODY")
	check_not "detached HEAD: the directory is gone" test -e "$WT1"
	assert_eq "detached HEAD: the kept ref reaches the commit" "$SHA1" \
		"$(git -C "$BARE" rev-parse "$KEPT" 2>&1)"
	check "detached HEAD: the branch stays" \
		git -C "$BARE" rev-parse -q --verify refs/heads/feat/issue-1
	get_session widgets-1
	assert_status "the session itself is deleted: 404" 404
	api DELETE /worktrees/widgets-issue-1
	assert_status "DELETE /worktrees of a removed repository: 404" 404
	api GET /worktrees
	assert_jq "the removed repository is not listed" 'map(select(.issue == 1)) == []'
else
	assert_json "detached HEAD: the worktree is kept" '[.status, .worktree]' '["stopped","kept"]'
	assert_json "detached HEAD: the reason names the commit and says it is on no branch" '.reason' \
		"\"HEAD is detached at ${SHA1:0:7} (1 commit on no branch)\""
	assert_eq "detached HEAD: the commit is still there" "$SHA1" "$(git -C "$WT1" rev-parse HEAD 2>&1)"
	get_session widgets-1
	assert_status "the session itself is deleted: 404" 404

	api GET /worktrees
	assert_jq "the kept worktree is listed, with no session" \
		"map(select(.issue == 1)) == [{\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},\"issue\":1,\"path\":\"$WT1\",\"session\":null}]"

	api DELETE /worktrees/widgets-issue-1
	assert_status "DELETE /worktrees of the kept worktree: 409" 409
	assert_error_body "409 has the error shape"
	assert_json "409 says kept and why" '[.code, .worktree, .reason]' \
		"[\"worktree_kept\",\"kept\",\"HEAD is detached at ${SHA1:0:7} (1 commit on no branch)\"]"
	check "still there after the 409" test -f "$WT1/lost.txt"
	assert_match "409 offers the force that removes it" '\?force=true removes it' \
		"$(jq -r .error <<<"$BODY")"

	api DELETE '/worktrees/widgets-issue-1?force=true'
	assert_status "forced DELETE /worktrees: 200" 200
	assert_jq "forced: removed, with the ref that keeps the commit" \
		'.worktree == "removed" and .ignoredRemoved == 0 and .keptCommits == 1 and
		 (.keptRef | test("^refs/agentd/kept/widgets-1-[0-9]+$"))'
	KEPT=$(jq -r .keptRef <<<"$BODY")
	check_not "forced: the directory is gone" test -e "$WT1"
	assert_eq "forced: the kept ref reaches the commit" "$SHA1" \
		"$(git -C "$BARE" rev-parse "$KEPT" 2>&1)"
	check "forced: the branch stays" git -C "$BARE" rev-parse -q --verify refs/heads/feat/issue-1
	api DELETE /worktrees/widgets-issue-1
	assert_status "DELETE /worktrees of a removed worktree: 404" 404
	api GET /worktrees
	assert_jq "the removed worktree is no longer listed" 'map(select(.issue == 1)) == []'
fi
api DELETE /worktrees/widgets-issue-1 -H 'Origin: http://evil.example'
assert_status "DELETE /worktrees from a foreign Origin: 403" 403

# --- an uncommitted change inside a submodule -----------------------------------------------------
start 2
WT2=$T/code/widgets-issue-2
agent_sh "$WT2" 'git -c protocol.file.allow=always submodule add -q "$1" lib &&
	git commit -q -m "add lib" && echo "changed in the submodule" >>lib/README.md' \
	"file://$T/remotes/acme/lib.git" || fail "set up a submodule with a change"
api DELETE /sessions/widgets-2
assert_status "DELETE with a modified submodule: 200" 200
if [ "$GIT_LAYOUT" = store ]; then
	assert_json "modified submodule: kept" '.' \
		'{"status":"stopped","worktree":"kept","reason":"uncommitted changes"}'
else
	assert_json "modified submodule: kept, and named" '.' \
		'{"status":"stopped","worktree":"kept","reason":"modified submodule lib"}'
fi
assert_match "the change inside the submodule is still there" "changed in the submodule" \
	"$(cat "$WT2/lib/README.md" 2>&1)"

# A worktree that a session uses is the session's to delete.
start 2
api DELETE '/worktrees/widgets-issue-2?force=true'
assert_status "DELETE /worktrees of a session's worktree: 409" 409
assert_json "409 session_exists" '.code' '"session_exists"'
check "the session's worktree is untouched" test -d "$WT2/lib"
api GET /worktrees
assert_json "the listing names the session that uses it" \
	'map(select(.issue == 2)) | .[0].session' '"widgets-2"'
api DELETE '/sessions/widgets-2?force=true'
assert_json "forced DELETE /sessions removes it (no commit to keep)" '.' \
	'{"status":"stopped","worktree":"removed","ignoredRemoved":0}'
check_not "forced DELETE /sessions: the directory is gone" test -e "$WT2"

# --- ignored files: removed, and counted ----------------------------------------------------------
start 3
WT3=$T/code/widgets-issue-3
agent_sh "$WT3" 'printf "*.log\nout/\n" >.gitignore && git add .gitignore &&
	git commit -q -m "ignore build outputs" && echo x >build.log && mkdir out &&
	echo y >out/a.o && echo z >out/b.o' || fail "make ignored files"
api DELETE /sessions/widgets-3
assert_json "ignored files are removed and counted" '.' \
	'{"status":"stopped","worktree":"removed","ignoredRemoved":3}'
check_not "ignored files: the directory is gone" test -e "$WT3"

# --- HEAD on another branch -----------------------------------------------------------------------
start 5
WT5=$T/code/widgets-issue-5
agent_sh "$WT5" 'git checkout -q -b experiment' || fail "switch to another branch"
if [ "$GIT_LAYOUT" = store ]; then
	agent_sh "$WT5" 'echo e >e.txt && git add e.txt && git commit -q -m experiment' ||
		fail "commit on the other branch"
fi
E5=$(git -C "$WT5" rev-parse HEAD)
api DELETE /sessions/widgets-5
if [ "$GIT_LAYOUT" = store ]; then
	# Its other branches go to the store, so the repository may go.
	assert_json "another branch: removed" '.' \
		'{"status":"stopped","worktree":"removed","ignoredRemoved":0}'
	check_not "another branch: the directory is gone" test -e "$WT5"
	assert_match "another branch: the store keeps it" \
		"^refs/agentd/kept/widgets-5-[0-9]+-branches/experiment $E5\$" \
		"$(git -C "$BARE" for-each-ref --format='%(refname) %(objectname)' refs/agentd/kept/ |
			grep '^refs/agentd/kept/widgets-5-')"
else
	assert_json "another branch: kept" '.' \
		'{"status":"stopped","worktree":"kept","reason":"HEAD is on branch experiment, not feat/issue-5"}'
	api DELETE '/worktrees/widgets-issue-5?force=true'
	assert_status "forced DELETE /worktrees on another branch: 200" 200
	assert_jq "nothing needed keeping: no keptRef" '.worktree == "removed" and (has("keptRef") | not)'
fi

# --- an ordinary directory at the worktree path ---------------------------------------------------
agent_sh "$T/code" 'mkdir -p widgets-issue-4 && echo mine >widgets-issue-4/notes.txt'
create acme widgets 4
assert_state "a session over an ordinary directory fails" widgets-4 failed 30
api DELETE /sessions/widgets-4
assert_status "DELETE over an ordinary directory: 200" 200
assert_json "an ordinary directory is kept, and the answer says so" '.' \
	"{\"status\":\"stopped\",\"worktree\":\"kept\",\"reason\":\"$T/code/widgets-issue-4 is not a worktree of acme/widgets; it was left alone\"}"
check "the ordinary directory's file is untouched" test -f "$T/code/widgets-issue-4/notes.txt"
create acme widgets 4
assert_state "again: failed" widgets-4 failed 30
api DELETE '/sessions/widgets-4?force=true'
assert_json "even forced, an ordinary directory is kept" '.worktree' '"kept"'
check "forced: the ordinary directory's file is untouched" test -f "$T/code/widgets-issue-4/notes.txt"
api DELETE /worktrees/widgets-issue-4
assert_status "DELETE /worktrees of an ordinary directory: 404" 404

# --- a worktree the agent replaced with a symlink ---------------------------------------------------
# Never removed, forced or not (it is no worktree any more): no answer may offer a force.
start 7
agent_sh "$T/code" 'mv widgets-issue-7 widgets-issue-7.real && ln -s widgets-issue-7.real widgets-issue-7' ||
	fail "replace widgets-issue-7 with a symlink"
api DELETE /sessions/widgets-7
assert_json "a symlinked worktree is kept" '.worktree' '"kept"'
for q in '' '?force=true'; do
	api DELETE "/worktrees/widgets-issue-7$q"
	if [ "$GIT_LAYOUT" = store ]; then
		# No repository of the store is there: nothing is listed at that path.
		assert_status "DELETE /worktrees/widgets-issue-7$q of a symlink: 404" 404
	else
		assert_status "DELETE /worktrees/widgets-issue-7$q of a symlink: 409" 409
		assert_json "DELETE /worktrees/widgets-issue-7$q: kept, not a worktree" '[.code, .reason]' \
			"[\"worktree_kept\",\"$T/code/widgets-issue-7 is not a worktree of acme/widgets; it was left alone\"]"
	fi
	check_not "DELETE /worktrees/widgets-issue-7$q: the answer offers no force that is refused" \
		grep -q 'force' <<<"$(jq -r .error <<<"$BODY")"
done
check "the symlink's target is untouched" test -d "$T/code/widgets-issue-7.real"

# --- DELETE /worktrees: malformed names -----------------------------------------------------------
for bad in widgets widgets-issue-0 widgets-issue-07 -issue-3 'a%20b-issue-1' 'widgets-issue-3x'; do
	api DELETE "/worktrees/$bad"
	assert_status "DELETE /worktrees/$bad: 400" 400
	assert_error_body "DELETE /worktrees/$bad: error shape"
done
api DELETE /worktrees/widgets-issue-999
assert_status "DELETE /worktrees of an unknown worktree: 404" 404

# --- DELETE /branches -----------------------------------------------------------------------------
for bad in main feat/issue-07 feat/issue-1/x feat/other 'feat/issue-1%3Bx'; do
	api DELETE "/branches/acme/widgets/$bad"
	assert_status "DELETE /branches/acme/widgets/$bad: 400" 400
	assert_error_body "DELETE /branches/acme/widgets/$bad: error shape"
done
api DELETE /branches/-acme/widgets/feat/issue-1
assert_status "DELETE /branches with a bad owner: 400" 400
api DELETE /branches/acme/nothing/feat/issue-1
assert_status "DELETE /branches of an unmanaged repository: 404" 404
check_not "nothing made on disk for it" test -e "$T/code/.repos/acme/nothing.git.lock"
api DELETE /branches/acme/widgets/feat/issue-999
assert_status "DELETE /branches of an unknown branch: 404" 404

start 6
WT6=$T/code/widgets-issue-6
api DELETE /branches/acme/widgets/feat/issue-6
assert_status "DELETE /branches of a checked-out branch: 409" 409
assert_json "checked out: code" '.code' '"branch_checked_out"'
agent_sh "$WT6" 'echo work >work.txt && git add work.txt && git commit -q -m work' ||
	fail "commit on feat/issue-6"
api DELETE /sessions/widgets-6
assert_json "clean with a commit: removed" '.worktree' '"removed"'
api DELETE /branches/acme/widgets/feat/issue-6
assert_status "DELETE /branches of an unpushed branch: 409" 409
assert_json "unpushed: code" '.code' '"branch_not_merged"'
assert_match "unpushed: the reason counts the commit" '1 commit ' "$(jq -r .error <<<"$BODY")"
check "unpushed: the branch stays" git -C "$BARE" rev-parse -q --verify refs/heads/feat/issue-6
if [ "$GIT_LAYOUT" = store ]; then
	# The store is the daemon's: the branch reaches origin from elsewhere (the operator here).
	git -C "$BARE" push -q "file://$T/remotes/acme/widgets.git" feat/issue-6 ||
		fail "push feat/issue-6 from the store"
else
	as_agent git -C "$BARE" push -q origin feat/issue-6 || fail "push feat/issue-6 (as the agent)"
fi
api DELETE /branches/acme/widgets/feat/issue-6
assert_status "DELETE /branches of a pushed branch: 200" 200
assert_json "pushed: deleted" '.' \
	'{"repo":{"owner":"acme","name":"widgets"},"name":"feat/issue-6","deleted":true}'
check_not "pushed: the branch is gone" git -C "$BARE" rev-parse -q --verify refs/heads/feat/issue-6
api DELETE /branches/acme/widgets/feat/issue-1
assert_status "a branch with no commits of its own (merged): 200" 200
api GET /branches
assert_jq "deleted branches are no longer listed" \
	'map(select(.issue == 1 or .issue == 6)) == []'

#!/usr/bin/env bash
# DELETE after the merge, in either git layout (test_pr_delete_store.sh runs it in the store
# layout): a session whose pull request is merged (on the fake GitHub API, and really merged into
# main of the local bare remote) is finished, and DELETE without force removes its worktree (or
# session repository) and its branch; every commit stays reachable from origin's main. A commit
# made after the last push keeps the branch (with its commit), and uncommitted work keeps the
# worktree, as for any session. On the way, GitHub's limits: a 429 on the checks of a merged pull
# request, a spent primary rate limit, and a merge the poller has not seen yet.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=SCRIPTDIR/../fakes/lib_fakes.sh
source "$REPO/tests/fakes/lib_fakes.sh"
# shellcheck source=SCRIPTDIR/../fakes/lib_github.sh
source "$REPO/tests/fakes/lib_github.sh"
trap 'rc=$?; stop_fake_github; (exit $rc); cleanup' EXIT

start_fake_github || exit 1

SECRETS=$T/secrets
mkdir -p "$SECRETS" && chmod 700 "$SECRETS"
printf '%s\n' "$GH_TOKEN_GOOD" >"$SECRETS/GH_TOKEN"
make_remote acme widgets || exit 1
REMOTE=$T/remotes/acme/widgets.git
start_stack "AGENTD_GITHUB_API=$GH_URL" "AGENTD_SECRETS_DIR=$SECRETS" \
	AGENTD_PR_POLL_SECONDS=1 GH_TOKEN= GITHUB_TOKEN= || exit 1

# ship N: a session of issue N with two commits and its pull request opened; WT is its worktree,
# SHA its HEAD.
ship() {
	create acme widgets "$1"
	assert_status "create widgets-$1: 201" 201
	assert_state "widgets-$1 becomes running" "widgets-$1" running 60
	WT=$T/code/widgets-issue-$1
	agent_sh "$WT" 'printf "int w$1(void) { return $1; }\n" >"w$1.c" && git add "w$1.c" &&
		git commit -q -m "Add w$1" && printf "/* docs */\n" >>"w$1.c" &&
		git commit -q -am "Document w$1"' "$1" || fail "commit in widgets-$1"
	SHA=$(agent_sh "$WT" 'git rev-parse HEAD')
	api POST "/sessions/widgets-$1/pr"
	assert_status "open the pull request of widgets-$1: 201" 201
	PR=$(jq -r .pr.number <<<"$BODY")
}

# merge_upstream N PR: merges feat/issue-N into main of the bare remote, and lists PR in MERGED.
merge_upstream() {
	local work=$T/work/merge-$1
	git clone -q "$REMOTE" "$work" &&
		git -C "$work" -c user.name=maintainer -c user.email=m@example.com merge -q --no-ff \
			-m "Merge pull request #$2" "origin/feat/issue-$1" &&
		git -C "$work" push -q origin main && rm -rf "$work" ||
		fail "merge feat/issue-$1 into the remote's main"
	MERGED+=("$2")
}

# merge N PR [CONTROL]: merges feat/issue-N into main of the bare remote (a merge commit, as
# GitHub's merge button makes) and the pull request PR on the fake (CONTROL: more of the fake's
# control fields, `"k": v, ...`), then waits for the session to be finished.
merge() {
	merge_upstream "$1" "$2"
	gh_control "{\"merge\": [$(
		IFS=,
		echo "${MERGED[*]}"
	)]${3:+, $3}}"
	if wait_for 20 eval "get_session widgets-$1"'; [ "$(jq -r .finished <<<"$BODY")" == true ]'; then
		pass "#$2 merged: widgets-$1 is finished"
	else
		fail "#$2 merged: widgets-$1 is finished" "not within 20 s" "${BODY:0:600}"
	fi
}
MERGED=()
KEPT=$(kept_repo acme widgets)

# Merged and nothing after the last push: the worktree and the branch go, without force.
ship 7
merge 7 "$PR"
api DELETE /sessions/widgets-7
assert_status "delete the merged widgets-7: 200" 200
assert_jq "merged: worktree removed and branch deleted" \
	'.worktree == "removed" and .branch == "deleted" and .keptRef == null'
check_not "merged: the worktree's directory is gone" test -e "$WT"
check_not "merged: no feat/issue-7 is left where agentd keeps branches" \
	git --git-dir="$KEPT" rev-parse --verify -q refs/heads/feat/issue-7
check "merged: the branch's commits are reachable from origin's main" \
	git --git-dir="$REMOTE" merge-base --is-ancestor "$SHA" main
api GET /branches
assert_jq "merged: GET /branches no longer lists feat/issue-7" \
	'[.[] | select(.name == "feat/issue-7")] == []'

# Merged, then one more commit that was never pushed: the worktree goes (its commits are on the
# branch), the branch stays with that commit. GitHub limits the poll of the checks that follows
# the poll which sees the merge: the merge is recorded all the same (the pull request's next
# answer is a 304, which says nothing new).
ship 8
merge 8 "$PR" '"merged_checks_limit": 1, "retry_after": 1'
check "GitHub's 429 after the merge was met" test "$(gh_count '.status == 429')" -ge 1
agent_sh "$WT" 'printf "late\n" >late.txt && git add late.txt && git commit -q -m "Late"' ||
	fail "a commit after the merge in widgets-8"
LATE=$(agent_sh "$WT" 'git rev-parse HEAD')
api DELETE /sessions/widgets-8
assert_status "delete widgets-8 with an unpushed commit: 200" 200
assert_jq "an unpushed commit: worktree removed, branch kept with the reason" \
	'.worktree == "removed" and .branch == "kept" and
	 (.branchReason | test("1 commit that neither origin/feat/issue-8 nor"))'
assert_eq "an unpushed commit: the kept branch has it" "$LATE" \
	"$(git --git-dir="$KEPT" rev-parse refs/heads/feat/issue-8 2>&1)"

# Merged with uncommitted work: the worktree stays (as always), and so does the branch.
ship 9
merge 9 "$PR"
agent_sh "$WT" 'printf "draft\n" >notes.txt' || fail "uncommitted work in widgets-9"
api DELETE /sessions/widgets-9
assert_status "delete widgets-9 with uncommitted work: 200" 200
assert_jq "uncommitted work keeps the worktree, and the branch with it" \
	'.worktree == "kept" and .reason == "uncommitted changes" and .branch == null'
check "uncommitted work: the file is still there" test -f "$WT/notes.txt"
assert_eq "uncommitted work: the branch is still at HEAD" "$SHA" \
	"$(agent_sh "$WT" 'git rev-parse refs/heads/feat/issue-9')"

# The primary rate limit spent (403, X-RateLimit-Remaining 0, no Retry-After): no request at all
# until X-RateLimit-Reset.
ship 10
gh_control "{\"merge\": [$(
	IFS=,
	echo "${MERGED[*]}"
)], \"primary_limit\": 1, \"reset_in\": 4}"
if wait_for 20 eval '[ "$(gh_count ".status == 403")" -ge 1 ]'; then
	pass "the poller meets the spent rate limit"
else
	fail "the poller meets the spent rate limit" "no 403 within 20 s"
fi
sleep 6
gap=$(jq -s '(map(select(.status == 403)) | last | .time) as $t |
	(map(select(.time > $t)) | first | .time) - $t' "$GH_LOG")
check "after the spent limit, the next request waited for X-RateLimit-Reset (${gap} s)" \
	python3 -c "import sys; sys.exit(0 if float('$gap') >= 3.0 else 1)"

# Closed without a merge: not finished, polled no more, and DELETE keeps the branch as today.
gh_control "{\"merge\": [$(
	IFS=,
	echo "${MERGED[*]}"
)], \"close\": [$PR]}"
if wait_for 20 eval 'get_session widgets-10; [ "$(jq -r .pr.state <<<"$BODY")" == closed ]'; then
	pass "#$PR closed: the session shows it"
else
	fail "#$PR closed: the session shows it" "not within 20 s" "${BODY:0:600}"
fi
assert_jq "closed: not finished" '.finished == false'
sleep 2
polls=$(gh_count "(.path | test(\"/pulls/$PR\$\"))")
sleep 3
assert_eq "closed: no poll of it any more" "$polls" "$(gh_count "(.path | test(\"/pulls/$PR\$\"))")"
api DELETE /sessions/widgets-10
assert_status "delete the closed widgets-10: 200" 200
assert_jq "closed: worktree removed, branch kept" \
	'.worktree == "removed" and .branch == null'
check "closed: the branch stays" \
	git --git-dir="$KEPT" rev-parse --verify -q refs/heads/feat/issue-10

# Merged a moment before the DELETE, before the poller saw it (GitHub's conditional answers lag
# behind): DELETE asks GitHub once, unconditionally, and the worktree and the branch go.
ship 11
if wait_for 20 eval "[ \"\$(gh_count '.path == \"/repos/acme/widgets/pulls/$PR\" and .etag != null')\" -ge 1 ]"; then
	pass "the poller polls #$PR conditionally"
else
	fail "the poller polls #$PR conditionally" "no conditional poll within 20 s"
fi
merge_upstream 11 "$PR"
gh_control "{\"merge\": [$(
	IFS=,
	echo "${MERGED[*]}"
)], \"stale\": [$PR]}"
sleep 3
get_session widgets-11
assert_jq "the poller has not seen the merge of #$PR" '.pr.state == "open" and .finished == false'
api DELETE /sessions/widgets-11
assert_status "delete widgets-11 just after its merge: 200" 200
assert_jq "just merged: worktree removed and branch deleted" \
	'.worktree == "removed" and .branch == "deleted"'
check_not "just merged: no feat/issue-11 is left where agentd keeps branches" \
	git --git-dir="$KEPT" rev-parse --verify -q refs/heads/feat/issue-11
check "just merged: the branch's commits are reachable from origin's main" \
	git --git-dir="$REMOTE" merge-base --is-ancestor "$SHA" main

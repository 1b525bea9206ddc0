#!/usr/bin/env bash
# From work to a pull request: POST /sessions/<id>/pr pushes feat/issue-<N> to origin (a local
# bare file:// remote, pushed with libgit2 as the agent) with the session's GH_TOKEN (from
# AGENTD_SECRETS_DIR) and opens the pull request on a fake GitHub REST API (tests/fakes/
# github_api.py); the session records `pr`. No token, a bad token, a bad body, no commits, a
# second call (no second pull request), a pull request that already exists (GitHub's 422), a
# push that is no fast-forward of origin's branch, and a refusal of GitHub are answered with what
# happened. Then the poller (AGENTD_PR_POLL_SECONDS=1):
# checks pending then failed, as `pr` events on /events; conditional requests answered 304; at
# most one poll per pull request per interval; a merge makes the session finished (hidden by
# ?finished=false) and stops its polls; DELETE after the merge removes the worktree and the
# branch, and keeps a worktree with uncommitted work; a 403 secondary limit stops every poll for
# its Retry-After.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=SCRIPTDIR/../fakes/lib_fakes.sh
source "$REPO/tests/fakes/lib_fakes.sh"

# shellcheck source=SCRIPTDIR/../fakes/lib_github.sh
source "$REPO/tests/fakes/lib_github.sh"
trap 'rc=$?; stop_fake_github; (exit $rc); cleanup' EXIT

# wait_check DESC TIMEOUT SCRIPT: passes when SCRIPT (eval'd here) succeeds within TIMEOUT s.
wait_check() {
	if wait_for "$2" eval "$3"; then pass "$1"; else fail "$1" "not within $2 s" "${BODY:0:600}"; fi
}

start_fake_github || exit 1

SECRETS=$T/secrets
mkdir -p "$SECRETS" && chmod 700 "$SECRETS"
make_remote acme widgets || exit 1
start_stack "AGENTD_GITHUB_API=$GH_URL" "AGENTD_SECRETS_DIR=$SECRETS" \
	AGENTD_PR_POLL_SECONDS=1 GH_TOKEN= GITHUB_TOKEN= || exit 1

create acme widgets 7
assert_status "create widgets-7: 201" 201
assert_state "widgets-7 becomes running" widgets-7 running 60
WT=$T/code/widgets-issue-7

# Without a token nothing is pushed and GitHub is not asked.
api POST /sessions/widgets-7/pr
assert_status "no GH_TOKEN: 409" 409
assert_json "no GH_TOKEN: code" '.code' '"no_token"'
assert_match "no GH_TOKEN: the error says where a token goes" 'AGENTD_SECRETS_DIR' "$BODY"
assert_eq "no GH_TOKEN: GitHub was not asked" 0 "$(gh_count 'true')"

printf '%s\n' "$GH_TOKEN_GOOD" >"$SECRETS/GH_TOKEN"

# Nothing to review yet: the branch is the default branch.
api POST /sessions/widgets-7/pr
assert_status "no commits: 409" 409
assert_json "no commits: code" '.code' '"no_commits"'

agent_sh "$WT" 'printf "int widget(void) { return 7; }\n" >widget.c && git add widget.c &&
	git commit -q -m "Add the widget" && printf "/* docs */\n" >>widget.c &&
	git commit -q -am "Document the widget"' || fail "commit in the worktree"
HEAD_SHA=$(agent_sh "$WT" 'git rev-parse HEAD')

# Bounded, validated input: nothing reaches git or GitHub.
long_title=$(printf 't%.0s' $(seq 257))
for bad in "{\"title\":\"$long_title\"}" '{"title":""}' '{"title":7}' '{"draft":"yes"}' \
	'{"body":["x"]}' '{"reviewers":["a"]}' '[]' '{"title":"a\u0000b"}'; do
	api POST /sessions/widgets-7/pr "$bad"
	assert_status "bad body ${bad:0:30}: 400" 400
done
big_body=$(head -c 70000 /dev/zero | tr '\0' 'b')
api POST /sessions/widgets-7/pr "{\"body\":\"$big_body\"}"
check "a body over 64 KiB is refused (413 or 400: $STATUS)" test "$STATUS" == 413 -o "$STATUS" == 400
assert_eq "bad bodies: GitHub was not asked" 0 "$(gh_count '.method == "POST"')"

api POST /sessions/widgets-9/pr
assert_status "unknown session: 404" 404
api POST /sessions/Bad%20id/pr
assert_status "malformed id: 400" 400

# A token GitHub does not take: GitHub's own words come back.
printf 'ghp_revoked\n' >"$SECRETS/GH_TOKEN"
api POST /sessions/widgets-7/pr
assert_status "a bad token: 502" 502
assert_json "a bad token: code" '.code' '"github_error"'
assert_match "a bad token: GitHub's answer is in the error" '401 Bad credentials' "$BODY"
printf '%s\n' "$GH_TOKEN_GOOD" >"$SECRETS/GH_TOKEN"

# GitHub refuses (no rights to open one): what it said, and nothing recorded.
gh_control '{"deny_create": "Resource not accessible by personal access token"}'
api POST /sessions/widgets-7/pr
assert_status "GitHub refuses: 502" 502
assert_match "GitHub refuses: its message" '403 Resource not accessible by personal access token' "$BODY"
get_session widgets-7
assert_jq "a refused pull request is not recorded" '.pr == null and .finished == false'
gh_control '{}'

# Shipped: pushed to origin, opened with defaults from the issue and the commits.
api POST /sessions/widgets-7/pr
assert_status "open the pull request: 201" 201
assert_jq "the session records pr {number, url, state}" \
	'.pr.number == 12 and .pr.url == "https://github.com/acme/widgets/pull/12" and
	 .pr.state == "open" and .finished == false'
REMOTE_SHA=$(git --git-dir="$T/remotes/acme/widgets.git" rev-parse refs/heads/feat/issue-7 2>&1)
assert_eq "origin has feat/issue-7 at the worktree's HEAD" "$HEAD_SHA" "$REMOTE_SHA"
POST_BODY=$(jq -sc '[.[] | select(.method == "POST" and .status == 201)] | last | .body' "$GH_LOG")
assert_jq "GitHub got head, base, the oldest commit's subject and Closes #7" \
	'.head == "feat/issue-7" and .base == "main" and .title == "Add the widget" and
	 (.body | startswith("Closes #7")) and (.body | contains("Document the widget")) and
	 .draft == false' "$POST_BODY"
get_session widgets-7
assert_jq "GET /sessions/<id> shows the pr" '.pr.number == 12 and .pr.state == "open"'
api GET /sessions
assert_jq "the list shows the pr" '.[] | select(.id == "widgets-7") | .pr.number == 12'

# Idempotent: a second call pushes new work and answers the same pull request.
agent_sh "$WT" 'printf "more\n" >more.txt && git add more.txt && git commit -q -m "More"' ||
	fail "commit more"
posts_before=$(gh_count '.method == "POST"')
api POST /sessions/widgets-7/pr '{"title":"Another title"}'
assert_status "second call: 200" 200
assert_jq "second call: the same pull request" '.pr.number == 12'
assert_eq "second call: no second pull request was asked for" "$posts_before" \
	"$(gh_count '.method == "POST"')"
assert_eq "second call: the new commit reached origin" \
	"$(agent_sh "$WT" 'git rev-parse HEAD')" \
	"$(git --git-dir="$T/remotes/acme/widgets.git" rev-parse refs/heads/feat/issue-7)"

# A pull request that exists already (opened by hand): GitHub's 422 is answered with it.
create acme widgets 8
assert_status "create widgets-8: 201" 201
assert_state "widgets-8 becomes running" widgets-8 running 60
agent_sh "$T/code/widgets-issue-8" 'printf "x\n" >eight.txt && git add eight.txt &&
	git commit -q -m "Eight"' || fail "commit in widgets-8"
# Origin's branch has a commit the session lacks (someone else pushed to it): nothing is forced,
# and the answer says why.
remote_commit acme widgets feat/issue-8 || fail "an upstream commit on feat/issue-8"
api POST /sessions/widgets-8/pr
assert_status "origin's feat/issue-8 moved on: 409" 409
assert_json "origin's feat/issue-8 moved on: code" '.code' '"push_rejected"'
assert_match "origin's feat/issue-8 moved on: the error says it is no fast-forward" \
	'not a fast-forward' "$BODY"
git --git-dir="$T/remotes/acme/widgets.git" update-ref -d refs/heads/feat/issue-8 ||
	fail "drop the upstream feat/issue-8"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $GH_TOKEN_GOOD" \
	"$GH_URL/repos/acme/widgets/pulls" \
	-d '{"title":"by hand","head":"feat/issue-8","base":"main"}')
assert_eq "a pull request for feat/issue-8 opened by hand" 201 "$code"
api POST /sessions/widgets-8/pr '{"draft":true}'
assert_status "already exists: 200" 200
assert_jq "already exists: the existing pull request is recorded" \
	'.pr.number == 13 and .pr.url == "https://github.com/acme/widgets/pull/13"'
assert_eq "already exists: GitHub answered 422 once" 1 "$(gh_count '.status == 422')"

# A read-only identity may not ship.
VIEWER=$("$BUILD_DIR/fcgi-app/agentd-api" token add viewer --read-only)
code=$(curl -q -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $VIEWER" \
	"$BASE_URL/sessions/widgets-7/pr")
assert_eq "a read-only token cannot open a pull request" 403 "$code"

# ---- the poller: state and checks kept current, cheaply ----
gh_control '{"checks": {"*": [{"name": "build", "status": "in_progress", "conclusion": null}]}}'
wait_check "checks of #12 become pending" 20 \
	'get_session widgets-7; [ "$(jq -r .pr.checks.state <<<"$BODY")" == pending ]'
gh_control '{"checks": {"*": [{"name": "build", "status": "completed", "conclusion": "failure"},
	{"name": "lint", "status": "completed", "conclusion": "success"}]}}'
wait_check "checks of #12 fail, naming build" 20 \
	'get_session widgets-7; [ "$(jq -c .pr.checks <<<"$BODY")" == "{\"state\":\"failure\",\"failing\":[\"build\"]}" ]'
assert_jq "the list shows the failing checks" \
	'.pr.checks.state == "failure" and .finished == false'
EVLOG=$T/state/events.log
wait_check "a pr event says CI failed on acme/widgets#12" 10 \
	"grep -F '\"pr\"' '$EVLOG' | grep -F '\"failing\":[\"build\"]' | grep -qF '\"number\":12'"

# Nothing changes for a while: every poll is conditional and answered 304, at most one a second.
sleep 3
start=$(date +%s.%N)
sleep 4
polls=$(jq -s --argjson t "$start" \
	'[.[] | select(.time > $t and (.path | test("/pulls/12$")))] | length' "$GH_LOG")
check "at most one poll of #12 a second (got $polls in 4 s)" test "$polls" -le 5
check "#12 was polled meanwhile ($polls)" test "$polls" -ge 2
unchanged=$(jq -s --argjson t "$start" \
	'[.[] | select(.time > $t and .method == "GET" and .status != 304)] | length' "$GH_LOG")
assert_eq "unchanged: every poll was answered 304 (If-None-Match)" 0 "$unchanged"

# Merged: the session is finished, its activity as it was; no more polls of it.
activity_before=$(get_session widgets-7 && jq -r .activity <<<"$BODY")
gh_control '{"merge": [12]}'
wait_check "#12 merged: the session is finished" 20 \
	'get_session widgets-7; [ "$(jq -r "[.pr.state, .finished] | @tsv" <<<"$BODY")" == "merged	true" ]'
assert_jq "finished: state and activity are what they were" \
	'.state == "running" and .activity == "'"$activity_before"'"'
wait_check "a pr event says #12 was merged" 10 \
	"grep -F '\"pr\"' '$EVLOG' | grep -F '\"state\":\"merged\"' | grep -qF '\"finished\":true'"
api GET '/sessions?finished=false'
assert_status "?finished=false: 200" 200
assert_jq "?finished=false hides the merged session" \
	'([.[].id] | index("widgets-7") == null) and ([.[].id] | index("widgets-8") != null)'
api GET '/sessions?finished=true'
assert_jq "?finished=true shows only it" '[.[].id] == ["widgets-7"]'
api GET '/sessions?finished=maybe'
assert_status "?finished=maybe: 400" 400
sleep 2
after_merge=$(gh_count '(.path | test("/pulls/12$"))')
sleep 3
assert_eq "no poll of a merged pull request" "$after_merge" "$(gh_count '(.path | test("/pulls/12$"))')"

# DELETE after the merge: the worktree and the branch go, without force.
api DELETE /sessions/widgets-7
assert_status "delete the merged session: 200" 200
assert_jq "merged: worktree removed and branch deleted" \
	'.worktree == "removed" and .branch == "deleted"'
check_not "the clone has no feat/issue-7 any more" \
	git --git-dir="$(bare_clone acme widgets)" rev-parse --verify -q refs/heads/feat/issue-7

# A 403 secondary rate limit: no poll at all until its Retry-After has passed.
gh_control '{"secondary_limit": 1, "retry_after": 4}'
wait_check "the poller meets the secondary limit" 20 "[ \"\$(gh_count '.status == 403')\" -ge 1 ]"
sleep 6
gap=$(jq -s '(map(select(.status == 403)) | last | .time) as $t |
	(map(select(.time > $t)) | first | .time) - $t' "$GH_LOG")
check "after the 403, the next request waited for Retry-After (${gap} s)" \
	python3 -c "import sys; sys.exit(0 if float('$gap') >= 3.9 else 1)"

# Merged with uncommitted work: the worktree stays (as always), and so does the branch.
agent_sh "$T/code/widgets-issue-8" 'printf "draft\n" >notes.txt' || fail "uncommitted work in widgets-8"
gh_control '{"merge": [13]}'
wait_check "#13 merged: widgets-8 is finished" 20 \
	'get_session widgets-8; [ "$(jq -r .finished <<<"$BODY")" == true ]'
api DELETE /sessions/widgets-8
assert_status "delete widgets-8: 200" 200
assert_jq "uncommitted work keeps the worktree, and the branch with it" \
	'.worktree == "kept" and .branch == null'

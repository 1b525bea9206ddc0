#!/usr/bin/env bash
# agentd-telegram and pull requests, with the fake Bot API and the fake GitHub API: /help lists
# /pr; /pr of the chat's session pushes its branch and opens the pull request (then says it
# exists on a second call); the chat that follows the session is told "CI failed on
# acme/widgets#12" with the failing checks and, later, that the pull request was merged and the
# session is finished; a bad id gets the usage, an unknown one the API's word.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/telegram/lib_telegram.sh"
# shellcheck source=SCRIPTDIR/../fakes/lib_github.sh
source "$REPO/tests/fakes/lib_github.sh"
trap 'rc=$?; stop_fake_bot; stop_fake_github; (exit $rc); cleanup' EXIT

make_remote acme widgets
start_fake_github || exit 1
start_fake_bot || exit 1
mkdir -p "$T/secrets" && chmod 700 "$T/secrets"
printf '%s\n' "$GH_TOKEN_GOOD" >"$T/secrets/GH_TOKEN"
start_stack "${TG_STACK[@]}" "AGENTD_GITHUB_API=$GH_URL" "AGENTD_SECRETS_DIR=$T/secrets" \
	AGENTD_PR_POLL_SECONDS=1 || exit 1
check "deploy/up starts agentd-telegram, which polls the fake Bot API" wait_telegram 30
U=$TG_USER
WT=$T/code/widgets-issue-1

tg_write "$U" "/help"
assert_tg "/help lists /pr" "$U" 'select(.text | test("/pr \\[<id>\\]: push the session"))'

tg_write "$U" "/new acme/widgets 1"
assert_tg "/new makes widgets-1 the chat's session" "$U" 'select(.text | test("^widgets-1 is starting"))'
assert_state "the session runs" widgets-1 running 60
agent_sh "$WT" 'printf "one\n" >feature.c && git add feature.c && git commit -q -m "Add feature"' ||
	fail "commit in the worktree"

tg_write "$U" "/pr"
assert_tg "/pr opens the pull request" "$U" \
	'select(.text | startswith("widgets-1: pull request acme/widgets#12 opened (open, checks none)\nhttps://github.com/acme/widgets/pull/12"))'
assert_tg "the chat is told the pull request was opened (a pr event)" "$U" \
	'select(.text == "Pull request acme/widgets#12 opened for widgets-1: https://github.com/acme/widgets/pull/12")'
tg_write "$U" "/pr widgets-1"
assert_tg "/pr again: the same pull request" "$U" \
	'select(.text | startswith("widgets-1: pull request acme/widgets#12 exists (open"))'

gh_control '{"checks": {"*": [{"name": "build", "status": "completed", "conclusion": "failure"},
	{"name": "test", "status": "completed", "conclusion": "timed_out"}]}}'
assert_tg "CI failed on acme/widgets#12, naming the checks" "$U" \
	'select(.text | startswith("CI failed on acme/widgets#12 (widgets-1): build, test"))'
gh_control '{"merge": [12]}'
assert_tg "merged: the session is finished" "$U" \
	'select(.text | startswith("acme/widgets#12 was merged: widgets-1 is finished."))'

tg_write "$U" "/pr not/an-id"
assert_tg "/pr with a bad id: usage" "$U" 'select(.text == "Usage: /pr [<id>]")'
tg_write "$U" "/pr widgets-9"
assert_tg "/pr of an unknown session: the API's word" "$U" \
	'select(.text | test("^widgets-9: no pull request: no session widgets-9"))'
assert_eq "the fake Bot API refused nothing" '[]' "$(tg_stats | jq -c .violations)"

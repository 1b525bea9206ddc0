#!/usr/bin/env bash
# The web UI's "Pull request" button in a real browser (Debian's chromium, headless, driven by
# puppeteer-core: web/pr.js), with the fake GitHub API: a session with a commit; the button opens
# the pull request, its link and badges show its state and the checks the poller finds, at
# 1280x800 and, for a read-only identity, at 390x844. Screenshots go to
# $AGENTD_TEST_BUILD_DIR/web-pr (the failed ones FAILED-…).
source "$(dirname "$0")/lib.sh"
# shellcheck source=SCRIPTDIR/../fakes/lib_fakes.sh
source "$REPO/tests/fakes/lib_fakes.sh"
# shellcheck source=SCRIPTDIR/../fakes/lib_github.sh
source "$REPO/tests/fakes/lib_github.sh"
trap 'rc=$?; stop_fake_github; (exit $rc); cleanup' EXIT

SHOTS=$BUILD_DIR/web-pr
browser_ready || exit 1

make_remote acme widgets || exit 1
start_fake_github || exit 1
mkdir -p "$T/secrets" && chmod 700 "$T/secrets"
printf '%s\n' "$GH_TOKEN_GOOD" >"$T/secrets/GH_TOKEN"
start_stack "AGENTD_GITHUB_API=$GH_URL" "AGENTD_SECRETS_DIR=$T/secrets" AGENTD_PR_POLL_SECONDS=1 ||
	exit 1
VIEWER_TOKEN=$("$BUILD_DIR/fcgi-app/agentd-api" token add web-viewer --read-only) || {
	fail "a read-only token for the phone's browser context" "agentd-api token add failed"
	exit 1
}
create acme widgets 1
assert_status "create widgets-1: 201" 201
assert_state "widgets-1 becomes running" widgets-1 running 60
agent_sh "$T/code/widgets-issue-1" 'printf "one\n" >feature.c && git add feature.c &&
	git commit -q -m "Add feature"' || fail "commit in the worktree"

rm -rf "$SHOTS"
mkdir -p "$SHOTS"
log "browser scenario (screenshots in $SHOTS)"
browser_run pr pr 240 SHOTS="$SHOTS" VIEWER_TOKEN="$VIEWER_TOKEN" GH_CONTROL="$GH_CONTROL"

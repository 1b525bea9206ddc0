#!/usr/bin/env bash
# The web UI's Changes view in a real browser (Debian's chromium, headless, driven
# by puppeteer-core: web/changes.js): a structured session whose worktree has a commit, an
# uncommitted change and an untracked file; the files with +/−, a file's patch, "uncommitted
# only", the refresh when the agent's turn ends, at 1280x800 and, for a read-only identity, at
# 390x844. Screenshots go to $AGENTD_TEST_BUILD_DIR/web-changes (the failed ones FAILED-…).
source "$(dirname "$0")/lib.sh"

SHOTS=$BUILD_DIR/web-changes
browser_ready || exit 1

make_remote acme widgets || exit 1
start_stack || exit 1
VIEWER_TOKEN=$("$BUILD_DIR/fcgi-app/agentd-api" token add web-viewer --read-only) || {
	fail "a read-only token for the phone's browser context" "agentd-api token add failed"
	exit 1
}
api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 1, mode: "structured"}')"
assert_status "create widgets-1 (structured): 201" 201
assert_state "widgets-1 becomes running" widgets-1 running 60
WT=$T/code/widgets-issue-1
agent_sh "$WT" 'printf "one\ntwo\n" >feature.c && git add feature.c &&
	git commit -q -m "add feature.c" && printf "int x;\n" >>main.c && printf "fresh\n" >notes.txt' ||
	fail "make changes in the worktree"

# The browser's way to work in the worktree as the agent does.
AGENT_SH=$T/agent-sh
cat >"$AGENT_SH" <<SH
#!/usr/bin/env bash
cd "\$1" || exit 1
if [ "\$(id -u)" -ne 0 ]; then exec bash -c "\$2"; fi
exec setpriv --reuid="$AGENT_UID" --regid="$AGENT_GID" --init-groups -- env HOME="$T/home" bash -c "\$2"
SH
chmod 755 "$AGENT_SH"

rm -rf "$SHOTS"
mkdir -p "$SHOTS"
log "browser scenario (screenshots in $SHOTS)"
browser_run changes changes 240 SHOTS="$SHOTS" VIEWER_TOKEN="$VIEWER_TOKEN" CODE_DIR="$T/code" \
	AGENT_SH="$AGENT_SH"

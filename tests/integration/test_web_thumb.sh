#!/usr/bin/env bash
# The web UI made for a thumb (web/thumb.js in Debian's chromium): Markdown answers with the
# agent's HTML inert, tool cards, search, the next waiting session, a failed session explained,
# the dark theme, and on a phone (390x844, 844x390) the key bar's keys reaching the pane and the
# font size kept. Screenshots go to $AGENTD_TEST_BUILD_DIR/web-thumb.
source "$(dirname "$0")/lib.sh"

SHOTS=$BUILD_DIR/web-thumb
browser_ready || exit 1
for f in xterm.esm.js marked.esm.js purify.esm.js; do
	if [ ! -f "$REPO/nginx/html/assets/vendor/$f" ]; then
		fail "the web UI's vendored modules are installed (web/install)" "nginx/html/assets/vendor/$f is missing"
		exit 1
	fi
done

make_remote acme widgets
make_remote acme gadgets
start_stack AGENTD_PERMISSION_TIMEOUT=300 || exit 1
rm -rf "$SHOTS"
mkdir -p "$SHOTS"
log "browser scenario (screenshots in $SHOTS)"
browser_run thumb thumb 300 SHOTS="$SHOTS" TMUX_SOCK="$TMUX_SOCK"

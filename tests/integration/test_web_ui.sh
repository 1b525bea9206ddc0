#!/usr/bin/env bash
# The web UI in a real browser (Debian's chromium, headless, driven by puppeteer-core from
# tests/node_modules: web/ui.js), on a laptop and on a phone: create a session, its terminal
# (input, resize, reconnect after a bridge kill, a second tab), the mode switch, a structured
# conversation (streamed answer; each prompt shown once, then again in order after a reload from
# claude's replays; a permission card allowed here and seen resolved in a second browser
# context, also after its reload; Allow for this session with claude's suggestions; Interrupt),
# the waiting badge, tab title and notification, delete with the kept worktree then removed by
# force; a read-only identity (a third browser context, a --read-only token) with its badge, the
# list, the terminal and the conversation but no control that would fail, its typing kept from
# the pane; at 390x844 (xterm's DOM renderer) the key bar (Enter, Ctrl-C), the bootstrap prompt
# as the first message, a permission card denied with a reason, and a link with another
# identity's token (GET /?token=), which asks before it replaces the sign-in; a create whose answer
# comes after its failure ends failed; the stack stopped under open pages (laptop and phone) shows
# offline, no green health and disabled Allow/Deny, and both come back with the stack. Every
# request of the page must stay on its origin. Screenshots of each step go
# to $AGENTD_TEST_BUILD_DIR/web-ui (the failed ones are named FAILED-…).
source "$(dirname "$0")/lib.sh"

SHOTS=$BUILD_DIR/web-ui
browser_ready || exit 1
if [ ! -f "$REPO/nginx/html/assets/vendor/xterm.esm.js" ]; then
	fail "the web UI's xterm.js is installed (web/install)" "nginx/html/assets/vendor/xterm.esm.js is missing"
	exit 1
fi

make_remote acme widgets
start_stack AGENTD_PERMISSION_TIMEOUT=300 || exit 1
VIEWER_TOKEN=$("$BUILD_DIR/fcgi-app/agentd-api" token add web-viewer --read-only) || {
	fail "a read-only token for the viewer's browser context" "agentd-api token add failed"
	exit 1
}

rm -rf "$SHOTS"
mkdir -p "$SHOTS"
CTL=$T/stack-ctl
mkdir -p "$CTL"
log "browser scenario (screenshots in $SHOTS)"
BASE_URL=$BASE_URL SHOTS=$SHOTS VIEWER_TOKEN=$VIEWER_TOKEN TMUX_SOCK=$TMUX_SOCK CODE_DIR=$T/code UP_PID=$UP_PID \
	BRIDGE_EXE=$BUILD_DIR/ptybridge/agentd-bridge CHROMIUM=$CHROMIUM STACK_CTL=$CTL \
	timeout -k 5 540 node "$REPO/tests/integration/web/ui.js" >"$T/logs/ui.out" 2>"$T/logs/ui.err" &
NODE_PID=$!
# The browser run asks for the stack to be stopped and started again (web/ui.js: stack()).
while kill -0 "$NODE_PID" 2>/dev/null; do
	if [ -f "$CTL/request" ]; then
		req=$(cat "$CTL/request")
		rm -f "$CTL/request"
		case $req in
		stop) stop_stack ;;
		start) start_stack ;;
		esac
		: >"$CTL/done-$req"
	fi
	sleep 0.2
done
wait "$NODE_PID"
rc=$?
# Each line of the browser's run is one of our checks.
tap_report "$T/logs/ui.out" $rc "$T/logs/ui.err"

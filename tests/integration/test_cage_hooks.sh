#!/usr/bin/env bash
# A caged terminal session's claude hooks keep reaching agentd-bridge after the bridge restarts
# (issue 22): the cage binds the hook socket's directory, not the socket file, so the socket a
# new bridge makes there is the one the pane's hooks find. The fake agent (cage_hooks/agent) runs
# the hook commands of the settings agentd gives claude, from inside its cage, for each event
# typed into its pane; UserPromptSubmit makes the session's activity "working", Stop "idle".
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	fail "the cage test runs as root (the daemons do; the agents then do not)"
	exit 1
fi
if ! command -v bwrap >/dev/null; then
	fail "bwrap is installed (Debian package bubblewrap)"
	exit 1
fi

make_remote acme widgets
start_stack AGENTD_CAGE=auto AGENTD_CLAUDE="$REPO/tests/integration/cage_hooks/agent" \
	AGENTD_HOMES_DIR="$T/homes" || exit 1
check "agentd-api says at start that sessions are caged" \
	grep -q "sessions are caged" "$T/logs/up.log"

create acme widgets 1
assert_status "POST /sessions: 201" 201
ID=widgets-1
assert_state "the session runs" "$ID" running 60
get_session "$ID"
assert_jq "it is caged: it has a uid of its own" '.uid | type == "number"'

# hook EVENT: types EVENT into the pane; the fake agent runs its hook.
hook() { tmx send-keys -t "=$ID:" "$1" Enter; }
# assert_hook DESC EVENT ACTIVITY: EVENT from the pane makes the session's activity ACTIVITY.
assert_hook() {
	hook "$2"
	if wait_activity "$ID" ".activity == \"$3\"" 20; then
		pass "$1"
	else
		fail "$1" "activity $(jq -r .activity <<<"$BODY")" \
			"$(tmx capture-pane -p -t "=$ID:" | grep -v '^$' | tail -5)"
	fi
}

check "the fake agent started" wait_for 20 bash -c \
	"tmux -S '$TMUX_SOCK' capture-pane -p -t '=$ID:' | grep -q 'fake agent ready'"
assert_hook "a hook from the caged pane reaches the bridge (working)" UserPromptSubmit working
assert_hook "... and the next one (idle)" Stop idle
PANE=$(pane_pid "$ID")

# --- the bridge restarts: its new socket is the one the running pane's hooks reach ---------------
OLD=$(bridge_pid)
kill -KILL "$OLD"
deadline=$((SECONDS + 30))
while { NEW=$(bridge_pid); [ -z "$NEW" ] || [ "$NEW" == "$OLD" ] ||
	! curl -s -o /dev/null "$BASE_URL/healthz"; } && [ $SECONDS -lt $deadline ]; do
	sleep 0.2
done
assert_ne "kill -9 of the bridge: deploy/up started a new one" "$OLD" "${NEW:-$OLD}"
sleep 1 # the new bridge's socket
assert_eq "the pane was not relaunched" "$PANE" "$(pane_pid "$ID")"
assert_hook "after the bridge restart, a hook from the same caged pane still reaches it" \
	UserPromptSubmit working
assert_hook "... and the next one" Stop idle

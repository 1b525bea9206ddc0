#!/usr/bin/env bash
# Run by test_anywhere.sh from a checkout under a directory only root may enter, in /tmp: the
# stack starts, and the agents run what the tests give them from the checkout. Uncaged: the agent
# user runs the fake claude in a terminal session and agentd-host in a structured one, and any
# other uid may run both. `probe.sh caged`: a caged session (its own uid, its own /tmp) runs
# tests/integration/cage_limits/agent, which execs the fake claude by its path in the checkout.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../structured/lib_structured.sh"

nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

make_remote acme widgets || exit 1
if [ "${1:-}" == caged ]; then
	mkdir -p "$T/secrets" && chmod 0700 "$T/secrets"
	start_stack AGENTD_CLAUDE="$REPO/tests/integration/cage_limits/agent" \
		AGENTD_SECRETS_DIR="$T/secrets" AGENTD_CAGE=auto AGENTD_HOMES_DIR="$T/homes" || exit 1
	create acme widgets 3
	assert_status "caged: POST /sessions: 201" 201
	assert_state "caged: the session runs" widgets-3 running 60
	check "caged: the fake claude started in its pane (the agent found it in the checkout)" \
		wait_for 20 bash -c "ls '$T/homes/widgets-3/fake-claude/'*.json"
	assert_state "caged: the session still runs" widgets-3 running 5
	exit
fi

check "the agent user may run the fake claude" as_agent test -x "$FAKE_CLAUDE"
check "the agent user may run agentd-host" as_agent test -x "$BUILD_DIR/host/agentd-host"
check "another uid may run the fake claude" nobody test -x "$FAKE_CLAUDE"
check "another uid may run agentd-host" nobody test -x "$BUILD_DIR/host/agentd-host"

start_stack || exit 1
create acme widgets 1
assert_status "POST /sessions: 201" 201
assert_state "the terminal session runs" widgets-1 running 60
check "the fake claude started in its pane (as the agent)" claude_record widgets-1 20
structured_session acme widgets 2 >/dev/null &&
	assert_state "the structured session runs (agentd-host as the agent)" widgets-2 running 60

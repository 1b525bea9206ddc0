#!/usr/bin/env bash
# Run by test_anywhere.sh from a checkout under a directory only root may enter: the stack starts,
# the agent user runs the fake claude in a terminal session and agentd-host in a structured one,
# and any other uid (a caged session's) may run the fake claude and agentd-host too.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../structured/lib_structured.sh"

nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

check "the agent user may run the fake claude" as_agent test -x "$FAKE_CLAUDE"
check "the agent user may run agentd-host" as_agent test -x "$BUILD_DIR/host/agentd-host"
check "another uid may run the fake claude" nobody test -x "$FAKE_CLAUDE"
check "another uid may run agentd-host" nobody test -x "$BUILD_DIR/host/agentd-host"

make_remote acme widgets || exit 1
start_stack || exit 1

create acme widgets 1
assert_status "POST /sessions: 201" 201
assert_state "the terminal session runs" widgets-1 running 60
check "the fake claude started in its pane (as the agent)" claude_record widgets-1 20
structured_session acme widgets 2 >/dev/null &&
	assert_state "the structured session runs (agentd-host as the agent)" widgets-2 running 60

#!/usr/bin/env bash
# A caged agent cannot write into a terminal's input (issue 22): from inside a caged session's
# pane, as its agent, ioctl(TIOCSTI) and ioctl(TIOCLINUX) on its own tty fail with EPERM (the
# seccomp filter agentd-cage hands to bwrap, core/cageseccomp.h), while the agent runs on.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ "$(id -u)" -ne 0 ] || ! command -v bwrap >/dev/null; then
	log "SKIP: needs root and bwrap (sessions are not caged otherwise)"
	exit 0
fi

make_remote acme widgets || exit 1
# A secrets dir of its own (the cage hides it; the default /etc/agentd/secrets need not exist).
mkdir -p "$T/secrets" && chmod 0700 "$T/secrets"
start_stack AGENTD_CLAUDE="$REPO/tests/integration/cage_seccomp/agent" \
	AGENTD_SECRETS_DIR="$T/secrets" AGENTD_CAGE=auto AGENTD_HOMES_DIR="$T/homes" || exit 1
if grep -q "sessions are caged" "$T"/logs/* "$T"/run/*.log 2>/dev/null; then
	pass "the sessions are caged"
else
	fail "the sessions are caged" "$(grep -h "cage" "$T"/logs/* "$T"/run/*.log 2>/dev/null | head -3)"
fi

create acme widgets 1
assert_status "POST /sessions: 201" 201
assert_state "the session runs" widgets-1 running 30
OUT=$T/code/widgets-issue-1/.seccomp
if wait_for 20 test -s "$OUT"; then
	read -r sti linux <"$OUT"
	assert_eq "TIOCSTI on the pane's own tty, from inside the cage: EPERM" EPERM "$sti"
	assert_eq "TIOCLINUX on the pane's own tty, from inside the cage: EPERM" EPERM "$linux"
else
	fail "the agent wrote what the ioctls answered" "$(tmx capture-pane -p -t '=widgets-1:' | tail -5)"
fi
# The fake claude's record, in the session's own HOME: the agent went on after the refusals.
check "the agent runs on after the refusals" wait_for 10 bash -c "ls '$T/homes/widgets-1/fake-claude/'*.json"
assert_state "the session still runs" widgets-1 running 5

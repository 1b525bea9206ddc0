#!/usr/bin/env bash
# The web UI with an agent other than claude (web/agents.js in Debian's chromium): a structured
# session of the real codex (codex-acp, tests/package.json's pins, offline against
# tests/fakes/openai_api.py, set up as in test_real_agents_structured.sh) created from the form,
# its events in the common shape (docs/API.md, "Events of every agent") rendered by the same
# conversation view as claude's: the bootstrap prompt and its answer, a prompt sent from the page
# and its streamed answer, a tool permission card whose Allow lets the command run (the fake
# model sees the tool's result), on a laptop (1280x800) and a phone (390x844, where the
# conversation is replayed and a second card is allowed with a tap). The form remembers the agent
# last asked for, after Create and after a reload; every session shows its agent. Then gemini
# and opencode sessions from the same form: the bootstrap turn, a card allowed from the page.
# Screenshots go to $AGENTD_TEST_BUILD_DIR/web-agents.
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/integration/real_agents/lib_real_agents.sh"

SHOTS=$BUILD_DIR/web-agents
browser_ready || exit 1
need_codex_acp
trap 'rc=$?; stop_fake_apis; (exit $rc); cleanup' EXIT
start_fake_apis || exit 1

make_remote acme widgets
start_acp_agents_stack || exit 1

rm -rf "$SHOTS"
mkdir -p "$SHOTS"
log "browser scenario (screenshots in $SHOTS)"
browser_run agents agents 540 SHOTS="$SHOTS" CODE_DIR="$T/code" OPENAI_LOG="$OPENAI_LOG"

for sid in widgets-1 widgets-2 widgets-3; do
	api DELETE "/sessions/$sid?force=true"
	assert_status "$sid is deleted" 200
	deadline=$((SECONDS + 20))
	while tmux_has "$sid" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	check_not "its tmux session is gone" tmux_has "$sid"
done
assert_eq "no codex-acp of this test is left" "" "$(codex_acps)"

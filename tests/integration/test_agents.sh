#!/usr/bin/env bash
# The agents table (core/agents.h) through the API:
# - a custom agent from the configuration file (AGENTD_AGENT_MYTOOL_*: a tiny script that logs
#   its argv) is started with its command's words, its start words ({id}: agentSessionId) and
#   the bootstrap prompt glued to its prompt option (a prompt that looks like an option stays the
#   option's value); AGENTD_DEFAULT_AGENT picks it when the body names none;
# - the session object says agent and activitySource ("none": nothing reports a custom agent's
#   activity, so the bootstrap prompt does not make it "working"); claude's says "hooks";
# - an unknown or malformed agent is 400 unknown_agent listing the known ones, and nothing is
#   made; structured mode of an agent without one is 400 / 409 no_structured_mode;
# - the agent survives a restart of the daemons, and POST /sessions on the exited session starts
#   it again with its resume words (no prompt).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$T/bin"
# Logs one line per launch, [word] per argv word, then stays as the pane's process.
cat >"$T/bin/mytool" <<'SH'
#!/bin/sh
{ for w in "$@"; do printf '[%s]' "$w"; done; echo; } >>"$HOME/mytool.log"
exec sleep 3600
SH
chmod 0755 "$T/bin/mytool"
cat >"$T/agentd.conf" <<CONF
AGENTD_AGENT_MYTOOL_COMMAND=$T/bin/mytool --fixed
AGENTD_AGENT_MYTOOL_PROMPT=--task=
AGENTD_AGENT_MYTOOL_START=--new={id}
AGENTD_AGENT_MYTOOL_RESUME=--continue={id}
AGENTD_DEFAULT_AGENT=mytool
CONF
LOG=$T/home/mytool.log

# launches: the lines the tool logged.
launches() { cat "$LOG" 2>/dev/null; }
wait_launches() {
	local deadline=$((SECONDS + 20))
	while [ "$(launches | grep -c .)" -lt "$1" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
}

make_remote acme widgets
start_stack || exit 1

# --- unknown agents ----------------------------------------------------------------------------
for bad in nope "Bad Name!" ""; do
	api POST /sessions "$(jq -cn --arg a "$bad" '{repo: {owner: "acme", name: "widgets"}, issue: 9, agent: $a}')"
	assert_status "agent '$bad': 400" 400
	assert_json "agent '$bad': unknown_agent" .code '"unknown_agent"'
	assert_match "agent '$bad': the error lists the known agents" \
		'known: claude, codex, gemini, opencode, mytool$' "$(printf '%s' "$BODY" | jq -r .error)"
done
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":9,"agent":7}'
assert_status "agent 7 (not a string): 400" 400
assert_nothing_created "no unknown agent made a session"

# --- the configured default: mytool -------------------------------------------------------------
api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 1, prompt: "--help me"}')"
assert_status "create without agent: 201" 201
assert_json "the default agent is AGENTD_DEFAULT_AGENT's, its activity source none" \
	'[.agent, .activitySource, .activity]' '["mytool","none","idle"]'
UUID=$(printf '%s' "$BODY" | jq -r .agentSessionId)
assert_state "widgets-1 runs" widgets-1 running 30
wait_launches 1
assert_eq "mytool: command words, start words with the id, the prompt glued to --task=" \
	"[--fixed][--new=$UUID][--task=--help me]" "$(launches | sed -n 1p)"
get_session widgets-1
assert_json "GET: agent mytool, activity idle" '[.agent, .activitySource, .activity]' \
	'["mytool","none","idle"]'

api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":2,"agent":"mytool","mode":"structured"}'
assert_status "mytool in structured mode: 400" 400
assert_json "... no_structured_mode" .code '"no_structured_mode"'
api POST /sessions/widgets-1/mode '{"mode":"structured"}'
assert_status "switching mytool to structured: 409" 409
assert_json "... no_structured_mode" .code '"no_structured_mode"'
get_session widgets-1
assert_json "still terminal, still mytool" '[.mode, .agent]' '["terminal","mytool"]'

# --- claude asked for by name --------------------------------------------------------------------
api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 3, agent: "claude"}')"
assert_status "create with agent claude: 201" 201
assert_json "claude: activitySource hooks" '[.agent, .activitySource]' '["claude","hooks"]'
assert_state "widgets-3 (claude) runs" widgets-3 running 30
check "widgets-3 runs the fake claude" sh -c \
	"tr '\\0' ' ' </proc/$(pane_pid widgets-3)/cmdline | grep -q fakes/claude"

# --- restarts -------------------------------------------------------------------------------------
restart_stack || exit 1
get_session widgets-1
assert_json "after a restart of the daemons: still mytool" '[.agent, .state]' '["mytool","running"]'
get_session widgets-3
assert_json "after a restart of the daemons: still claude" .agent '"claude"'
api GET /sessions
assert_json "the list says each one's agent" '[.[] | {id, agent}] | sort_by(.id)' \
	'[{"id":"widgets-1","agent":"mytool"},{"id":"widgets-3","agent":"claude"}]'

kill "$(pane_pid widgets-1)"
assert_state "widgets-1 exits when mytool ends" widgets-1 exited 20
create acme widgets 1
assert_status "POST /sessions on the exited session: 201" 201
assert_json "it runs mytool again" '[.agent, .state]' '["mytool","running"]'
wait_launches 2
assert_eq "the restart resumes: resume words with the same id, no prompt" \
	"[--fixed][--continue=$UUID]" "$(launches | sed -n 2p)"

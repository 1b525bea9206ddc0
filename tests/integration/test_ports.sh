#!/usr/bin/env bash
# AGENTD_PORT_BASE / AGENTD_PORT_SPAN: each session gets its own range of ports, in its record
# ("ports") and in its agent's environment (PORT = the first, AGENTD_PORT_RANGE = "first-last"),
# read from what the fake claude records of its environment. Parallel sessions never share one;
# a deleted session's range is given again; a restart of the stack and a respawn keep them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# env_of TMUXNAME VAR: VAR in the environment of the claude in the pane of TMUXNAME.
env_of() { claude_record "$1" 20 | jq -r --arg v "$2" '.env[$v] // "unset"'; }

make_remote acme widgets
start_stack AGENTD_PORT_BASE=41000 AGENTD_PORT_SPAN=10 || exit 1

create acme widgets 1
assert_status "create widgets-1: 201" 201
assert_json "widgets-1's ports in the answer" '.ports' '{"first":41000,"last":41009}'
create acme widgets 2
assert_status "create widgets-2: 201" 201
assert_json "widgets-2's ports: the next range" '.ports' '{"first":41010,"last":41019}'
assert_state "widgets-1 is running" widgets-1 running 30
assert_state "widgets-2 is running" widgets-2 running 30
assert_eq "widgets-1's agent: PORT" 41000 "$(env_of widgets-1 PORT)"
assert_eq "widgets-1's agent: AGENTD_PORT_RANGE" 41000-41009 "$(env_of widgets-1 AGENTD_PORT_RANGE)"
assert_eq "widgets-2's agent: PORT" 41010 "$(env_of widgets-2 PORT)"
assert_eq "widgets-2's agent: AGENTD_PORT_RANGE" 41010-41019 "$(env_of widgets-2 AGENTD_PORT_RANGE)"
api GET /sessions
assert_jq "the list shows them" \
	'(map({(.id): .ports.first}) | add) == {"widgets-1": 41000, "widgets-2": 41010}'

api DELETE /sessions/widgets-1
assert_status "DELETE widgets-1: 200" 200
create acme widgets 3
assert_json "widgets-3 gets the range widgets-1 gave back" '.ports' '{"first":41000,"last":41009}'
assert_state "widgets-3 is running" widgets-3 running 30
assert_eq "widgets-3's agent: PORT" 41000 "$(env_of widgets-3 PORT)"

# The record keeps them: a new agentd-api, and a respawned agent, see the same.
restart_stack || exit 1
get_session widgets-2
assert_json "after a restart: widgets-2 keeps its ports" '.ports' '{"first":41010,"last":41019}'
api POST /sessions/widgets-2/mode '{"mode":"structured"}'
assert_status "widgets-2 to structured: 200" 200
api POST /sessions/widgets-2/mode '{"mode":"terminal"}'
assert_status "widgets-2 back to terminal: 200" 200
assert_state "widgets-2 is running" widgets-2 running 30
assert_eq "after a restart and respawn: widgets-2's agent keeps PORT" 41010 "$(env_of widgets-2 PORT)"
create acme widgets 4
assert_json "a new session after the restart: the next free range" '.ports' \
	'{"first":41020,"last":41029}'

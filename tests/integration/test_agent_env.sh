#!/usr/bin/env bash
# The agent's environment is exactly the variables AGENTD_AGENT_ENV names (those
# that are set) plus what a terminal needs, read from /proc/<claude pid>/environ:
# - deploy/up runs with junk (AGENTD_SECRET_JUNK, FOO_TOKEN, and the harness's own ASAN_OPTIONS,
#   GIT_*, LC_ALL ...) that no agent may see;
# - a terminal session, a structured one (claude under agentd-host), each after a mode switch;
# - after deploy/up is restarted (agentd-api --init again), after agentd-api alone is restarted,
#   and when the tmux server was started by someone else with a whole environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# What tmux 3.3a sets in every pane, then what agentd adds for a terminal (COLORTERM, LANG).
TMUX_OWN="PWD SHELL TERM TERM_PROGRAM TERM_PROGRAM_VERSION TMUX TMUX_PANE"
TERMINAL="COLORTERM LANG"
# AGENTD_AGENT_ENV below: HOME PATH GH_TOKEN and one that is not set.
WANT=$(printf '%s\n' HOME PATH GH_TOKEN $TERMINAL $TMUX_OWN | sort | tr '\n' ' ')
WANT_STRUCTURED=$(printf '%s\n' HOME PATH GH_TOKEN $TERMINAL $TMUX_OWN CLAUDE_CODE_ENTRYPOINT |
	sort | tr '\n' ' ')

HOST_EXE=$(readlink -f "$BUILD_DIR/host/agentd-host")

env_names() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | cut -d= -f1 | sort | tr '\n' ' '; }
env_value() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | grep "^$2=" | cut -d= -f2-; }

# fake_claude_under PID: the fake claude at or below PID (the pane's process), waiting up to 10 s.
# agentd-host (whose argv names the fake too) is not it.
fake_claude_under() {
	local deadline=$((SECONDS + 10)) p
	while [ $SECONDS -le $deadline ]; do
		for p in "$1" $(descendants "$1"); do
			[ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" == "$HOST_EXE" ] && continue
			if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "fakes/claude"; then
				echo "$p"
				return 0
			fi
		done
		sleep 0.1
	done
}

# assert_agent_env WHAT TMUXNAME MODE
assert_agent_env() {
	local pane claude
	pane=$(pane_pid "$2")
	claude=$(fake_claude_under "${pane:-0}")
	if [ -z "$claude" ]; then
		fail "$1: a claude runs in $2" "$(ps -e -o pid,ppid,args --forest | grep -v ' ps ' | tail -n 20)"
		return
	fi
	if [ "$3" == structured ]; then
		assert_eq "$1: the pane runs agentd-host" "$HOST_EXE" "$(readlink -f "/proc/$pane/exe")"
		assert_eq "$1: agentd-host's environment is exactly the agent's" "$WANT" "$(env_names "$pane")"
		assert_eq "$1: claude's environment is the agent's + CLAUDE_CODE_ENTRYPOINT" \
			"$WANT_STRUCTURED" "$(env_names "$claude")"
	else
		assert_eq "$1: claude is the pane's process" "$pane" "$claude"
		assert_eq "$1: claude's environment is exactly the agent's" "$WANT" "$(env_names "$claude")"
	fi
	assert_eq "$1: the values" "ghp-test|$T/home|C.UTF-8|truecolor|tmux-256color" \
		"$(env_value "$claude" GH_TOKEN)|$(env_value "$claude" HOME)|$(env_value "$claude" LANG)|$(env_value "$claude" COLORTERM)|$(env_value "$claude" TERM)"
}

make_remote acme widgets
# The system's PATH: a python3 found through a version manager's shim (pyenv) would add that
# manager's variables to the fake claude's environment itself.
start_stack PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	AGENTD_SECRET_JUNK=1 FOO_TOKEN=x GH_TOKEN=ghp-test \
	AGENTD_AGENT_ENV="HOME PATH GH_TOKEN AGENTD_TEST_NOT_SET" || exit 1
check "deploy/up itself has the junk" grep -qz '^FOO_TOKEN=x$' "/proc/$UP_PID/environ"

create acme widgets 1
assert_state "widgets-1 (terminal) is running" widgets-1 running 30
assert_agent_env "terminal" widgets-1 terminal
api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 2, mode: "structured"}')"
assert_status "create widgets-2 in structured mode: 201" 201
assert_state "widgets-2 (structured) is running" widgets-2 running 30
assert_agent_env "structured" widgets-2 structured

api POST /sessions/widgets-1/mode '{"mode":"structured"}'
assert_status "widgets-1 to structured: 200" 200
assert_agent_env "terminal -> structured" widgets-1 structured
api POST /sessions/widgets-2/mode '{"mode":"terminal"}'
assert_status "widgets-2 to terminal: 200" 200
assert_agent_env "structured -> terminal" widgets-2 terminal

# --- deploy/up again (agentd-api --init), then agentd-api alone --------------------------------
restart_stack || exit 1
create acme widgets 3
assert_state "after a restart: widgets-3 is running" widgets-3 running 30
assert_agent_env "after a restart: terminal" widgets-3 terminal
api POST /sessions/widgets-1/mode '{"mode":"terminal"}'
assert_status "after a restart: widgets-1 to terminal: 200" 200
assert_agent_env "after a restart: structured -> terminal" widgets-1 terminal
kill_api || exit 1
api POST /sessions/widgets-2/mode '{"mode":"structured"}'
assert_status "after agentd-api was restarted: widgets-2 to structured: 200" 200
assert_agent_env "after agentd-api was restarted: terminal -> structured" widgets-2 structured

# --- a tmux server someone else started, with the whole environment -----------------------------
stop_stack
tmx kill-server 2>/dev/null
deadline=$((SECONDS + 10))
while tmx list-sessions >/dev/null 2>&1 && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
AGENTD_SECRET_JUNK=1 FOO_TOKEN=x tmux -S "$TMUX_SOCK" -f "$T/run/tmux.conf" \
	new-session -d -s not-an-agent sleep 1000
check "that server's global environment has the junk" \
	grep -q '^FOO_TOKEN=x$' <(tmx show-environment -g)
start_stack || exit 1
assert_eq "agentd-api --init emptied it" "" "$(tmx show-environment -g)"
create acme widgets 4
assert_state "widgets-4 is running" widgets-4 running 30
assert_agent_env "in a server started by someone else" widgets-4 terminal

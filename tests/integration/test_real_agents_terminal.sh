#!/usr/bin/env bash
# The REAL codex, gemini and opencode CLIs (tests/package.json's pins) in terminal mode through
# the whole stack, offline: each talks to a fake model API of tests/fakes (lib_real_agents.sh),
# whose base URL and key reach it only through what the operator gives the agent
# (AGENTD_AGENT_ENV, and the agent's own ~/.codex/config.toml for codex, whose base URL no
# variable sets). For each agent:
# - POST /sessions {"agent": …} starts its TUI in the pane with the table's argv
#   (docs/API.md "Agents"); the bootstrap prompt reaches the fake, and its answer shows in the
#   pane;
# - attention: codex and gemini report through their hooks (activitySource hooks): working, then
#   idle when the turn ends; a codex tool call that needs approval is listed in pending and
#   allowed with POST /permissions (codex reads Claude's PermissionRequest decision), the command
#   runs; gemini's dialog makes the session waiting with nothing a client can answer (its
#   Notification ToolPermission asks no hook that could), answered in the TUI; opencode reports
#   through agentd's JS plugin (its TUI runs no command hooks): idle after a turn, waiting in
#   its bash permission dialog (nothing a client can answer: its plugin hook for that never
#   fires in 1.18), answered in the TUI;
# - the agent process ends -> exited; POST /sessions starts it again with the CLI's resume
#   words, and a new prompt typed in the TUI reaches the fake with the earlier turns;
# - DELETE ends it: no process of the session is left.
# opencode 1.18's TUI draws nothing
# and does not start its prompt until a terminal is attached (it waits for answers to its
# terminal queries, which tmux passes to a client): its part attaches one, as a browser would.
# ITEST_AGENTS (default "codex gemini opencode") picks the agents to drive.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$REPO/tests/integration/real_agents/lib_real_agents.sh"
trap 'rc=$?; detach_client; stop_fake_apis; (exit $rc); cleanup' EXIT
wanted_agent() { [[ " ${ITEST_AGENTS:-codex gemini opencode} " == *" $1 "* ]]; }

# session_procs ID: the processes whose environment names the session's agent directory.
session_procs() {
	local p
	for p in $(pgrep -u "$AGENT_UID" .); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
			grep -qF "$T/home/.agentd-agents/$1" && echo "$p"
	done
}
expect_pane() { # DESC TMUXNAME TEXT
	if wait_pane "$2" "$3" "$TUI_WAIT"; then pass "$1"; else fail "$1" "$(pane_text "$2")"; fi
}

assert_pinned_agents
start_fake_apis || exit 1
make_remote acme widgets

# The agent's own configuration, as an operator would have it: codex's provider, gemini's auth.
mkdir -p "$T/home/.codex" "$T/home/.gemini" "$T/agent-tmp"
codex_provider_toml >"$T/home/.codex/config.toml"
gemini_settings >"$T/home/.gemini/settings.json"
agent_owns "$T/home" "$T/agent-tmp"

# codex refuses to place its helper binaries (its sandbox's) under the temporary directory, where
# $T is: the agents get a TMPDIR of their own.
start_stack AGENTD_AGENT_CODEX_COMMAND="$CODEX_EXE" AGENTD_AGENT_GEMINI_COMMAND="$GEMINI_EXE" \
	AGENTD_AGENT_OPENCODE_COMMAND="$OPENCODE_EXE" \
	AGENTD_AGENT_ENV="HOME PATH LANG TMPDIR FAKE_API_KEY GEMINI_API_KEY GOOGLE_GEMINI_BASE_URL GEMINI_MODEL OPENCODE_CONFIG_CONTENT OPENCODE_DISABLE_MODELS_FETCH" \
	TMPDIR="$T/agent-tmp" FAKE_API_KEY="$FAKE_API_KEY" GEMINI_API_KEY="$FAKE_API_KEY" \
	GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$GEMINI_PORT" GEMINI_MODEL="$GEMINI_MODEL" \
	OPENCODE_CONFIG_CONTENT="$(opencode_config | jq -c '. + {permission: {bash: "ask"}}')" \
	OPENCODE_DISABLE_MODELS_FETCH=1 || exit 1

# create AGENT ISSUE PROMPT: POST /sessions; sets SID, TMUXNAME, UUID, WT.
create_agent() {
	api POST /sessions "$(jq -cn --arg a "$1" --argjson i "$2" --arg p "$3" \
		'{repo: {owner: "acme", name: "widgets"}, issue: $i, prompt: $p, agent: $a}')"
	assert_status "$1: POST /sessions answers 201" 201
	SID=$(printf '%s' "$BODY" | jq -r .id)
	TMUXNAME=$(printf '%s' "$BODY" | jq -r .tmuxName)
	UUID=$(printf '%s' "$BODY" | jq -r .agentSessionId)
	WT=$T/code/widgets-issue-$2
	assert_state "$1: the session runs" "$SID" running 60
}

# restart_agent AGENT: the agent's process ends -> exited; POST /sessions starts it again.
restart_agent() {
	local pane
	pane=$(pane_pid "$TMUXNAME")
	kill -KILL "${pane:-0}" 2>/dev/null
	assert_state "$1: the session is exited once its CLI is gone" "$SID" exited 30
	api POST /sessions "$(jq -cn --argjson i "${SID##*-}" '{repo: {owner: "acme", name: "widgets"}, issue: $i}')"
	assert_status "$1: POST /sessions on the exited session answers 201" 201
	assert_json "$1: it runs again, the same agent" '[.state, .agent]' "[\"running\",\"$1\"]"
}

delete_agent() {
	api DELETE "/sessions/$SID?force=true"
	assert_status "$1: DELETE answers 200" 200
	local deadline=$((SECONDS + 15))
	while [ -n "$(session_procs "$SID")" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	assert_eq "$1: no process of the session is left" "" "$(session_procs "$SID" | tr '\n' ' ')"
	check_not "$1: its agent directory is removed" test -e "$T/home/.agentd-agents/$SID"
}

# ================================================================================================
# codex
if wanted_agent codex; then
create_agent codex 1 "say hello CODEXONE"
assert_json "codex: activitySource hooks" .activitySource '"hooks"'
expect_pane "codex: the TUI shows the fake model's answer" "$TMUXNAME" \
	"Hello from the fake model (CODEXONE)"
check "codex: the bootstrap prompt reached POST /v1/responses" wait_request "$OPENAI_LOG" \
	/v1/responses CODEXONE
PANE=$(pane_pid "$TMUXNAME")
assert_eq "codex: the pane runs the table's argv" \
	"$CODEX_EXE --no-daemon --dangerously-bypass-hook-trust -- say hello CODEXONE" "$(cmdline "$PANE")"
assert_eq "codex: it runs as the agents' user" "$AGENT_UID" "$(stat -c %u "/proc/${PANE:-0}" 2>/dev/null)"
assert_eq "codex: its CODEX_HOME is the session's own" "$T/home/.agentd-agents/$SID/codex" \
	"$(tr '\0' '\n' <"/proc/${PANE:-0}/environ" 2>/dev/null | sed -n 's/^CODEX_HOME=//p')"
if wait_activity "$SID" '.activity == "idle"' 60; then
	pass "codex: the Stop hook makes the session idle"
else
	fail "codex: the Stop hook makes the session idle" "$BODY"
fi
check "codex: the typed prompt reaches the fake" type_line "$TMUXNAME" "please RUNBASH touch $WT/codex-was-here" "$OPENAI_LOG" /v1/responses \
	codex-was-here
if wait_activity "$SID" '.activity == "waiting" and (.pending | length) == 1' 60; then
	pass "codex: its approval dialog is pending (PermissionRequest hook)"
else
	fail "codex: its approval dialog is pending (PermissionRequest hook)" "$BODY" "$(pane_text "$TMUXNAME")"
fi
RID=$(printf '%s' "$BODY" | jq -r '.pending[0].requestId // "none"')
# codex's tool_input carries the model's justification as its description.
assert_json "codex: the request names the tool and its justification" \
	'.pending[0] | [.toolName, .description]' '["Bash","The test asks for approval"]'
check_not "codex: nothing ran before the answer" test -e "$WT/codex-was-here"
api POST "/sessions/$SID/permissions/$RID" '{"behavior":"allow"}'
assert_status "codex: POST /permissions allow answers 200" 200
deadline=$((SECONDS + 60))
while [ ! -e "$WT/codex-was-here" ] && [ $SECONDS -lt $deadline ]; do sleep 0.3; done
check "codex: the allowed command ran" test -e "$WT/codex-was-here"
if wait_activity "$SID" '.activity == "idle" and .pending == []' 60; then
	pass "codex: idle again after the turn"
else
	fail "codex: idle again after the turn" "$BODY"
fi
restart_agent codex
PANE=$(pane_pid "$TMUXNAME")
assert_eq "codex: the restart resumes the last conversation of its CODEX_HOME" \
	"$CODEX_EXE resume --no-daemon --dangerously-bypass-hook-trust --last" "$(cmdline "$PANE")"
expect_pane "codex: the resumed TUI shows the earlier conversation" "$TMUXNAME" "CODEXONE"
check "codex: the typed prompt reaches the fake" type_line "$TMUXNAME" "say again CODEXTWO" "$OPENAI_LOG" /v1/responses CODEXTWO
expect_pane "codex: the resumed TUI answers" "$TMUXNAME" "Hello from the fake model (CODEXTWO)"
check "codex: the fake sees the earlier turns with the new one" sh -c \
	"jq -c 'select(.path == \"/v1/responses\") | .body' '$OPENAI_LOG' | grep CODEXTWO | grep CODEXONE | grep -q codex-was-here"
delete_agent codex
fi

# ================================================================================================
# gemini
if wanted_agent gemini; then
create_agent gemini 2 "say hello GEMINIONE"
assert_json "gemini: activitySource hooks" .activitySource '"hooks"'
expect_pane "gemini: the TUI shows the fake model's answer" "$TMUXNAME" \
	"Hello from the fake model (GEMINIONE)"
check "gemini: the bootstrap prompt reached :streamGenerateContent" wait_request "$GEMINI_LOG" \
	:streamGenerateContent GEMINIONE
PANE=$(pane_pid "$TMUXNAME")
assert_match "gemini: the pane runs the table's argv (the prompt glued to --prompt-interactive)" \
	"^(/usr/bin/)?node $(re "$GEMINI_EXE") --skip-trust --session-id=$UUID --prompt-interactive=say hello GEMINIONE\$" \
	"$(cmdline "$PANE")"
assert_eq "gemini: one process (GEMINI_CLI_NO_RELAUNCH)" "" "$(descendants "${PANE:-0}" |
	while read -r p; do [ "$(cat "/proc/$p/comm" 2>/dev/null)" == node ] && echo "$p"; done)"
if wait_activity "$SID" '.activity == "idle"' 60; then
	pass "gemini: AfterAgent makes the session idle"
else
	fail "gemini: AfterAgent makes the session idle" "$BODY"
fi
check "gemini: the typed prompt reaches the fake" type_line "$TMUXNAME" "please RUNBASH touch $WT/gemini-was-here" "$GEMINI_LOG" \
	:streamGenerateContent gemini-was-here
if wait_activity "$SID" '.activity == "waiting"' 60; then
	pass "gemini: its dialog makes the session waiting (Notification ToolPermission)"
else
	fail "gemini: its dialog makes the session waiting (Notification ToolPermission)" "$BODY" \
		"$(pane_text "$TMUXNAME")"
fi
assert_json "gemini: nothing a client can answer" .pending '[]'
expect_pane "gemini: the TUI asks" "$TMUXNAME" "Allow once"
pane_settle "$TMUXNAME"
tmx send-keys -t "=$TMUXNAME:" Enter
deadline=$((SECONDS + 60))
while [ ! -e "$WT/gemini-was-here" ] && [ $SECONDS -lt $deadline ]; do sleep 0.3; done
check "gemini: the command allowed in the TUI ran" test -e "$WT/gemini-was-here"
if wait_activity "$SID" '.activity == "idle"' 60; then
	pass "gemini: idle again after the turn"
else
	fail "gemini: idle again after the turn" "$BODY"
fi
restart_agent gemini
PANE=$(pane_pid "$TMUXNAME")
assert_match "gemini: the restart resumes its session id" \
	"^(/usr/bin/)?node $(re "$GEMINI_EXE") --skip-trust --resume=$UUID\$" "$(cmdline "$PANE")"
expect_pane "gemini: the resumed TUI shows the earlier conversation" "$TMUXNAME" \
	"Hello from the fake model (GEMINIONE)"
check "gemini: the typed prompt reaches the fake" type_line "$TMUXNAME" "say again GEMINITWO" "$GEMINI_LOG" :streamGenerateContent GEMINITWO
expect_pane "gemini: the resumed TUI answers" "$TMUXNAME" "Hello from the fake model (GEMINITWO)"
check "gemini: the fake sees the earlier turns with the new one" sh -c \
	"jq -c '.body' '$GEMINI_LOG' | grep GEMINITWO | grep GEMINIONE | grep -q gemini-was-here"
delete_agent gemini
fi

# ================================================================================================
# opencode: its TUI runs no command hooks, but it loads JS plugins: agentd's (written into the
# agent's ~/.config/opencode/plugin/) reports its turns, tools and permission dialog through
# agentd-hook (activitySource hooks). The stack's config makes bash ask (OPENCODE_CONFIG_CONTENT).
if wanted_agent opencode; then
create_agent opencode 3 "say hello OPENCODEONE"
assert_json "opencode: activitySource hooks" .activitySource '"hooks"'
attach_client "$TMUXNAME"
# Its first turn waits for its snapshot of the worktree (a git repository of its own): slow on a
# loaded machine.
TUI_WAIT=240
# opencode lays the conversation out in a narrow column that wraps the answer: its end is
# what only the answer has (the prompt says "say hello OPENCODEONE").
expect_pane "opencode: the TUI shows the fake model's answer" "$TMUXNAME" "OPENCODEONE)"
check "opencode: the bootstrap prompt reached POST /v1/chat/completions" wait_request \
	"$OPENAI_LOG" /v1/chat/completions OPENCODEONE
PANE=$(pane_pid "$TMUXNAME")
assert_eq "opencode: the pane runs the table's argv (the prompt glued to --prompt)" \
	"$OPENCODE_EXE --prompt=say hello OPENCODEONE" "$(cmdline "$PANE")"
assert_eq "opencode: its database is the session's own" "$T/home/.agentd-agents/$SID/opencode.db" \
	"$(tr '\0' '\n' <"/proc/${PANE:-0}/environ" 2>/dev/null | sed -n 's/^OPENCODE_DB=//p')"
check "opencode: agentd's plugin is in the agent's config dir" test -f \
	"$T/home/.config/opencode/plugin/agentd-attention.js"
assert_match "opencode: the launch gives it agentd-hook's words" '^/[^ ]*/agentd-hook --socket /[^ ]*/hooks/hooks\.sock$' \
	"$(tr '\0' '\n' <"/proc/${PANE:-0}/environ" 2>/dev/null | sed -n 's/^AGENTD_OPENCODE_HOOK=//p')"
if wait_activity "$SID" '.activity == "idle"' 60; then
	pass "opencode: the plugin's session.idle makes the session idle"
else
	fail "opencode: the plugin's session.idle makes the session idle" "$BODY"
fi
check "opencode: the typed prompt reaches the fake" type_line "$TMUXNAME" "please RUNBASH touch $WT/opencode-was-here" \
	"$OPENAI_LOG" /v1/chat/completions opencode-was-here
if wait_activity "$SID" '.activity == "waiting"' 60; then
	pass "opencode: its permission dialog makes the session waiting (the plugin's permission.asked)"
else
	fail "opencode: its permission dialog makes the session waiting (the plugin's permission.asked)" \
		"$BODY" "$(pane_text "$TMUXNAME")"
fi
assert_json "opencode: nothing a client can answer (the dialog is the TUI's)" .pending '[]'
check_not "opencode: nothing ran before the answer" test -e "$WT/opencode-was-here"
pane_settle "$TMUXNAME"
log "opencode: the dialog: $(pane_text "$TMUXNAME" | tail -n 12 | tr -s ' ')"
tmx send-keys -t "=$TMUXNAME:" Enter
deadline=$((SECONDS + 60))
while [ ! -e "$WT/opencode-was-here" ] && [ $SECONDS -lt $deadline ]; do sleep 0.3; done
check "opencode: the command allowed in the TUI ran" test -e "$WT/opencode-was-here"
if wait_activity "$SID" '.activity == "idle"' 60; then
	pass "opencode: idle again after the turn"
else
	fail "opencode: idle again after the turn" "$BODY"
fi
restart_agent opencode
PANE=$(pane_pid "$TMUXNAME")
assert_eq "opencode: the restart continues the session's conversation" \
	"$OPENCODE_EXE --continue" "$(cmdline "$PANE")"
# Its last turn is what the screen has room for.
expect_pane "opencode: the resumed TUI shows the earlier conversation" "$TMUXNAME" "opencode-"
check "opencode: the typed prompt reaches the fake" type_line "$TMUXNAME" "say again OPENCODETWO" "$OPENAI_LOG" /v1/chat/completions \
	OPENCODETWO
expect_pane "opencode: the resumed TUI answers" "$TMUXNAME" "OPENCODETWO)"
check "opencode: the fake sees the earlier turn with the new one" sh -c \
	"jq -c 'select(.path == \"/v1/chat/completions\") | .body' '$OPENAI_LOG' | grep OPENCODETWO | grep OPENCODEONE | grep -q opencode-was-here"
delete_agent opencode
detach_client
fi

#!/usr/bin/env bash
# Mode switches of the REAL codex, gemini and opencode CLIs (tests/package.json's pins), offline
# against the fake model APIs (lib_real_agents.sh), through the whole stack: one conversation
# across terminal -> structured -> terminal (docs/API.md "Agents", "the conversation across
# modes"). For each agent:
# - POST /sessions {"agent"} in terminal mode: the bootstrap prompt reaches the fake;
# - POST /sessions/<id>/mode structured: agentd-host --acp loads the terminal's conversation
#   (--resume: gemini's by agentSessionId, codex's and opencode's the newest their ACP mode lists),
#   and a prompt's request to the fake carries the earlier turn;
# - gemini only: a shell command asks its permission through ACP's session/request_permission,
#   listed in pending and answered with POST /permissions (an answer with updatedInput is 400:
#   ACP cannot carry it);
# - POST /sessions/<id>/mode terminal: the TUI resumes the conversation agentd-host recorded, by
#   its id, and a line typed in it reaches the fake with every earlier turn;
# - DELETE.
# opencode's TUI does not start a prompt until a terminal is attached (test_real_agents_terminal.sh
# says why): its part attaches one, as a browser would.
# Run by test_real_agents_switch_<agent>.sh, one agent each (SWITCH_AGENT; a run of one takes a
# few minutes: gemini waits out its minute, opencode snapshots the worktree); the configured
# agent's 409 comes with codex's.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$REPO/tests/integration/real_agents/lib_real_agents.sh"
source "$REPO/tests/integration/structured/lib_structured.sh"
trap 'rc=$?; detach_client; kill_sse_clients; stop_fake_apis; (exit $rc); cleanup' EXIT
wanted_agent() { [ "$SWITCH_AGENT" == "$1" ]; }

WAIT=120 # seconds for an answer (gemini's node start, opencode's first snapshot)
TUI_WAIT=$WAIT TYPE_RETRY=30

assert_pinned_agents
CODEX_ACP_EXE=$NODE_MODULES/@zed-industries/codex-acp-linux-x64/bin/codex-acp
start_fake_apis || exit 1
make_remote acme widgets
mkdir -p "$T/home/.codex" "$T/home/.gemini" "$T/agent-tmp"
codex_provider_toml | sed '1a approval_policy = "on-request"' >"$T/home/.codex/config.toml"
gemini_settings >"$T/home/.gemini/settings.json"
agent_owns "$T/home" "$T/agent-tmp"
# A configured agent with an ACP mode: its conversation cannot be carried between modes.
mkdir -p "$T/bin"
printf '#!/bin/sh\nexec sleep 3600\n' >"$T/bin/tool"
chmod 0755 "$T/bin/tool"
start_stack AGENTD_AGENT_TOOL_COMMAND="$T/bin/tool" \
	AGENTD_AGENT_TOOL_ACP="python3 $REPO/tests/fakes/acp_agent.py" \
	AGENTD_AGENT_CODEX_COMMAND="$CODEX_EXE" AGENTD_AGENT_GEMINI_COMMAND="$GEMINI_EXE" \
	AGENTD_AGENT_OPENCODE_COMMAND="$OPENCODE_EXE" AGENTD_AGENT_CODEX_ACP="$CODEX_ACP_EXE" \
	AGENTD_AGENT_ENV="HOME PATH LANG TMPDIR FAKE_API_KEY GEMINI_API_KEY GOOGLE_GEMINI_BASE_URL GEMINI_MODEL OPENCODE_CONFIG_CONTENT OPENCODE_DISABLE_MODELS_FETCH" \
	TMPDIR="$T/agent-tmp" FAKE_API_KEY="$FAKE_API_KEY" GEMINI_API_KEY="$FAKE_API_KEY" \
	GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$GEMINI_PORT" GEMINI_MODEL="$GEMINI_MODEL" \
	OPENCODE_CONFIG_CONTENT="$(opencode_config | jq -c '. + {permission: {bash: "ask"}}')" \
	OPENCODE_DISABLE_MODELS_FETCH=1 || exit 1

if wanted_agent codex; then
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":9,"agent":"tool"}'
assert_status "tool (configured, with an ACP mode): POST /sessions answers 201" 201
assert_state "tool: the session runs" widgets-9 running 30
api POST /sessions/widgets-9/mode '{"mode":"structured"}'
assert_status "tool: a mode switch is 409" 409
assert_json "tool: mode_switch_unsupported" .code '"mode_switch_unsupported"'
get_session widgets-9
assert_json "tool: still terminal, nothing restarted" '[.mode, .restarts // 0]' '["terminal",0]'
api DELETE "/sessions/widgets-9?force=true"
assert_status "tool: DELETE answers 200" 200
fi

# switch NAME MODE: POST /sessions/$SID/mode.
switch() {
	api POST "/sessions/$SID/mode" "{\"mode\":\"$2\"}"
	assert_status "$1: POST /mode $2 answers 200" 200
	assert_json "$1: the session is in $2 mode, the same agent" '[.mode, .agent]' "[\"$2\",\"$1\"]"
}

# back_to_terminal NAME TMUXNAME RECORDED WORD LOG PATHPART NEW EARLIER...: POST /mode terminal;
# the TUI resumes RECORDED by its id and a line typed in it (WORD+NEW) reaches the fake with the
# earlier turns.
back_to_terminal() {
	local name=$1 tmuxname=$2 recorded=$3 w=$4 log=$5 part=$6 new=$7 pane e words=()
	shift 7
	for e in "$@"; do words+=("$w$e"); done
	switch "$name" terminal
	pane=$(pane_pid "$tmuxname")
	case $name in
	codex) assert_eq "$name: the TUI resumes the recorded conversation by its id" \
		"$CODEX_EXE resume --no-daemon --dangerously-bypass-hook-trust $recorded" "$(cmdline "$pane")" ;;
	gemini) assert_match "$name: the TUI resumes the recorded conversation by its id" \
		"^(/usr/bin/)?node $(re "$GEMINI_EXE") --skip-trust --resume=$recorded\$" "$(cmdline "$pane")" ;;
	opencode) assert_eq "$name: the TUI resumes the recorded conversation by its id" \
		"$OPENCODE_EXE --session=$recorded" "$(cmdline "$pane")" ;;
	esac
	if wait_pane "$tmuxname" "$w$1)"; then
		pass "$name: the resumed TUI shows the last turn"
	else
		fail "$name: the resumed TUI shows the last turn" "$(pane_text "$tmuxname")"
	fi
	if type_line "$tmuxname" "say more $w$new" "$log" "$part" "$w$new"; then
		pass "$name: a line typed in the TUI reaches the fake"
	else
		fail "$name: a line typed in the TUI reaches the fake" "$(pane_text "$tmuxname")"
	fi
	check "$name: after the switch to terminal the fake sees every earlier turn" \
		wait_request "$log" "$part" "$w$new" "${words[@]}"
}

# switch_agent NAME ISSUE WORD LOG PATHPART: the agent's terminal -> structured -> terminal.
switch_agent() {
	local name=$1 issue=$2 w=$3 log=$4 part=$5 pane uuid recorded tmuxname rid thread
	api POST /sessions "$(jq -cn --arg a "$name" --argjson i "$issue" --arg p "say hello ${w}ONE" \
		'{repo: {owner: "acme", name: "widgets"}, issue: $i, prompt: $p, agent: $a}')"
	assert_status "$name: POST /sessions (terminal) answers 201" 201
	SID=$(printf '%s' "$BODY" | jq -r .id)
	tmuxname=$(printf '%s' "$BODY" | jq -r .tmuxName)
	uuid=$(printf '%s' "$BODY" | jq -r .agentSessionId)
	WT=$T/code/widgets-issue-$issue
	assert_state "$name: the session runs" "$SID" running 60
	[ "$name" == opencode ] && attach_client "$tmuxname"
	check "$name: the bootstrap prompt reaches the fake (terminal)" wait_request "$log" "$part" \
		"${w}ONE"
	# The TUI has recorded its turn once it shows the answer.
	check "$name: the TUI shows the answer" wait_pane "$tmuxname" "${w}ONE)"

	# --- terminal -> structured: the host loads the TUI's conversation ---
	switch "$name" structured
	pane=$(pane_pid "$tmuxname")
	if [ "$name" == gemini ]; then
		assert_match "$name: the host is told the TUI's conversation (agentSessionId) and its minute" \
			"agentd-host .*--acp gemini --resume $uuid --resume-made [0-9]+ $SID -- " "$(cmdline "$pane")"
	elif [ "$name" == codex ]; then
		# codex-acp loads the TUI's thread by its id, but does not list it.
		thread=$(find "$T/home/.agentd-agents/$SID/codex/sessions" -name 'rollout-*.jsonl' | sort |
			tail -n 1 | sed 's/.*\(.\{36\}\)\.jsonl$/\1/')
		assert_match "$name: the host is told the TUI's thread (its newest rollout)" \
			"agentd-host .*--acp codex --resume $thread $SID -- " "$(cmdline "$pane")"
	else
		assert_match "$name: the host is told to load the newest conversation its agent lists" \
			"agentd-host .*--acp $name --resume newest $SID -- " "$(cmdline "$pane")"
	fi
	if [ "$name" == gemini ]; then
		# The host may first wait out gemini's minute (up to 60 s): the client waits longer than
		# sse.py's default 60 s, or it ends before the turn and the file is looked for too soon.
		sse_start "${name}p" POST "/sessions/$SID/prompt" "{\"prompt\":\"RUNBASH touch $WT/made-by-$name\"}" \
			--timeout $((WAIT + 120))
		assert_sse_event "$name: the shell command asks its permission (session/request_permission)" \
			"${name}p" '.event == "permission"' $((WAIT + 60))
		rid=$(sse_permission_ids "${name}p" | head -n 1)
		if wait_activity "$SID" ".activity == \"waiting\" and .pending[0].requestId == \"$rid\"" 20; then
			pass "$name: the request is pending in the session"
		else
			fail "$name: the request is pending in the session" "$BODY"
		fi
		api POST "/sessions/$SID/permissions/$rid" '{"behavior":"allow","updatedInput":{"command":"true"}}'
		assert_status "$name: an allow with updatedInput is 400 (ACP cannot carry it)" 400
		assert_json "$name: its code says so" .code '"updated_input_unsupported"'
		check_not "$name: nothing ran" test -e "$WT/made-by-$name"
		api POST "/sessions/$SID/permissions/$rid" '{"behavior":"allow"}'
		assert_status "$name: POST /permissions allow answers 200" 200
		assert_sse_event "$name: the turn ends with its result" "${name}p" '.event == "result"' $WAIT
		sse_wait_end "${name}p" $WAIT
		check "$name: the allowed command ran" test -e "$WT/made-by-$name"
	fi
	sse_start "${name}s" POST "/sessions/$SID/prompt" "{\"prompt\":\"say again ${w}TWO\"}" \
		--timeout $((WAIT + 60))
	sse_wait_end "${name}s" $((WAIT + 60))
	pane_history "$tmuxname" >"$T/logs/$name-structured.pane"
	assert_jq "$name: the structured turn answers" \
		"[.[] | select(.event == \"result\") | .data | fromjson | .result | endswith(\"(${w}TWO)\")] == [true]" \
		"$(sse_events "${name}s" | jq -s -c .)"
	check "$name: after the switch to structured the fake sees the terminal's turn" \
		wait_request "$log" "$part" "${w}TWO" "${w}ONE"
	assert_match "$name: the host's pane says it loaded the agent's session" \
		"resuming $name session" "$(pane_history "$tmuxname")"
	recorded=$(jq -r .sessionId "$T/state/agents/$SID/acp.json" 2>/dev/null)
	[ "$name" == gemini ] && assert_eq "$name: the host recorded the TUI's session id" "$uuid" "$recorded"

	# --- structured -> terminal: the TUI resumes the conversation the host recorded ---
	if [ "$name" == codex ]; then
		# codex 0.169's TUI refuses its own thread once codex-acp 0.16 wrote to it.
		api POST "/sessions/$SID/mode" '{"mode":"terminal"}'
		assert_status "codex: back to terminal is 409: the TUI cannot resume what codex-acp wrote" 409
		assert_json "codex: conversation_not_portable" .code '"conversation_not_portable"'
		get_session "$SID"
		assert_json "codex: still structured and running, its agent not stopped" '[.mode, .state]' \
			'["structured","running"]'
	else
		back_to_terminal "$name" "$tmuxname" "$recorded" "$w" "$log" "$part" THREE TWO ONE
	fi
	api DELETE "/sessions/$SID?force=true"
	assert_status "$name: DELETE answers 200" 200
	detach_client
}

if wanted_agent codex; then
	switch_agent codex 1 CXSW "$OPENAI_LOG" /v1/responses
	# A conversation codex-acp began: the TUI resumes it, and codex-acp loads it again after.
	api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 4,
		prompt: "say hello CXSFONE", agent: "codex", mode: "structured"}')"
	assert_status "codex (structured first): POST /sessions answers 201" 201
	SID=$(printf '%s' "$BODY" | jq -r .id)
	TMUXNAME=$(printf '%s' "$BODY" | jq -r .tmuxName)
	assert_state "codex (structured first): the session runs" "$SID" running 60
	check "codex (structured first): the bootstrap prompt reaches the fake" \
		wait_request "$OPENAI_LOG" /v1/responses CXSFONE
	if wait_activity "$SID" '.activity == "idle"' $WAIT; then
		pass "codex (structured first): idle once the bootstrap turn ends"
	else
		fail "codex (structured first): idle once the bootstrap turn ends" "$BODY"
	fi
	back_to_terminal codex "$TMUXNAME" "$(jq -r .sessionId "$T/state/agents/$SID/acp.json")" \
		CXSF "$OPENAI_LOG" /v1/responses TWO ONE
	switch codex structured
	sse_start cxsf POST "/sessions/$SID/prompt" '{"prompt":"say again CXSFTHREE"}' --timeout $WAIT
	sse_wait_end cxsf $WAIT
	check "codex (structured first): back in structured mode the fake sees every turn" \
		wait_request "$OPENAI_LOG" /v1/responses CXSFTHREE CXSFTWO CXSFONE
	api DELETE "/sessions/$SID?force=true"
	assert_status "codex (structured first): DELETE answers 200" 200
fi
if wanted_agent gemini; then switch_agent gemini 2 GMSW "$GEMINI_LOG" :streamGenerateContent; fi
if wanted_agent opencode; then switch_agent opencode 3 OCSW "$OPENAI_LOG" /v1/chat/completions; fi

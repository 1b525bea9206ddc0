#!/usr/bin/env bash
# Structured mode for the agents that speak the Agent Client Protocol (gemini --acp, opencode acp,
# codex-acp): agentd-host drives the agent over ACP and clients see the common event shape
# (docs/API.md, "Events of every agent").
#
# Part A: agentd-host with our own fake ACP agent (tests/fakes/acp_agent.py), spoken to on its
# socket as the bridge does: the bootstrap prompt reaches the agent, a turn streams, tool
# permissions are asked and answered (allow and deny mapped onto each agent's option kinds), fs
# requests get -32601, an interrupt is session/cancel, a restart resumes with session/load (the
# agent sees the earlier turns; what the load replays is not emitted again), gemini's same-minute
# session/load pitfall is waited out, and prompts sent while a turn runs are queued.
source "$(dirname "$0")/lib.sh"
source "$REPO/tests/integration/real_agents/lib_real_agents.sh"

HOST_BIN=$BUILD_DIR/host/agentd-host
HS=$T/hs.py
# hostsock.py's manner, but each line printed as it comes: a test waits for an event of a
# request that still runs.
cat >"$HS" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(float(sys.argv[3]))
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
try:
    for line in s.makefile("rb"):
        sys.stdout.write(line.decode(errors="replace"))
        sys.stdout.flush()
except (socket.timeout, OSError):
    pass
EOF
FAKE_ACP=$REPO/tests/fakes/acp_agent.py
mkdir -p "$T/run/agents" "$T/state/agents" "$T/fake"
export FAKE_ACP_DIR=$T/fake FAKE_ACP_LOG=$T/fake/prompts.log
HOST_PID=

# wait_ok DESC SECONDS COMMAND...: a check that COMMAND succeeds within SECONDS.
wait_ok() {
	local desc=$1
	shift
	if wait_for "$@"; then pass "$desc"; else fail "$desc" "not within $1 s: ${*:2}"; fi
}

# host_start NAME ID [PROMPT]: agentd-host --acp NAME for session ID, in $T/work/ID, in the
# background (HOST_PID), its pane in $T/logs/ID.pane.
host_start() {
	local name=$1 id=$2 prompt=${3-}
	local args=(--set "AGENTD_RUNTIME_DIR=$T/run" --set "AGENTD_STATE_DIR=$T/state"
		--set AGENTD_PERMISSION_TIMEOUT=60 --acp "$name")
	[ -n "$prompt" ] && args+=(--prompt "$prompt")
	mkdir -p "$T/work/$id"
	(cd "$T/work/$id" && exec env "${AGENT_ENV[@]}" "$HOST_BIN" "${args[@]}" "$id" -- \
		"${AGENT_CMD[@]}") >>"$T/logs/$id.pane" 2>>"$T/logs/$id.stderr" &
	HOST_PID=$!
	wait_ok "the host of $id listens" 20 test -S "$T/run/agents/$id/host.sock"
}
# The agent host_start runs, and what its environment adds.
AGENT_CMD=(python3 "$FAKE_ACP")
AGENT_ENV=()

# host_stop: SIGTERM, as tmux's respawn does; the host ends the agent's process group (and
# removes its socket: the next host of the session starts once it is gone).
host_stop() {
	[ -n "$HOST_PID" ] || return 0
	kill -TERM "$HOST_PID" 2>/dev/null
	wait "$HOST_PID" 2>/dev/null
	HOST_PID=
}

# hs ID LINE [SECONDS]: one request on the host's socket; prints what it answers.
hs() { python3 "$HS" "$T/run/agents/$1/host.sock" "$2" "${3:-10}"; }

# events FILE: the events of a request's answer, one JSON object a line.
events() { grep '"event"' "$1"; }

# prompts_seen ID: the fake's log of prompts for the ACP session of ID.
prompts_seen() {
	local sid
	sid=$(jq -r .sessionId "$T/state/agents/$1/acp.json")
	jq -c "select(.sessionId == \"$sid\")" "$FAKE_ACP_LOG"
}

trap 'rc=$?; host_stop; stop_fake_apis; (exit $rc); cleanup' EXIT

# ITEST_ACP_PARTS: which parts run (default all: "A gemini opencode codex api"), to rerun one.
part() { [[ " ${ITEST_ACP_PARTS:-A gemini opencode codex api} " == *" $1 "* ]]; }

if part A; then
# --- opencode's options: start, bootstrap prompt, a streamed turn ------------------------------
export FAKE_ACP_OPTIONS=opencode
host_start opencode oc-1 "bootstrap: work on issue 1"
wait_ok "the bootstrap prompt reaches the agent" 10 grep -qs 'bootstrap: work on issue 1' \
	"$FAKE_ACP_LOG"
check "acp.json remembers the agent's session" jq -e '.sessionId | length > 0' \
	"$T/state/agents/oc-1/acp.json"
wait_ok "the bootstrap turn ends with a result" 10 grep -qs '"event":"result"' \
	"$T/state/agents/oc-1/events.log"

hs oc-1 '{"type":"prompt","prompt":"say hello"}' >"$T/t1"
assert_jq "a turn: accepted, not queued" '.type == "accepted" and .queued == 0' "$(head -n 1 "$T/t1")"
assert_eq "a turn: init, the prompt, thinking, two text pieces, the text whole, result" \
	"system user assistant stream_event stream_event assistant result" \
	"$(events "$T/t1" | jq -r .event | tr '\n' ' ' | sed 's/ $//')"
assert_jq "a turn: each event's data type is its name (claude's frames)" \
	'all(.[]; .data.type == .event)' "$(events "$T/t1" | jq -s -c .)"
assert_jq "a turn: system init names the agent and its model" \
	'.[0].data | .subtype == "init" and .agent == "opencode" and .model == "fake-acp-model"' \
	"$(events "$T/t1" | jq -s -c .)"
assert_jq "a turn: the prompt comes back as a user event with isReplay" \
	'.[1].data | .isReplay == true and .message.content == "say hello"' \
	"$(events "$T/t1" | jq -s -c .)"
assert_jq "a turn: the pieces stream as text_delta" \
	'[.[] | select(.event == "stream_event") | .data.event.delta.text] | add == "echo: say hello"' \
	"$(events "$T/t1" | jq -s -c .)"
assert_jq "a turn: the assistant event has the whole text" \
	'[.[] | select(.event == "assistant") | .data.message.content[0] | select(.type == "text") | .text] == ["echo: say hello"]' \
	"$(events "$T/t1" | jq -s -c .)"
assert_jq "a turn: result with subtype, text, usage and cost" \
	'.[-1].data | .subtype == "success" and .is_error == false and .result == "echo: say hello" and
	 .usage.input_tokens == 11 and .usage.output_tokens == 7 and .total_cost_usd > 0 and
	 .queued_turn_count == 0 and .agent == "opencode"' \
	"$(events "$T/t1" | jq -s -c .)"
check "the pane shows the turn readably" grep -qs '^opencode: echo: say hello$' "$T/logs/oc-1.pane"

# --- a tool permission, allowed and denied -----------------------------------------------------
# ask ID PROMPT OUT: a prompt whose turn asks a permission, in the background (ASK_PID).
ask() {
	: >"$3"
	hs "$1" "{\"type\":\"prompt\",\"prompt\":\"$2\"}" 20 >"$3" &
	ASK_PID=$!
	wait_ok "$2: a permission event arrives" 10 grep -qs '"event":"permission"' "$3"
	RID=$(events "$3" | jq -r 'select(.event == "permission") | .data.requestId')
}

# answer ID BEHAVIOR [MORE]: the host's answer to the request RID.
answer() {
	hs "$1" "{\"type\":\"permission\",\"requestId\":\"$RID\",\"behavior\":\"$2\"${3-}}"
}
ask oc-1 "RUNTOOL ls -la" "$T/a1"
assert_jq "permission: the event has the common fields and the agent's options" \
	'.data | (.requestId | test("^acp-[0-9]+-1$")) and .toolName == "Shell" and .input.command == "ls -la" and
	 .toolUseId != null and has("description") and has("suggestions") and has("blockedPath") and
	 (.options | map(.kind) | index("allow_once") != null)' \
	"$(events "$T/a1" | jq -c 'select(.event == "permission")')"
assert_jq "permission: the tool call came first as tool_use" \
	'[.[] | select(.event == "assistant") | .data.message.content[0] | select(.type == "tool_use")] | length == 1' \
	"$(events "$T/a1" | jq -s -c .)"
# ACP's answer names one of the agent's options: it cannot change the tool call's input.
assert_jq "permission: an allow with updatedInput is 400 updated_input_unsupported" \
	'.type == "error" and .status == 400 and .code == "updated_input_unsupported"' \
	"$(answer oc-1 allow ',"updatedInput":{"command":"ls"}')"
check_not "permission: the refused answer answered nothing" grep -qs '"permission_resolved"' \
	"$T/a1"
assert_jq "permission: allow answers ok" '.type == "ok"' \
	"$(answer oc-1 allow ',"by":"alice"')"
wait "$ASK_PID"
assert_jq "allow: the agent got allow_once (opencode: once) and ran the tool" \
	'[.[] | select(.event == "result") | .data.result] == ["allowed: ls -la"]' \
	"$(events "$T/a1" | jq -s -c .)"
assert_jq "allow: permission_resolved, then a tool_result" \
	'([.[] | .event] | index("permission_resolved")) != null and
	 ([.[] | select(.event == "user") | .data.message.content | arrays | .[0] | select(.type == "tool_result")] | length == 1)' \
	"$(events "$T/a1" | jq -s -c .)"
assert_jq "a second answer: 409 already_answered" '.status == 409 and .code == "already_answered"' \
	"$(answer oc-1 deny)"
ask oc-1 "RUNTOOL rm -rf x" "$T/a2"
answer oc-1 deny ',"message":"no"' >/dev/null
wait "$ASK_PID"
assert_jq "deny: the agent got reject_once (opencode: reject)" \
	'[.[] | select(.event == "result") | .data.result] == ["denied: reject"]' \
	"$(events "$T/a2" | jq -s -c .)"
assert_jq "deny: the tool_result is an error" \
	'[.[] | select(.event == "user") | .data.message.content | arrays | .[0] | select(.type == "tool_result") | .is_error] == [true]' \
	"$(events "$T/a2" | jq -s -c .)"

# --- what is not advertised: -32601 ------------------------------------------------------------
hs oc-1 '{"type":"prompt","prompt":"READFILE"}' >"$T/f1"
assert_jq "fs/read_text_file is answered -32601 (not advertised)" \
	'[.[] | select(.event == "result") | .data.result] == ["fs error -32601"]' \
	"$(events "$T/f1" | jq -s -c .)"

# --- interrupt: session/cancel -----------------------------------------------------------------
: >"$T/s1"
hs oc-1 '{"type":"prompt","prompt":"SLOW"}' 30 >"$T/s1" &
SLOW_PID=$!
wait_ok "a slow turn streams" 10 grep -qs '"stream_event"' "$T/s1"
assert_jq "interrupt answers ok" '.type == "ok"' "$(hs oc-1 '{"type":"interrupt"}')"
wait "$SLOW_PID"
assert_jq "interrupt: the turn ends with a cancelled result" \
	'[.[] | select(.event == "result") | .data | .subtype, .stop_reason] == ["cancelled", "cancelled"]' \
	"$(events "$T/s1" | jq -s -c .)"

# --- prompts while a turn runs are queued ------------------------------------------------------
: >"$T/q0" >"$T/q1"
hs oc-1 '{"type":"prompt","prompt":"SLOW"}' 30 >"$T/q0" &
Q0=$!
wait_ok "the running turn streams" 10 grep -qs '"stream_event"' "$T/q0"
hs oc-1 '{"type":"prompt","prompt":"queued one"}' 30 >"$T/q1" &
Q1=$!
wait_ok "the second prompt is queued" 10 grep -qs '"event":"queued"' "$T/q1"
hs oc-1 '{"type":"interrupt"}' >/dev/null
wait "$Q0" "$Q1"
assert_jq "queued: accepted with 1 ahead, then its own turn" \
	'.[0].queued == 1 and ([.[1:][] | .event] | .[0] == "queued" and .[-1] == "result") and
	 ([.[] | select(.event == "result") | .data.result] == ["echo: queued one"])' \
	"$(jq -s -c . "$T/q1")"

# --- restart: session/load ---------------------------------------------------------------------
host_stop
LAST=$(tail -n 1 "$T/state/agents/oc-1/events.log" | jq .id)
host_start opencode oc-1
wait_ok "the restarted host resumes its session" 10 grep -qs 'session .* ready' "$T/logs/oc-1.pane"
hs oc-1 '{"type":"prompt","prompt":"after restart"}' >"$T/r1"
assert_jq "restart: the agent sees the earlier turns" \
	'.history | index("bootstrap: work on issue 1") != null and index("say hello") != null' \
	"$(prompts_seen oc-1 | tail -n 1)"
assert_jq "restart: ids go on after the exit event, and the load's replay is not emitted again" \
	".[0].after == $LAST and .[1].id == $LAST + 1 and .[1].event == \"system\"" \
	"$(jq -s -c . "$T/r1")"
host_stop

# --- codex-acp's options: approved / abort -----------------------------------------------------
export FAKE_ACP_OPTIONS=codex
host_start codex cx-1
ask cx-1 "RUNTOOL make" "$T/c1"
answer cx-1 allow >/dev/null
wait "$ASK_PID"
assert_jq "codex: allow is approved (allow_once), not the execpolicy amendment" \
	'[.[] | select(.event == "result") | .data.result] == ["allowed: make"]' \
	"$(events "$T/c1" | jq -s -c .)"
ask cx-1 "RUNTOOL make" "$T/c2"
answer cx-1 deny >/dev/null
wait "$ASK_PID"
assert_jq "codex: deny is abort (reject_always: it has no reject_once)" \
	'[.[] | select(.event == "result") | .data.result] == ["denied: abort"]' \
	"$(events "$T/c2" | jq -s -c .)"
host_stop

# --- gemini: a load in the minute the session was made would lose it ---------------------------
# The fake fails such a load as gemini 0.61.0 does, and the session is unloadable after; the
# host waits for the next minute.
export FAKE_ACP_OPTIONS=gemini FAKE_ACP_SAME_MINUTE_BUG=1 FAKE_ACP_LATE_REPLAY=1
# Far enough from the minute's end that the restart below falls in the same minute.
while [ "$(date +%S | sed 's/^0//')" -gt 45 ]; do sleep 1; done
host_start gemini gm-1 "gemini bootstrap"
wait_ok "gemini: the bootstrap prompt reaches the agent" 10 grep -qs 'gemini bootstrap' "$FAKE_ACP_LOG"
wait_ok "gemini: the bootstrap turn ends" 10 grep -qs '"event":"result"' \
	"$T/state/agents/gm-1/events.log"
host_stop
host_start gemini gm-1
wait_ok "gemini: the restarted host says it waits for the next minute" 5 grep -qs \
	'waiting .* for the next minute' "$T/logs/gm-1.pane"
hs gm-1 '{"type":"prompt","prompt":"gemini after restart"}' 90 >"$T/g1"
assert_jq "gemini: the prompt sent while waiting runs once loaded" \
	'[.[] | select(.event == "result") | .data.result] == ["echo: gemini after restart"]' \
	"$(events "$T/g1" | jq -s -c .)"
assert_jq "gemini: the replay the agent sends after its load answer is not this turn's" \
	'[.[] | select(.event == "assistant" or .event == "stream_event") | tostring | select(contains("gemini bootstrap"))] == []' \
	"$(events "$T/g1" | jq -s -c .)"
assert_jq "gemini: the agent sees the earlier turn (its session was loaded, not lost)" \
	'.prompt == "gemini after restart" and .history == ["gemini bootstrap"]' \
	"$(prompts_seen gm-1 | tail -n 1)"
host_stop
unset FAKE_ACP_SAME_MINUTE_BUG FAKE_ACP_LATE_REPLAY

check_not "no fake agent outlives its host" pgrep -f "$FAKE_ACP"

# --- what the agent started in a session of its own ends with it ----------------------------------
# opencode runs git with setsid: out of the agent's process group, which the host's stop ends.
# The host is their subreaper and ends them once the agent has exited.
host_start opencode or-1
hs or-1 '{"type":"prompt","prompt":"ORPHAN please"}' 20 >"$T/orph"
ORPHAN=$(cat "$T/fake/orphan.pid" 2>/dev/null)
check "the agent started a process in a session of its own" test -n "$ORPHAN" -a -d "/proc/${ORPHAN:-0}"
assert_eq "... outside the agent's process group" "$ORPHAN" \
	"$(ps -o sid= -p "${ORPHAN:-0}" 2>/dev/null | tr -d ' ')"
host_stop
for _ in $(seq 50); do [ -d "/proc/${ORPHAN:-0}" ] || break; sleep 0.1; done
check_not "it ended with the agent's host" test -d "/proc/${ORPHAN:-0}"
[ -n "$ORPHAN" ] && kill -KILL "$ORPHAN" 2>/dev/null
fi # part A

# ------------------------------------------------------------------------------------------------
# Part B: the real CLIs (tests/package.json's pins) in their ACP mode behind agentd-host, offline
# against the fake model APIs (tests/fakes/openai_api.py, gemini_api.py): gemini --acp,
# opencode acp, and codex through @zed-industries/codex-acp 0.16.0 (codex itself has no ACP
# mode; the adapter embeds its own codex-rs and reads the same CODEX_HOME). Each: the bootstrap
# prompt reaches the fake, a turn streams, a shell command asks a permission that an allow
# answers (the file appears), a restart resumes with session/load (the fake gets the earlier
# turns), and the host's end ends the agent.
# Not offline: nothing here logs in (API keys are fakes), downloads models or checks for
# updates; codex-acp's "Model metadata for fake-model not found" notice is part of its answer
# since the fake model is unknown to it.
H=$T/agents-home
mkdir -p "$H/.codex" "$H/.gemini" "$H/tmp"
assert_pinned_agents
CODEX_ACP_EXE=$NODE_MODULES/@zed-industries/codex-acp-linux-x64/bin/codex-acp
check "codex-acp 0.16.0 is installed" grep -q '"version": "0.16.0"' \
	"$NODE_MODULES/@zed-industries/codex-acp/package.json"
start_fake_apis || exit 1
REAL_WAIT=90

# fake_got LOG WORD: the fake model got a request holding WORD.
fake_got() { [ "$(requests_with "$1" "$2")" -gt 0 ]; }

# agent_pid ID: the pid of the agent the last host of ID started (its pane says it).
agent_pid() { sed -n 's/^-- agentd-host: session .*, .* pid \([0-9]*\) (ACP)$/\1/p' "$T/logs/$1.pane" | tail -n 1; }

# real_agent NAME ID WORD: one real agent's run (AGENT_CMD and AGENT_ENV set); WORD marks its
# prompts in the fake's log (LOG: that fake's).
real_agent() {
	local name=$1 id=$2 w=$3 log=$4
	host_start "$name" "$id" "bootstrap ${w}ONE"
	wait_ok "$name: the bootstrap prompt reaches the fake model" $REAL_WAIT \
		fake_got "$log" "${w}ONE"
	wait_ok "$name: the bootstrap turn ends" $REAL_WAIT grep -qs '"event":"result"' \
		"$T/state/agents/$id/events.log"
	hs "$id" "{\"type\":\"prompt\",\"prompt\":\"say hello ${w}TWO\"}" $REAL_WAIT >"$T/$id.t1"
	assert_jq "$name: a turn streams and its result has the fake's answer" \
		"([.[] | select(.event == \"stream_event\")] | length > 0) and
		 ([.[] | select(.event == \"result\") | .data.result | endswith(\"Hello from the fake model (${w}TWO)\")] == [true])" \
		"$(events "$T/$id.t1" | jq -s -c .)"
	: >"$T/$id.a1"
	hs "$id" "{\"type\":\"prompt\",\"prompt\":\"RUNBASH touch made-by-$name\"}" $REAL_WAIT \
		>"$T/$id.a1" &
	ASK_PID=$!
	wait_ok "$name: the shell command asks a permission" $REAL_WAIT grep -qs '"event":"permission"' \
		"$T/$id.a1"
	check_not "$name: nothing ran before the answer" test -e "$T/work/$id/made-by-$name"
	RID=$(events "$T/$id.a1" | jq -r 'select(.event == "permission") | .data.requestId')
	assert_jq "$name: allow answers ok" '.type == "ok"' \
		"$(hs "$id" "{\"type\":\"permission\",\"requestId\":\"$RID\",\"behavior\":\"allow\"}")"
	wait "$ASK_PID"
	check "$name: the allowed command ran" test -e "$T/work/$id/made-by-$name"
	assert_jq "$name: tool_use, permission, permission_resolved, tool_result, result" \
		'[.[] | .event as $e | .data | select($e == "permission" or $e == "permission_resolved" or $e == "result" or
		 ($e == "assistant" and .message.content[0].type == "tool_use") or
		 ($e == "user" and (.message.content | type == "array") and .message.content[0].type == "tool_result")) | $e] ==
		 ["assistant", "permission", "permission_resolved", "user", "result"]' \
		"$(events "$T/$id.a1" | jq -s -c .)"
	APID=$(agent_pid "$id")
	host_stop
	check_not "$name: the agent ended with its host" kill -0 "${APID:-0}"
	host_start "$name" "$id"
	hs "$id" "{\"type\":\"prompt\",\"prompt\":\"again ${w}THREE\"}" $((REAL_WAIT + 60)) >"$T/$id.r1"
	assert_jq "$name: after a restart the prompt is answered" \
		"[.[] | select(.event == \"result\") | .data.result | endswith(\"(${w}THREE)\")] == [true]" \
		"$(events "$T/$id.r1" | jq -s -c .)"
	check "$name: the resumed session sends the earlier turns to the model" sh -c \
		"jq -c 'select(.method == \"POST\") | .body' '$log' | grep ${w}THREE | grep ${w}TWO | grep -q ${w}ONE"
	check "$name: the restarted host loaded the agent's session" grep -q "resuming $name session" \
		"$T/logs/$id.pane"
	host_stop
}

# gemini: its API key and base URL; --skip-trust (the trust dialog restarts the CLI).
gemini_settings >"$H/.gemini/settings.json"
AGENT_ENV=(HOME="$H" GEMINI_CLI_NO_RELAUNCH=1 GEMINI_API_KEY="$FAKE_API_KEY"
	GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$GEMINI_PORT")
AGENT_CMD=(node "$GEMINI_EXE" --acp -m "$GEMINI_MODEL" --skip-trust)
if part gemini; then real_agent gemini rg-1 GEMACP "$GEMINI_LOG"; fi

# opencode: bash asks (its build agent runs shell commands in the project without asking).
AGENT_ENV=(HOME="$H" XDG_CONFIG_HOME="$H/.config" XDG_DATA_HOME="$H/.local/share"
	XDG_CACHE_HOME="$H/.cache" XDG_STATE_HOME="$H/.local/state"
	OPENCODE_CONFIG_CONTENT="$(opencode_config | jq -c '. + {permission: {bash: "ask"}}')"
	OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 FAKE_API_KEY="$FAKE_API_KEY")
AGENT_CMD=("$OPENCODE_EXE" acp)
if part opencode; then real_agent opencode ro-1 OCACP "$OPENAI_LOG"; fi

# codex-acp: the fake provider, the project trusted, escalations asked (on-request: the fake asks
# for one).
mkdir -p "$T/work/rc-1"
{
	codex_provider_toml | sed '1a approval_policy = "on-request"'
	printf '[projects."%s"]\ntrust_level = "trusted"\n' "$T/work/rc-1"
} >"$H/.codex/config.toml"
AGENT_ENV=(HOME="$H" CODEX_HOME="$H/.codex" TMPDIR="$H/tmp" FAKE_API_KEY="$FAKE_API_KEY")
AGENT_CMD=("$CODEX_ACP_EXE")
if part codex; then real_agent codex rc-1 CXACP "$OPENAI_LOG"; fi

# ------------------------------------------------------------------------------------------------
# Part C: the same CLIs through the whole stack: POST /sessions {"agent", "mode":"structured"}
# runs agentd-host --acp in the pane (as the agents' user, the CLI's home prepared without hooks),
# POST /sessions/<id>/prompt streams the turn as SSE, the permission is listed in the session's
# pending and answered with POST /permissions/<rid>, the agent's exit makes the session exited and
# POST /sessions resumes its conversation, DELETE ends it.
if part api; then
source "$REPO/tests/integration/structured/lib_structured.sh"
# lib_structured.sh sets its own exit trap: the fake APIs must stop too.
trap 'rc=$?; kill_sse_clients; host_stop; stop_fake_apis; (exit $rc); cleanup' EXIT
make_remote acme widgets
mkdir -p "$T/home/.codex" "$T/home/.gemini" "$T/agent-tmp"
codex_provider_toml | sed '1a approval_policy = "on-request"' >"$T/home/.codex/config.toml"
gemini_settings >"$T/home/.gemini/settings.json"
agent_owns "$T/home" "$T/agent-tmp"
mkdir -p "$T/bin"
printf '#!/bin/sh\nexec sleep 3600\n' >"$T/bin/tool"
chmod 0755 "$T/bin/tool"
start_stack AGENTD_AGENT_GEMINI_COMMAND="$GEMINI_EXE" AGENTD_AGENT_OPENCODE_COMMAND="$OPENCODE_EXE" \
	AGENTD_AGENT_TOOL_COMMAND="$T/bin/tool" AGENTD_AGENT_TOOL_ACP="python3 $FAKE_ACP" \
	AGENTD_AGENT_CODEX_ACP="$CODEX_ACP_EXE" \
	AGENTD_AGENT_ENV="HOME PATH LANG TMPDIR FAKE_API_KEY GEMINI_API_KEY GOOGLE_GEMINI_BASE_URL GEMINI_MODEL OPENCODE_CONFIG_CONTENT OPENCODE_DISABLE_MODELS_FETCH" \
	TMPDIR="$T/agent-tmp" FAKE_API_KEY="$FAKE_API_KEY" GEMINI_API_KEY="$FAKE_API_KEY" \
	GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$GEMINI_PORT" GEMINI_MODEL="$GEMINI_MODEL" \
	OPENCODE_CONFIG_CONTENT="$(opencode_config | jq -c '. + {permission: {bash: "ask"}}')" \
	OPENCODE_DISABLE_MODELS_FETCH=1 || exit 1

# api_agent NAME ISSUE WORD LOG: one agent's structured session through the API.
api_agent() {
	local name=$1 issue=$2 w=$3 log=$4 sid rid pane wt deadline
	api POST /sessions "$(jq -cn --arg a "$name" --argjson i "$issue" --arg p "bootstrap ${w}ONE" \
		'{repo: {owner: "acme", name: "widgets"}, issue: $i, prompt: $p, agent: $a, mode: "structured"}')"
	assert_status "$name api: POST /sessions structured answers 201" 201
	sid=$(printf '%s' "$BODY" | jq -r .id)
	wt=$T/code/widgets-issue-$issue
	assert_json "$name api: the session shows its agent and mode" '[.agent, .mode]' \
		"[\"$name\",\"structured\"]"
	assert_state "$name api: the session runs" "$sid" running 60
	wait_ok "$name api: the bootstrap prompt reaches the fake model" $REAL_WAIT \
		fake_got "$log" "${w}ONE"
	pane=$(pane_pid "$sid")
	assert_match "$name api: the pane runs agentd-host --acp $name" \
		"agentd-host .*--acp $name .* $sid -- " "$(tr '\0' ' ' <"/proc/${pane:-0}/cmdline" 2>/dev/null)"
	if wait_activity "$sid" '.activity == "idle"' $REAL_WAIT; then
		pass "$name api: idle once the bootstrap turn ends"
	else
		fail "$name api: idle once the bootstrap turn ends" "$BODY"
	fi
	sse_start "${name}c1" POST "/sessions/$sid/prompt" "{\"prompt\":\"say hello ${w}TWO\"}"
	sse_wait_end "${name}c1" $REAL_WAIT
	assert_eq "$name api: the prompt's stream is 200 and ends by itself" "200 eof" \
		"$(sse_status "${name}c1") $(sse_end "${name}c1")"
	assert_jq "$name api: the turn in the common shape: system, the prompt, text, result" \
		"(.[0].event == \"system\") and (.[1].data | fromjson | .isReplay) and
		 ([.[] | select(.event == \"stream_event\")] | length > 0) and
		 (.[-1].event == \"result\") and (.[-1].data | fromjson | .result | endswith(\"(${w}TWO)\"))" \
		"$(sse_events "${name}c1" | jq -s -c .)"
	# sse.py's own limit (60 s by default) is no shorter than the waits below.
	sse_start "${name}c2" POST "/sessions/$sid/prompt" "{\"prompt\":\"RUNBASH touch $wt/made-by-$name\"}" \
		--timeout $((2 * REAL_WAIT))
	assert_sse_event "$name api: a permission event arrives" "${name}c2" '.event == "permission"' $REAL_WAIT
	rid=$(sse_permission_ids "${name}c2" | head -n 1)
	if wait_activity "$sid" ".activity == \"waiting\" and .pending[0].requestId == \"$rid\"" 20; then
		pass "$name api: the session is waiting, the request pending"
	else
		fail "$name api: the session is waiting, the request pending" "$BODY"
	fi
	check_not "$name api: nothing ran before the answer" test -e "$wt/made-by-$name"
	api POST "/sessions/$sid/permissions/$rid" '{"behavior":"allow"}'
	assert_status "$name api: POST /permissions allow answers 200" 200
	sse_wait_end "${name}c2" $REAL_WAIT
	assert_eq "$name api: the turn's stream ends by itself" eof "$(sse_end "${name}c2")"
	check "$name api: the allowed command ran" test -e "$wt/made-by-$name"
	api POST "/sessions/$sid/permissions/$rid" '{"behavior":"deny"}'
	assert_status "$name api: a second answer is 409" 409
	# The agent's exit: the host follows it (exited); POST /sessions starts it again.
	kill -KILL "$(agent_of_pane "$pane")" 2>/dev/null
	assert_state "$name api: exited once its agent is gone" "$sid" exited 30
	api POST /sessions "$(jq -cn --argjson i "$issue" '{repo: {owner: "acme", name: "widgets"}, issue: $i}')"
	assert_status "$name api: POST /sessions on the exited session answers 201" 201
	assert_state "$name api: it runs again" "$sid" running 60
	sse_start "${name}c3" POST "/sessions/$sid/prompt" "{\"prompt\":\"again ${w}THREE\"}" \
		--timeout $((REAL_WAIT + 60))
	sse_wait_end "${name}c3" $((REAL_WAIT + 60))
	assert_jq "$name api: the resumed agent answers" \
		"[.[] | select(.event == \"result\") | .data | fromjson | .result | endswith(\"(${w}THREE)\")] == [true]" \
		"$(sse_events "${name}c3" | jq -s -c .)"
	check "$name api: the resumed session sends the earlier turns to the model" sh -c \
		"jq -c 'select(.method == \"POST\") | .body' '$log' | grep ${w}THREE | grep ${w}TWO | grep -q ${w}ONE"
	api DELETE "/sessions/$sid?force=true"
	assert_status "$name api: DELETE answers 200" 200
	deadline=$((SECONDS + 20))
	while tmux_has "$sid" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	check_not "$name api: its tmux session is gone" tmux_has "$sid"
}

# agent_of_pane PID: the agent agentd-host (PID) runs: its child.
agent_of_pane() { pgrep -P "${1:-0}" | head -n 1; }

# DELETE ends what the agent started in a session of its own (opencode runs git with setsid),
# not only the agent's process group: the fake ACP agent (configured as "tool") starts one.
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":14,"agent":"tool","mode":"structured"}'
assert_status "orphan: POST /sessions structured (fake ACP agent) answers 201" 201
OSID=$(printf '%s' "$BODY" | jq -r .id)
assert_state "orphan: the session runs" "$OSID" running 30
sse_start orph POST "/sessions/$OSID/prompt" '{"prompt":"ORPHAN please"}'
sse_wait_end orph 30
ORPHAN=$(sse_events orph | jq -s -r '[.[] | select(.event == "result") | .data | fromjson |
	.result | capture("started (?<p>[0-9]+)").p][0] // empty')
check "orphan: the agent started a process in a session of its own" \
	test -n "$ORPHAN" -a -d "/proc/${ORPHAN:-0}"
assert_eq "orphan: ... outside the agent's session" "$ORPHAN" \
	"$(ps -o sid= -p "${ORPHAN:-0}" 2>/dev/null | tr -d ' ')"
api DELETE "/sessions/$OSID?force=true"
assert_status "orphan: DELETE answers 200" 200
for _ in $(seq 100); do [ -d "/proc/${ORPHAN:-0}" ] || break; sleep 0.1; done
check_not "orphan: no process the agent started outlives DELETE" test -d "/proc/${ORPHAN:-0}"
[ -n "$ORPHAN" ] && kill -KILL "$ORPHAN" 2>/dev/null

if part gemini; then api_agent gemini 11 GEMAPI "$GEMINI_LOG"; fi
if part opencode; then api_agent opencode 12 OCAPI "$OPENAI_LOG"; fi
if part codex; then api_agent codex 13 CXAPI "$OPENAI_LOG"; fi
fi # part api

#!/usr/bin/env bash
# The REAL claude CLI, offline, through nginx on a private stack:
# - the CLI comes from the npm registry (@anthropic-ai/claude-code, pinned to the version
#   notes/real-claude-offline.md verified) and is installed once into a cache directory; it talks
#   to a fake Messages API on loopback (tests/fakes/messages_api.py), which logs every request;
# - terminal mode: the TUI in the pane shows the fake model's answer (tmux capture-pane);
# - POST /mode structured -> POST /prompt (SSE) with a prompt the fake model answers with a Bash
#   tool_use -> "event: permission" -> POST /permissions/<requestId> allow -> the command ran in
#   the worktree -> the stream ends after "event: result";
# - POST /mode terminal -> the TUI continues the same conversation (the fake API receives the
#   earlier turns in its "messages");
# - after every step exactly one claude process runs at or below the pane's process, and no other
#   claude of this test runs anywhere.
# Environment: AGENTD_TEST_CLAUDE_CACHE (default /var/cache/agentd-tests/claude-code, or
# ~/.cache/agentd-tests/claude-code when that is not writable), AGENTD_TEST_CLAUDE_VERSION
# (default 2.1.328), AGENTD_TEST_CLAUDE=<claude executable> (no npm install).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RC_DIR=$REPO/tests/integration/real_claude
source "$RC_DIR/lib_real_claude.sh"
TUI_WAIT=60  # seconds for the TUI to show an answer (the CLI starts in a few seconds)
# ------------------------------------------------------------------------------------------------
# processes

# pane_claudes TMUXNAME: pids of the claude processes at or below the pane's process.
pane_claudes() {
	local pp p
	pp=$(pane_pid "$1")
	[ -n "$pp" ] || return 0
	for p in "$pp" $(descendants "$pp"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" == claude ] && echo "$p"
	done
}

proc_tree() {
	local pp
	pp=$(pane_pid "$1")
	echo "pane pid: ${pp:-none}"
	ps -e -o pid,ppid,pgid,stat,comm,args --forest | grep -v ' ps ' | cut -c1-200 |
		grep -E "claude|agentd-host|tmux" | head -n 30
}

# assert_one_claude DESC TMUXNAME: exactly one claude at or below the pane, its executable the
# installed CLI, and no other claude of this test anywhere. Waits up to 15 s for the claude to
# appear, but fails at once if two are ever seen. Sets ONE_CLAUDE to its pid.
assert_one_claude() {
	local deadline=$((SECONDS + 15)) in_pane all n
	ONE_CLAUDE=
	while :; do
		in_pane=$(pane_claudes "$2" | sort)
		all=$(test_claudes | sort)
		n=$(printf '%s' "$all" | grep -c .)
		[ "$n" -gt 1 ] && break
		if [ "$(printf '%s' "$in_pane" | grep -c .)" == 1 ] && [ "$in_pane" == "$all" ] &&
			[ "$(readlink -f "/proc/$in_pane/exe" 2>/dev/null)" == "$CLAUDE_EXE" ]; then
			ONE_CLAUDE=$in_pane
			pass "$1"
			return 0
		fi
		[ $SECONDS -ge $deadline ] && break
		sleep 0.1
	done
	fail "$1" "claude under the pane: ${in_pane//$'\n'/ }" "claude of this test: ${all//$'\n'/ }" \
		"$(proc_tree "$2")"
	return 1
}

# wait_cost DESC SID JQ: GET /sessions/SID (which takes in claude's transcript) until its .cost
# passes JQ, within 20 s; one check.
wait_cost() {
	local deadline=$((SECONDS + 20))
	while [ $SECONDS -lt $deadline ]; do
		get_session "$2"
		jq -e ".cost | $3" <<<"$BODY" >/dev/null 2>&1 && break
		sleep 0.3
	done
	assert_jq "$1" ".cost | $3"
}

# ================================================================================================

install_claude || exit 1
assert_pinned_claude
start_fake_api || exit 1
make_remote acme widgets

ISSUE=1
WORKTREE=$T/code/widgets-issue-$ISSUE
seed_home "$WORKTREE"

# The structured-mode host of this build (agentd-api finds it in the build tree by itself).
HOST_BIN=$BUILD_DIR/host/agentd-host
TEST_T0=$SECONDS
start_real_stack || exit 1

# --- terminal mode: the TUI shows the fake model's answer -------------------------------------
api POST /sessions "$(jq -cn --argjson i "$ISSUE" \
	'{repo: {owner: "acme", name: "widgets"}, issue: $i, prompt: "say hello TURNONE"}')"
assert_status "POST /sessions answers 201" 201
SID=$(printf '%s' "$BODY" | jq -r .id)
TMUXNAME=$(printf '%s' "$BODY" | jq -r .tmuxName)
UUID=$(printf '%s' "$BODY" | jq -r .agentSessionId)
assert_state "the session is running" "$SID" running 60
assert_json "worktree, mode" '[.worktree, .mode]' "[\"$WORKTREE\",\"terminal\"]"
T_TUI=$SECONDS
if wait_pane "$TMUXNAME" "Hello from the fake model (TURNONE)" "$TUI_WAIT"; then
	pass "the TUI shows the fake model's answer ($((SECONDS - T_TUI)) s)"
else
	fail "the TUI shows the fake model's answer" "$(pane_text "$TMUXNAME")" "$(proc_tree "$TMUXNAME")"
fi
assert_one_claude "terminal: one claude under the pane" "$TMUXNAME"
TUI_CLAUDE=$ONE_CLAUDE
# The TUI's turn is in claude's transcript only: one message of the fake model (usage 10 in,
# 5 out, claude-sonnet-4-5: $3 and $15 per million tokens, so 105 millionths, an estimate).
wait_cost "terminal: the TUI turn's tokens are the session's cost" "$SID" \
	'. == {usd: 0.000105, inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, turns: 1,
	       usdEstimated: true}'
assert_eq "terminal: claude is the pane's process" "$(pane_pid "$TMUXNAME")" "${TUI_CLAUDE:-none}"
assert_match "terminal: claude --session-id=<agentSessionId> --settings=<hooks> -- 'say hello TURNONE'" \
	"^$(re "$CLAUDE") --session-id=$UUID --settings=$(re "$T/run/claude-settings.json") -- say hello TURNONE $" \
	"$(tr '\0' ' ' <"/proc/${TUI_CLAUDE:-0}/cmdline" 2>/dev/null)"
for v in ANTHROPIC_BASE_URL CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC DISABLE_TELEMETRY DISABLE_AUTOUPDATER; do
	assert_match "terminal: claude's environment has $v" "^$v=." \
		"$(tr '\0' '\n' <"/proc/${TUI_CLAUDE:-0}/environ" 2>/dev/null | grep "^$v=")"
done
assert_eq "terminal: claude runs as the agents' user" "$AGENT_UID" \
	"$(stat -c %u "/proc/${TUI_CLAUDE:-0}" 2>/dev/null)"
TRANSCRIPT=$T/home/.claude/projects/$(printf '%s' "$WORKTREE" | tr '/.' '--')/$UUID.jsonl
check "claude wrote its transcript for agentSessionId" test -s "$TRANSCRIPT"
assert_eq "the transcript is the agent's" "$AGENT_UID" "$(stat -c %u "$TRANSCRIPT" 2>/dev/null)"

# --- structured mode ----------------------------------------------------------------------------
api POST "/sessions/$SID/mode" '{"mode":"structured"}'
assert_status "POST /mode structured answers 200" 200
assert_json "the answer says structured" .mode '"structured"'
check_not "the TUI's claude is gone" alive "${TUI_CLAUDE:-0}"
assert_one_claude "structured: one claude under the pane" "$TMUXNAME"
S_CLAUDE=$ONE_CLAUDE
HOST_PID=$(pane_pid "$TMUXNAME")
assert_eq "structured: agentd-host and claude run as the agents' user" "$AGENT_UID $AGENT_UID" \
	"$(stat -c %u "/proc/${HOST_PID:-0}" 2>/dev/null) $(stat -c %u "/proc/${S_CLAUDE:-0}" 2>/dev/null)"
assert_eq "structured: the pane runs this build's agentd-host" "$(readlink -f "$HOST_BIN")" \
	"$(readlink -f "/proc/${HOST_PID:-0}/exe" 2>/dev/null)"
assert_eq "structured: claude is agentd-host's child" "${HOST_PID:-none}" \
	"$(ps -o ppid= -p "${S_CLAUDE:-0}" 2>/dev/null | tr -d ' ')"
assert_match "structured: claude runs stream-json with --resume=<agentSessionId>" \
	"^$(re "$CLAUDE") -p --input-format stream-json --output-format stream-json --verbose --replay-user-messages --permission-prompt-tool stdio --resume=$UUID $" \
	"$(tr '\0' ' ' <"/proc/${S_CLAUDE:-0}/cmdline" 2>/dev/null)"

PROMPT="please RUNBASH touch real-claude-was-here"
T_TURN=$SECONDS
sse_start "$SID" "$PROMPT"
# Wait for the permission event (or for the request to end: an error).
deadline=$((SECONDS + TURN_WAIT))
while [ $SECONDS -lt $deadline ] && sse_running && ! grep -q '^event: permission' "$T/sse.out"; do
	sleep 0.1
done
assert_eq "POST /prompt answers 200" 200 "$(sse_status)"
assert_match "POST /prompt is an event stream" '(^|'$'\n'')[Cc]ontent-[Tt]ype: text/event-stream' \
	"$(tr -d '\r' <"$T/sse.headers")"
PERM=$(sse_data permission)
RID=$(printf '%s' "$PERM" | jq -r '.requestId // empty' 2>/dev/null)
assert_jq "the SSE shows event: permission for Bash touch real-claude-was-here" \
	'(.requestId | type == "string" and length > 0) and .toolName == "Bash" and
	 .input.command == "touch real-claude-was-here" and (.toolUseId | startswith("toolu_"))' \
	"${PERM:-null}"
# Nothing ran yet: claude waits for the answer, and still only one claude exists.
check_not "the command has not run before the answer" test -e "$WORKTREE/real-claude-was-here"
check "the stream stays open while the permission is pending" sse_running
assert_one_claude "while the permission is pending: one claude under the pane" "$TMUXNAME"
assert_eq "while the permission is pending: the same claude" "${S_CLAUDE:-none}" "${ONE_CLAUDE:-}"
api POST "/sessions/$SID/permissions/${RID:-none}" '{"behavior":"allow"}'
assert_status "POST /permissions/<requestId> allow answers 200" 200
deadline=$((SECONDS + TURN_WAIT))
while sse_running && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
if sse_running; then
	fail "the SSE stream ends by itself after the result" "still open after $TURN_WAIT s" \
		"$(tail -c 2000 "$T/sse.out")"
else
	sse_reap
	assert_eq "the SSE stream ends by itself after the result (curl status)" 0 "$SSE_RC"
fi
log "structured turn took $((SECONDS - T_TURN)) s; events: $(sse_events)"
assert_eq "the last SSE event is the result" "event: result" \
	"$(grep '^event: ' "$T/sse.out" | tail -n 1 | tr -d '\r')"
assert_match "the SSE carries the whole turn in order" \
	'(^| )system .*assistant .*permission .*user .*assistant .*result $' "$(sse_events)"
# --replay-user-messages: claude echoes the prompt right after its init, before its answer.
assert_match "claude replays the prompt right after its init" '(^| )system user assistant ' \
	"$(sse_events)"
assert_jq "the replay is the prompt as sent, with isReplay" \
	".isReplay == true and .message == {role: \"user\", content: $(jq -cn --arg p "$PROMPT" '$p')}" \
	"$(sse_data user)"
RESULT=$(sse_data result)
assert_json "system/init carries agentSessionId" .session_id "\"$UUID\"" "$(sse_data system)"
assert_json "the result is a success saying Done." '[.subtype, .is_error, .result, .session_id]' \
	"[\"success\",false,\"Done.\",\"$UUID\"]" "${RESULT:-null}"
check "the SSE events are agentd-host's events: numbered, in order, none missing, same data" \
	python3 "$RC_DIR/sse_events.py" "$T/sse.out" "$T/state/agents/$SID/events.log"
check "the allowed command ran in the worktree" test -f "$WORKTREE/real-claude-was-here"
api POST "/sessions/$SID/permissions/${RID:-none}" '{"behavior":"allow"}'
assert_status "a second answer to the same request answers 409" 409
assert_one_claude "after the turn: one claude under the pane" "$TMUXNAME"
assert_eq "after the turn: it is the same claude" "${S_CLAUDE:-none}" "${ONE_CLAUDE:-}"
get_session "$SID"
assert_json "GET /sessions/<id>: structured, running" '[.mode, .state]' '["structured","running"]'
# The structured turn counts once, from its result: its lines in the transcript (print mode's)
# are not counted again.
wait_cost "structured: the result adds its own usage and cost, nothing twice" "$SID" \
	".turns == 2 and .inputTokens == 10 + $(jq '.usage.input_tokens' <<<"${RESULT:-null}") and
	 .outputTokens == 5 + $(jq '.usage.output_tokens' <<<"${RESULT:-null}") and
	 ((.usd - 0.000105 - $(jq '.total_cost_usd' <<<"${RESULT:-null}")) | fabs) < 0.000002"
COST_S=$(jq -c .cost <<<"$BODY")

# --- back to terminal: the TUI continues the conversation ---------------------------------------
api POST "/sessions/$SID/mode" '{"mode":"terminal"}'
assert_status "POST /mode terminal answers 200" 200
assert_json "the answer says terminal" .mode '"terminal"'
check_not "agentd-host is gone" alive "${HOST_PID:-0}"
check_not "the structured claude is gone" alive "${S_CLAUDE:-0}"
assert_one_claude "terminal again: one claude under the pane" "$TMUXNAME"
T2_CLAUDE=$ONE_CLAUDE
assert_eq "terminal again: claude is the pane's process" "$(pane_pid "$TMUXNAME")" "${T2_CLAUDE:-none}"
assert_match "terminal again: claude --resume=<agentSessionId>, no prompt" \
	"^$(re "$CLAUDE") --resume=$UUID --settings=$(re "$T/run/claude-settings.json") $" \
	"$(tr '\0' ' ' <"/proc/${T2_CLAUDE:-0}/cmdline" 2>/dev/null)"
# respawn-pane starts from a blank screen: what shows now comes from the resumed transcript,
# both the TUI's turn and the structured one.
if wait_pane "$TMUXNAME" "$PROMPT" "$TUI_WAIT" &&
	pane_text "$TMUXNAME" | grep -qF "Hello from the fake model (TURNONE)"; then
	pass "the resumed TUI shows the earlier conversation (both modes' turns)"
else
	fail "the resumed TUI shows the earlier conversation" "$(pane_text "$TMUXNAME")"
fi
N_BEFORE=$(main_requests | wc -l)
sleep 1 # the TUI takes keys only once its input box is up
tmx send-keys -t "=$TMUXNAME:" -l "say again TURNTHREE"
sleep 0.5
tmx send-keys -t "=$TMUXNAME:" Enter
if wait_pane "$TMUXNAME" "Hello from the fake model (TURNTHREE)" "$TUI_WAIT"; then
	pass "the TUI answers a new prompt"
else
	fail "the TUI answers a new prompt" "$(pane_text "$TMUXNAME")"
fi
pane_text "$TMUXNAME" >"$T/logs/pane-after-resume.txt"
LAST=$(main_requests | tail -n 1)
if [ "$(main_requests | wc -l)" -gt "$N_BEFORE" ]; then
	# Every turn, in order: TURNONE, the RUNBASH prompt, its tool_use and tool_result, TURNTHREE.
	assert_jq "the fake API got the whole conversation in messages" '
		[.messages[] | select(.role == "user" or .role == "assistant") | .content |
		 if type == "string" then [{type: "text", text: .}] else . end | .[] |
		 if .type == "text" then
			(.text | if test("TURNONE") then "one" elif test("RUNBASH") then "bash"
				elif test("TURNTHREE") then "three" else empty end)
		 elif .type == "tool_use" then "tool_use"
		 elif .type == "tool_result" then "tool_result" else empty end] |
		join(" ") | test("^one( one)* bash tool_use tool_result three$")' "$LAST"
else
	fail "the fake API got the whole conversation in messages" "no new conversation request"
fi
assert_one_claude "after the TUI turn: one claude under the pane" "$TMUXNAME"
assert_eq "after the TUI turn: it is the same claude" "${T2_CLAUDE:-none}" "${ONE_CLAUDE:-}"
wait_cost "terminal again: the new TUI turn adds one message, after a mode switch" "$SID" \
	".turns == 3 and .inputTokens == $(jq '.inputTokens + 10' <<<"${COST_S:-null}") and
	 .outputTokens == $(jq '.outputTokens + 5' <<<"${COST_S:-null}")"
api GET /sessions
assert_jq "the list shows the same cost" \
	".[] | select(.id == \"$SID\") | .cost.turns == 3"

# --- stop ---------------------------------------------------------------------------------------
api DELETE "/sessions/$SID?force=true"
assert_status "DELETE ?force=true answers 200" 200
deadline=$((SECONDS + 10))
while [ -n "$(test_claudes)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_eq "no claude of this test is left" "" "$(test_claudes)"

log "the test took $((SECONDS - TEST_T0)) s after the CLI install"

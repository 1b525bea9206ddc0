#!/usr/bin/env bash
# Reboot survival, with the REAL claude CLI against the fake Messages API:
# a terminal session and a structured session are talked to, a third is created and deleted;
# then what a reboot does is done by hand: the stack stops, the tmux server (and every agent
# with it) is killed, the runtime dir is deleted; the stack starts again. Checked:
# - both sessions come back by themselves (running), same worktree and branch, in their mode,
#   claude started with --resume=<agentSessionId> (its command line), as the agents' user;
# - a new prompt in each reaches the fake API with the earlier turns in its messages;
# - an approval pending when the machine went down is withdrawn (by "restart"), answers get 409;
# - the deleted session stays deleted (no record, no tmux session, not listed);
# - the records and event logs survived in the state dir: the structured session's event
#   replay starts at event 1 and goes on with the new turn's ids, /events ids go on.
# Environment: as test_real_claude.sh (AGENTD_TEST_CLAUDE_CACHE, AGENTD_TEST_CLAUDE_VERSION,
# AGENTD_TEST_CLAUDE).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RC_DIR=$REPO/tests/integration/real_claude
source "$RC_DIR/lib_real_claude.sh"
TUI_WAIT=60  # seconds for the TUI to show an answer
BACK_WAIT=60 # seconds for a session to be running again after the stack's start

# pane_claude TMUXNAME: the claude process at or below the pane's process.
pane_claude() {
	local pp p
	pp=$(pane_pid "$1")
	[ -n "$pp" ] || return 0
	for p in "$pp" $(descendants "$pp"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" == claude ] && echo "$p" && return 0
	done
}

# wait_pane_claude TMUXNAME: waits up to 20 s for it; prints its pid.
wait_pane_claude() {
	local deadline=$((SECONDS + 20)) p
	while [ $SECONDS -lt $deadline ]; do
		p=$(pane_claude "$1")
		[ -n "$p" ] && echo "$p" && return 0
		sleep 0.2
	done
}

cmdline() { tr '\0' ' ' <"/proc/${1:-0}/cmdline" 2>/dev/null; }

# turn_words JSON: the conversation's user and assistant texts reduced to their TURN* markers, in
# order (the CLI repeats nothing else that matters here).
turn_words() {
	printf '%s' "$1" | jq -r '[.messages[] | select(.role == "user" or .role == "assistant") |
		.content | if type == "string" then [{type: "text", text: .}] else . end | .[] |
		select(.type == "text") | .text | scan("TURN[A-Z]+")] | join(" ")' 2>/dev/null
}

# events_has EVENT RID [JQ]: /events' log holds EVENT for request RID (its data matching JQ).
events_has() {
	jq -n -e --arg e "$1" --arg r "$2" "[inputs | select(.event == \$e) | .data |
		select(.requestId == \$r and (${3:-true}))] | length > 0" \
		"$T/state/events.log" >/dev/null 2>&1
}

# session_events ID AFTER: the ids of GET /sessions/ID/events?after=AFTER (replay, then 3 s of
# live events), one a line.
session_events() {
	curl -sN -m 3 "$BASE_URL/sessions/$1/events?after=$2" 2>/dev/null | tr -d '\r' |
		sed -n 's/^id: //p'
}

# wait_log_event LOG EVENT COUNT: waits up to TURN_WAIT for COUNT events named EVENT in LOG.
wait_log_event() {
	local deadline=$((SECONDS + TURN_WAIT))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(grep -c "\"event\":\"$2\"" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.2
	done
	return 1
}

# ================================================================================================

install_claude || exit 1
start_fake_api || exit 1
make_remote acme widgets
WT1=$T/code/widgets-issue-1
WT2=$T/code/widgets-issue-2
WT3=$T/code/widgets-issue-3
seed_home "$WT1" "$WT2" "$WT3"
start_real_stack || exit 1

# --- before: a terminal session, a structured one, and one deleted --------------------------
api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 1,
	prompt: "say hello TURNONE"}')"
assert_status "terminal session: POST /sessions answers 201" 201
SID1=$(printf '%s' "$BODY" | jq -r .id)
TM1=$(printf '%s' "$BODY" | jq -r .tmuxName)
UUID1=$(printf '%s' "$BODY" | jq -r .agentSessionId)
assert_state "terminal session: running" "$SID1" running 60
if wait_pane "$TM1" "Hello from the fake model (TURNONE)" "$TUI_WAIT"; then
	pass "terminal session: the TUI answers its first prompt"
else
	fail "terminal session: the TUI answers its first prompt" "$(pane_text "$TM1")"
fi
sleep 1 # the TUI takes keys only once its input box is up
tmx send-keys -t "=$TM1:" -l "say more TURNTWO"
sleep 0.5
tmx send-keys -t "=$TM1:" Enter
if wait_pane "$TM1" "Hello from the fake model (TURNTWO)" "$TUI_WAIT"; then
	pass "terminal session: the TUI answers a typed prompt"
else
	fail "terminal session: the TUI answers a typed prompt" "$(pane_text "$TM1")"
fi

api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 2,
	mode: "structured", prompt: "say hello TURNTHREE"}')"
assert_status "structured session: POST /sessions answers 201" 201
SID2=$(printf '%s' "$BODY" | jq -r .id)
TM2=$(printf '%s' "$BODY" | jq -r .tmuxName)
UUID2=$(printf '%s' "$BODY" | jq -r .agentSessionId)
assert_state "structured session: running" "$SID2" running 60
LOG2=$(host_log "$SID2")
check "structured session: its bootstrap turn ends" wait_log_event "$LOG2" result 1
sse_start "$SID2" "say more TURNFOUR"
wait_sse_until '^event: result' >/dev/null
sse_running && kill "$SSE_PID" 2>/dev/null
SSE_PID=
assert_match "structured session: POST /prompt answers with the fake model" \
	'Hello from the fake model \(TURNFOUR\)' "$(sse_data result)"
N2=$(wc -l <"$LOG2")
# A tool use left waiting for its approval when the machine goes down: that claude is gone
# for good, so after the reboot nobody may answer it (withdrawn at once, answers get 409).
sse_start "$SID2" "please RUNBASH touch reboot-pending"
wait_sse_until '^event: permission' >/dev/null
RIDP=$(sse_data permission | jq -r '.requestId // empty' 2>/dev/null)
check "structured session: a Bash tool use waits for its approval" test -n "$RIDP"
check "... /events announced it" wait_for 10 events_has permission "${RIDP:-none}"
get_session "$SID2"
assert_json "... listed in the record as pending" '[.pending[].requestId]' "[\"${RIDP:-none}\"]"
sse_running && kill "$SSE_PID" 2>/dev/null
SSE_PID=

api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 3}')"
SID3=$(printf '%s' "$BODY" | jq -r .id)
TM3=$(printf '%s' "$BODY" | jq -r .tmuxName)
assert_state "a third session runs" "$SID3" running 60
api DELETE "/sessions/$SID3?force=true"
assert_status "... and is deleted (DELETE answers 200)" 200

# The bridge has written every event of the above before the stack stops.
sleep 2
EV_LAST=$(tail -n 1 "$T/state/events.log" 2>/dev/null | jq -r .id)
assert_match "the /events log is in the state dir" '^[0-9]+$' "$EV_LAST"

# --- the "reboot" -----------------------------------------------------------------------------
stop_stack
tmx kill-server
deadline=$((SECONDS + 15))
while [ -n "$(test_claudes)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_eq "the reboot: no claude of this test is left" "" "$(test_claudes)"
rm -rf "$T/run"
check_not "the reboot: the runtime dir is gone" test -e "$T/run"
log "rebooted (stack stopped, tmux server killed, $T/run deleted)"
N_BEFORE=$(main_requests | wc -l)
T_START=$SECONDS
start_real_stack || exit 1

# --- after: back by themselves -------------------------------------------------------------
assert_state "terminal session: running again by itself" "$SID1" running "$BACK_WAIT"
assert_json "terminal session: same worktree, branch and mode" '[.worktree, .branch, .mode]' \
	"[\"$WT1\",\"feat/issue-1\",\"terminal\"]"
assert_state "structured session: running again by itself" "$SID2" running "$BACK_WAIT"
assert_json "structured session: same worktree, branch and mode" '[.worktree, .branch, .mode]' \
	"[\"$WT2\",\"feat/issue-2\",\"structured\"]"
log "both sessions were running $((SECONDS - T_START)) s after the stack's start"
assert_eq "terminal session: its pane runs in the worktree" "$WT1" \
	"$(tmx display -p -t "=$TM1:" '#{pane_current_path}' 2>&1)"
assert_eq "structured session: its pane runs in the worktree" "$WT2" \
	"$(tmx display -p -t "=$TM2:" '#{pane_current_path}' 2>&1)"
assert_eq "the worktrees are still on their branches" "feat/issue-1 feat/issue-2" \
	"$(git -C "$WT1" symbolic-ref --short HEAD) $(git -C "$WT2" symbolic-ref --short HEAD)"

C1=$(wait_pane_claude "$TM1")
assert_match "terminal session: claude --resume=<agentSessionId> --settings=<hooks>, no prompt" \
	"^$(re "$CLAUDE") --resume=$UUID1 --settings=$(re "$T/run/claude-settings.json") $" \
	"$(cmdline "$C1")"
assert_eq "terminal session: claude is the pane's process, as the agents' user" \
	"$(pane_pid "$TM1") $AGENT_UID" "${C1:-none} $(stat -c %u "/proc/${C1:-0}" 2>/dev/null)"
C2=$(wait_pane_claude "$TM2")
H2=$(pane_pid "$TM2")
assert_eq "structured session: the pane runs this build's agentd-host" \
	"$(readlink -f "$BUILD_DIR/host/agentd-host")" "$(readlink -f "/proc/${H2:-0}/exe" 2>/dev/null)"
assert_match "... with the runtime and state dirs" \
	"agentd-host --set AGENTD_RUNTIME_DIR=$(re "$T/run") --set AGENTD_STATE_DIR=$(re "$T/state") " \
	"$(cmdline "$H2")"
assert_match "structured session: claude runs stream-json with --resume=<agentSessionId>" \
	"^$(re "$CLAUDE") -p --input-format stream-json --output-format stream-json --verbose --replay-user-messages --permission-prompt-tool stdio --resume=$UUID2 $" \
	"$(cmdline "$C2")"
assert_eq "structured session: claude is agentd-host's child" "${H2:-none}" \
	"$(ps -o ppid= -p "${C2:-0}" 2>/dev/null | tr -d ' ')"

# Within 5 s, well before the 15 s a restarted bridge gives a hook or host to ask again.
check "the approval pending before the reboot: withdrawn (/events says so)" wait_for 5 \
	events_has permission_resolved "${RIDP:-none}" '.behavior == "withdrawn" and .by == "restart"'
log "/events about it: $(jq -c --arg r "${RIDP:-none}" \
	'select(.data.requestId == $r) | [.id, .event, .data.behavior, .data.by]' "$T/state/events.log" | tr '\n' ' ')"
get_session "$SID2"
assert_json "... no longer listed in the record" '.pending | length' 0
api POST "/sessions/$SID2/permissions/${RIDP:-none}" '{"behavior":"allow"}'
assert_status "... an answer to it gets 409" 409
check_not "... and its tool never ran" test -e "$WT2/reboot-pending"

# --- the conversations go on ---------------------------------------------------------------
if wait_pane "$TM1" "Hello from the fake model (TURNTWO)" "$TUI_WAIT"; then
	pass "terminal session: the resumed TUI shows the earlier conversation"
else
	fail "terminal session: the resumed TUI shows the earlier conversation" "$(pane_text "$TM1")"
fi
sleep 1
tmx send-keys -t "=$TM1:" -l "say again TURNFIVE"
sleep 0.5
tmx send-keys -t "=$TM1:" Enter
if wait_pane "$TM1" "Hello from the fake model (TURNFIVE)" "$TUI_WAIT"; then
	pass "terminal session: the resumed TUI answers a new prompt"
else
	fail "terminal session: the resumed TUI answers a new prompt" "$(pane_text "$TM1")"
fi
LAST1=$(main_requests | tail -n +$((N_BEFORE + 1)) | while IFS= read -r l; do
	[[ $(turn_words "$l") == *TURNFIVE ]] && printf '%s\n' "$l"
done | tail -n 1)
assert_match "terminal session: the fake API got the earlier turns with the new prompt" \
	'^TURNONE( TURNONE)* TURNTWO( TURNTWO)* TURNFIVE$' "$(turn_words "${LAST1:-null}")"

sse_start "$SID2" "say again TURNSIX"
wait_sse_until '^event: result' >/dev/null
sse_running && kill "$SSE_PID" 2>/dev/null
SSE_PID=
assert_match "structured session: the resumed claude answers POST /prompt" \
	'Hello from the fake model \(TURNSIX\)' "$(sse_data result)"
LAST2=$(main_requests | tail -n +$((N_BEFORE + 1)) | while IFS= read -r l; do
	[[ $(turn_words "$l") == *TURNSIX ]] && printf '%s\n' "$l"
done | tail -n 1)
assert_match "structured session: the fake API got the earlier turns with the new prompt" \
	'^TURNTHREE( TURNTHREE)* TURNFOUR( TURNFOUR)* TURNSIX$' "$(turn_words "${LAST2:-null}")"

# --- what was kept ---------------------------------------------------------------------------
IDS=$(session_events "$SID2" 0)
assert_eq "structured session: the event replay starts at event 1" 1 "$(printf '%s\n' "$IDS" | head -n 1)"
assert_eq "... and holds every event before and after the reboot, numbered without a gap" \
	"$(seq 1 "$(wc -l <"$LOG2")" | tr '\n' ' ')" "$(printf '%s\n' "$IDS" | tr '\n' ' ')"
assert_match "... the new turn's result is numbered after the events before the reboot" \
	"^([0-9]+) .*TURNSIX" "$(jq -c 'select(.event == "result") | "\(.id) \(.data.result)"' -r "$LOG2" | tail -n 1)"
R6=$(jq -r 'select(.event == "result") | .id' "$LOG2" | tail -n 1)
check "... (id ${R6:-none} > $N2)" test "${R6:-0}" -gt "$N2"
EV_NEXT=$(curl -sN -m 3 -H "Last-Event-ID: $EV_LAST" "$BASE_URL/events" 2>/dev/null | tr -d '\r' |
	sed -n 's/^id: //p' | head -n 1)
assert_eq "/events: ids go on after the reboot (Last-Event-ID replays from the next)" \
	"$((EV_LAST + 1))" "$EV_NEXT"
assert_eq "/events: the log holds every id once, in order" \
	"$(seq 1 "$(wc -l <"$T/state/events.log")" | tr '\n' ' ')" \
	"$(jq -r .id "$T/state/events.log" | tr '\n' ' ')"

api GET "/sessions/$SID3"
assert_status "the deleted session stays deleted (GET 404)" 404
check_not "... no record" test -e "$T/state/sessions/$SID3.json"
check_not "... no tmux session" tmx has-session -t "=$TM3"
api GET /sessions
assert_json "... not listed; the two others are" "[.[].id]" "[\"$SID1\",\"$SID2\"]"
check "the boot pass left its marker in the new runtime dir" test -s "$T/run/boot-id"

# --- a restart of the stack now (no reboot) does not start anything again ---------------------
P1=$(pane_claude "$TM1")
restart_stack || exit 1
get_session "$SID1"
assert_json "a plain restart: the terminal session runs on" .state '"running"'
assert_eq "a plain restart: the same claude (nothing was started again)" "${P1:-none}" \
	"$(pane_claude "$TM1")"

api DELETE "/sessions/$SID1?force=true"
api DELETE "/sessions/$SID2?force=true"
deadline=$((SECONDS + 10))
while [ -n "$(test_claudes)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_eq "no claude of this test is left" "" "$(test_claudes)"

#!/usr/bin/env bash
# Terminal mode's activity and approvals with the REAL claude CLI, its hooks reporting
# through agentd-hook to the bridge's hook socket, against the fake Messages API
# (real_claude/lib_real_claude.sh). Everything is typed into the TUI with tmux send-keys, as a
# person at the terminal would, and read back from GET /sessions/<id> and GET /events:
# - a prompt typed in the TUI: working, then idle;
# - a TUI permission prompt: waiting, the request in `pending`, a `permission` event; answered
#   with POST /permissions: the dialog closes ("Allowed by PermissionRequest hook"), the tool ran,
#   working then idle, `permission_resolved` by client;
# - the bridge killed while a dialog shows: the hook asks the new one again with its request id,
#   which is still listed and is answered through the new bridge;
# - a prompt answered "Yes" in the TUI (claude leaves the hook running): resolved by "terminal"
#   from claude's next reports, the hook told to stop, a later remote answer 409 naming
#   "terminal";
# - Escape on the dialog: resolved by "terminal", idle (no Stop hook follows an interrupt);
# - no client answers within AGENTD_TERMINAL_PERMISSION_WAIT: resolved by "timeout", the session
#   still waiting (the TUI's dialog asks alone) until it is answered there;
# - a deny given remotely in "accept edits" mode (picked with shift+tab in the TUI), where an
#   edit-like command runs without asking: working then idle, never waiting;
# - "auto" mode (2.1.328's own default): a command it lets run is never waiting; one its safety
#   check must judge (which cannot reach the fake API) shows a dialog no hook is asked for: the
#   session says waiting (Notification), nothing is listed in `pending`, and the answer in the
#   TUI makes it working, then idle.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$REPO/tests/integration/real_claude/lib_real_claude.sh"

SSE_PY=$REPO/tests/integration/structured/sse.py
WAIT_S=15    # AGENTD_TERMINAL_PERMISSION_WAIT of this stack
TUI_WAIT=60  # seconds for the TUI to start and answer
STEP_WAIT=30 # seconds for one step of a turn to show
EV_PID=

# ------------------------------------------------------------------------------------------------
# /events and the session's activity

# events_start [LAST_ID]: GET /events into $T/ev.events (appended: a client started again after
# a bridge restart goes on from LAST_ID).
events_start() {
	local more=()
	[ $# -gt 0 ] && more=(--header "Last-Event-ID: $1")
	python3 "$SSE_PY" GET "$BASE_URL/events" --out "$T/ev.events" --timeout 900 "${more[@]}" \
		>>"$T/ev.log" 2>&1 &
	EV_PID=$!
}

# events: every event so far, one {"id","event","data"} a line with data parsed.
events() {
	# jq 1.6: "|=" with a "try" or "?" on its right loses the value; "=" keeps it.
	jq -c 'select(has("comment") | not) | .data = (.data | try fromjson catch .)' \
		"$T/ev.events" 2>/dev/null
}

last_event_id() { events | jq -s 'map(.id // 0 | tonumber) | max // 0'; }

# wait_event FILTER TIMEOUT: an event matching the jq FILTER arrives.
wait_event() {
	local deadline=$((SECONDS + $2))
	while :; do
		events | jq -s -e "map(select($1)) | length >= 1" >/dev/null 2>&1 && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# assert_event DESC FILTER [TIMEOUT]
assert_event() {
	if wait_event "$2" "${3:-$STEP_WAIT}"; then
		pass "$1"
	else
		fail "$1" "no event matching $2" "events: $(events | tail -n 8 | cut -c1-300)"
	fi
}

# activities SINCE: the activities /events announced for $SID after event id SINCE, in order,
# each once (a repeated value is one), from the state it had at SINCE: an event after SINCE that
# says the state it was already in (the pending list announced again) is no change.
activities() {
	events | jq -r -s --arg sid "$SID" --argjson since "$1" '
		map(select(.event == "session" and .data.session.id == $sid)) |
		([.[] | select(.id <= $since)] | last | .data.session.activity // "") as $was |
		[$was] + [.[] | select(.id > $since) | .data.session.activity] |
		reduce .[] as $a ([]; if length > 0 and .[-1] == $a then . else . + [$a] end) |
		.[1:] | join(" ")'
}

# assert_activities DESC WANT SINCE: activities SINCE comes to be WANT (/events may trail GET a
# little).
assert_activities() {
	local deadline=$((SECONDS + 5)) got
	while :; do
		got=$(activities "$3")
		[ "$got" == "$2" ] && break
		[ $SECONDS -ge $deadline ] && break
		sleep 0.1
	done
	assert_eq "$1" "$2" "$got"
}

# wait_activity JQ TIMEOUT: GET /sessions/$SID until JQ holds on it (BODY keeps the last answer).
wait_activity() {
	local deadline=$((SECONDS + $2))
	while :; do
		api GET "/sessions/$SID"
		[ "$STATUS" == 200 ] && jq -e "$1" >/dev/null 2>&1 <<<"$BODY" && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# assert_activity DESC JQ [TIMEOUT]
assert_activity() {
	if wait_activity "$2" "${3:-$STEP_WAIT}"; then
		pass "$1"
	else
		fail "$1" "want $2" "got ${BODY:0:600}" "pane: $(pane_text "$TMUXNAME" | tail -n 15)"
	fi
}

# ------------------------------------------------------------------------------------------------
# the TUI

# type_prompt TEXT: types TEXT into the TUI and submits it.
type_prompt() {
	tmx send-keys -t "=$TMUXNAME:" -l "$1"
	sleep 0.5 # the TUI takes the text before the Enter that submits it
	tmx send-keys -t "=$TMUXNAME:" Enter
}

keys() { tmx send-keys -t "=$TMUXNAME:" "$@"; }

# assert_pane DESC TEXT [TIMEOUT]
assert_pane() {
	if wait_pane "$TMUXNAME" "$2" "${3:-$STEP_WAIT}"; then
		pass "$1"
	else
		fail "$1" "the pane never showed: $2" "$(pane_text "$TMUXNAME" | tail -n 20)"
	fi
}

# waiting_hooks: the PermissionRequest hooks of this test that still run.
waiting_hooks() { pgrep -f -- "--socket $T/run/hooks/hooks.sock --wait" || true; }

# ask RUNBASH_COMMAND: a prompt whose answer is a Bash tool use of the command; waits until the
# session lists its request; sets RID.
ask() {
	local since
	since=$(last_event_id)
	type_prompt "please RUNBASH $1"
	RID=
	if wait_activity '.activity == "waiting" and (.pending | length) == 1' "$STEP_WAIT"; then
		RID=$(jq -r '.pending[0].requestId' <<<"$BODY")
	fi
	assert_jq "'$1': a TUI permission prompt makes the session waiting, the request listed" \
		".activity == \"waiting\" and .pending[0].toolName == \"Bash\" and
		 (.pending[0].description | length) > 0" "$BODY"
	assert_event "'$1': /events has the permission (terminal mode, with the tool's input)" \
		"(.id > $since) and .event == \"permission\" and .data.session == \"$SID\" and
		 .data.requestId == \"${RID:-none}\" and .data.mode == \"terminal\" and
		 .data.toolName == \"Bash\" and .data.input.command == \"$1\""
	assert_pane "'$1': the TUI shows its own dialog meanwhile" "Do you want to proceed?"
	pane_settle "$TMUXNAME" 5 || log "the pane still changes; keys go to it all the same"
}

# ================================================================================================

install_claude || exit 1
start_fake_api || exit 1
make_remote acme widgets
WT1=$T/code/widgets-issue-1
WT2=$T/code/widgets-issue-2
seed_home "$WT1" "$WT2"
# The TUI's "manual" mode, where it asks (2.1.328 starts in "auto" without this); the "auto" mode
# is looked at last, with this file as the CLI ships.
mkdir -p "$T/home/.claude"
echo '{"permissions":{"defaultMode":"default","disableAutoMode":"disable"}}' \
	>"$T/home/.claude/settings.json"
start_real_stack AGENTD_TERMINAL_PERMISSION_WAIT=$WAIT_S || exit 1
events_start

# --- the session: its bootstrap turn ------------------------------------------------------------
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":1,"prompt":"say hello BOOT"}'
assert_status "POST /sessions (terminal) answers 201" 201
SID=$(jq -r .id <<<"$BODY")
TMUXNAME=$(jq -r .tmuxName <<<"$BODY")
assert_state "the session is running" "$SID" running 60
assert_pane "the TUI shows the bootstrap turn's answer" "Hello from the fake model (BOOT)" "$TUI_WAIT"
assert_activity "the bootstrap turn ended: idle (claude's Stop hook)" \
	'.activity == "idle" and .pending == []'
check "the hooks' settings are claude's (--settings)" grep -q -- \
	"--settings=$T/run/claude-settings.json" <(tr '\0' ' ' <"/proc/$(pane_pid "$TMUXNAME")/cmdline")

# --- a prompt typed in the TUI ------------------------------------------------------------------
SINCE=$(last_event_id)
type_prompt "say hello TYPED"
assert_pane "the TUI answers the typed prompt" "Hello from the fake model (TYPED)"
assert_activity "the typed prompt's turn ended: idle" '.activity == "idle"'
assert_activities "a typed prompt: working, then idle (on /events)" "working idle" "$SINCE"

# --- answered from the API ----------------------------------------------------------------------
ask "touch remote-allowed"
SINCE=$(last_event_id)
api POST "/sessions/$SID/permissions/${RID:-none}" '{"behavior":"allow"}'
assert_status "POST /permissions allow answers 200" 200
assert_pane "the TUI's dialog closes: allowed by the hook" "Allowed by PermissionRequest hook"
assert_activity "answered: the turn ran to its end, idle, nothing pending" \
	'.activity == "idle" and .pending == []'
check "the allowed command ran in the worktree" test -f "$WT1/remote-allowed"
assert_event "/events: permission_resolved by the answering identity (itest), allow" \
	".event == \"permission_resolved\" and .data.requestId == \"${RID:-none}\" and
	 .data.by == \"itest\" and .data.behavior == \"allow\""
assert_activities "answered: working, then idle" "working idle" "$SINCE"
api POST "/sessions/$SID/permissions/${RID:-none}" '{"behavior":"deny","message":"late"}'
assert_status "a second answer: 409" 409
assert_match "... saying who answered it" "by itest" "$BODY"
check_not "the hook has ended" test -n "$(waiting_hooks)"

# --- a bridge restart while the dialog shows: the hook asks the new bridge again ------------------
ask "touch after-restart"
RID_RS=$RID
OLD=$(bridge_pid)
LAST=$(last_event_id)
kill -KILL "$OLD"
deadline=$((SECONDS + 30))
while { NEW=$(bridge_pid); [ -z "$NEW" ] || [ "$NEW" == "$OLD" ] || [ ! -S "$T/run/hooks/hooks.sock" ]; } &&
	[ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_ne "kill -9 of the bridge: deploy/up started a new one" "$OLD" "${NEW:-$OLD}"
events_start "$LAST"
sleep 1 # the hook connects again every 250 ms
assert_activity "after the bridge restart: still waiting, the same request listed" \
	".activity == \"waiting\" and [.pending[].requestId] == [\"${RID_RS:-none}\"]"
check "its hook waits on the new bridge" test -n "$(waiting_hooks)"
api POST "/sessions/$SID/permissions/${RID_RS:-none}" '{"behavior":"allow"}'
assert_status "answered through the new bridge: 200" 200
deadline=$((SECONDS + STEP_WAIT))
until [ -f "$WT1/after-restart" ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
check "the command allowed through the new bridge ran" test -f "$WT1/after-restart"
assert_activity "... and the turn ended: idle" '.activity == "idle" and .pending == []'
assert_event "/events (from the new bridge): permission_resolved by the answering identity" \
	".event == \"permission_resolved\" and .data.requestId == \"${RID_RS:-none}\" and
	 .data.by == \"itest\""

# --- answered "Yes" in the TUI --------------------------------------------------------------------
ask "touch tui-allowed"
RID_TUI=$RID
SINCE=$(last_event_id)
keys 1
assert_activity "answered Yes in the TUI: idle, nothing pending" \
	'.activity == "idle" and .pending == []'
check "the command allowed in the TUI ran" test -f "$WT1/tui-allowed"
assert_event "/events: permission_resolved by terminal" \
	".event == \"permission_resolved\" and .data.requestId == \"${RID_TUI:-none}\" and
	 .data.by == \"terminal\""
assert_activities "answered in the TUI: working, then idle" "working idle" "$SINCE"
api POST "/sessions/$SID/permissions/${RID_TUI:-none}" '{"behavior":"allow"}'
assert_status "a later remote answer to it: 409" 409
assert_match "... saying it was answered in the terminal" "by terminal" "$BODY"
deadline=$((SECONDS + 10))
while [ -n "$(waiting_hooks)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_eq "the hook claude left running after Yes was told to stop" "" "$(waiting_hooks)"

# --- Escape on the dialog -----------------------------------------------------------------------
ask "touch never-made"
RID_ESC=$RID
keys Escape
assert_activity "Escape: idle (the turn is interrupted), nothing pending" \
	'.activity == "idle" and .pending == []'
assert_event "/events: permission_resolved by terminal for the escaped dialog" \
	".event == \"permission_resolved\" and .data.requestId == \"${RID_ESC:-none}\" and
	 .data.by == \"terminal\""
api POST "/sessions/$SID/permissions/${RID_ESC:-none}" '{"behavior":"allow"}'
assert_status "Escape: a later remote answer gets 409" 409
check_not "Escape: the command did not run" test -e "$WT1/never-made"
# The next turn's request holds the interrupted tool use's result: the fake model answers it with
# text, so this is a turn without tools.
SINCE=$(last_event_id)
type_prompt "say hello AFTER"
assert_pane "a prompt after the interrupt is answered" "The tool failed."
assert_activity "... and its turn ends idle" '.activity == "idle"'
assert_activities "a prompt after the interrupt: working, then idle" "working idle" "$SINCE"

# --- nobody answers within the wait -------------------------------------------------------------
ask "touch late-answer"
RID_LATE=$RID
assert_event "the wait runs out: permission_resolved by timeout" \
	".event == \"permission_resolved\" and .data.requestId == \"${RID_LATE:-none}\" and
	 .data.by == \"timeout\"" $((WAIT_S + 10))
assert_activity "the wait ran out: still waiting (the TUI asks), nothing left to answer remotely" \
	'.activity == "waiting" and .pending == []' 5
api POST "/sessions/$SID/permissions/${RID_LATE:-none}" '{"behavior":"allow"}'
assert_status "after the wait a remote answer gets 409" 409
assert_pane "the TUI's dialog still asks" "Do you want to proceed?" 5
keys 1
assert_activity "answered in the TUI after the wait: idle" '.activity == "idle" and .pending == []'
check "the command answered late in the TUI ran" test -f "$WT1/late-answer"

# --- accept edits (picked in the TUI): what it lets run never waits; a deny from the API --------
keys BTab
assert_pane "shift+tab: accept edits mode" "accept edits on" 10
SINCE=$(last_event_id)
type_prompt "please RUNBASH touch edits-mode"
deadline=$((SECONDS + STEP_WAIT))
until [ -f "$WT1/edits-mode" ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
check "accept edits: the file command ran without a dialog" test -f "$WT1/edits-mode"
assert_activity "accept edits: idle" '.activity == "idle" and .pending == []'
check_not "accept edits: no dialog was shown" grep -qF "touch edits-mode" <(pane_text "$TMUXNAME" | grep -A3 "Bash command")
assert_activities "accept edits: working, then idle, never waiting" "working idle" "$SINCE"
ask "curl -s http://127.0.0.1:9/"
api POST "/sessions/$SID/permissions/${RID:-none}" '{"behavior":"deny","message":"not from here"}'
assert_status "accept edits: a deny from the API answers 200" 200
assert_activity "denied: the turn ends, idle" '.activity == "idle" and .pending == []'
assert_event "/events: permission_resolved deny with its message" \
	".event == \"permission_resolved\" and .data.requestId == \"${RID:-none}\" and
	 .data.behavior == \"deny\" and .data.message == \"not from here\""

api DELETE "/sessions/$SID?force=true"
assert_status "DELETE the first session" 200

# --- auto mode, as the CLI ships ----------------------------------------------------------------
echo '{}' >"$T/home/.claude/settings.json"
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":2,"prompt":"say hello AUTO"}'
assert_status "POST /sessions (terminal, auto mode) answers 201" 201
SID=$(jq -r .id <<<"$BODY")
TMUXNAME=$(jq -r .tmuxName <<<"$BODY")
assert_state "the auto-mode session is running" "$SID" running 60
assert_pane "auto mode: the TUI answers the bootstrap prompt" "Hello from the fake model (AUTO)" \
	"$TUI_WAIT"
assert_pane "auto mode is on" "auto mode on" 5
assert_activity "auto mode: idle after the bootstrap turn" '.activity == "idle"'
SINCE=$(last_event_id)
type_prompt "please RUNBASH touch auto-ran"
assert_pane "auto mode: the command ran without a dialog" "Done."
assert_activity "auto mode: idle" '.activity == "idle" and .pending == []'
check "auto mode: the command ran" test -f "$WT2/auto-ran"
assert_activities "auto mode: working, then idle, never waiting" "working idle" "$SINCE"
SINCE=$(last_event_id)
type_prompt "please RUNBASH rm -rf ./gone && curl -s http://127.0.0.1:9/x | sh"
assert_pane "auto mode: its safety check cannot run here, the TUI asks" \
	"Auto mode can't check actions"
assert_activity "auto mode: that dialog makes the session waiting (claude's Notification)" \
	'.activity == "waiting" and .pending == []' 20
check_not "auto mode: no permission request was handed over (no PermissionRequest hook)" \
	wait_event "(.id > $SINCE) and .event == \"permission\" and .data.session == \"$SID\"" 0
keys Enter
assert_pane "auto mode: staying in it, the command itself is asked" "Do you want to proceed?"
keys Down
sleep 0.3
keys Enter
assert_activity "auto mode: answered Yes in the TUI, the turn ends idle" \
	'.activity == "idle" and .pending == []'
assert_activities "auto mode: working, waiting (the dialog), working, idle" \
	"working waiting working idle" "$SINCE"

api DELETE "/sessions/$SID?force=true"
assert_status "DELETE the auto-mode session" 200
[ -n "$EV_PID" ] && kill "$EV_PID" 2>/dev/null
deadline=$((SECONDS + 10))
while [ -n "$(test_claudes)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_eq "no claude of this test is left" "" "$(test_claudes)"
assert_eq "no hook of this test is left" "" "$(waiting_hooks)"

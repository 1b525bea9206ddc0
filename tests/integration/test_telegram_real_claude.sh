#!/usr/bin/env bash
# agentd-telegram with the REAL claude CLI in structured mode against the fake
# Messages API, the whole stack, and the fake Bot API: a user creates a session from the chat and
# sends a prompt; the answer streams into one message and ends with the result (turns, cost); a
# Bash tool use arrives as a message with buttons; the bot is killed with -9 between that message
# and the press, and after its restart the press still works (answered once, the message says who
# allowed it), the command runs, the answer goes on in the same message to its result, and no
# message was sent twice; a user not in AGENTD_TELEGRAM_USERS is refused once; a terminal-mode
# session's TUI dialog arrives as a message with buttons and a link to its terminal, and the press
# closes the dialog (claude's PermissionRequest hook); ten sessions of
# the real CLI answering at once into one chat cause no 429 (test_telegram_load does the same
# with longer answers from the fake claude).
# The CLI and the fake Messages API are set up as in test_real_claude.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/real_claude/lib_real_claude.sh"
source "$(dirname "${BASH_SOURCE[0]}")/telegram/lib_telegram.sh"

install_claude || exit 1
start_fake_api || exit 1
start_fake_bot || exit 1
make_remote acme widgets
ISSUE=2
SID=widgets-$ISSUE
WORKTREE=$T/code/widgets-issue-$ISSUE
TERM_SID=widgets-30
seed_home "$WORKTREE" "$T/code/widgets-issue-30"
# The TUI's "manual" mode, where it asks (2.1.328 starts in "auto" without this).
mkdir -p "$T/home/.claude"
echo '{"permissions":{"defaultMode":"default","disableAutoMode":"disable"}}' \
	>"$T/home/.claude/settings.json"
start_stack AGENTD_CLAUDE="$CLAUDE" AGENTD_AGENT_ENV="$AGENT_ENV" \
	ANTHROPIC_BASE_URL="http://127.0.0.1:$API_PORT" ANTHROPIC_API_KEY="$API_KEY" \
	CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
	"${TG_STACK[@]}" || exit 1
check "agentd-telegram polls the fake Bot API" wait_telegram 30
U=$TG_USER
TG_TIMEOUT=$TURN_WAIT

# --- a stranger ----------------------------------------------------------------------------------
tg_write "$TG_STRANGER" "/new acme/widgets 7 structured"
assert_tg "a user not in the list is refused" "$TG_STRANGER" 'select(.text | test("serves only"))'
tg_write "$TG_STRANGER" "hello?"

# --- a session from the chat -------------------------------------------------------------------------
tg_write "$U" "/new acme/widgets $ISSUE structured"
assert_tg "/new answers" "$U" "select(.text | test(\"^$SID is starting\"))"
assert_state "the session runs" "$SID" running 60
EVLOG=$(host_log "$SID")
deadline=$((SECONDS + TURN_WAIT))
until grep -q '"event":"result"' "$EVLOG" 2>/dev/null || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
check "the bootstrap turn ended with a result" grep -q '"event":"result"' "$EVLOG"
assert_eq "the stranger got one refusal" 1 "$(tg_count "$TG_STRANGER" .)"
api GET /sessions/widgets-7
assert_status "the stranger created nothing" 404

# --- a prompt: the answer streams, with the result ------------------------------------------------------
tg_write "$U" "say hello TGREAL"
assert_tg "the real CLI's answer arrives in one message, with its result" "$U" \
	'select(.text | test("^💬 '"$SID"'\n") and test("Hello from the fake model \\(TGREAL\\)") and
	 test("✅ done · 1 turn · \\$[0-9.]+ · [0-9.]+ s"))'
check "the prompt reached the model" grep -q TGREAL "$API_LOG"

# --- a tool use waits for the button; the bot is killed before the press ---------------------------------
tg_write "$U" "please RUNBASH touch tg-real-file"
assert_tg "the Bash tool use arrives with buttons" "$U" \
	"select(.text | test(\"^🔐 $SID asks to use Bash\\ntouch tg-real-file\")) |
	 select([.reply_markup.inline_keyboard[][].text] == [\"Allow\", \"Allow for session\", \"Deny\"])"
PERM=$TG_MSG
PID=$(jq .message_id <<<"$PERM")
assert_tg "the answer's message shows the tool use and that it waits" "$U" \
	"select(.text | test(\"^💬 $SID\\n\") and test(\"🔧 Bash: touch tg-real-file\") and test(\"waits for approval\"))"
ANSWER_ID=$(jq .message_id <<<"$TG_MSG")
# The state holds what the restart needs: the approval with its message, the answer being streamed.
for _ in $(seq 50); do
	jq -e ".approvals[] | select(.message == $PID)" "$TG_STATE" >/dev/null 2>&1 && break
	sleep 0.1
done
assert_jq "the state file holds the approval (its message) and the answer being streamed" \
	"any(.approvals[]; .message == $PID and .session == \"$SID\") and
	 any(.turns[]; .session == \"$SID\" and .message == $ANSWER_ID and .after > 0)" "$(cat "$TG_STATE")"
SENT_BEFORE=$(jq -s '[.[] | select(.method == "sendMessage" and .status == 200)] | length' "$BOT_LOG")
kill_telegram KILL || exit 1
pass "agentd-telegram was killed with -9 and runs again"
check_not "the command did not run without an answer" test -e "$WORKTREE/tg-real-file"

OUT=$(tg_press "$U" "$U" "$PID" Allow)
QID=$(jq -r .callback_query_id <<<"$OUT")
assert_tg "after the restart the press works: the message says who allowed it" "$U" \
	"select(.message_id == $PID and (.text | test(\"✅ Allowed by U$U\$\")) and
	 ((.reply_markup.inline_keyboard // []) | length == 0))"
for _ in $(seq 100); do
	tg_answers | jq -e "any(.[]; .callback_query_id == \"$QID\")" >/dev/null && break
	sleep 0.1
done
assert_jq "the press was answered once" \
	"[.[] | select(.callback_query_id == \"$QID\")] | length == 1 and .[0].text == \"Allowed\"" \
	"$(tg_answers)"
for _ in $(seq 100); do [ -e "$WORKTREE/tg-real-file" ] && break; sleep 0.1; done
check "the allowed command ran in the worktree" test -e "$WORKTREE/tg-real-file"
assert_tg "the answer goes on in the same message to its result" "$U" \
	"select(.message_id == $ANSWER_ID and (.text | test(\"Done.\") and test(\"✅ done · 2 turns\")))"
sleep 2 # anything the restart would send twice has gone out by now
SENT_AFTER=$(jq -s '[.[] | select(.method == "sendMessage" and .status == 200)] | length' "$BOT_LOG")
assert_eq "nothing was sent again after the restart" "$SENT_BEFORE" "$SENT_AFTER"
assert_eq "one permission message for the request" 1 \
	"$(tg_count "$U" 'select(.text | test("touch tg-real-file")) | select(.text | test("^🔐"))')"
assert_jq "the state keeps nothing of the answered request or the ended answer" \
	'.approvals == [] and .turns == []' "$(cat "$TG_STATE")"
for _ in $(seq 50); do
	get_session "$SID"
	jq -e '.activity == "idle"' >/dev/null 2>&1 <<<"$BODY" && break
	sleep 0.1
done
assert_jq "the session is idle, nothing pending" '.activity == "idle" and .pending == []' "$BODY"

# --- a terminal-mode session: the TUI's dialog, answered from the chat ------------------------------
tg_write "$U" "/new acme/widgets 30"
assert_tg "/new in terminal mode answers" "$U" "select(.text | test(\"^$TERM_SID is starting .*terminal mode\"))"
assert_state "the terminal session runs" "$TERM_SID" running 60
TERM_TMUX=$(jq -r .tmuxName <<<"$BODY")
check "the TUI shows its bootstrap answer" wait_pane "$TERM_TMUX" "Hello from the fake model" "$TURN_WAIT"
for _ in $(seq 100); do
	get_session "$TERM_SID"
	jq -e '.activity == "idle"' >/dev/null 2>&1 <<<"$BODY" && break
	sleep 0.2
done
tmx send-keys -t "=$TERM_TMUX:" -l "please RUNBASH touch tg-terminal-file"
sleep 0.5 # the TUI takes the text before the Enter that submits it
tmx send-keys -t "=$TERM_TMUX:" Enter
assert_tg "the TUI's permission request arrives with buttons and a link to the terminal" "$U" \
	"select(.text | test(\"^🔐 $TERM_SID asks to use Bash\ntouch tg-terminal-file\") and
	 test(\"In the terminal: https://agentd.example.ts.net:8443/#/s/$TERM_SID\")) |
	 select(.reply_markup.inline_keyboard[0][0].text == \"Allow\")"
TPID=$(jq .message_id <<<"${TG_MSG:-null}")
check "the TUI shows its own dialog meanwhile" wait_pane "$TERM_TMUX" "Do you want to proceed?" 30
tg_press "$U" "$U" "${TPID:-0}" Allow >/dev/null
assert_tg "the press is said in the message" "$U" \
	"select(.message_id == ${TPID:-0} and (.text | test(\"✅ Allowed by U$U\$\")))"
check "the TUI's dialog closes: allowed by the hook" \
	wait_pane "$TERM_TMUX" "Allowed by PermissionRequest hook" 30
for _ in $(seq 100); do [ -e "$T/code/widgets-issue-30/tg-terminal-file" ] && break; sleep 0.1; done
check "the command ran in the terminal session's worktree" test -e "$T/code/widgets-issue-30/tg-terminal-file"
api DELETE "/sessions/$TERM_SID?force=true"
assert_status "the terminal session is deleted" 200

# --- ten sessions answering at once ------------------------------------------------------------------
IDS=("$SID")
# shellcheck disable=SC2046 # one word per worktree
seed_home "$WORKTREE" "$T/code/widgets-issue-30" \
	$(for i in $(seq 11 19); do printf '%s ' "$T/code/w$i-issue-1"; done)
for i in $(seq 11 19); do
	make_remote acme "w$i" || exit 1
	api POST /sessions "$(jq -cn --arg n "w$i" \
		'{repo: {owner: "acme", name: $n}, issue: 1, mode: "structured", prompt: "say hello BOOT"}')"
	[ "$STATUS" == 201 ] || fail "session w$i-1 is created" "$STATUS $BODY"
	IDS+=("w$i-1")
done
for id in "${IDS[@]}"; do
	wait_state "$id" running 90 || fail "$id runs" "${BODY:0:300}"
	deadline=$((SECONDS + TURN_WAIT))
	until grep -q '"event":"result"' "$(host_log "$id")" 2>/dev/null ||
		[ $SECONDS -ge $deadline ]; do sleep 0.2; done
done
pass "ten structured sessions of the real CLI run, their bootstrap turns done"
for id in "${IDS[@]}"; do
	tg_write "$U" "/use $id"
	tg_wait "$U" "select(.text | test(\"^This chat.s session is $id \"))" 60 >/dev/null ||
		fail "/use $id is answered"
	tg_write "$U" "say hello R${id//-/}"
done
for id in "${IDS[@]}"; do
	assert_tg "$id: its answer arrives with its result" "$U" \
		"select(.text | test(\"^💬 $id\\n\") and test(\"\\\\(R${id//-/}\\\\)\") and test(\"✅ done\"))"
done

STATS=$(tg_stats)
log "fake Bot API: $(jq -c '{requests, rejected_429, rejected_400}' <<<"$STATS")"
assert_json "no 429 from the fake Bot API" .rejected_429 0 "$STATS"
assert_json "no 400 either" .rejected_400 0 "$STATS"

for id in "${IDS[@]}"; do
	api DELETE "/sessions/$id?force=true"
	[ "$STATUS" == 200 ] || fail "DELETE $id" "$STATUS $BODY"
done
assert_status "DELETE ?force=true answers 200" 200
deadline=$((SECONDS + 10))
while [ -n "$(test_claudes)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
assert_eq "no claude of this test is left" "" "$(test_claudes)"

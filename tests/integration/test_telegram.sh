#!/usr/bin/env bash
# agentd-telegram with the fake claude and the fake Bot API, the whole stack between
# them (deploy/up starts the bot once a token is configured): a user not in
# AGENTD_TELEGRAM_USERS gets one refusal and is then ignored; /help, /sessions, /new (alone: the
# repositories here), /use, /mode,
# /stop (the kept worktree's reason, then force) and /interrupt do what README says; a prompt's
# answer streams into one message that ends with the result; a permission request arrives with
# buttons, a press answers it once (answerCallbackQuery always sent) and the message says who
# decided; Deny denies; when another client answers first the message says so and a later press
# is told it is no longer pending; a long answer is split into messages of at most 4096
# characters; the state file keeps the offset and the chat's choices across a SIGTERM.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/telegram/lib_telegram.sh"

make_remote acme widgets
start_fake_bot || exit 1
start_stack "${TG_STACK[@]}" || exit 1
check "deploy/up starts agentd-telegram, which polls the fake Bot API" wait_telegram 30
U=$TG_USER
WT=$T/code/widgets-issue-1

# --- who is served ----------------------------------------------------------------------------
tg_write "$TG_STRANGER" "hello"
assert_tg "a stranger gets a refusal naming their user id" "$TG_STRANGER" \
	'select(.text | test("serves only") and test("2002"))'
tg_write "$TG_STRANGER" "/sessions"
tg_write "$TG_STRANGER" "/new acme/widgets 9"
tg_write "$U" "/help"
assert_tg "/help lists the commands" "$U" 'select(.text | test("/new owner/name issue") and test("/interrupt"))'
assert_eq "the stranger got one refusal, and nothing else" 1 "$(tg_count "$TG_STRANGER" '.')"
api GET /sessions
assert_json "the stranger created nothing" 'length' 0

# --- /sessions, /new -----------------------------------------------------------------------------
tg_write "$U" "/sessions"
assert_tg "/sessions with none says how to start one" "$U" 'select(.text | test("^No sessions"))'
tg_write "$U" "/new"
assert_tg "/new alone on a new server: no repository yet" "$U" 'select(.text | test("no repository yet"))'
tg_write "$U" "/new acme/widgets 1 structured"
assert_tg "/new creates the session and makes it the chat's" "$U" \
	'select(.text | test("^widgets-1 is starting .*, claude, structured mode.*this chat.s session"))'
assert_state "the session runs" widgets-1 running 60
assert_json "in structured mode" .mode '"structured"'
tg_write "$U" "/new acme/widgets"
assert_tg "/new without an issue: usage" "$U" 'select(.text | test("^Usage: /new"))'
tg_write "$U" "/new acme/../x 1"
assert_tg "/new with a bad name is refused before agent-daemon" "$U" 'select(.text | test("not owner/name issue"))'
tg_write "$U" "/new acme/widgets 7 nope terminal"
assert_tg "/new with an agent the server does not know: its answer lists the known ones" "$U" \
	'select(.text | test("^The session was not created: .*unknown agent .nope.; known: claude, codex, gemini, opencode"))'
tg_write "$U" "/new acme/widgets 7 codex gemini"
assert_tg "/new with two agents: usage" "$U" 'select(.text | test("^Usage: /new owner/name issue \\[agent\\]"))'
tg_write "$U" "/new"
assert_tg "/new alone lists the repositories here, with their sessions" "$U" \
	'select(.text | test("^Repositories here") and test("\n/new acme/widgets — widgets-1 \\("))'
tg_write "$U" "/sessions"
assert_tg "/sessions marks the chat's session" "$U" 'select(.text | test("▶ .* widgets-1 · idle · structured"))'

# --- a prompt streams into one message ------------------------------------------------------------
tg_write "$U" "hello there"
assert_tg "the answer streams into one message that ends with the result" "$U" \
	'select(.text | test("^💬 widgets-1\n") and test("Hello!") and test("✅ done · 1 turn"))'
FIRST=$TG_MSG

# --- a permission request, allowed with the button ---------------------------------------------------
tg_write "$U" "RUNBASH touch tg-allowed"
assert_tg "the permission request arrives with Allow / Allow for session / Deny" "$U" \
	'select(.text | test("^🔐 widgets-1 asks to use Bash\ntouch tg-allowed")) |
	 select([.reply_markup.inline_keyboard[][].text] == ["Allow", "Allow for session", "Deny"])'
PERM=$TG_MSG
PID=$(jq .message_id <<<"$PERM")
assert_match "callback_data is a short key and an action" '^k[0-9a-z]{1,6}:a$' \
	"$(tg_button_data "$PERM" Allow)"
check_not "the tool did not run before the press" test -e "$WT/tg-allowed"
api GET /sessions/widgets-1
assert_jq "the session waits" '.activity == "waiting"'
OUT=$(tg_press "$U" "$U" "$PID" Allow)
QID=$(jq -r .callback_query_id <<<"$OUT")
assert_tg "the message says who allowed it, and has no buttons any more" "$U" \
	"select(.message_id == $PID and (.text | test(\"\\n\\n✅ Allowed by U$U\$\")) and
	 ((.reply_markup.inline_keyboard // []) | length == 0))"
for _ in $(seq 50); do [ -e "$WT/tg-allowed" ] && break; sleep 0.1; done
check "the allowed command ran" test -e "$WT/tg-allowed"
assert_jq "agent-daemon recorded the press as the bot's, for the user (by telegram:$U)" \
	"[.[] | select(.event == \"permission_resolved\") | .data][0] | .behavior == \"allow\" and
	 .by == \"telegram:$U\"" "$(jq -s -c . "$T/state/events.log")"
assert_jq "the press was answered (answerCallbackQuery)" \
	"any(.[]; .callback_query_id == \"$QID\" and .text == \"Allowed\")" "$(tg_answers)"
assert_tg "the answer reads: the tool use, the wait, the text, the result" "$U" \
	'select(.text | test("^💬 widgets-1\n🔧 Bash: touch tg-allowed\n⏸ Bash waits for approval\n\nDone.\n\n✅ done · 2 turns · \\$0.0001 · 0.0 s$"))'

# --- Deny -------------------------------------------------------------------------------------------------
tg_write "$U" "RUNBASH touch tg-denied"
assert_tg "a second request arrives" "$U" 'select(.text | test("touch tg-denied")) | select(.reply_markup != null)'
PID=$(jq .message_id <<<"$TG_MSG")
tg_press "$U" "$U" "$PID" Deny >/dev/null
assert_tg "Deny: the message says who denied it" "$U" \
	"select(.message_id == $PID and (.text | test(\"⛔ Denied by U$U\$\")))"
assert_tg "the denied turn ends (the tool failed)" "$U" 'select(.text | test("touch tg-denied") and test("✅ done|❌"))'
check_not "the denied command did not run" test -e "$WT/tg-denied"

# --- another client answers first ---------------------------------------------------------------------------
tg_write "$U" "RUNBASH touch tg-other"
assert_tg "a third request arrives" "$U" 'select(.text | test("touch tg-other")) | select(.reply_markup != null)'
PERM=$TG_MSG
PID=$(jq .message_id <<<"$PERM")
RID=$(api GET /sessions/widgets-1 && jq -r '.pending[0].requestId' <<<"$BODY")
api POST "/sessions/widgets-1/permissions/$RID" '{"behavior":"allow"}'
assert_status "another client allows it through the API" 200
assert_tg "the message says who answered (the test's own token, itest), without buttons" "$U" \
	"select(.message_id == $PID and (.text | test(\"✅ Allowed by itest\$\")) and
	 ((.reply_markup.inline_keyboard // []) | length == 0))"
# The button as it was before the edit (a phone that had not refreshed the message).
OUT=$(tg_press_data "$U" "$U" "$PID" "$(tg_button_data "$PERM" Allow)")
QID=$(jq -r .callback_query_id <<<"$OUT")
for _ in $(seq 50); do
	tg_answers | jq -e "any(.[]; .callback_query_id == \"$QID\")" >/dev/null && break
	sleep 0.1
done
assert_jq "a stale press is told the request is no longer pending" \
	"any(.[]; .callback_query_id == \"$QID\" and .text == \"This request is no longer pending.\")" \
	"$(tg_answers)"
for _ in $(seq 50); do [ -e "$WT/tg-other" ] && break; sleep 0.1; done
check "the other client's allow ran the command once" test -e "$WT/tg-other"

# --- /interrupt ------------------------------------------------------------------------------------------
tg_write "$U" "SLOW please"
assert_tg "a slow turn shows it works" "$U" 'select(.text | test("^💬 widgets-1\n⏳ working…$"))' 20
tg_write "$U" "/interrupt"
assert_tg "/interrupt says the turn ends" "$U" 'select(.text | test("interrupted; its turn ends now"))'
assert_tg "the interrupted turn ends with its result" "$U" 'select(.text | test("⏹ interrupted") and test("❌ error_during_execution"))'

# --- a long answer is split ---------------------------------------------------------------------------
tg_write "$U" "MANY 40 200"
assert_tg "a long answer's last message holds the result" "$U" \
	'select(.text | test("^💬 widgets-1 \\(continued\\)\n") and test("line 39\\b") and test("✅ done"))' 90
N=$(tg_count "$U" 'select(.text | test("^💬 widgets-1( \\(continued\\))?\n") and test("line [0-9]"))')
assert_match "it took several messages ($N)" '^[2-9]$' "$N"
assert_jq "each has at most 4096 characters" 'all(.[]; .text | length <= 4096)' \
	"$(tg_messages "$U")"
assert_jq "every line arrived once, in order" \
	'[.[] | select(.text | test("line [0-9]")) | .text | scan("line ([0-9]+)") | .[0] | tonumber] == [range(0; 40)]' \
	"$(tg_messages "$U")"

# --- /mode, and a prompt in terminal mode -----------------------------------------------------------------
tg_write "$U" "/mode terminal"
assert_tg "/mode terminal switches" "$U" 'select(.text | test("^widgets-1 is in terminal mode now"))'
tg_write "$U" "are you there"
assert_tg "a prompt in terminal mode says how to switch, with a link to the terminal" "$U" \
	'select(.text | test("is in terminal mode. Send /mode structured") and test("https://agentd.example.ts.net:8443/#/s/widgets-1"))'
tg_write "$U" "/mode structured"
assert_tg "/mode structured switches back" "$U" 'select(.text | test("^widgets-1 is in structured mode now"))'

# --- /use and a second session -----------------------------------------------------------------------------
create acme widgets 2
assert_state "a second session (from the API) runs" widgets-2 running 60
tg_write "$U" "/use widgets-2"
assert_tg "/use makes it the chat's session" "$U" 'select(.text | test("^This chat.s session is widgets-2 \\(terminal mode"))'
tg_write "$U" "/use widgets-9"
assert_tg "/use of an unknown session" "$U" 'select(.text | test("^There is no session widgets-9"))'
tg_write "$U" "/use ../x"
assert_tg "/use of a malformed id" "$U" 'select(.text | test("^Usage: /use"))'

# --- the state file, and a restart -------------------------------------------------------------------------
assert_jq "the state file holds the offset and the chat's choices" \
	".offset > 0 and .eventsId > 0 and (.chats[] | select(.chat == $U) | .current == \"widgets-2\" and
	 (.follows | index(\"widgets-1\") != null))" "$(cat "$TG_STATE")"
assert_jq "the stranger is remembered as refused" ".refused == [$TG_STRANGER]" "$(cat "$TG_STATE")"
BEFORE=$(tg_count "$U" '.')
kill_telegram TERM || exit 1
tg_write "$U" "/sessions"
assert_tg "after a restart the bot answers, and the chat's session is still marked" "$U" \
	'select(.text | test("▶ .* widgets-2"))'
sleep 2
assert_eq "no message was sent twice after the restart (only the answer to /sessions)" \
	$((BEFORE + 1)) "$(tg_count "$U" '.')"
tg_write "$TG_STRANGER" "again"
sleep 2
assert_eq "the stranger is still refused only once" 1 "$(tg_count "$TG_STRANGER" '.')"

# --- /stop ---------------------------------------------------------------------------------------------------
echo dirty >"$T/code/widgets-issue-2/uncommitted.txt"
tg_write "$U" "/stop"
assert_tg "/stop says the worktree is kept, and why" "$U" \
	'select(.text | test("^widgets-2 is stopped. Its worktree is kept: .*/stop widgets-2 force"))'
api GET /sessions/widgets-2
assert_status "the session is gone" 404
tg_write "$U" "/interrupt"
assert_tg "the chat has no session any more" "$U" 'select(.text | test("^This chat has no session"))'
tg_write "$U" "/stop widgets-1 force"
assert_tg "/stop <id> force removes it" "$U" 'select(.text | test("^widgets-1 is stopped and its worktree removed"))'

# --- a budget: /sessions says cost / budget, a prompt past it is refused in words ------------------------------
# A session created in structured mode starts with its first turn (the issue prompt; the fake's
# turns cost $0.0001 each): the budget holds that turn, and the chat's turn passes it.
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":7,"mode":"structured","budgetUsd":0.00015}'
assert_status "a session with a budget its second turn passes: 201" 201
assert_state "it runs" widgets-7 running 60
if wait_activity widgets-7 '.activity == "idle" and .cost.turns == 1 and .overBudget == false' 60; then
	pass "its first turn ends under the budget"
else
	fail "its first turn ends under the budget" "${BODY:0:600}"
fi
tg_write "$U" "/use widgets-7"
assert_tg "/use widgets-7" "$U" 'select(.text | test("^This chat.s session is widgets-7"))'
tg_write "$U" "hello there"
assert_tg "the chat's turn runs" "$U" 'select(.text | test("^💬 widgets-7\n") and test("✅ done"))'
BUDGET_DEADLINE=$((SECONDS + 20))
until get_session widgets-7 && jq -e '.overBudget == true' <<<"$BODY" >/dev/null 2>&1; do
	[ $SECONDS -lt $BUDGET_DEADLINE ] || break
	sleep 0.2
done
assert_jq "the chat's turn passed the budget" '.overBudget == true and .budgetUsd == 0.00015 and .cost.turns == 2'
tg_write "$U" "/sessions"
assert_tg "/sessions says cost / budget, over it" "$U" \
	'select(.text | test("widgets-7 .* · <\\$0\\.01 / \\$0\\.00015 over budget"))'
tg_write "$U" "and again"
assert_tg "a prompt answered 402 budget_exceeded says the session is over its budget, with the figures" "$U" \
	'select(.text | test("^widgets-7 is over its budget: it takes no new prompt\\. .*budget is \\$0\\.000150"))'
tg_write "$U" "/stop widgets-7 force"
assert_tg "/stop widgets-7 force" "$U" 'select(.text | test("^widgets-7 is stopped and its worktree removed"))'

# --- what Telegram saw -------------------------------------------------------------------------------------------
STATS=$(tg_stats)
assert_json "no 429 from the fake Bot API" .rejected_429 0 "$STATS"
assert_json "no 400 either" .rejected_400 0 "$STATS"
assert_jq "every press was answered" \
	"(.requests.answerCallbackQuery // 0) >= 3" "$STATS"

# --- Telegram says 429, then fails, then is gone -------------------------------------------------------------
curl -s -X POST -H 'Content-Type: application/json' "$TG/test/fault" \
	--data '{"method":"sendMessage","status":429,"retry_after":3,"count":1}' >/dev/null
LAST=$(tg_messages "$U" | jq 'map(.message_id) | max')
tg_write "$U" "/help"
assert_tg "after a 429 the message still arrives" "$U" \
	"select(.message_id > $LAST and (.text | test(\"^/sessions: every session\")))" 30
assert_jq "it was sent again only after retry_after (3 s)" \
	'[.[] | select(.method == "sendMessage")] | .[-2:] | .[0].status == 429 and .[1].status == 200 and
	 .[1].time - .[0].time >= 3' "$(jq -s -c . "$BOT_LOG")"
curl -s -X POST -H 'Content-Type: application/json' "$TG/test/fault" \
	--data '{"method":"sendMessage","status":502,"count":2}' >/dev/null
tg_write "$U" "/sessions"
assert_tg "after two 502s the message still arrives" "$U" \
	"select(.message_id > $LAST and (.text | test(\"^No sessions\")))" 30
assert_jq "retried after 1 s, then 2 s" \
	'[.[] | select(.method == "sendMessage")] | .[-3:] | map(.status) == [502, 502, 200] and
	 (.[1].time - .[0].time >= 1) and (.[2].time - .[1].time >= 2)' "$(jq -s -c . "$BOT_LOG")"
# The Bot API goes away: the bot backs off (no busy loop), and comes back with it.
BOT_PID_NOW=$(telegram_pid)
NEXT_UPDATE=$(($(tg_stats | jq .offset) + 10))
stop_fake_bot
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
C0=$(cpu "$BOT_PID_NOW")
sleep 8
C1=$(cpu "$BOT_PID_NOW")
log "CPU of agentd-telegram over 8 s without Telegram: $((C1 - C0)) ticks"
assert_match "without Telegram it waits, it does not spin (under 1 s of CPU in 8 s)" '^[0-9]{1,2}$' \
	"$((C1 - C0))"
check "its log shows the growing delay" grep -q 'getUpdates failed .*again in 4000 ms' "$T/logs/up.log"
python3 "$FAKE_BOT" --token "$TG_TOKEN" --port "$BOT_PORT" --log "$BOT_LOG" \
	--first-update "$NEXT_UPDATE" >>"$T/logs/fake-bot.log" 2>&1 &
BOT_PID=$!
tg_wait_up() { curl -s -m 2 "$TG/test/stats" >/dev/null; }
for _ in $(seq 50); do tg_wait_up && break; sleep 0.1; done
tg_write "$U" "/help"
# A new fake: its message ids start again at 1, and it holds only what came after.
assert_tg "with Telegram back, the bot answers again" "$U" 'select(.text | test("^/sessions: every session"))' 40

# --- no users yet: README's first step (write to the bot to learn your id) ----------------------------------
# deploy/up starts the bot with AGENTD_TELEGRAM_USERS empty; it says in its log that it serves
# nobody, and answers anyone with their id and nothing else.
stop_stack
start_stack "${TG_STACK[@]}" AGENTD_TELEGRAM_USERS= || exit 1
check "with no users deploy/up starts agentd-telegram, which polls" wait_telegram 30
# deploy/up relays the bot's stderr into up.log: the line may land just after the first poll.
check "its log says it serves nobody yet" wait_for 10 grep -q 'serves nobody yet' "$T/logs/up.log"
NEWCOMER=3003
tg_write "$NEWCOMER" "/new acme/widgets 5"
assert_tg "with no users, whoever writes is told their id" "$NEWCOMER" \
	'select(.text | test("3003") and test("AGENTD_TELEGRAM_USERS"))'
tg_write "$U" "/sessions"
assert_tg "a user no longer listed is told their id too" "$U" \
	'select(.text | test("1001") and test("AGENTD_TELEGRAM_USERS"))'
sleep 2
assert_eq "the newcomer got that one answer, and nothing else" 1 "$(tg_count "$NEWCOMER" '.')"
api GET /sessions/widgets-5
assert_status "nothing was created for the newcomer" 404

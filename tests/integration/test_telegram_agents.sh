#!/usr/bin/env bash
# agentd-telegram with an agent other than claude: a structured session of the real codex
# (codex-acp, tests/package.json's pins, offline against tests/fakes/openai_api.py, set up as in
# test_real_agents_structured.sh), with the fake Bot API and the whole stack. Its events come in
# the common shape (docs/API.md, "Events of every agent") and the bot has no per-agent code:
# `/new acme/widgets N codex structured` creates it, a prompt's answer streams into one message
# that ends with the result, a shell command arrives as a permission message with buttons (no
# "Allow for session": ACP offers no suggestions), the press lets it run (the fake model sees the
# tool's result) and the answer goes on in the same message to its result; a deny is said to
# the agent and the turn ends. Then gemini (--acp) and opencode (acp), each from /new to an
# allowed shell command whose message holds the command once.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/real_agents/lib_real_agents.sh"
source "$(dirname "${BASH_SOURCE[0]}")/telegram/lib_telegram.sh"

need_codex_acp
# The fake model APIs must stop too (lib_telegram.sh's trap stops the fake Bot API).
trap 'rc=$?; stop_fake_bot; stop_fake_apis; (exit $rc); cleanup' EXIT
start_fake_apis || exit 1
start_fake_bot || exit 1
make_remote acme widgets
ISSUE=5
SID=widgets-$ISSUE
WORKTREE=$T/code/widgets-issue-$ISSUE
start_acp_agents_stack "${TG_STACK[@]}" || exit 1
check "agentd-telegram polls the fake Bot API" wait_telegram 30
U=$TG_USER
# A real CLI's turn: its start, a model round trip or two through the fake.
TG_TIMEOUT=120

# --- /new with the agent ------------------------------------------------------------------------
tg_write "$U" "/new acme/widgets $ISSUE codex structured"
assert_tg "/new acme/widgets $ISSUE codex structured answers with the agent and the mode" "$U" \
	"select(.text | test(\"^$SID is starting \\\\(creating, codex, structured mode\\\\)\"))"
assert_state "the session runs" "$SID" running 90
assert_json "the session is codex's, structured" '[.agent, .mode]' '["codex","structured"]'
EVLOG=$(host_log "$SID")
deadline=$((SECONDS + TG_TIMEOUT))
until grep -q '"event":"result"' "$EVLOG" 2>/dev/null || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
check "the bootstrap turn ended with a result" grep -q '"event":"result"' "$EVLOG"
check "the bootstrap prompt reached the fake model" sh -c "grep -q 'issue view $ISSUE' '$OPENAI_LOG'"

# --- a prompt: the answer streams into one message, with its result --------------------------------
tg_write "$U" "say hello TGCODEX"
assert_tg "codex's answer arrives in one message, with its result" "$U" \
	'select(.text | test("^💬 '"$SID"'\n") and test("Hello from the fake model \\(TGCODEX\\)") and
	 test("✅ done · 1 turn · [0-9.]+ s"))'
check "the prompt reached the model" sh -c "grep -q TGCODEX '$OPENAI_LOG'"

# --- a tool use waits for the button -----------------------------------------------------------------
FILE=$WORKTREE/tg-codex-file
tg_write "$U" "RUNBASH touch $FILE"
# codex-acp names the call by its command: said once, not again as its description.
assert_tg "the shell command arrives with Allow and Deny, the command said once" "$U" \
	"select(.text == \"🔐 $SID asks to run a command\\ntouch $FILE\") |
	 select([.reply_markup.inline_keyboard[][].text] == [\"Allow\", \"Deny\"])"
PERM=$TG_MSG
log "permission message: $(jq -c .text <<<"${PERM:-null}")"
PID=$(jq .message_id <<<"${PERM:-null}")
assert_tg "the answer's message shows the tool use and that it waits" "$U" \
	"select(.text | test(\"^💬 $SID\\n\") and contains(\"\\n🔧 touch $FILE\\n\") and test(\"waits for approval\"))"
ANSWER_ID=$(jq .message_id <<<"${TG_MSG:-null}")
check_not "the command did not run without an answer" test -e "$FILE"
tg_write "$U" "/sessions"
assert_tg "/sessions shows the session's agent and what it waits for, said once" "$U" \
	"select(.text | contains(\"⏳ $SID · waiting · structured · codex\\n    waits for touch $FILE\\n\"))"
OUT=$(tg_press "$U" "$U" "${PID:-0}" Allow)
QID=$(jq -r .callback_query_id <<<"$OUT")
assert_tg "the press is said in the message, its buttons gone" "$U" \
	"select(.message_id == ${PID:-0} and (.text | test(\"✅ Allowed by U$U\$\")) and
	 ((.reply_markup.inline_keyboard // []) | length == 0))"
for _ in $(seq 100); do
	tg_answers | jq -e "any(.[]; .callback_query_id == \"$QID\")" >/dev/null && break
	sleep 0.1
done
assert_jq "the press was answered once" \
	"[.[] | select(.callback_query_id == \"$QID\")] | length == 1 and .[0].text == \"Allowed\"" \
	"$(tg_answers)"
for _ in $(seq 300); do [ -e "$FILE" ] && break; sleep 0.1; done
check "the allowed command ran in the worktree" test -e "$FILE"
check "the fake model sees the tool's result" sh -c \
	"jq -c 'select(.method == \"POST\") | .body' '$OPENAI_LOG' | grep function_call_output | grep -q tg-codex-file"
assert_tg "the answer goes on in the same message to its result" "$U" \
	"select(.message_id == ${ANSWER_ID:-0} and (.text | test(\"Done.\") and test(\"✅ done · 1 turn\")))"
assert_eq "one permission message for the request" 1 \
	"$(tg_count "$U" 'select(.text | test("tg-codex-file")) | select(.text | test("^🔐"))')"

# --- a deny ------------------------------------------------------------------------------------------
FILE2=$WORKTREE/tg-codex-denied
tg_write "$U" "RUNBASH touch $FILE2"
assert_tg "a second request arrives with buttons" "$U" \
	"select(.text == \"🔐 $SID asks to run a command\\ntouch $FILE2\") | select(.reply_markup.inline_keyboard | length > 0)"
PID2=$(jq .message_id <<<"${TG_MSG:-null}")
tg_press "$U" "$U" "${PID2:-0}" Deny >/dev/null
assert_tg "the deny is said in the message" "$U" \
	"select(.message_id == ${PID2:-0} and (.text | test(\"⛔ Denied by U$U\$\")))"
assert_tg "the denied turn ends with its result" "$U" \
	"select(.text | test(\"^💬 $SID\\n\") and test(\"touch $FILE2\") and test(\"(✅|❌) \"))"
check_not "the denied command did not run" test -e "$FILE2"
for _ in $(seq 100); do
	get_session "$SID"
	jq -e '.activity == "idle" and .pending == []' >/dev/null 2>&1 <<<"$BODY" && break
	sleep 0.1
done
assert_jq "the session is idle, nothing pending" '.activity == "idle" and .pending == []' "$BODY"
assert_jq "the state keeps nothing of the answered requests or the ended answers" \
	'.approvals == [] and .turns == []' "$(cat "$TG_STATE")"

# --- gemini and opencode: the same from the chat ------------------------------------------------
# tg_agent NAME ISSUE WORD LOG: a structured session of NAME from /new, a prompt answered, a
# shell command allowed with the button (the command in its message once), deleted.
tg_agent() {
	local name=$1 issue=$2 w=$3 flog=$4 sid=widgets-$2 file pid
	file=$T/code/widgets-issue-$issue/tg-$name-file
	tg_write "$U" "/new acme/widgets $issue $name structured"
	assert_tg "$name: /new answers with the agent" "$U" \
		"select(.text | test(\"^$sid is starting \\\\(creating, $name, structured mode\\\\)\"))"
	assert_state "$name: the session runs" "$sid" running 90
	deadline=$((SECONDS + TG_TIMEOUT))
	until grep -q '"event":"result"' "$(host_log "$sid")" 2>/dev/null || [ $SECONDS -ge $deadline ]; do
		sleep 0.2
	done
	tg_write "$U" "say hello $w"
	assert_tg "$name: the answer arrives in one message, with its result" "$U" \
		"select(.text | test(\"^💬 $sid\\n\") and test(\"Hello from the fake model \\\\($w\\\\)\") and test(\"✅ done\"))"
	check "$name: the prompt reached the fake model" grep -q "$w" "$flog"
	tg_write "$U" "RUNBASH touch $file"
	assert_tg "$name: the shell command arrives with Allow and Deny, the command in it once" "$U" \
		"select(.text | startswith(\"🔐 $sid asks to \") and ([scan(\"touch $file\")] | length == 1)) |
		 select([.reply_markup.inline_keyboard[][].text] == [\"Allow\", \"Deny\"])"
	log "$name: permission message: $(jq -c .text <<<"${TG_MSG:-null}")"
	pid=$(jq .message_id <<<"${TG_MSG:-null}")
	check_not "$name: the command did not run without an answer" test -e "$file"
	tg_press "$U" "$U" "${pid:-0}" Allow >/dev/null
	assert_tg "$name: the press is said in the message" "$U" \
		"select(.message_id == ${pid:-0} and (.text | test(\"✅ Allowed by U$U\$\")))"
	for _ in $(seq 300); do [ -e "$file" ] && break; sleep 0.1; done
	check "$name: the allowed command ran" test -e "$file"
	assert_tg "$name: the answer with the tool use, which names the command, ends with its result" "$U" \
		"select(.text | test(\"^💬 $sid\\n\") and test(\"🔧 [^\\n]*touch \") and test(\"✅ done\"))"
	api DELETE "/sessions/$sid?force=true"
	assert_status "$name: the session is deleted" 200
}
tg_agent gemini 6 TGGEMINI "$GEMINI_LOG"
tg_agent opencode 7 TGOPENCODE "$OPENAI_LOG"

log "the chat as it reads: $(tg_messages "$U" | jq -c 'map(.text)')"
STATS=$(tg_stats)
assert_json "no 400 from the fake Bot API" .rejected_400 0 "$STATS"

api DELETE "/sessions/$SID?force=true"
assert_status "the codex session is deleted" 200
deadline=$((SECONDS + 20))
while tmux_has "$SID" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
check_not "its tmux session is gone" tmux_has "$SID"
assert_eq "no codex-acp of this test is left" "" "$(codex_acps)"

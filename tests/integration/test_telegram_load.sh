#!/usr/bin/env bash
# agentd-telegram under load: one user with ten structured sessions whose answers
# stream at the same time into one chat (the fake claude's DRIP: a line every 300 ms). The fake
# Bot API enforces Telegram's limits (one message a second per chat, thirty a second overall) and
# answers 429 beyond them: the bot never gets one; every answer ends whole (all its lines, once,
# and its result); no two calls to the chat arrived less than a second apart, and no two edits
# of it less than 1.5 s apart; a command's reply is not held up behind the streamed edits.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/telegram/lib_telegram.sh"

readonly N=10 LINES=25 EVERY_MS=300

make_remote acme widgets
start_fake_bot || exit 1
start_stack "${TG_STACK[@]}" || exit 1
check "agentd-telegram polls the fake Bot API" wait_telegram 30
U=$TG_USER

for i in $(seq "$N"); do
	tg_write "$U" "/new acme/widgets $i structured"
	if ! tg_wait "$U" "select(.text | test(\"^widgets-$i is starting\"))" 60 >/dev/null; then
		fail "/new widgets-$i is answered" "$(tg_messages "$U" | jq -c '.[-3:]')"
		exit 1
	fi
	# Created in structured mode, its bootstrap prompt is its first turn: the next prompt is
	# refused while that runs (the bot says so), so the test waits for its result.
	ev=$(host_log "widgets-$i")
	deadline=$((SECONDS + 60))
	until grep -q '"event":"result"' "$ev" 2>/dev/null || [ $SECONDS -ge $deadline ]; do
		sleep 0.1
	done
	# The session is the chat's now: the prompt goes to it.
	tg_write "$U" "DRIP $LINES $EVERY_MS s$i"
done
pass "ten sessions created and prompted from the chat"
running=$(for i in $(seq "$N"); do
	api GET "/sessions/widgets-$i"
	jq -r .activity <<<"$BODY"
done | grep -c working)
log "sessions working while the last was prompted: $running"
assert_match "several answers stream at once ($running working)" '^([3-9]|10)$' "$running"

for i in $(seq "$N"); do
	assert_tg "widgets-$i: the whole answer arrives, with its result" "$U" \
		"select(.text | test(\"^💬 widgets-$i\\n\") and test(\"drip $((LINES - 1))\") and test(\"✅ done\"))" 240
done
MSGS=$(tg_messages "$U")
for i in $(seq "$N"); do
	assert_jq "widgets-$i: every line once, in order" \
		"[.[] | select(.text | test(\"^💬 widgets-$i\\n\")) | .text | scan(\"drip ([0-9]+)\") | .[0] | tonumber] == [range(0; $LINES)]" \
		"$MSGS"
done

STATS=$(tg_stats)
log "fake Bot API: $(jq -c '{requests, rejected_429, rejected_400}' <<<"$STATS")"
assert_json "no 429 from the fake Bot API" .rejected_429 0 "$STATS"
assert_json "no 400 either" .rejected_400 0 "$STATS"
assert_jq "the answers were edited as they streamed (at least once each)" \
	".requests.editMessageText >= $N" "$STATS"
# The request log, in the order the fake accepted them: gaps per chat.
jq -s -c --argjson chat "$U" '[.[] | select(.status == 200 and .body.chat_id == $chat and
	(.method == "sendMessage" or .method == "editMessageText"))]' "$BOT_LOG" >"$T/chat-calls.json"
assert_jq "no two calls to the chat less than a second apart" \
	'[range(1; length) as $i | .[$i].time - .[$i - 1].time] | all(. >= 0.999)' \
	"$(cat "$T/chat-calls.json")"
assert_jq "no two edits of the chat less than 1.5 s apart" \
	'[.[] | select(.method == "editMessageText")] | [range(1; length) as $i | .[$i].time - .[$i - 1].time] | all(. >= 1.499)' \
	"$(cat "$T/chat-calls.json")"

# A command while nothing streams any more is answered at once; and while answers stream, a
# reply does not wait behind their edits.
tg_write "$U" "/use widgets-1"
tg_write "$U" "DRIP 40 200 again"
assert_tg "an answer streams again" "$U" 'select(.text | test("^💬 widgets-1\n") and test("drip 3\\b"))' 60
tg_write "$U" "/sessions"
assert_tg "/sessions is answered while the answer streams" "$U" 'select(.text | test("^▶ ⚙️ widgets-1 · working"))' 20
assert_tg "and that answer ends too" "$U" 'select(.text | test("drip 39\\b") and test("✅ done"))' 120
assert_json "still no 429" .rejected_429 0 "$(tg_stats)"

# Helpers of the agentd-telegram tests (sourced after lib.sh): the fake Bot API
# (tests/fakes/bot_api.py) on loopback, the stack with the bot (deploy/up starts it when a token
# is configured), and what users do in Telegram: write, press a button, read the chat.
#
#   start_fake_bot || exit 1
#   start_stack "${TG_STACK[@]}" [more VAR=value] || exit 1
#   tg_write 1001 "/new acme/widgets 1 structured"
#   MSG=$(tg_wait 1001 'select(.text | test("widgets-1"))' 30)   (the last matching message)
#   tg_press 1001 1001 "$(jq .message_id <<<"$MSG")" Allow
# shellcheck shell=bash disable=SC2034

# shellcheck source=SCRIPTDIR/../../fakes/lib_fakes.sh
source "$REPO/tests/fakes/lib_fakes.sh"

FAKE_BOT=$REPO/tests/fakes/bot_api.py
TG_TOKEN=4242:fake-token_for-tests
TG_USER=1001   # allowed
TG_USER2=1002  # allowed
TG_STRANGER=2002
BOT_PID=
BOT_PORT=
BOT_LOG=$T/bot-requests.jsonl
TG_STATE=$T/state/telegram.json
TG_TIMEOUT=60

stop_fake_bot() {
	[ -n "$BOT_PID" ] && kill "$BOT_PID" 2>/dev/null && wait "$BOT_PID" 2>/dev/null
	BOT_PID=
}

start_fake_bot() {
	fake_start BOT_PID BOT_PORT "the fake Bot API" "$T/logs/fake-bot.log" "$T/bot.port" \
		"$FAKE_BOT" --token "$TG_TOKEN" --log "$BOT_LOG" || return 1
	TG=http://127.0.0.1:$BOT_PORT
	# The bot's own token for the door, named telegram: what it does for a user is recorded as
	# by telegram:<user id> (X-Agentd-Actor).
	AGENTD_BOT_TOKEN=$("$BUILD_DIR/fcgi-app/agentd-api" token add telegram 2>>"$T/logs/up.log") || {
		fail "the bot's token is made (agentd-api token add telegram)" "$(tail -n 5 "$T/logs/up.log")"
		return 1
	}
	TG_STACK=(AGENTD_TELEGRAM_TOKEN="$TG_TOKEN" AGENTD_TELEGRAM_USERS="$TG_USER,$TG_USER2"
		AGENTD_TOKEN="$AGENTD_BOT_TOKEN"
		AGENTD_TELEGRAM_API="$TG" AGENTD_TELEGRAM_STATE="$TG_STATE"
		AGENTD_TELEGRAM_WEB_URL=https://agentd.example.ts.net:8443)
	log "fake Bot API on $TG (pid $BOT_PID)"
}

# tg_write USER TEXT [CHAT]: USER writes TEXT (in their private chat unless CHAT).
tg_write() {
	local body
	body=$(jq -cn --argjson u "$1" --arg t "$2" --argjson c "${3:-$1}" \
		'{user: $u, text: $t, chat: $c}')
	curl -s -m 10 -X POST -H 'Content-Type: application/json' --data-binary "$body" \
		"$TG/test/message" >/dev/null
}

# tg_press USER CHAT MESSAGE_ID BUTTON: USER presses the button BUTTON; prints the fake's answer
# ({"update_id", "callback_query_id", "data"} or {"error"}).
tg_press() {
	local body
	body=$(jq -cn --argjson u "$1" --argjson c "$2" --argjson m "$3" --arg b "$4" \
		'{user: $u, chat: $c, message_id: $m, button: $b}')
	curl -s -m 10 -X POST -H 'Content-Type: application/json' --data-binary "$body" \
		"$TG/test/press"
}

# tg_press_data USER CHAT MESSAGE_ID DATA: a press of a button with DATA that the message may no
# longer show (a client that had not refreshed it); prints the fake's answer.
tg_press_data() {
	local body
	body=$(jq -cn --argjson u "$1" --argjson c "$2" --argjson m "$3" --arg d "$4" \
		'{user: $u, chat: $c, message_id: $m, data: $d}')
	curl -s -m 10 -X POST -H 'Content-Type: application/json' --data-binary "$body" \
		"$TG/test/press"
}

# tg_messages CHAT: every message of the chat, as the fake holds them now (a JSON array).
tg_messages() { curl -s -m 10 "$TG/test/messages?chat=$1"; }

tg_stats() { curl -s -m 10 "$TG/test/stats"; }

tg_answers() { curl -s -m 10 "$TG/test/answers"; }

# tg_wait CHAT FILTER [TIMEOUT]: waits until a message of CHAT passes the jq FILTER (on one
# message object); prints the last that does. Returns 1 on timeout.
tg_wait() {
	local deadline=$((SECONDS + ${3:-$TG_TIMEOUT})) out
	while :; do
		out=$(tg_messages "$1" | jq -c "[.[] | $2] | last // empty" 2>/dev/null)
		if [ -n "$out" ]; then
			printf '%s\n' "$out"
			return 0
		fi
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.2
	done
}

# assert_tg DESC CHAT FILTER [TIMEOUT]: a message of CHAT passes FILTER in time; sets TG_MSG.
assert_tg() {
	if TG_MSG=$(tg_wait "$2" "$3" "${4:-$TG_TIMEOUT}"); then
		pass "$1"
	else
		TG_MSG=
		fail "$1" "no message of chat $2 passes: $3" \
			"messages: $(tg_messages "$2" | jq -c '.[-6:] | map({message_id, text, edits})' | head -c 3000)"
	fi
}

# tg_count CHAT FILTER: how many messages of CHAT pass FILTER now.
tg_count() { tg_messages "$1" | jq "[.[] | $2] | length"; }

# telegram_pid: the pid of the agentd-telegram deploy/up runs, or nothing.
telegram_pid() { daemon_pid telegram/agentd-telegram; }

# wait_telegram TIMEOUT: the bot runs and polls the fake (a getUpdates waits there).
wait_telegram() {
	local deadline=$((SECONDS + $1))
	while [ $SECONDS -lt $deadline ]; do
		[ -n "$(telegram_pid)" ] && [ "$(tg_stats | jq -r .polling)" == true ] && return 0
		sleep 0.2
	done
	return 1
}

# kill_telegram SIGNAL: kills the bot and waits for deploy/up to start another that polls.
kill_telegram() {
	local old new deadline=$((SECONDS + 30))
	old=$(telegram_pid)
	if [ -z "$old" ]; then
		fail "agentd-telegram runs under deploy/up"
		return 1
	fi
	echo "=== kill -$1 agentd-telegram $old $(date +%T)" >>"$T/logs/up.log"
	kill "-$1" "$old"
	while [ $SECONDS -lt $deadline ]; do
		new=$(telegram_pid)
		if [ -n "$new" ] && [ "$new" != "$old" ]; then
			wait_telegram 20 && return 0
		fi
		sleep 0.2
	done
	fail "deploy/up restarts agentd-telegram after kill -$1" "$(tail -n 20 "$T/logs/up.log")"
	return 1
}

# tg_button_data MSG BUTTON: the callback_data of the button BUTTON of a message object.
tg_button_data() {
	jq -r --arg b "$2" '.reply_markup.inline_keyboard[][] | select(.text == $b) | .callback_data' \
		<<<"$1"
}

# The fake Bot API (and the fake Messages API of lib_real_claude.sh, when sourced) must go even
# when a check fails; lib.sh's cleanup does the rest.
trap 'rc=$?; stop_fake_bot; [ "$(type -t stop_helpers)" == function ] && stop_helpers; (exit $rc); cleanup' EXIT

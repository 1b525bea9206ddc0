#!/usr/bin/env bash
# agentd-telegram as agent-daemon sees it, with a recording stand-in for agent-daemon
# (no stack): every request carries "Authorization: Bearer $AGENTD_TOKEN"; a request that
# changes state for a user (POST /sessions, the mode, interrupt, DELETE, a prompt) carries
# "X-Agentd-Actor: <Telegram user id>", and one made for nobody (GET /events, GET /sessions)
# does not; without AGENTD_TOKEN no Authorization header is sent. Also: the bot refuses to start
# with a malformed token, starts without users (it then serves nobody yet), and reads the token
# from AGENTD_TELEGRAM_TOKEN_FILE.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/telegram/lib_telegram.sh"

RECORDER=$REPO/tests/integration/telegram/recorder.py
TGBIN=$BUILD_DIR/telegram/agentd-telegram
REC_LOG=$T/recorded.jsonl
BOTS=()
stop_bots() {
	local p
	for p in "${BOTS[@]}" "${REC_PID:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	BOTS=()
	REC_PID=
}
trap 'rc=$?; stop_bots; stop_fake_bot; (exit $rc); cleanup' EXIT

# run_bot [VAR=value...]: agentd-telegram against the recorder and the fake Bot API.
run_bot() {
	env AGENTD_CONFIG="$T/agentd.conf" AGENTD_URL="http://127.0.0.1:$REC_PORT" \
		AGENTD_TELEGRAM_API="$TG" AGENTD_TELEGRAM_USERS="$TG_USER" \
		AGENTD_TELEGRAM_STATE="$T/state/h.json" "$@" "$TGBIN" </dev/null >>"$T/logs/bot.log" 2>&1 &
	BOTS+=($!)
}

# --- settings refused before anything starts --------------------------------------------------
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_TELEGRAM_TOKEN="$TG_TOKEN" "$TGBIN" --check 2>&1)
assert_match "no users: accepted (the first run), saying the bot serves nobody yet" \
	'^ok: no users yet \(the bot tells whoever writes their Telegram user id\)' "$out"
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_TELEGRAM_TOKEN='1:a/b?c' AGENTD_TELEGRAM_USERS=1 \
	"$TGBIN" --check 2>&1)
assert_match "a token that is not BotFather's form: refused" 'not of the form BotFather gives' "$out"
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_TELEGRAM_USERS=1 "$TGBIN" --check 2>&1)
assert_match "no token: refused" 'no bot token' "$out"
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_TELEGRAM_TOKEN="$TG_TOKEN" \
	AGENTD_TELEGRAM_USERS="1, x" "$TGBIN" --check 2>&1)
assert_match "a user list with a non-id: refused" "'x' is not a user id" "$out"
printf '%s\n' "$TG_TOKEN" >"$T/token"
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_TELEGRAM_TOKEN_FILE="$T/token" \
	AGENTD_TELEGRAM_USERS="1 2" AGENTD_LISTEN=0.0.0.0:9999 STATE_DIRECTORY=/var/lib/x \
	"$TGBIN" --check 2>&1)
assert_eq "the token from its file; AGENTD_URL and the state file by default" \
	"ok: 2 users, Bot API https://api.telegram.org, agent-daemon http://127.0.0.1:9999, state /var/lib/x/telegram.json" \
	"$out"

# --- the headers ---------------------------------------------------------------------------------
start_fake_bot || exit 1
python3 "$RECORDER" --port-file "$T/rec.port" --log "$REC_LOG" >>"$T/logs/recorder.log" 2>&1 &
REC_PID=$!
for _ in $(seq 100); do [ -s "$T/rec.port" ] && break; sleep 0.1; done
REC_PORT=$(cat "$T/rec.port")
printf '%s\n' "$TG_TOKEN" >"$T/token"
run_bot AGENTD_TELEGRAM_TOKEN_FILE="$T/token" AGENTD_TOKEN=tok-for-the-bot
for _ in $(seq 100); do [ "$(tg_stats | jq -r .polling)" == true ] && break; sleep 0.1; done
U=$TG_USER
tg_write "$U" "/new acme/widgets 3"
assert_tg "/new is answered" "$U" 'select(.text | test("^widgets-3 is starting"))' 20
tg_write "$U" "/mode structured"
tg_write "$U" "/interrupt"
tg_write "$U" "/sessions"
tg_write "$U" "a prompt"
tg_write "$U" "/stop"
assert_tg "/stop is answered" "$U" 'select(.text | test("^widgets-3 is stopped"))' 20
REC=$(jq -s -c . "$REC_LOG")
assert_jq "every request carries the bot's token" \
	'length >= 6 and all(.[]; .headers.authorization == "Bearer tok-for-the-bot")' "$REC"
for r in "POST /sessions" "POST /sessions/widgets-3/mode" "POST /sessions/widgets-3/interrupt" \
	"POST /sessions/widgets-3/prompt" "DELETE /sessions/widgets-3"; do
	assert_jq "$r is made for the user (X-Agentd-Actor: $U)" \
		"any(.[]; \"\\(.method) \\(.path)\" == \"$r\" and .headers[\"x-agentd-actor\"] == \"$U\")" "$REC"
done
assert_jq "GET /events and GET /sessions are made for nobody" \
	'[.[] | select(.method == "GET")] | length >= 2 and all(.[]; .headers["x-agentd-actor"] == null)' \
	"$REC"
assert_jq "the prompt's body is the text, as JSON" \
	'any(.[]; .path == "/sessions/widgets-3/prompt" and (.body | fromjson) == {prompt: "a prompt"})' "$REC"
check_not "the tokens appear in no log line" grep -q -e tok-for-the-bot -e "$TG_TOKEN" "$T/logs/bot.log"
stop_bots

# --- without AGENTD_TOKEN: no Authorization header -------------------------------------------------
: >"$REC_LOG"
python3 "$RECORDER" --port-file "$T/rec2.port" --log "$REC_LOG" >>"$T/logs/recorder.log" 2>&1 &
REC_PID=$!
for _ in $(seq 100); do [ -s "$T/rec2.port" ] && break; sleep 0.1; done
REC_PORT=$(cat "$T/rec2.port")
run_bot AGENTD_TELEGRAM_TOKEN="$TG_TOKEN"
tg_write "$U" "/sessions"
for _ in $(seq 100); do grep -q '"GET", "path": "/sessions"' "$REC_LOG" 2>/dev/null && break; sleep 0.1; done
assert_jq "without AGENTD_TOKEN no request carries Authorization" \
	'length >= 2 and all(.[]; .headers.authorization == null)' "$(jq -s -c . "$REC_LOG")"
stop_bots

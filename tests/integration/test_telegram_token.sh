#!/usr/bin/env bash
# Telegram set up in the order README.md gives, on a first start: only the bot's token from
# BotFather and no users. deploy/up makes the bot's own token for agent-daemon (named telegram,
# after the first start's admin token, kept 0600 in the state dir, never on a command line nor in
# its log) and starts the bot, which tells whoever writes their Telegram id and nothing else.
# With that id in AGENTD_TELEGRAM_USERS the bot is served through the door with the same token
# (reused, not remade); once revoked, the next start makes another.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/telegram/lib_telegram.sh"

API_BIN=$BUILD_DIR/fcgi-app/agentd-api
TOKEN_FILE=$T/state/telegram.token
start_fake_bot || exit 1
# start_fake_bot makes the bot a token, as an operator would have: this first start has none.
"$API_BIN" token revoke telegram 2>>"$T/logs/up.log"
STACK=(AGENTD_TELEGRAM_TOKEN="$TG_TOKEN" AGENTD_TELEGRAM_USERS= AGENTD_TELEGRAM_API="$TG"
	AGENTD_TELEGRAM_STATE="$TG_STATE")
# token_names: the names in the token store, one a line.
token_names() { "$API_BIN" token list | awk 'NR > 1 { print $1 }'; }

# --- first start: no users, no AGENTD_TOKEN --------------------------------------------------
ITEST_FIRST_START=1 start_stack "${STACK[@]}" || exit 1
check "deploy/up starts agentd-telegram without AGENTD_TOKEN, which polls" wait_telegram 30
check "the first start still made the admin token (its ready line has it)" \
	grep -aq '^agentd ready: http://.*?token=' "$T/logs/up.log"
assert_eq "the store holds the admin token and the bot's, named telegram" \
	"$(printf 'admin\ntelegram')" "$(token_names | sort)"
assert_eq "the bot's token is kept in the state dir, 0600" 600 "$(stat -c %a "$TOKEN_FILE" 2>&1)"
BOT_TOKEN=$(cat "$TOKEN_FILE" 2>/dev/null)
assert_match "the file holds one token" '^[A-Za-z0-9_-]{20,}$' "$BOT_TOKEN"
# -f: grep's own command line must not hold it either.
check_not "deploy/up's log does not show it" grep -aqF -f "$TOKEN_FILE" "$T/logs/up.log"
check_not "no command line shows it" grep -aqsF -f "$TOKEN_FILE" /proc/[0-9]*/cmdline

NEWCOMER=3003
tg_write "$NEWCOMER" "/sessions"
assert_tg "with no users, whoever writes is told their id" "$NEWCOMER" \
	'select(.text | test("3003") and test("AGENTD_TELEGRAM_USERS"))'
tg_write "$NEWCOMER" "/help"
tg_write "$NEWCOMER" "/new acme/widgets 5"
sleep 2 # a stray answer would come within this
assert_eq "the newcomer got only their id, nothing else" 0 \
	"$(tg_count "$NEWCOMER" 'select(.text | test("3003") | not)')"

# --- the id in AGENTD_TELEGRAM_USERS: served through the door with the same token -------------
stop_stack
start_stack AGENTD_TELEGRAM_TOKEN="$TG_TOKEN" AGENTD_TELEGRAM_USERS="$NEWCOMER" \
	AGENTD_TELEGRAM_API="$TG" AGENTD_TELEGRAM_STATE="$TG_STATE" || exit 1
check "the bot polls again" wait_telegram 30
assert_eq "the bot's token was reused, not remade" "$BOT_TOKEN" "$(cat "$TOKEN_FILE")"
assert_eq "the store still holds one telegram token" 1 "$(token_names | grep -c '^telegram$')"
tg_write "$NEWCOMER" "/sessions"
assert_tg "the listed user's /sessions passes the door (agent-daemon answers)" "$NEWCOMER" \
	'select(.text | test("^No sessions"))'

# --- revoked: the next start makes another ---------------------------------------------------
stop_stack
"$API_BIN" token revoke telegram 2>>"$T/logs/up.log"
start_stack || exit 1
check "the bot polls again" wait_telegram 30
NEW_TOKEN=$(cat "$TOKEN_FILE" 2>/dev/null)
assert_ne "a revoked token is replaced by a new one" "$BOT_TOKEN" "$NEW_TOKEN"
assert_eq "the store holds one telegram token again" 1 "$(token_names | grep -c '^telegram$')"
N0=$(tg_count "$NEWCOMER" 'select(.text | test("^No sessions"))')
# more_answers TIMEOUT: another "No sessions" answer than the N0 before.
more_answers() {
	local deadline=$((SECONDS + $1))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(tg_count "$NEWCOMER" 'select(.text | test("^No sessions"))')" -gt "$N0" ] && return 0
		sleep 0.2
	done
	return 1
}
tg_write "$NEWCOMER" "/sessions"
check "the new token passes the door (agent-daemon answers /sessions)" more_answers 30
stop_stack

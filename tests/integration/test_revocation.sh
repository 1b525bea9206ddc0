#!/usr/bin/env bash
# Long-lived connections under the door's rules (docs/API.md "Access"):
# - `token revoke` ends every connection the token opened within 2 s, with a reason: a terminal
#   WebSocket and a /stream WebSocket close 1008 credentials_revoked, an /events stream and a
#   session's event stream end with an `error` event of that code; what they send after the revoke is refused (no keystroke
#   reaches the pane, no prompt is taken or recorded on /events).
# - one identity cannot take every slot of the bridge: past its share it gets 503
#   too_many_connections, read-only identities together past theirs 503 busy (JSON, from the
#   bridge, not nginx's "not running"), and an admin still opens a terminal and /events;
# - GET /?token= with agentd-api down leaves no token in nginx's error log (file or stderr);
# - GET /?token= never replaces the sign-in of another identity without a confirmation: with
#   another identity's cookie, or from another site, it sets no cookie and sends the browser to
#   the login page, which asks.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

API_BIN=$BUILD_DIR/fcgi-app/agentd-api
# Small limits so that a flood is a few dozen connections: 24 in all, 6 per identity, 3 of them
# (an eighth) kept for admins.
make_remote acme widgets
start_stack AGENTD_BRIDGE_MAX_CLIENTS=24 AGENTD_BRIDGE_MAX_PER_IDENTITY=6 || exit 1
ADMIN=$AGENTD_TEST_TOKEN

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# --- a revoked token's open connections end ---------------------------------------------------
create acme widgets 1
assert_state "widgets-1 runs (terminal mode)" widgets-1 running 60
SID2=$(structured_session acme widgets 2)
assert_eq "widgets-2 runs in structured mode" widgets-2 "$SID2"
sleep 1 # the host starts

REV=$("$API_BIN" token add doomed)
sse_start adm GET /events # the admin's view of who did what
sse_wait_event adm '.event == "snapshot"' 10
start_client term /sessions/widgets-1/terminal --header "Authorization: Bearer $REV"
ws_start strm /sessions/widgets-2/stream --header "Authorization: Bearer $REV"
sse_start evs GET /events - --header "Authorization: Bearer $REV"
sse_start sev GET /sessions/widgets-2/events - --header "Authorization: Bearer $REV"
wait_line term '^open' 10
ws_wait_line strm '^open' 10
sse_wait_event evs '.event == "snapshot"' 10
check "the doomed token's terminal is open" grep -q '^open' "$T/term.log"
check "... its /stream is open" grep -q '^open' "$T/strm.log"
check "... its /events stream is open" grep -q '^status 200' "$T/evs.log"
check "... its session's event stream is open" grep -q '^status 200' "$T/sev.log"
client_cmd term 'send "typed before the revoke\r"'
if pane_has widgets-1 'typed before the revoke' 10; then pass "its keystrokes reach the pane"; else
	fail "its keystrokes reach the pane"; fi

"$API_BIN" token revoke doomed 2>/dev/null
T0=$(now_ms)
# Input right after the revoke, before (or while) the bridge closes: refused.
client_cmd term 'send "typed after the revoke\r"'
ws_send strm '{"type":"prompt","prompt":"sent after the revoke"}'
closed_term= closed_strm= ended_evs= ended_sev=
while [ $(($(now_ms) - T0)) -lt 3000 ]; do
	[ -z "$closed_term" ] && grep -q '^closed' "$T/term.log" && closed_term=$(($(now_ms) - T0))
	[ -z "$closed_strm" ] && grep -q '^closed' "$T/strm.log" && closed_strm=$(($(now_ms) - T0))
	[ -z "$ended_evs" ] && grep -q '^end' "$T/evs.log" && ended_evs=$(($(now_ms) - T0))
	[ -z "$ended_sev" ] && grep -q '^end' "$T/sev.log" && ended_sev=$(($(now_ms) - T0))
	[ -n "$closed_term" ] && [ -n "$closed_strm" ] && [ -n "$ended_evs" ] && [ -n "$ended_sev" ] &&
		break
	sleep 0.05
done
log "after the revoke: terminal closed at ${closed_term:-never}, /stream at ${closed_strm:-never}, /events at ${ended_evs:-never}, the session's events at ${ended_sev:-never} ms"
within() { [ -n "$1" ] && [ "$1" -le 2000 ]; }
check "the terminal closes within 2 s of the revoke" within "$closed_term"
assert_match "... with 1008 credentials_revoked" '^closed 1008 credentials_revoked' \
	"$(client_line term '^closed')"
check "the /stream closes within 2 s of the revoke" within "$closed_strm"
assert_match "... with 1008 credentials_revoked" '^closed 1008 credentials_revoked' \
	"$(grep '^closed' "$T/strm.log" | head -n 1)"
check "the /events stream ends within 2 s of the revoke" within "$ended_evs"
assert_sse_event "... with an error event credentials_revoked" evs \
	'.event == "error" and (.data | fromjson | .code == "credentials_revoked" and (.error | length > 0))' 1
check "the session's event stream ends within 2 s of the revoke" within "$ended_sev"
assert_sse_event "... with an error event credentials_revoked" sev \
	'.event == "error" and (.data | fromjson | .code == "credentials_revoked")' 1
sleep 1
if pane_has widgets-1 'typed after the revoke' 1; then
	fail "keystrokes sent after the revoke never reach the pane"
else
	pass "keystrokes sent after the revoke never reach the pane"
fi
n=$(sse_events adm | jq -s '[.[] | select(.event == "prompt") | .data | fromjson | select(.by == "doomed")] | length')
assert_eq "a prompt sent on /stream after the revoke is not taken (no prompt by doomed on /events)" 0 "$n"
check_not "... and was not answered as taken" grep -q '"type":"accepted"' "$T/strm.frames"
kill_sse_clients
stop_client term
ws_stop strm

# A store that cannot be read ends every stream (the door refuses everyone then).
sse_start evb GET /events
sse_wait_event evb '.event == "snapshot"' 10
cp "$T/state/tokens.json" "$T/tokens.good"
printf '{"tokens": [' >"$T/state/tokens.json"
if sse_wait_end evb 3; then pass "a corrupt token store ends an admin's /events stream"; else
	fail "a corrupt token store ends an admin's /events stream"; fi
assert_sse_event "... with an error event credentials_unavailable" evb \
	'.event == "error" and (.data | fromjson | .code == "credentials_unavailable")' 1
cp "$T/tokens.good" "$T/state/tokens.json"
api GET /sessions
assert_status "the store repaired: 200 again" 200

# --- one identity cannot take every slot --------------------------------------------------------
V1=$("$API_BIN" token add flood1 --read-only)
V2=$("$API_BIN" token add flood2 --read-only)
V3=$("$API_BIN" token add flood3 --read-only)
V4=$("$API_BIN" token add flood4 --read-only)
FLOOD=()
# open_streams TOKEN N TAG: N /events streams of TOKEN in the background; each writes its head
# to $T/fl.TAG.I.h and its body to $T/fl.TAG.I.b.
open_streams() {
	local i
	for i in $(seq 1 "$2"); do
		curl -q -s -N -m 60 -D "$T/fl.$3.$i.h" -o "$T/fl.$3.$i.b" \
			-H "Authorization: Bearer $1" "$BASE_URL/events" &
		FLOOD+=($!)
		sleep 0.05
	done
}
# refused_body TAG: the body of TAG's first stream refused 503.
refused_body() {
	local f
	for f in "$T"/fl."$1".*.h; do
		head -n 1 "$f" | grep -q ' 503' && { cat "${f%.h}.b"; return; }
	done
}
# statuses TAG: the statuses of TAG's streams, sorted, e.g. "200 200 503".
statuses() {
	local f
	for f in "$T"/fl."$1".*.h; do head -n 1 "$f" | cut -d ' ' -f 2; done | sort | tr '\n' ' ' |
		sed 's/ $//'
}
open_streams "$V1" 9 a
sleep 2
assert_eq "one read-only identity gets 6 streams (its share), then 503" \
	"200 200 200 200 200 200 503 503 503" "$(statuses a)"
body=$(refused_body a)
assert_jq "... the 503 is the bridge's JSON: too_many_connections" \
	'.code == "too_many_connections" and (.error | test("flood1"))' "$body"
open_streams "$V2" 6 b
open_streams "$V3" 6 c
open_streams "$V4" 4 d
sleep 2
assert_eq "read-only identities together get 21 (3 of 24 are kept for admins)" \
	"200 200 200 503" "$(statuses d)"
body=$(refused_body d)
assert_jq "... the 503 says the bridge is full: busy" \
	'.code == "busy" and (.error | length > 0)' "$body"
code=$(curl -q -s -m 3 -o "$T/adm.b" -w '%{http_code}' -H "Authorization: Bearer $ADMIN" \
	-H 'Accept: text/event-stream' "$BASE_URL/events")
assert_eq "an admin still opens /events (200)" 200 "$code"
start_client ta /sessions/widgets-1/terminal
if wait_line ta '^open' 10; then pass "an admin still opens a terminal"; else
	fail "an admin still opens a terminal" "$(cat "$T/ta.log")"; fi
stop_client ta
kill "${FLOOD[@]}" 2>/dev/null
wait "${FLOOD[@]}" 2>/dev/null

# --- GET /?token= with agentd-api down: no token in any log --------------------------------------
# A reload first: a kept connection to agentd-api would still reach it (test_edge_nginx).
mv "$T/run/api.sock" "$T/run/api.sock.away"
NGINX_MASTER=$(cat "$T/run/nginx/run/nginx.pid")
OLD_WORKERS=$(pgrep -P "$NGINX_MASTER" | tr '\n' ' ')
kill -HUP "$NGINX_MASTER"
deadline=$((SECONDS + 10))
for w in $OLD_WORKERS; do
	while alive "$w" && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
done
code=$(curl -q -s -o /dev/null -w '%{http_code}' "$BASE_URL/?token=$ADMIN")
assert_eq "GET /?token= with agentd-api down: 502" 502 "$code"
api GET /healthz
assert_status "... (and agentd-api is down for other requests: 502)" 502
mv "$T/run/api.sock.away" "$T/run/api.sock"
sleep 0.5
check "nginx logged the failure of the other request" grep -q 'api.sock' "$T/run/nginx/logs/error.log"
check_not "nginx's error log holds no token" grep -q "$ADMIN" "$T/run/nginx/logs/error.log"
check_not "nginx's stderr (deploy/up's log) holds no token" grep -q "$ADMIN" "$T/logs/up.log"
check_not "the access log holds no token" grep -q "$ADMIN" "$T/run/nginx/logs/access.log"

# --- GET /?token= over another identity's sign-in asks first ----------------------------------
OTHER=$("$API_BIN" token add other --read-only)
curl -q -s -o /dev/null -D "$T/x.h" -H "Cookie: agentd_token=$ADMIN" "$BASE_URL/?token=$OTHER"
tr -d '\r' <"$T/x.h" >"$T/x.hh"
check_not "GET /?token=<other> with the admin's cookie sets no cookie" grep -qi '^Set-Cookie' "$T/x.hh"
assert_match "... and sends the browser to the login page to confirm (token in the fragment only)" \
	"^Location: /login#token=$OTHER$" "$(grep -i '^Location:' "$T/x.hh")"
curl -q -s -o /dev/null -D "$T/x.h" -H 'Sec-Fetch-Site: cross-site' "$BASE_URL/?token=$OTHER"
tr -d '\r' <"$T/x.h" >"$T/x.hh"
check_not "GET /?token= from another site (its cookie is not sent) sets no cookie" \
	grep -qi '^Set-Cookie' "$T/x.hh"
assert_match "... and sends the browser to the login page, which asks" \
	"^Location: /login#token=$OTHER$" "$(grep -i '^Location:' "$T/x.hh")"
curl -q -s -o /dev/null -D "$T/x.h" -H "Cookie: agentd_token=$ADMIN" "$BASE_URL/?token=$ADMIN"
check "GET /?token= with the same identity's cookie sets it again" \
	grep -qi "^Set-Cookie: agentd_token=$ADMIN;" "$T/x.h"
curl -q -s -o /dev/null -D "$T/x.h" -H "Cookie: agentd_token=$V1" -H 'Sec-Fetch-Site: none' \
	"$BASE_URL/?token=$OTHER"
check_not "GET /?token= typed in (Sec-Fetch-Site: none) over another identity: no cookie" \
	grep -qi '^Set-Cookie' "$T/x.h"
"$API_BIN" token revoke flood2 2>/dev/null
curl -q -s -o /dev/null -D "$T/x.h" -H "Cookie: agentd_token=$V2" "$BASE_URL/?token=$OTHER"
check "GET /?token= over a revoked cookie (nobody signed in) sets the new one" \
	grep -qi "^Set-Cookie: agentd_token=$OTHER;" "$T/x.h"
code=$(curl -q -s -o /dev/null -D "$T/x.h" -w '%{http_code}' -H "Cookie: agentd_token=$ADMIN" \
	-H 'Content-Type: application/json' -d "{\"token\":\"$OTHER\"}" "$BASE_URL/login")
assert_eq "the login page's POST /login (after the confirmation) replaces it: 204" 204 "$code"
check "... with the cookie" grep -qi "^Set-Cookie: agentd_token=$OTHER;" "$T/x.h"
# The login page's question in a browser: test_web_ui (web/ui.js, the phone).

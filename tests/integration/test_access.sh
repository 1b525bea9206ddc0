#!/usr/bin/env bash
# Access: one door in nginx for every path. The matrix: every route x (no credentials,
# a bad token, a revoked token, a read-only token, an admin token, Tailscale headers forged on
# the loopback port, a Tailscale identity on the trusted socket with an allowed, a read-only, an
# unlisted login, and a Funnel request) with the status each must get; what GET /whoami answers
# each identity. Then: who did what ("by") on /events for create, mode switch, prompt, permission
# answer and delete; a read-only identity's keystrokes are dropped and its /stream requests
# refused; the cookie (GET /?token=, POST /login); a broken token store refuses everyone; the
# first start makes and prints a token.
# The door's cache (nginx keeps a granted read for the same credentials for less than 2 s): a
# grant is never given to other credentials (another token or cookie, none, a bad actor, the
# forged or Funnel Tailscale headers), a viewer's read grant never lets a change through nor an
# admin's grant a viewer's keystrokes, a revoked token changes nothing at once and reads nothing
# after the bound, and the cache's directory is nginx's workers' alone.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

API_BIN=$BUILD_DIR/fcgi-app/agentd-api
TS_DIR=$T/ts
TS_SOCK=$TS_DIR/nginx.sock
make_remote acme widgets
start_stack AGENTD_TAILSCALE_USERS="alice@github" AGENTD_TAILSCALE_VIEWERS="carol@github" \
	AGENTD_TAILSCALE_SOCKET="$TS_SOCK" || exit 1
ADMIN=$AGENTD_TEST_TOKEN
VIEWER=$("$API_BIN" token add viewer --read-only)
REVOKED=$("$API_BIN" token add gone)
"$API_BIN" token revoke gone 2>/dev/null
BAD=agentd_$(printf 'x%.0s' $(seq 43))
assert_eq "the trusted socket's directory is root's alone (0700)" "700 root" \
	"$(stat -c '%a %U' "$TS_DIR")"
check "nginx listens on the trusted socket" test -S "$TS_SOCK"
create acme widgets 1
assert_state "an admin creates widgets-1" widgets-1 running 60
# Two event streams held open until just before the token store breaks (long past the door
# cache's 10 s): their access decisions must not stay locked in nginx's cache (lib.sh checks
# nginx's log at the end).
STREAMS=()
for p in /events /sessions/widgets-1/events; do
	curl -q -s -N -o /dev/null -H "Authorization: Bearer $ADMIN" "$BASE_URL$p" &
	STREAMS+=($!)
done

# req CLASS METHOD PATH [BODY]: the status of one request as CLASS sends it (curl -q: no curlrc).
WS_HEADERS=(-H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13'
	-H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==')
req() {
	local cls=$1 method=$2 path=$3 body=${4-} url=$BASE_URL
	local args=(-q -s --path-as-is -o "$T/m.body" -D "$T/m.headers" -w '%{http_code}' -m 3 -X "$method")
	[ "$method" == HEAD ] && args+=(-I) # no body to wait for
	case $cls in
	none) ;;
	bad) args+=(-H "Authorization: Bearer $BAD") ;;
	revoked) args+=(-H "Authorization: Bearer $REVOKED") ;;
	viewer) args+=(-H "Authorization: Bearer $VIEWER") ;;
	admin) args+=(-H "Authorization: Bearer $ADMIN") ;;
	admin_actor) args+=(-H "Authorization: Bearer $ADMIN" -H "X-Agentd-Actor: bot") ;;
	admin_bad_actor) args+=(-H "Authorization: Bearer $ADMIN" -H "X-Agentd-Actor: not allowed!") ;;
	cookie_admin) args+=(-H "Cookie: agentd_token=$ADMIN") ;;
	cookie_viewer) args+=(-H "Cookie: agentd_token=$VIEWER") ;;
	cookie_bad) args+=(-H "Cookie: agentd_token=$BAD") ;;
	cookie_revoked) args+=(-H "Cookie: agentd_token=$REVOKED") ;;
	brief) args+=(-H "Authorization: Bearer $BRIEF") ;;
	forged) args+=(-H "Tailscale-User-Login: alice@github" -H "Tailscale-User-Name: Alice") ;;
	ts_admin) args+=(--unix-socket "$TS_SOCK" -H "Tailscale-User-Login: alice@github") ;;
	ts_viewer) args+=(--unix-socket "$TS_SOCK" -H "Tailscale-User-Login: carol@github") ;;
	ts_unlisted) args+=(--unix-socket "$TS_SOCK" -H "Tailscale-User-Login: mallory@github") ;;
	ts_funnel) args+=(--unix-socket "$TS_SOCK" -H "Tailscale-User-Login: alice@github"
		-H "Tailscale-Funnel-Request: ?1") ;;
	esac
	[[ $path == *" ws" ]] && { path=${path% ws}; args+=("${WS_HEADERS[@]}"); }
	[ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
	: >"$T/m.body"
	curl "${args[@]}" "$url$path" 2>/dev/null
}

# The routes: KIND METHOD PATH BODY ADMIN_STATUS. KIND public: no credentials needed; page: a
# page of the web UI (without credentials: 303 to /login); read: a read-only identity gets what
# an admin gets; write: a read-only identity gets 403. The admin's answers show the door let the
# request through (the state they act on is chosen so that each answer stays the same).
ROUTES=(
	"public|GET|/login||200"
	"public|GET|/assets/login/login.js||200"
	"page|GET|/||200"
	"page|GET|/s/widgets-1||200"
	"read|GET|/assets/app.css||200"
	"read|GET|/healthz||200"
	"read|GET|/whoami||200"
	"read|GET|/sessions||200"
	"read|GET|/sessions/widgets-1||200"
	"read|GET|/worktrees||200"
	"read|GET|/branches||200"
	"read|GET|/events||200"
	"read|GET|/events ws||101"
	"read|GET|/sessions/widgets-1/terminal ws||101"
	"read|GET|/sessions/widgets-1/stream ws||409"
	"read|GET|/sessions/widgets-1/events||409"
	'write|POST|/sessions|{"repo":{"owner":"acme","name":"widgets"},"issue":1}|200'
	'write|POST|/sessions/widgets-1/mode|{"mode":"terminal"}|200'
	"write|DELETE|/sessions/nosuch-1||404"
	"write|DELETE|/worktrees/nosuch-issue-1||404"
	"write|DELETE|/branches/acme/widgets/feat/issue-99||404"
	'write|POST|/sessions/widgets-1/prompt|{"prompt":"hi"}|409'
	"write|POST|/sessions/widgets-1/interrupt||409"
	'write|POST|/sessions/widgets-1/permissions/abc|{"behavior":"allow"}|404'
)
CLASSES=(none bad revoked viewer admin forged ts_admin ts_viewer ts_unlisted ts_funnel)
for route in "${ROUTES[@]}"; do
	IFS='|' read -r kind method path body admin_status <<<"$route"
	line=""
	bad_cells=()
	for cls in "${CLASSES[@]}"; do
		case $cls in
		admin | ts_admin) want=$admin_status ;;
		viewer | ts_viewer) [ "$kind" == write ] && want=403 || want=$admin_status ;;
		*)
			case $kind in
			public) want=$admin_status ;;
			page) want=303 ;;
			*) want=401 ;;
			esac
			;;
		esac
		got=$(req "$cls" "$method" "$path" "$body")
		line+=" $cls=$got"
		[ "$got" == "$want" ] || bad_cells+=("$cls: expected $want, got $got $(head -c 200 "$T/m.body")")
		if [ "$got" == 401 ] || { [ "$got" == 403 ] && [ "$kind" == write ]; }; then
			BODY=$(cat "$T/m.body")
			jq -e '(.error | type == "string" and length > 0) and (.code | test("^[a-z_]+$"))' \
				<<<"$BODY" >/dev/null 2>&1 || bad_cells+=("$cls: $got body is not {error,code}: $BODY")
		fi
		if [ "$got" == 303 ] && [ "$kind" == page ]; then
			grep -qi '^Location: /login' "$T/m.headers" || bad_cells+=("$cls: 303 not to /login")
		fi
	done
	if [ ${#bad_cells[@]} -eq 0 ]; then
		pass "$method $path:$line"
	else
		fail "$method $path:$line" "${bad_cells[@]}"
	fi
done

# The codes and sentences of the refusals.
req none GET /sessions >/dev/null
assert_json "no credentials: 401 unauthenticated" .code '"unauthenticated"' "$(cat "$T/m.body")"
check "... with WWW-Authenticate: Bearer" grep -qi '^WWW-Authenticate: Bearer' "$T/m.headers"
req revoked GET /sessions >/dev/null
assert_json "a revoked token: 401 invalid_token" .code '"invalid_token"' "$(cat "$T/m.body")"
req viewer DELETE /sessions/widgets-1 >/dev/null
assert_json "a read-only token that deletes: 403 read_only" .code '"read_only"' "$(cat "$T/m.body")"
req ts_unlisted GET /sessions >/dev/null
assert_json "an unlisted Tailscale login: 401 tailscale_user_not_allowed" .code \
	'"tailscale_user_not_allowed"' "$(cat "$T/m.body")"
check "widgets-1 is still there (no refused request changed it)" tmux_has widgets-1
api GET /sessions/widgets-1 -H "X-Agentd-Actor: not allowed!"
assert_status "a malformed X-Agentd-Actor: 403" 403
assert_json "... invalid_actor" .code '"invalid_actor"'
api GET /sessions/widgets-1 -H "X-Agentd-By: mallory" -H "X-Agentd-Role: admin" \
	-H "X-Agentd-Identity: mallory"
assert_status "client-sent X-Agentd-* headers change nothing (GET with the admin token)" 200

# --- GET /whoami: who the door says the request is (the web UI shows a viewer no changes) -----
req admin GET /whoami >/dev/null
assert_json "GET /whoami, admin token" . '{"identity":"itest","role":"admin","by":"itest"}' \
	"$(cat "$T/m.body")"
req viewer GET /whoami >/dev/null
assert_json "GET /whoami, read-only token" . '{"identity":"viewer","role":"viewer","by":"viewer"}' \
	"$(cat "$T/m.body")"
req ts_admin GET /whoami >/dev/null
assert_json "GET /whoami, an allowed Tailscale login" . \
	'{"identity":"alice@github","role":"admin","by":"alice@github"}' "$(cat "$T/m.body")"
req ts_viewer GET /whoami >/dev/null
assert_json "GET /whoami, a read-only Tailscale login" . \
	'{"identity":"carol@github","role":"viewer","by":"carol@github"}' "$(cat "$T/m.body")"
code=$(curl -q -s -o "$T/m.body" -w '%{http_code}' -H "Authorization: Bearer $VIEWER" \
	-H "X-Agentd-Role: admin" -H "X-Agentd-Identity: itest" -H "X-Agentd-Actor: bob" \
	"$BASE_URL/whoami")
assert_eq "GET /whoami with forged X-Agentd-* headers: 200" 200 "$code"
assert_json "... still the viewer, the actor in by" . \
	'{"identity":"viewer","role":"viewer","by":"viewer:bob"}' "$(cat "$T/m.body")"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H "Cookie: agentd_token=$VIEWER" "$BASE_URL/whoami")
assert_eq "GET /whoami with a read-only token's cookie: 200" 200 "$code"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ADMIN" \
	"$BASE_URL/whoami")
assert_eq "POST /whoami: 405" 405 "$code"

# --- the door's cache: what it could get wrong ------------------------------------------------
# nginx gives a granted read (GET, HEAD) again, without asking agentd-api, to requests with the
# same credentials for less than REUSE_BOUND seconds (core/auth.h AUTH_REUSE_BOUND). Each
# sequence below starts with a grant and follows it at once, well inside that time.
REUSE_BOUND=2
# seq_codes CLASS:METHOD:PATH...: the statuses, in order, as "CLASS:METHOD:PATH=STATUS ...".
seq_codes() {
	local step cls method path out=""
	for step in "$@"; do
		IFS=: read -r cls method path <<<"$step"
		out+="$step=$(req "$cls" "$method" "$path") "
	done
	printf '%s' "${out% }"
}
want_codes() { # DESC WANT GOT
	if [ "$2" == "$3" ]; then pass "$1: $3"; else fail "$1" "expected $2" "got      $3"; fi
}
G=/sessions/widgets-1
got=$(seq_codes "admin:GET:$G" "bad:GET:$G" "revoked:GET:$G" "none:GET:$G" "forged:GET:$G" \
	"cookie_bad:GET:$G" "admin_bad_actor:GET:$G")
want_codes "an admin's read grant is no other credential's" \
	"admin:GET:$G=200 bad:GET:$G=401 revoked:GET:$G=401 none:GET:$G=401 forged:GET:$G=401 cookie_bad:GET:$G=401 admin_bad_actor:GET:$G=403" \
	"$got"
got=$(seq_codes "cookie_admin:GET:$G" "cookie_revoked:GET:$G" "cookie_bad:GET:$G" "none:GET:$G" \
	"admin_actor:GET:$G" "admin_bad_actor:GET:$G")
want_codes "a cookie's read grant is no other credential's" \
	"cookie_admin:GET:$G=200 cookie_revoked:GET:$G=401 cookie_bad:GET:$G=401 none:GET:$G=401 admin_actor:GET:$G=200 admin_bad_actor:GET:$G=403" \
	"$got"
got=$(seq_codes "ts_admin:GET:$G" "forged:GET:$G" "ts_funnel:GET:$G" "ts_unlisted:GET:$G" \
	"ts_viewer:GET:$G" "ts_viewer:DELETE:$G")
want_codes "a Tailscale login's read grant is not the forged headers' on the TCP port, nor a Funnel request's, nor another login's" \
	"ts_admin:GET:$G=200 forged:GET:$G=401 ts_funnel:GET:$G=401 ts_unlisted:GET:$G=401 ts_viewer:GET:$G=200 ts_viewer:DELETE:$G=403" \
	"$got"
M=/sessions/widgets-1/mode
got=$(seq_codes "viewer:GET:$G" "viewer:DELETE:$G" "viewer:POST:$M" "cookie_viewer:GET:$G" \
	"cookie_viewer:DELETE:$G" "viewer:HEAD:/sessions" "viewer:DELETE:$G")
want_codes "a viewer's read grant never lets a change through" \
	"viewer:GET:$G=200 viewer:DELETE:$G=403 viewer:POST:$M=403 cookie_viewer:GET:$G=200 cookie_viewer:DELETE:$G=403 viewer:HEAD:/sessions=200 viewer:DELETE:$G=403" \
	"$got"
check "widgets-1 is still there (no refused change went through)" tmux_has widgets-1

# A token revoked: a change is refused at once (changes are never reused), a read after the
# bound at the latest, and never let in again.
BRIEF=$("$API_BIN" token add brief)
code=$(req brief POST /sessions/nosuch-1/mode '{"mode":"terminal"}')
assert_eq "a fresh token may change state (404 for an unknown session)" 404 "$code"
code=$(req brief GET "$G")
assert_eq "... and read (its grant is kept)" 200 "$code"
"$API_BIN" token revoke brief 2>/dev/null
t0=$(date +%s%N)
code=$(req brief POST /sessions/nosuch-1/mode '{"mode":"terminal"}')
assert_eq "the same change with the token just revoked is refused at once: 401" 401 "$code"
admitted=0
while code=$(req brief GET "$G") && [ "$code" == 200 ] &&
	[ $(($(date +%s%N) - t0)) -lt $(((REUSE_BOUND + 3) * 1000000000)) ]; do
	admitted=$((admitted + 1))
	sleep 0.05
done
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
log "the revoked token's reads were let in $admitted more time(s), refused after ${elapsed_ms} ms"
assert_eq "a revoked token's reads are refused: 401" 401 "$code"
if [ "$code" == 401 ] && [ "$elapsed_ms" -le $((REUSE_BOUND * 1000 + 500)) ]; then
	pass "... within the bound (${elapsed_ms} ms <= ${REUSE_BOUND} s and 500 ms for the requests)"
else
	fail "a revoked token's reads are refused within ${REUSE_BOUND} s" "refused after ${elapsed_ms} ms (status $code)"
fi
never=$(for _ in 1 2 3 4 5; do req brief GET "$G"; echo; done | sort -u | tr '\n' ' ')
assert_eq "... and never let in again" "401 " "$never"

# The cache holds credentials: its directory is for nginx's workers alone.
# (The setgid bit of the runtime dir comes along; it grants nothing.)
CACHE_DIR=$T/run/auth-cache
mode=$(stat -c '%a' "$CACHE_DIR" 2>/dev/null || echo 777)
owner=$(stat -c '%U' "$CACHE_DIR" 2>/dev/null)
if [ "$(id -u)" -eq 0 ] && id -u www-data >/dev/null 2>&1; then
	assert_eq "the door's cache is nginx's workers' alone (rwx for www-data, nothing for others)" \
		"700 www-data" "$(printf '%o' $((8#$mode & 8#777))) $owner"
else
	assert_eq "the door's cache is nginx's workers' alone (rwx for them, nothing for others)" 700 \
		"$(printf '%o' $((8#$mode & 8#777)))"
fi

# --- by: who did what, on /events -----------------------------------------------------------
sse_start ev GET /events
sse_wait_event ev '.event == "snapshot"' 10 # the create comes after it, as an event
api POST /sessions "$(create_body acme widgets 2)" -H "X-Agentd-Actor: 12345"
assert_status "create widgets-2 with X-Agentd-Actor: 201" 201
assert_jq "the answer says by itest:12345" '.by == "itest:12345"'
assert_state "widgets-2 runs" widgets-2 running 60
curl -q -s -o /dev/null --unix-socket "$TS_SOCK" -H "Tailscale-User-Login: alice@github" \
	-H 'Content-Type: application/json' -d '{"mode":"structured"}' \
	"$BASE_URL/sessions/widgets-2/mode"
assert_sse_event "/events: created, by itest:12345" ev \
	'.event == "session" and (.data | fromjson | .change == "created" and .session.id == "widgets-2" and .session.by == "itest:12345")' 10
assert_sse_event "/events: the mode switch, by alice@github (Tailscale)" ev \
	'.event == "session" and (.data | fromjson | .session.id == "widgets-2" and .session.mode == "structured" and .session.by == "alice@github")' 20
sleep 1 # the host starts
sse_run p1 POST /sessions/widgets-2/prompt '{"prompt":"RUNBASH touch by-file"}' \
	--header "X-Agentd-Actor: bob" --timeout 3
assert_sse_event "/events: the prompt, by itest:bob" ev \
	'.event == "prompt" and (.data | fromjson | .session == "widgets-2" and .by == "itest:bob")' 20
RID=$(sse_events ev | jq -r 'select(.event == "permission") | .data | fromjson | .requestId' | head -n 1)
if [ -z "$RID" ]; then
	sse_wait_event ev '.event == "permission"' 20
	RID=$(sse_events ev | jq -r 'select(.event == "permission") | .data | fromjson | .requestId' | head -n 1)
fi
code=$(req viewer POST "/sessions/widgets-2/permissions/$RID" '{"behavior":"allow"}')
assert_eq "a read-only token cannot answer the permission: 403" 403 "$code"
code=$(req ts_admin POST "/sessions/widgets-2/permissions/$RID" '{"behavior":"allow"}')
assert_eq "alice (Tailscale) answers it: 200" 200 "$code"
assert_sse_event "/events: permission_resolved by alice@github" ev \
	".event == \"permission_resolved\" and (.data | fromjson | .requestId == \"$RID\" and .by == \"alice@github\" and .behavior == \"allow\")" 20

# A read-only identity on /stream: it sees the events, its requests get 403 frames.
ws_start vs /sessions/widgets-2/stream --header "Authorization: Bearer $VIEWER"
ws_wait_line vs '^open' 10
ws_send vs '{"type":"prompt","prompt":"from a viewer"}'
assert_ws_frame "/stream: a viewer's prompt gets an error frame 403 read_only" vs \
	'.type == "error" and .request == "prompt" and .status == 403 and .code == "read_only"' 10
ws_stop vs

api DELETE /sessions/widgets-2 -H "X-Agentd-Actor: cleanup"
assert_status "delete widgets-2: 200" 200
assert_sse_event "/events: deleted, by itest:cleanup" ev \
	'.event == "session" and (.data | fromjson | .change == "deleted" and .session.id == "widgets-2" and .session.by == "itest:cleanup")' 20

# --- a viewer watches a terminal: its keystrokes and resizes are dropped ------------------------
# Viewer, admin, viewer, one after the other: each gets its own role, not the grant nginx keeps
# for the one before (the door's cache).
start_client tv /sessions/widgets-1/terminal --header "Authorization: Bearer $VIEWER"
start_client ta /sessions/widgets-1/terminal
start_client tv2 /sessions/widgets-1/terminal --header "Authorization: Bearer $VIEWER"
wait_line tv '^open' 10
wait_line ta '^open' 10
wait_line tv2 '^open' 10
client_cmd tv 'send "viewer typed this\r"'
client_cmd tv2 'send "second viewer typed\r"'
client_cmd ta 'send "admin typed this\r"'
if pane_has widgets-1 'admin typed this' 10; then pass "an admin's keystrokes reach the pane"; else
	fail "an admin's keystrokes reach the pane"; fi
if pane_has widgets-1 'viewer typed this|second viewer typed' 2; then
	fail "a viewer's keystrokes are dropped (also right after an admin's grant)"
else
	pass "a viewer's keystrokes are dropped (also right after an admin's grant)"
fi
check "the viewer's terminal stays open" client_alive tv
stop_client tv
stop_client tv2
stop_client ta

# --- the browser's cookie ----------------------------------------------------------------------
code=$(curl -q -s -o /dev/null -D "$T/x.h" -w '%{http_code}' "$BASE_URL/?token=$ADMIN")
assert_eq "GET /?token=<admin>: 303" 303 "$code"
check "... to / without the token" grep -qx 'Location: /' <(tr -d '\r' <"$T/x.h")
COOKIE=$(tr -d '\r' <"$T/x.h" | sed -n 's/^Set-Cookie: //Ip')
assert_match "... sets an HttpOnly SameSite=Strict cookie, not Secure on http" \
	"^agentd_token=$ADMIN; Path=/; Max-Age=[0-9]+; HttpOnly; SameSite=Strict$" "$COOKIE"
curl -q -s -o /dev/null -D "$T/x.h" -H 'X-Forwarded-Proto: https' "$BASE_URL/?token=$ADMIN"
check "... Secure behind https (X-Forwarded-Proto)" grep -qi '^Set-Cookie: .*; Secure' "$T/x.h"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H "Cookie: agentd_token=$ADMIN" "$BASE_URL/sessions")
assert_eq "the cookie lets GET /sessions in" 200 "$code"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H "Cookie: agentd_token=$VIEWER" \
	-X DELETE "$BASE_URL/sessions/widgets-1")
assert_eq "a read-only token's cookie cannot delete: 403" 403 "$code"
curl -q -s -o /dev/null -D "$T/x.h" "$BASE_URL/?token=$REVOKED"
check "GET /?token=<revoked>: to /login?error=invalid_token" \
	grep -q '^Location: /login?error=invalid_token' <(tr -d '\r' <"$T/x.h")
! grep -qi '^Set-Cookie' "$T/x.h"
assert_eq "... and no cookie" 0 $?
code=$(curl -q -s -o /dev/null -D "$T/x.h" -w '%{http_code}' -H 'Content-Type: application/json' \
	-d "{\"token\":\"$VIEWER\"}" "$BASE_URL/login")
assert_eq "POST /login with a token: 204" 204 "$code"
check "... sets the cookie" grep -qi "^Set-Cookie: agentd_token=$VIEWER;" "$T/x.h"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	-d "{\"token\":\"$BAD\"}" "$BASE_URL/login")
assert_eq "POST /login with a bad token: 401" 401 "$code"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
	-H 'Origin: https://evil.example' -d "{\"token\":\"$VIEWER\"}" "$BASE_URL/login")
assert_eq "POST /login from another origin: 403" 403 "$code"
check_not "the access log holds no token" grep -q "$ADMIN" "$T/run/nginx/logs/access.log"

# --- last used, written back without a write per request -----------------------------------------
"$API_BIN" token list >"$T/list.txt"
check "token list: itest was used" grep -qE '^itest +admin +[0-9TZ:-]+ +[0-9]{4}-' "$T/list.txt"

# Checked before the store breaks: an unreadable store ends every open connection (API.md,
# Access), as it refuses every request.
check "the event streams held since the start are still open" kill -0 "${STREAMS[@]}"
kill "${STREAMS[@]}" 2>/dev/null
wait "${STREAMS[@]}" 2>/dev/null

# --- a broken store refuses everyone ----------------------------------------------------------------
cp "$T/state/tokens.json" "$T/tokens.good"
printf '{"tokens": [' >"$T/state/tokens.json"
# A read granted just before may be given again for the bound (the door's cache).
deadline=$((SECONDS + REUSE_BOUND + 1))
while code=$(req admin GET /sessions) && [ "$code" == 200 ] && [ $SECONDS -lt $deadline ]; do
	sleep 0.1
done
assert_eq "a corrupt token store: the admin token gets 401 (within ${REUSE_BOUND} s)" 401 "$code"
assert_json "... credentials_unavailable" .code '"credentials_unavailable"' "$(cat "$T/m.body")"
deadline=$((SECONDS + REUSE_BOUND + 1))
while code=$(req ts_admin GET /sessions) && [ "$code" == 200 ] && [ $SECONDS -lt $deadline ]; do
	sleep 0.1
done
assert_eq "... and so does alice on the trusted socket" 401 "$code"
check "agentd-api says so in its log" grep -q "every request is refused" "$T/logs/up.log"
cp "$T/tokens.good" "$T/state/tokens.json"
code=$(req admin GET /sessions)
assert_eq "the store repaired: 200 again" 200 "$code"

# --- agentd-api down: the door answers 502, naming it --------------------------------------------
# (test_edge_nginx does it for every path; here once, that a failed decision is not a 500.)

# --- first start: no token, no Tailscale user -> an admin token in the ready line ---------------
api DELETE /sessions/widgets-1
stop_stack
rm -f "$T/state/tokens.json" "$T/.curlrc"
mv "$T/logs/up.log" "$T/logs/up-first-stack.log" # the ready line read below is the new stack's
AGENTD_TEST_TOKEN=
STACK_ENV=()
ITEST_FIRST_START=1 start_stack || exit 1
READY=$(grep -a '^agentd ready: ' "$T/logs/up.log" | tail -n 1)
assert_match "first start: the ready line carries a token" \
	"^agentd ready: http://127\\.0\\.0\\.1:$PORT/\\?token=agentd_[A-Za-z0-9_-]{43}$" "$READY"
FIRST=${READY##*token=}
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FIRST" "$BASE_URL/sessions")
assert_eq "the first token is an admin's: GET /sessions 200" 200 "$code"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $FIRST" \
	-H 'Content-Type: application/json' -d '{"mode":"terminal"}' "$BASE_URL/sessions/nosuch-1/mode")
assert_eq "... that may change state (404 for an unknown session)" 404 "$code"
code=$(curl -q -s -o /dev/null -w '%{http_code}' "$BASE_URL/sessions")
assert_eq "... and nothing is open without it" 401 "$code"
check_not "no trusted listener without Tailscale users" grep -q 'listen unix' \
	"$T/run/nginx/conf/agentd.conf"

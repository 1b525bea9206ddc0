#!/usr/bin/env bash
# The Host rule and what the Origin check may trust (DNS rebinding):
# - a Host that is not the listen address, localhost/127.0.0.1/[::1] with the listen port, or a
#   name in AGENTD_ALLOWED_HOSTS gets a JSON 421 from nginx on every kind of path (REST, the
#   static session list, /healthz, the UI, WebSocket, SSE, preflight), and changes nothing;
# - the allowed forms pass: case-insensitive, a name without a port with any port, a name with
#   a port only with that port;
# - a client-sent X-Forwarded-Proto is not trusted: Origin https://<host> over plain http is 403,
#   and the tailscale case passes because its https origin is in AGENTD_ALLOWED_ORIGINS;
# - two Origin headers are refused by agentd-api (and agentd-bridge);
# - agentd-api config --render-nginx renders AGENTD_ALLOWED_HOSTS from the config file and refuses
#   values that are not host[:port] (nothing of them reaches the nginx config); deploy/up --render
#   writes the same files.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EDGE_PY=$REPO/tests/integration/edge/edge.py
TS=machine.tailnet.ts.net
TS_ORIGIN=https://$TS:8443
make_remote acme widget || exit 1
start_stack AGENTD_ALLOWED_HOSTS="Machine.Tailnet.TS.net, other.example:8443" \
	AGENTD_ALLOWED_ORIGINS="$TS_ORIGIN" || exit 1
EVIL=evil.example:$PORT
WS_KEY='Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13'

# raw DATA: DATA (\r\n escapes) on a new connection to nginx; sets RAW_STATUS and RAW_BODY.
raw() {
	local out
	out=$(python3 "$EDGE_PY" raw "$PORT" "$1")
	RAW_STATUS=$(printf '%s' "$out" | head -n 1 | cut -d ' ' -f 2)
	RAW_BODY=${out#*$'\r\n\r\n'}
}

# upgrade PATH HEADERS: a WebSocket upgrade of PATH with extra HEADERS (\r\n-separated), with
# the harness's token (the door: without it every upgrade is 401 before the Origin check).
upgrade() {
	raw "GET $1 HTTP/1.1\r\n$2\r\nAuthorization: Bearer $AGENTD_TEST_TOKEN\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n$WS_KEY\r\n\r\n"
}

# refused421 DESC: the last api call got nginx's JSON 421.
refused421() {
	assert_status "$1: 421" 421
	assert_json "$1: code host_not_allowed" .code '"host_not_allowed"'
}

# --- the issue's reproduction -------------------------------------------------------------------
api POST /sessions "$(create_body acme widget 41)" -H "Host: $EVIL" -H "Origin: http://$EVIL"
refused421 "DNS rebinding: POST /sessions with Host $EVIL and a matching Origin"
assert_error_body "the 421 is the API's error shape"
assert_match "the 421 is JSON" '^application/json' "$(header Content-Type)"
assert_nothing_created "the refused create created nothing"

api POST /sessions "$(create_body acme widget 1)"
assert_status "a create without Host tricks: 201" 201
SID=$(printf '%s' "$BODY" | jq -r .id)
assert_state "the session runs" "$SID" running 60

upgrade "/sessions/$SID/terminal" "Host: $EVIL\r\nOrigin: http://$EVIL"
assert_eq "DNS rebinding: terminal upgrade with Host $EVIL is 421, not 101" 421 "$RAW_STATUS"
assert_jq "its body says host_not_allowed" '.code == "host_not_allowed"' "$RAW_BODY"
upgrade "/sessions/$SID/stream" "Host: $EVIL\r\nOrigin: http://$EVIL"
assert_eq "DNS rebinding: stream upgrade with Host $EVIL is 421" 421 "$RAW_STATUS"

# --- every kind of path refuses a foreign Host --------------------------------------------------
for req in "GET /healthz" "GET /sessions" "GET /sessions/$SID" "GET /worktrees" "GET /branches" \
	"GET /" "GET /index.html" "GET /some/client/route" "GET /assets/app.js" \
	"GET /sessions/$SID/events" "OPTIONS /sessions" "DELETE /sessions/$SID" \
	"POST /sessions/$SID/interrupt"; do
	api "${req%% *}" "${req#* }" -H "Host: $EVIL" -H "Origin: http://$EVIL"
	refused421 "$req with Host $EVIL"
done
api POST "/sessions/$SID/prompt" '{"prompt":"hi"}' -H "Host: $EVIL" -H "Origin: http://$EVIL"
refused421 "POST /sessions/<id>/prompt (SSE) with Host $EVIL"
api POST "/sessions/$SID/mode" '{"mode":"structured"}' -H "Host: $EVIL"
refused421 "POST /sessions/<id>/mode with Host $EVIL"
get_session "$SID"
assert_json "the refused DELETE and mode switch left the session running in terminal mode" \
	'[.state, .mode]' '["running","terminal"]'
check "the refused DELETE left its tmux session" tmux_has "$SID"

for h in "127.0.0.1:$((PORT + 1))" localhost 127.0.0.1 "evil.$TS" "$TS.evil.example" \
	"$TS.evil.example:8443" other.example "other.example:8444" "127.0.0.1.evil.example:$PORT"; do
	api GET /healthz -H "Host: $h"
	assert_status "Host $h: 421" 421
done
raw 'GET /healthz HTTP/1.0\r\n\r\n'
assert_eq "a request without Host: 421" 421 "$RAW_STATUS"
assert_jq "a request without Host: JSON host_not_allowed" '.code == "host_not_allowed"' "$RAW_BODY"

# --- the allowed forms --------------------------------------------------------------------------
for h in "127.0.0.1:$PORT" "localhost:$PORT" "LocalHost:$PORT" "[::1]:$PORT" "$TS" "$TS:8443" \
	"MACHINE.tailnet.ts.NET:443" "other.example:8443" "Other.Example:8443"; do
	api GET /healthz -H "Host: $h"
	assert_status "Host $h: /healthz 200" 200
done
api GET "/sessions/$SID" -H "Host: $TS:8443"
assert_json "GET /sessions/<id> through an allowed name" .id "\"$SID\""
api GET / -H "Host: localhost:$PORT"
assert_status "the UI through localhost:$PORT" 200

# --- X-Forwarded-Proto is nginx's, not the client's ---------------------------------------------
N_RECORDS=$(record_count)
api POST /sessions "$(create_body acme widget 42)" -H "Origin: https://127.0.0.1:$PORT" \
	-H 'X-Forwarded-Proto: https'
assert_status "Origin https://127.0.0.1:$PORT with a client-sent X-Forwarded-Proto over http: 403" 403
assert_eq "the refused create left no record" "$N_RECORDS" "$(record_count)"
upgrade "/sessions/$SID/terminal" "Host: 127.0.0.1:$PORT\r\nOrigin: https://127.0.0.1:$PORT\r\nX-Forwarded-Proto: https"
assert_eq "terminal upgrade: Origin https://… with a client-sent X-Forwarded-Proto: 403" 403 "$RAW_STATUS"
api POST "/sessions/$SID/interrupt" -H "Origin: https://127.0.0.1:$PORT" -H 'X-Forwarded-Proto: https'
assert_status "bridge POST: Origin https://… with a client-sent X-Forwarded-Proto: 403" 403
api DELETE /sessions/nope-1 -H "Host: other.example:8443" -H "Origin: https://other.example:8443" \
	-H 'X-Forwarded-Proto: https'
assert_status "an https Origin not in AGENTD_ALLOWED_ORIGINS behind a proxy: 403" 403
# tailscale serve: the browser's Host and https origin; the origin is listed.
api DELETE /sessions/nope-1 -H "Host: $TS:8443" -H "Origin: $TS_ORIGIN" -H 'X-Forwarded-Proto: https'
assert_status "tailscale serve (allowed host, listed https origin): past the Origin check (404)" 404
upgrade "/sessions/$SID/terminal" "Host: $TS:8443\r\nOrigin: $TS_ORIGIN\r\nX-Forwarded-Proto: https"
assert_eq "tailscale serve: the terminal opens (101)" 101 "$RAW_STATUS"
api DELETE /sessions/nope-1 -H "Host: other.example:8443" -H "Origin: http://other.example:8443"
assert_status "same origin through an allowed name over http: past the Origin check (404)" 404

# --- two Origin headers -------------------------------------------------------------------------
N_RECORDS=$(record_count)
api POST /sessions "$(create_body acme widget 43)" -H "Origin: http://127.0.0.1:$PORT" \
	-H 'Origin: http://evil.example'
assert_status "POST /sessions with two Origin headers (same origin first): 403" 403
assert_error_body "the refusal has an error body"
api POST /sessions "$(create_body acme widget 43)" -H "Origin: http://127.0.0.1:$PORT" \
	-H "Origin: http://127.0.0.1:$PORT"
assert_status "POST /sessions with the same Origin twice: 403" 403
assert_eq "neither created a record" "$N_RECORDS" "$(record_count)"
api DELETE "/sessions/$SID" -H "Origin: http://127.0.0.1:$PORT" -H 'Origin: http://evil.example'
assert_status "DELETE with two Origin headers: 403" 403
check "the refused DELETE left the tmux session" tmux_has "$SID"
upgrade "/sessions/$SID/terminal" "Host: 127.0.0.1:$PORT\r\nOrigin: http://127.0.0.1:$PORT\r\nOrigin: http://evil.example"
assert_eq "terminal upgrade with two Origin headers: 403" 403 "$RAW_STATUS"
api POST /sessions "$(create_body acme widget 44)" -H "Origin: http://127.0.0.1:$PORT"
assert_status "one same-origin Origin still creates: 201" 201

# --- agentd-api config --render-nginx and AGENTD_ALLOWED_HOSTS ----------------------------------
# render_hosts VALUE: agentd-api config --render-nginx (render_nginx) with AGENTD_ALLOWED_HOSTS=VALUE
# in a config file; sets RENDER_RC, RENDER_ERR and RENDER_CONF (the rendered agentd.conf, if any).
render_hosts() {
	local dir=$T/render-$RANDOM
	mkdir -p "$dir"
	printf 'AGENTD_ALLOWED_HOSTS=%s\n' "$1" >"$dir/agentd.conf"
	(
		unset AGENTD_ALLOWED_HOSTS
		export AGENTD_CONFIG="$dir/agentd.conf" AGENTD_LISTEN=127.0.0.1:18080 \
			AGENTD_RUNTIME_DIR="$dir/run"
		render_nginx "$dir/prefix" >/dev/null 2>"$dir/err"
	)
	RENDER_RC=$?
	RENDER_ERR=$(cat "$dir/err")
	RENDER_CONF=$(cat "$dir/prefix/conf/agentd.conf" 2>/dev/null)
}
render_hosts "Box.Example.COM:8443 tail.ts.net,[fe80::1]"
assert_eq "render: AGENTD_ALLOWED_HOSTS from the config file is accepted" 0 "$RENDER_RC"
assert_match "render: host:port is an exact, lower-case key" '"box\.example\.com:8443" 1;' "$RENDER_CONF"
assert_match "render: a name without port matches any port" \
	'"~\*\^tail\\\.ts\\\.net\(:\[0-9\]\{1,5\}\)\?\$" 1;' "$RENDER_CONF"
assert_match "render: the listen address and loopback names are keys" \
	'"127\.0\.0\.1:18080" 1;.*"localhost:18080" 1;.*"\[::1\]:18080" 1;' "$(tr '\n' ' ' <<<"$RENDER_CONF")"
for bad in 'evil.example";' 'a|b' '.*' '~.*' 'https://box.example' 'box.example/path' 'a..b' \
	'bad_name.example' '[::1' 'box.example:99999' 'box.example:0' '$host' 'a{1}' 'x;y'; do
	render_hosts "$bad"
	if [ "$RENDER_RC" != 0 ] && [[ $RENDER_ERR == *AGENTD_ALLOWED_HOSTS* ]] && [ -z "$RENDER_CONF" ]; then
		pass "render refuses AGENTD_ALLOWED_HOSTS='$bad' and writes nothing"
	else
		fail "render refuses AGENTD_ALLOWED_HOSTS='$bad' and writes nothing" \
			"rc $RENDER_RC, stderr: $RENDER_ERR" "conf: $(grep -A8 'map $http_host' <<<"$RENDER_CONF")"
	fi
done

# deploy/up --render is the same renderer: the same files, and the same refusal.
SAME=$T/render-same
mkdir -p "$SAME"
printf 'AGENTD_ALLOWED_HOSTS=Box.Example.COM:8443 tail.ts.net\nAGENTD_ALLOWED_ORIGINS=%s\n' \
	"$TS_ORIGIN" >"$SAME/agentd.conf"
same_env=(env -u AGENTD_ALLOWED_HOSTS -u AGENTD_ALLOWED_ORIGINS AGENTD_CONFIG="$SAME/agentd.conf"
	AGENTD_LISTEN=127.0.0.1:18080 AGENTD_RUNTIME_DIR="$SAME/run" AGENTD_BUILD_DIR="$BUILD_DIR")
out=$("${same_env[@]}" "$REPO/deploy/up" --render "$SAME/up" 2>&1)
assert_eq "deploy/up --render succeeds" 0 "$?"
(
	unset AGENTD_ALLOWED_HOSTS AGENTD_ALLOWED_ORIGINS
	export AGENTD_CONFIG="$SAME/agentd.conf" AGENTD_LISTEN=127.0.0.1:18080 AGENTD_RUNTIME_DIR="$SAME/run"
	render_nginx "$SAME/api" 2>&1
) >"$SAME/api.err"
assert_eq "agentd-api config --render-nginx succeeds" 0 "$?"
check "deploy/up --render and agentd-api config --render-nginx write the same files" \
	diff -r "$SAME/up/conf" "$SAME/api/conf"
assert_match "the rendered Host map holds the allowed names" '"box\.example\.com:8443" 1;' \
	"$(cat "$SAME/up/conf/agentd.conf" 2>/dev/null)"
printf 'AGENTD_ALLOWED_HOSTS=a|b\n' >"$SAME/agentd.conf"
out=$("${same_env[@]}" "$REPO/deploy/up" --render "$SAME/bad" 2>&1)
assert_ne "deploy/up --render refuses AGENTD_ALLOWED_HOSTS='a|b'" 0 "$?"
assert_match "... naming the key" "AGENTD_ALLOWED_HOSTS: 'a\|b'" "$out"
check_not "... and writes nothing" test -e "$SAME/bad/conf/agentd.conf"

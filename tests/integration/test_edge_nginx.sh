#!/usr/bin/env bash
# nginx and the listener under faults and load, and the render's warning:
# - agentd-api config --render-nginx (deploy/up --render) into a runtime dir that does not exist yet does not warn that www-data
#   cannot reach it (and still warns when a parent really is closed);
# - every answer nginx makes itself is JSON {error, code}: 400 for malformed request lines,
#   headers and paths, 405 for TRACE, 431 for a header over the buffers, 400 for Content-Length
#   with Transfer-Encoding, 414, 416, 501, 505, 404/405 of the web root, 413, 502;
# - a slowloris of 2,000 connections that each hold a partial header leaves /healthz answering
#   within 1 s, and nginx closes those connections after client_header_timeout;
# - kill -9 of the nginx master: deploy/up ends the orphaned workers of its own prefix (not
#   another nginx on the machine), restarts nginx, and /healthz answers from the new master.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

EDGE_PY=$REPO/tests/integration/edge/edge.py

# --- agentd-api config --render-nginx into a fresh runtime dir (point 8) --------------------------------------
# render RUNTIME_DIR PREFIX: sets RENDER_RC and RENDER_ERR.
render() {
	(AGENTD_CONFIG=$T/agentd.conf AGENTD_RUNTIME_DIR=$1 && export AGENTD_CONFIG AGENTD_RUNTIME_DIR &&
		render_nginx "$2" >/dev/null 2>"$T/render.err")
	RENDER_RC=$?
	RENDER_ERR=$(cat "$T/render.err")
}
if [ "$(id -u)" -eq 0 ] && id -u www-data >/dev/null 2>&1; then
	render "$T/fresh/run" "$T/fresh/prefix"
	assert_eq "render into a runtime dir that does not exist yet succeeds" 0 "$RENDER_RC"
	assert_eq "render into a runtime dir that does not exist yet warns about nothing" "" \
		"$(grep -i warning <<<"$RENDER_ERR")"
	assert_match "its workers run as www-data" '^user www-data ' \
		"$(grep '^user ' "$T/fresh/prefix/conf/nginx.conf" 2>/dev/null)"
	check_not "render did not create the runtime dir" test -e "$T/fresh/run"
	mkdir -m 0700 "$T/closed"
	render "$T/closed/run" "$T/closed-prefix"
	assert_match "a runtime dir under a parent www-data cannot search still warns" \
		'warning: nginx workers run as root: www-data cannot reach' "$RENDER_ERR"
else
	log "not root or no www-data user: the render warning checks are skipped"
fi

start_stack || exit 1

# --- every nginx-made error is JSON -------------------------------------------------------------
# json_error DESC STATUS CODE: the last answer ($STATUS, $BODY, $HEADERS) is STATUS with a JSON
# error body whose code is CODE.
json_error() {
	assert_status "$1: $2" "$2"
	assert_match "$1: Content-Type application/json" '^application/json' "$(header Content-Type)"
	assert_jq "$1: {error, code: $3}" "(.error | type == \"string\" and length > 0) and .code == \"$3\""
}

# raw_error DESC DATA STATUS CODE: the same for DATA sent as is on a new connection.
raw_error() {
	local out
	out=$(python3 "$EDGE_PY" raw "$PORT" "$2")
	STATUS=$(printf '%s' "$out" | head -n 1 | cut -d ' ' -f 2)
	HEADERS=$(printf '%s' "${out%%$'\r\n\r\n'*}" | tr -d '\r')
	BODY=${out#*$'\r\n\r\n'}
	json_error "$1" "$3" "$4"
}

H="Host: 127.0.0.1:$PORT"
api TRACE /
json_error "TRACE /" 405 method_not_allowed
api TRACE /sessions
json_error "TRACE /sessions" 405 method_not_allowed
api GET /healthz -H "X-Big: $(head -c 10000 /dev/zero | tr '\0' a)"
json_error "a 10 kB header" 431 header_too_large
api GET /sessions -H "Cookie: $(head -c 9000 /dev/zero | tr '\0' c)"
json_error "a 9 kB cookie on the static list" 431 header_too_large
raw_error "Content-Length with Transfer-Encoding" \
	"POST /sessions HTTP/1.1\r\n$H\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" \
	400 bad_request
raw_error "a garbage request line" 'GARBAGE\r\n\r\n' 400 bad_request
raw_error "an HTTP/1.1 request without Host" 'GET /healthz HTTP/1.1\r\n\r\n' 400 bad_request
raw_error "two Host headers" "GET /healthz HTTP/1.1\r\n$H\r\n$H\r\n\r\n" 400 bad_request
raw_error "a header name with a NUL" "GET /healthz HTTP/1.1\r\n$H\r\nX-a\x00b: 1\r\n\r\n" 400 bad_request
raw_error "a path above the root" "GET /../etc/passwd HTTP/1.1\r\n$H\r\n\r\n" 400 bad_request
raw_error "a path with a bad escape" "GET /sessions/%zz HTTP/1.1\r\n$H\r\n\r\n" 400 bad_request
raw_error "a path with an encoded NUL" "GET /sessions/a%00b HTTP/1.1\r\n$H\r\n\r\n" 400 bad_request
raw_error "an unknown Transfer-Encoding" \
	"POST /sessions HTTP/1.1\r\n$H\r\nTransfer-Encoding: gzip\r\n\r\n" 501 not_implemented
raw_error "HTTP/3.0 on this port" "GET /healthz HTTP/3.0\r\n$H\r\n\r\n" 505 http_version_not_supported
raw_error "a 9 kB request line" \
	"GET /$(head -c 9000 /dev/zero | tr '\0' a) HTTP/1.1\r\n$H\r\n\r\n" 414 uri_too_long
api GET /assets/nope.js
json_error "a missing asset" 404 not_found
api POST / ''
json_error "POST to the web UI" 405 method_not_allowed
api GET /index.html -H 'Range: bytes=99999999-'
json_error "an unsatisfiable Range" 416 range_not_satisfiable
head -c 70000 /dev/zero | tr '\0' ' ' >"$T/big.json"
api POST /sessions "@$T/big.json"
json_error "a 70 kB body to agentd-api" 413 body_too_large
api POST /sessions/widgets-1/prompt "@$T/big.json"
json_error "a 70 kB body to agentd-bridge" 413 body_too_large
# The daemons are "down" while their socket is renamed (they keep listening on it). nginx keeps
# connections to agentd-api open (upstream keepalive), and a kept one would still reach it: a
# reload first, so that only workers that hold no connection answer.
mv "$T/run/api.sock" "$T/run/api.sock.away"
NGINX_MASTER=$(cat "$T/run/nginx/run/nginx.pid")
OLD_WORKERS=$(pgrep -P "$NGINX_MASTER" | tr '\n' ' ')
kill -HUP "$NGINX_MASTER"
deadline=$((SECONDS + 10))
for w in $OLD_WORKERS; do
	while alive "$w" && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
done
api GET /healthz
json_error "agentd-api unreachable" 502 upstream_unavailable
assert_jq "the 502 names agentd-api" '.error | test("agentd-api")'
mv "$T/run/api.sock.away" "$T/run/api.sock"
mv "$T/run/bridge.sock" "$T/run/bridge.sock.away"
api GET /sessions/widgets-1/events
json_error "agentd-bridge unreachable" 502 upstream_unavailable
assert_jq "the 502 names agentd-bridge" '.error | test("agentd-bridge")'
mv "$T/run/bridge.sock.away" "$T/run/bridge.sock"
api GET /healthz
assert_status "with the sockets back, /healthz is 200" 200

# --- slowloris ----------------------------------------------------------------------------------
# 2,000 connections each holding a partial header; client_header_timeout is 10 s.
out=$(python3 "$EDGE_PY" slowloris "$PORT" 2000 --hold 20)
log "slowloris: $out"
assert_jq "slowloris: all 2000 connections opened" '.opened == 2000' "$out"
assert_jq "slowloris: all 2000 still held when /healthz is asked" '.still_open == 2000' "$out"
assert_jq "slowloris: /healthz answers 200 meanwhile" '.healthz_status == 200' "$out"
assert_jq "slowloris: /healthz answers within 1 s" '.healthz_ms < 1000' "$out"
assert_jq "slowloris: nginx closes the held connections within 20 s" '.closed_after_hold == 2000' "$out"
api GET /healthz
assert_status "after the slowloris, /healthz is 200" 200

# --- kill -9 of the nginx master ----------------------------------------------------------------
# A second nginx of its own (another prefix and port) stands for "another nginx on the machine".
DECOY=$T/decoy
DPORT=$(free_port)
mkdir -p "$DECOY/conf" "$DECOY/logs" "$DECOY/tmp"
cat >"$DECOY/conf/nginx.conf" <<EOF
worker_processes 2;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path tmp/body; proxy_temp_path tmp/proxy; fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;
    server { listen 127.0.0.1:$DPORT; return 200 "decoy\n"; }
}
EOF
setpriv --pdeathsig TERM -- nginx -p "$DECOY/" -c conf/nginx.conf -e "$DECOY/logs/stderr.log" &
DECOY_PID=$!

# running PID: the process exists and is not a zombie.
running() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}
children() { ps -o pid= --ppid "$1" | tr -d ' '; }

PIDFILE=$T/run/nginx/run/nginx.pid
MASTER=$(cat "$PIDFILE")
WORKERS=$(children "$MASTER")
for _ in $(seq 50); do
	DECOY_WORKERS=$(children "$DECOY_PID")
	[ -n "$DECOY_WORKERS" ] && curl -s -m 2 "http://127.0.0.1:$DPORT/" | grep -q decoy && break
	sleep 0.1
done
if [ -n "$MASTER" ] && running "$MASTER" && [ -n "$WORKERS" ] && [ -n "$DECOY_WORKERS" ]; then
	pass "nginx master $MASTER with workers ${WORKERS//$'\n'/ }, decoy $DECOY_PID with ${DECOY_WORKERS//$'\n'/ }"
else
	fail "nginx master and workers found" "master '$MASTER', workers '$WORKERS', decoy workers '$DECOY_WORKERS'"
fi
echo "=== kill -KILL nginx master $MASTER $(date +%T)" >>"$T/logs/up.log"
kill -KILL "$MASTER"
deadline=$((SECONDS + 20))
recovered=0
while [ $SECONDS -lt $deadline ]; do
	left=0
	for w in $WORKERS; do running "$w" && left=1; done
	NEW=$(cat "$PIDFILE" 2>/dev/null)
	if [ "$left" == 0 ] && [ -n "$NEW" ] && [ "$NEW" != "$MASTER" ] && running "$NEW" &&
		[ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$BASE_URL/healthz")" == 200 ]; then
		recovered=1
		break
	fi
	sleep 0.2
done
if [ "$recovered" == 1 ]; then
	pass "after kill -9 of the master: old workers gone, new master $NEW, /healthz 200 within 20 s"
else
	still=()
	for w in $WORKERS; do running "$w" && still+=("$w"); done
	fail "after kill -9 of the master, deploy/up recovers within 20 s" \
		"old workers still running: ${still[*]:-none}; pid file: $(cat "$PIDFILE" 2>/dev/null)" \
		"$(grep -c 'Address already in use' "$T/logs/up.log") bind failures; $(tail -n 8 "$T/logs/up.log")"
fi
NEW_WORKERS=$(children "${NEW:-0}")
assert_ne "the new master has workers" "" "$NEW_WORKERS"
check "the decoy nginx master is untouched" running "$DECOY_PID"
for w in $DECOY_WORKERS; do check "the decoy nginx worker $w is untouched" running "$w"; done
assert_eq "the decoy nginx still answers" decoy "$(curl -s -m 2 "http://127.0.0.1:$DPORT/")"
assert_match "deploy/up says what it ended" 'ending [0-9]+ nginx process' "$(cat "$T/logs/up.log")"
api GET /sessions
assert_status "GET /sessions through the new nginx" 200

kill -TERM "$DECOY_PID"
wait "$DECOY_PID" 2>/dev/null

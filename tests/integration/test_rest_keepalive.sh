#!/usr/bin/env bash
# nginx keeps its connections to agentd-api open between requests (upstream keepalive +
# fastcgi_keep_conn), and no number of them starves the API: an idle kept connection holds none
# of agentd-api's request threads (APP_WORKER_THREADS, 4). With twice as many kept connections as
# threads held idle (fcgi_hold.py, a FastCGI client that does what nginx does), many more
# concurrent clients than threads are all served through nginx, and the held connections still
# answer afterwards;
# request bodies of every size keep the connection usable; requests that come one after another
# reuse connections instead of opening one each.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

THREADS=4   # APP_WORKER_THREADS (fcgi-app/app.h)
CLIENTS=32  # concurrent clients, 8 per thread
PER_CLIENT=6

make_remote acme widgets || exit 1
start_stack || exit 1
create acme widgets 1
assert_state "session widgets-1 runs" widgets-1 running 30
API=$(api_pid)

# The server ends of the connections to api.sock agentd-api holds open.
api_conns() { ss -xpn state established 2>/dev/null | grep -F "$T/run/api.sock" | grep -c "pid=$API,"; }
# (with a state filter ss prints no State column: $5 is the local inode)
accepted() { # connections agentd-api accepted so far: the inode numbers it has held, counted once
	ss -xpn state established 2>/dev/null | grep -F "$T/run/api.sock" | grep "pid=$API," |
		awk '{print $5}' >>"$T/inodes"
	sort -u "$T/inodes" | grep -c .
}
: >"$T/inodes"

# --- one client, requests one after another, reuse a kept connection -----------------------------
for i in $(seq 1 20); do
	api GET /sessions/widgets-1
	[ "$STATUS" == 200 ] || break
	accepted >/dev/null
done
assert_status "20 sequential GET /sessions/widgets-1 answer 200" 200
check "connections to agentd-api stay open after their request" test "$(api_conns)" -ge 1
N_CONNS=$(accepted)
check "20 sequential requests came on 1 to 9 kept connections ($N_CONNS)" \
	test "$N_CONNS" -ge 1 -a "$N_CONNS" -lt 10

# --- idle kept connections, twice as many as threads ----------------------------------------------
HOLD=$((2 * THREADS))
python3 "$(dirname "${BASH_SOURCE[0]}")/fcgi_hold.py" "$T/run/api.sock" $HOLD "$T/hold-go" \
	>"$T/hold.out" 2>&1 &
HOLD_PID=$!
for _ in $(seq 1 300); do
	grep -q . "$T/hold.out" && break
	sleep 0.1
done
assert_eq "$HOLD kept connections answered once and left idle" "idle $HOLD" "$(head -n 1 "$T/hold.out")"

# --- bursts of many more clients than threads ------------------------------------------------------
# burst N: CLIENTS clients at once, each PER_CLIENT requests (healthz, the session, 404s), every
# answer's status on its own line in $T/burst-N.
burst() {
	local out=$T/burst-$1 pids=()
	: >"$out"
	for c in $(seq 1 $CLIENTS); do
		(
			for r in $(seq 1 $PER_CLIENT); do
				case $((r % 3)) in
				0) p=/healthz ;;
				1) p=/sessions/widgets-1 ;;
				2) p=/sessions/nobody-$c ;;
				esac
				curl -s -o /dev/null -m 20 -w '%{http_code}\n' "$BASE_URL$p"
			done >"$out.$c"
		) &
		pids+=($!)
	done
	wait "${pids[@]}"
	cat "$out".* >"$out"
	rm -f "$out".*
}
expected() { # the statuses a burst must have, sorted
	for c in $(seq 1 $CLIENTS); do
		for r in $(seq 1 $PER_CLIENT); do
			[ $((r % 3)) == 2 ] && echo 404 || echo 200
		done
	done | sort | uniq -c
}
for b in 1 2 3; do
	t0=$SECONDS
	burst $b
	assert_eq "burst $b: all $((CLIENTS * PER_CLIENT)) requests of $CLIENTS concurrent clients answered ($((SECONDS - t0)) s)" \
		"$(expected)" "$(sort "$T/burst-$b" | uniq -c)"
	IDLE=$(api_conns)
	log "after burst $b: $IDLE connections to agentd-api kept open"
done
check "the bursts left idle kept connections behind ($IDLE besides the $HOLD held)" \
	test "$IDLE" -gt "$HOLD"

# With more idle kept connections than threads, a new client is still answered at once.
code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$BASE_URL/healthz")
assert_eq "a request after the bursts is answered within 5 s" 200 "$code"
touch "$T/hold-go"
wait "$HOLD_PID"
assert_eq "the $HOLD held connections answer their next request" "reused $HOLD" \
	"$(tail -n 1 "$T/hold.out")"

# --- a malformed FastCGI request ends only its own connection ------------------------------------
bad=$(python3 - "$T/run/api.sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(b"GET / HTTP/1.1\r\n\r\n" * 4)
try:
    print("closed" if s.recv(4096) == b"" else "answered")
except socket.timeout:
    print("left open")
PY
)
assert_eq "agentd-api closes a connection that does not speak FastCGI" closed "$bad"
code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$BASE_URL/healthz")
assert_eq "and still answers through nginx" 200 "$code"

# --- bodies on kept connections --------------------------------------------------------------------
# POSTs that agentd-api refuses before reading all of the body (bad JSON, too large for its
# schema) or after reading it: the next request on the same connections still works.
for size in 0 10 5000 60000; do
	body=$(head -c "$size" /dev/zero | tr '\0' 'x')
	api POST /sessions "$body"
	assert_status "POST /sessions with a $size-byte invalid body: 400" 400
	api GET /sessions/widgets-1
	assert_status "GET after a $size-byte body: 200" 200
done
api DELETE /sessions/nobody-9
assert_status "DELETE of an unknown session: 404" 404
api GET /healthz
assert_status "GET /healthz after the bodies: 200" 200

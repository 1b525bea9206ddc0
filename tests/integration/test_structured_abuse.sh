#!/usr/bin/env bash
# Structured mode against clients that break the rules, straight on the bridge's socket (nginx
# would refuse some of them first): oversized and chunked bodies, a body that never arrives,
# bytes after the body, a client that never reads a large replay (cut, without stopping anyone
# else), a WebSocket client that floods requests without reading. The bridge never crashes.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

RAW_PY=$REPO/tests/integration/structured/raw.py
make_remote acme widgets
start_stack AGENTD_BRIDGE_HANDSHAKE_TIMEOUT_MS=2000 AGENTD_BRIDGE_STALL_TIMEOUT_MS=3000 || exit 1
SID=$(structured_session acme widgets 1) || exit 1
SOCK=$T/run/bridge.sock
BRIDGE=$(bridge_pid)

# raw NAME DATA [raw.py options]: sets the file $T/NAME.raw
raw() {
	local name=$1 data=$2
	shift 2
	python3 "$RAW_PY" "$SOCK" "$data" "$@" >"$T/$name.raw" 2>&1
}
raw_first() { sed -n 's/^first //p' "$T/$1.raw"; }
raw_bytes() { sed -n 's/^bytes //p' "$T/$1.raw"; }
raw_end() { sed -n 's/^end //p' "$T/$1.raw"; }

H="Host: x\r\nContent-Type: application/json\r\n"
raw big "POST /sessions/$SID/prompt HTTP/1.1\r\n${H}Content-Length: 70000\r\n\r\n{\"prompt\":"
assert_match "a body over 64 KiB: 413 before it is read" '^HTTP/1.1 413 ' "$(raw_first big)"
raw chunked "POST /sessions/$SID/prompt HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n"
assert_match "a chunked body: 411" '^HTTP/1.1 411 ' "$(raw_first chunked)"
START=$SECONDS
raw slow "POST /sessions/$SID/prompt HTTP/1.1\r\n${H}Content-Length: 100\r\n\r\n{\"prompt\":"
assert_match "a body that never arrives: 408" '^HTTP/1.1 408 ' "$(raw_first slow)"
assert_match "a body that never arrives: answered after the handshake timeout (2 s)" '^[2-5]$' \
	"$((SECONDS - START))"
raw extra "POST /sessions/$SID/prompt HTTP/1.1\r\n${H}Content-Length: 2\r\n\r\n{}GET / HTTP/1.1\r\n\r\n"
assert_match "bytes after the body: 400" '^HTTP/1.1 400 ' "$(raw_first extra)"
raw nul "POST /sessions/$SID/prompt HTTP/1.1\r\n${H}Content-Length: 16\r\n\r\n{\"prompt\":\"\x00\"}  "
assert_match "a NUL inside the body: 400" '^HTTP/1.1 400 ' "$(raw_first nul)"
raw head "HEAD /sessions/$SID/events HTTP/1.1\r\nHost: x\r\n\r\n"
assert_match "HEAD: 405" '^HTTP/1.1 405 ' "$(raw_first head)"
raw nohost "POST /sessions/$SID/interrupt HTTP/1.1\r\n\r\n"
assert_match "no Host header: 400" '^HTTP/1.1 400 ' "$(raw_first nohost)"

# --- a prompt with U+0000 is refused wherever it enters, as POST /sessions refuses one -----------
api POST /sessions/$SID/prompt '{"prompt":"a\u0000b"}'
assert_status "a prompt with U+0000: 400" 400
assert_json "a prompt with U+0000: POST /sessions' error" '[.code, .error]' \
	'["invalid_request","prompt must be a string without NUL bytes"]'
HOST_SOCK=$T/run/agents/$SID/host.sock
OUT=$(python3 "$REPO/tests/integration/structured/hostsock.py" "$HOST_SOCK" \
	'{"type":"prompt","prompt":"a\u0000b"}')
assert_json "a prompt with U+0000 on the host's socket: refused" '[.type, .status, .error]' \
	'["error",400,"prompt must be a string without NUL bytes"]' "$OUT"

# --- an agent on the host's socket (the agent user's) cannot say who answered -----------------------
sse_start perm POST /sessions/$SID/prompt '{"prompt":"RUNBASH true"}'
if sse_wait_event perm '.event == "permission"' 20; then
	RID=$(sse_permission_ids perm | head -n 1)
	OUT=$(as_agent python3 - "$HOST_SOCK" "{\"type\":\"permission\",\"requestId\":\"$RID\",\"behavior\":\"allow\",\"by\":\"admin\"}" \
		<"$REPO/tests/integration/structured/hostsock.py")
	assert_json "an agent's permission answer on the host's socket: taken" .type '"ok"' "$OUT"
	assert_sse_event "an agent's answer is recorded as unvouched, not as the by it gave" perm \
		'.event == "permission_resolved" and (.data | fromjson | .by == "unvouched")' 20
	sse_wait_end perm 20
else
	fail "a RUNBASH prompt asks for a permission" "$(sse_names perm)"
fi

# --- a client that never reads a big replay is cut; the others are served meanwhile -------------
for i in 1 2 3; do sse_run b$i POST /sessions/$SID/prompt '{"prompt":"BIGLINE"}'; done
LOGSIZE=$(stat -c %s "$T/state/agents/$SID/events.log")
python3 "$RAW_PY" "$SOCK" "GET /sessions/$SID/events?after=0 HTTP/1.1\r\nHost: x\r\n\r\n" \
	--read-after 8 >"$T/stall.raw" 2>&1 &
STALL=$!
sleep 1
START=$SECONDS
sse_run ok1 POST /sessions/$SID/prompt '{"prompt":"meanwhile"}'
assert_eq "while one client stalls, another turn streams" "system user assistant result" "$(sse_names ok1)"
assert_match "... at once" '^[0-2]$' "$((SECONDS - START))"
wait "$STALL"
assert_eq "the stalled client's stream was cut (EOF)" eof "$(raw_end stall)"
if [ "$(raw_bytes stall)" -lt "$LOGSIZE" ]; then
	pass "the stalled client got less than the log ($(raw_bytes stall) < $LOGSIZE bytes)"
else
	fail "the stalled client got less than the log" "$(raw_bytes stall) >= $LOGSIZE"
fi
check "the bridge logged the cut" grep -q "has not read its output" "$T/logs/up.log"

# --- a WebSocket client that floods requests and never reads ---------------------------------------
ws_start fl /sessions/$SID/stream
ws_wait_line fl '^open$' 10
for i in $(seq 300); do printf 'send {"type":"interrupt"}\n'; done >"$T/flood.cmds"
cat "$T/flood.cmds" >&"${WS_FD[fl]}"
sse_run ok2 POST /sessions/$SID/prompt '{"prompt":"after the flood"}'
assert_eq "during a frame flood, another turn streams" "system user assistant result" "$(sse_names ok2)"
ws_stop fl

# --- frames no client may send on /stream, refused at once -------------------------------------------
CLIENT_JS=$REPO/tests/integration/terminal/client.js
WSREQ=$(printf 'GET /sessions/%s/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' "$SID" "$AGENTD_TEST_TOKEN" | od -v -An -tx1 | tr -d ' \n')
# ws_refusal FRAMEHEX: what the bridge sends within 3 s (the pings come far later).
ws_refusal() { node "$CLIENT_JS" raw "$WSREQ$1" --unix "$SOCK" --wait 3000; }
assert_match "/stream: a frame header announcing 2^63-1 bytes closes with 1009 at once" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x02\\x03\\xf1' "$(ws_refusal 81ff7fffffffffffffff00000000)"
assert_match "/stream: a ping of 126 bytes closes with 1002" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x02\\x03\\xea' "$(ws_refusal 89fe007e00000000)"
assert_match "/stream: a fragmented ping closes with 1002" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x02\\x03\\xea' "$(ws_refusal 09810000000061)"

# --- still the same bridge ---------------------------------------------------------------------------
assert_eq "the bridge never crashed" "$BRIDGE" "$(bridge_pid)"

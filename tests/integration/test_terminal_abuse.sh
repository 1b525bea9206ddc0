#!/usr/bin/env bash
# Nothing a terminal client sends can crash the bridge or stall other clients:
# oversize frames (close 1009), malformed resizes (\x01abc, \x010;0, \x0199999;99999), half-open
# upgrades (cut after the handshake timeout), garbage after the handshake (through nginx and
# straight on bridge.sock), a peer that never answers pings, a client killed mid-stream, and a
# client that never reads while the pane floods output: it is closed, the bridge's memory stays
# bounded, and the reading client gets everything up to the end marker; Ctrl-C stops an endless
# flood at once. An observer client types and gets its echo after every round, and the bridge
# process is the same one at the end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

start_stack AGENTD_BRIDGE_PING_INTERVAL_MS=4000 AGENTD_BRIDGE_STALL_TIMEOUT_MS=3000 \
	AGENTD_BRIDGE_HANDSHAKE_TIMEOUT_MS=2000 || exit 1
new_session acme widgets 1 || fail "session widgets-1 runs" "$BODY"
TP=/sessions/$SID/terminal
BRIDGE=$(wait_bridge 10) || fail "the bridge runs"
log "bridge pid $BRIDGE"

start_client obs "$TP"
wait_line obs '^open' 10 || fail "observer opens" "$(cat "$T/obs.log")"
N=0
# observer_works DESC: the observer types a fresh line and sees its echo.
observer_works() {
	N=$((N + 1))
	client_cmd obs "send \"observer line $N\\r\""
	if wait_output obs "fake claude got: observer line $N\$" 10; then
		pass "$1"
	else
		fail "$1" "$(plain_output obs | tail -n 5)"
	fi
}
observer_works "the observer types and sees its echo"

# --- oversize frames --------------------------------------------------------------------------
start_client big "$TP"
wait_line big '^open' 10
client_cmd big "big 70000"
if wait_line big '^closed' 10; then
	assert_eq "a 70000-byte frame closes that client with 1009" "closed 1009" \
		"$(client_line big '^closed' | cut -d' ' -f1-2)"
else
	fail "a 70000-byte frame closes that client" "$(cat "$T/big.log")"
fi
start_client huge "$TP"
wait_line huge '^open' 10
client_cmd huge "big 8000000"
wait_line huge '^closed' 10
# The bridge stops reading at the limit and closes; a peer still sending may see its close frame
# (1009) or only the connection ending (1006).
assert_match "an 8 MB frame closes that client too" '^closed 10(09|06)' "$(client_line huge '^closed')"
observer_works "the observer still works after oversize frames"

# --- malformed resizes ----------------------------------------------------------------------
start_client rs "$TP?cols=77&rows=22"
wait_line rs '^open' 10
wait_pane_size "$SID" 77x22 5
for hex in 01616263 01303b30 0139393939393b3939393939 01 01313b 013132333435363738393031323334353637383930313233343536373839303b31; do
	client_cmd rs "bytes $hex"
done
client_cmd rs 'send "\r"' # ends the line the keystroke-like ones typed
sleep 1
assert_eq "malformed or out-of-range resizes change nothing" 77x22 "$(pane_size "$SID")"
check "the client that sent them is still connected" client_alive rs
client_cmd rs "bytes 0139303b3230" # \x01 "90;20"
if wait_pane_size "$SID" 90x20 5; then
	pass "a valid resize afterwards still works"
else
	fail "a valid resize afterwards still works" "got $(pane_size "$SID")"
fi
stop_client rs
observer_works "the observer still works after malformed resizes"

# --- half-open upgrades -------------------------------------------------------------------------
PARTIAL=$(printf 'GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n' "$TP" | od -v -An -tx1 | tr -d ' \n')
node "$CLIENT_JS" halfopen "$T/run/bridge.sock" 20 "$PARTIAL" --wait 15000 >"$T/half.out" 2>&1 &
HALF=$!
sleep 0.5
observer_works "the observer works while 20 half-open requests hang"
wait "$HALF"
read -r _ closed total slowest <"$T/half.out"
if [ "$closed" == 20 ] && [ "$slowest" -lt 8000 ]; then
	pass "half-open requests are cut after the handshake timeout (20 of $total, slowest ${slowest} ms)"
else
	fail "half-open requests are cut after the handshake timeout" "$(cat "$T/half.out")"
fi
# A complete upgrade whose peer then vanishes without a close frame.
start_client ghost "$TP"
wait_line ghost '^open' 10
wait_tmux_clients "$SID" 2 5
kill -KILL "${CLIENT_PID[ghost]}"
if wait_tmux_clients "$SID" 1 10; then
	pass "a client killed mid-stream ends its tmux client"
else
	fail "a client killed mid-stream ends its tmux client" "$(tmx list-clients)"
fi

# --- garbage after the handshake ----------------------------------------------------------------
REQ=$(printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' "$TP" "$PORT" "$AGENTD_TEST_TOKEN" | od -v -An -tx1 | tr -d ' \n')
GARBAGE=ffffffffffffffff0001020304050607deadbeefdeadbeef
out=$(node "$CLIENT_JS" raw 127.0.0.1 "$PORT" "$REQ$GARBAGE" --wait 5000)
assert_match "garbage after the handshake (nginx): 101, then a close frame" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x00' "$out"
out=$(node "$CLIENT_JS" raw "$REQ$GARBAGE" --unix "$T/run/bridge.sock" --wait 5000)
assert_match "garbage in the same packet as the request (bridge.sock): 101, then a close frame" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x00' "$out"
# A header announcing 2^63 - 1 bytes, with none of them: refused at once (the pings come every
# 4 s here), not when the ping times out.
out=$(node "$CLIENT_JS" raw "${REQ}82ff7fffffffffffffff00000000" --unix "$T/run/bridge.sock" --wait 3000)
assert_match "a frame header announcing 2^63-1 bytes: close 1009 at once" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x02\\x03\\xf1' "$out"
# Control frames are never fragmented nor over 125 bytes (RFC 6455 §5.5): 1002.
out=$(node "$CLIENT_JS" raw "${REQ}89fe00c800000000" --unix "$T/run/bridge.sock" --wait 3000)
assert_match "a ping announcing 200 bytes: close 1002" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x02\\x03\\xea' "$out"
out=$(node "$CLIENT_JS" raw "${REQ}09810000000061" --unix "$T/run/bridge.sock" --wait 3000)
assert_match "a fragmented ping: close 1002" \
	'^HTTP/1.1 101 Switching Protocols.*\\x88\\x02\\x03\\xea' "$out"
out=$(node "$CLIENT_JS" raw "$(printf 'garbage\r\n\r\n' | od -v -An -tx1 | tr -d ' \n')" --unix "$T/run/bridge.sock" --wait 5000)
assert_match "garbage instead of a request is 400" '^HTTP/1.1 400 ' "$out"
out=$(node "$CLIENT_JS" raw "$({ printf 'GET /'; head -c 20000 /dev/zero | tr '\0' A; } | od -v -An -tx1 | tr -d ' \n')" --unix "$T/run/bridge.sock" --wait 5000)
assert_match "a 20 kB request line is refused (431)" '^HTTP/1.1 431 ' "$out"
if wait_tmux_clients "$SID" 1 10; then
	pass "no tmux client is left from the garbage connections"
else
	fail "no tmux client is left from the garbage connections" "$(tmx list-clients)"
fi
observer_works "the observer still works after garbage"

# --- a peer that does not answer pings ----------------------------------------------------------
start_client mute "$TP" --no-pong
wait_line mute '^open' 10
if wait_line mute '^closed' 15; then
	pass "a peer that does not answer pings is closed"
else
	fail "a peer that does not answer pings is closed" "$(cat "$T/mute.log")"
fi
check "the observer (which answers pings) is still connected" client_alive obs
observer_works "the observer still works after the ping round"

# --- a client that never reads, while the pane floods -------------------------------------------
make_remote acme flood
create acme flood 2
FID=$(printf '%s' "$BODY" | jq -r .id)
wait_state "$FID" running 30 || fail "session flood-2 runs" "$BODY"
# A shell instead of the fake agent, so the pane can produce output in bulk.
tmx respawn-pane -k -t "=$FID:" -- /bin/sh
start_client fast "/sessions/$FID/terminal"
start_client slow "/sessions/$FID/terminal" --no-read
# Straight on bridge.sock, a client that never reads fills the bridge's own queue quickly (through
# nginx and TCP, megabytes of buffers lie in between, and tmux throttles a blocked client itself).
start_client stuck "ws+unix://$T/run/bridge.sock:/sessions/$FID/terminal" --no-read
wait_line fast '^open' 10
wait_line slow '^open' 10
wait_line stuck '^open' 10
sleep 0.5
RSS0=$(awk '/^VmRSS/ {print $2}' "/proc/$BRIDGE/status")
client_cmd fast 'send "seq 1 1500000; printf '"'"'END%s\\n'"'"' MARK\r"'
if wait_output fast 'ENDMARK' 120; then
	pass "the reading client gets the end of a flood while another never reads"
else
	fail "the reading client gets the end of a flood while another never reads" "$(plain_output fast | tail -n 5)"
fi
if plain_output fast | tr -s '\n' | grep -aqx 1500000; then
	pass "... including the last line before the marker"
else
	fail "... including the last line before the marker" "$(plain_output fast | tail -n 5)"
fi
if wait_tmux_clients "$FID" 1 30; then
	pass "the clients that never read are closed (their tmux clients are gone)"
else
	fail "the clients that never read are closed (their tmux clients are gone)" "$(tmx list-clients)"
fi
HWM=$(awk '/^VmHWM/ {print $2}' "/proc/$BRIDGE/status")
log "bridge RSS before the flood ${RSS0} kB, peak ${HWM} kB"
if [ $((HWM - RSS0)) -lt 32768 ]; then
	pass "the bridge's memory stays bounded during the flood (peak +$((HWM - RSS0)) kB)"
else
	fail "the bridge's memory stays bounded during the flood" "peak grew by $((HWM - RSS0)) kB"
fi
if grep -q 'has not read its output' "$T/logs/up.log"; then
	pass "the bridge logged the stalled client"
else
	fail "the bridge logged the stalled client" "$(grep agentd-bridge "$T/logs/up.log" | tail -n 20)"
fi
assert_record "the flood session counts only the reading client" "$FID" .clients 1

# Ctrl-C during an endless flood acts at once: input never waits behind output.
client_cmd fast 'send "while :; do echo flooding flooding flooding; done\r"'
wait_output fast 'flooding flooding' 10
sleep 2
START_MS=$(date +%s%3N)
client_cmd fast 'bytes 03'
client_cmd fast 'send "echo STOPPED$((40+2))\r"'
if wait_output fast 'STOPPED42' 15; then
	pass "Ctrl-C stops an endless flood ($(($(date +%s%3N) - START_MS)) ms until the next command ran)"
else
	fail "Ctrl-C stops an endless flood" "$(plain_output fast | tail -n 5)"
fi
stop_client fast

# --- still the same bridge, still serving ----------------------------------------------------------
observer_works "the observer still works at the end"
start_client late "$TP"
if wait_line late '^open' 10 && wait_output late 'observer line' 10; then
	pass "a new client still connects and sees the screen"
else
	fail "a new client still connects and sees the screen" "$(cat "$T/late.log")"
fi
stop_client late
assert_eq "the bridge never restarted" "$BRIDGE" "$(bridge_pid)"
assert_record "the record counts exactly the observer" "$SID" '"\(.state) \(.clients)"' "attached 1"
stop_client obs
assert_record "and nothing once it left" "$SID" '"\(.state) \(.clients)"' "running 0"

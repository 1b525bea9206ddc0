#!/usr/bin/env bash
# The terminal WebSocket through nginx, real tmux, fake claude:
# - a browser that connects right after POST /sessions waits while `creating`, then sees the
#   agent's screen; typed input reaches the pane and pane output reaches the client;
# - ?cols=&rows= sets the first size and a resize frame changes #{pane_width}x#{pane_height};
# - two clients see the same output and both can type; the record's clients/state and tmux's own
#   client list follow attach and detach; closing a socket ends only that tmux client, claude
#   keeps running, and a reconnect shows the current screen;
# - refusals: 404 unknown session, 403 foreign Origin (same origin, listed origins and no Origin
#   pass), 400 not an upgrade / wrong version, 409 failed session;
# - a viewer (read-only token) never sizes the window, not even alone: only admins do.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

ALLOWED=https://dash.example.com
start_stack AGENTD_ALLOWED_ORIGINS="$ALLOWED" || exit 1
make_remote acme widgets

# --- attach while creating ------------------------------------------------------------------
create acme widgets 1
assert_status "POST /sessions answers 201" 201
SID=$(printf '%s' "$BODY" | jq -r .id)
TP=/sessions/$SID/terminal
start_client c1 "$TP?cols=100&rows=30"
if wait_line c1 '^(open|status|closed|error)' 40 && [ "$(head -n 1 "$T/c1.log")" == open ]; then
	pass "an upgrade sent while creating waits and opens"
else
	fail "an upgrade sent while creating waits and opens" "$(cat "$T/c1.log")"
fi
# The end of the fake's first line: printed in the 200-column pane before the client attached,
# tmux may reflow its start into the history when the window shrinks to the client's 100.
if wait_output c1 'gh issue view 1 -R acme/widgets' 10; then
	pass "the client sees the agent's screen at once"
else
	fail "the client sees the agent's screen at once" "$(plain_output c1 | tail -n 5)"
fi
assert_record "record: attached with one client" "$SID" '"\(.state) \(.clients)"' "attached 1"
get_session "$SID"
assert_json "GET /sessions/<id> shows attached and clients 1" '[.state, .clients]' '["attached",1]'
if wait_tmux_clients "$SID" 1 5; then pass "one tmux client"; else fail "one tmux client" "$(tmx list-clients)"; fi
CLAUDE=$(pane_pid "$SID")

# --- input, output, sizes ---------------------------------------------------------------------
if wait_pane_size "$SID" 100x30 5; then
	pass "?cols=100&rows=30 gives a 100x30 pane"
else
	fail "?cols=100&rows=30 gives a 100x30 pane" "got $(pane_size "$SID")"
fi
sleep 1.1 # lastActivity has a resolution of seconds: it must come from what follows
TYPED_AT=$(date +%s)
client_cmd c1 'send "typed by one\r"'
if pane_has "$SID" 'fake claude got: typed by one' 10; then
	pass "typed input reaches the pane (capture-pane)"
else
	fail "typed input reaches the pane (capture-pane)" "$(tmx capture-pane -p -t "=$SID:")"
fi
if wait_output c1 'fake claude got: typed by one' 10; then
	pass "pane output reaches the client"
else
	fail "pane output reaches the client" "$(plain_output c1 | tail -n 5)"
fi
if wait_record "$SID" "(.lastActivity | fromdateiso8601) >= $TYPED_AT" true 10; then
	pass "lastActivity follows terminal output"
else
	fail "lastActivity follows terminal output" "typed at $TYPED_AT; record: $(cat "$T/state/sessions/$SID.json")"
fi
client_cmd c1 'text "as text frame\r"'
if wait_output c1 'fake claude got: as text frame' 10; then
	pass "text frames are keystrokes too"
else
	fail "text frames are keystrokes too" "$(plain_output c1 | tail -n 5)"
fi
client_cmd c1 'bytes 013132303b3430' # \x01 "120;40"
if wait_pane_size "$SID" 120x40 5; then
	pass "a resize frame changes the pane to 120x40"
else
	fail "a resize frame changes the pane to 120x40" "got $(pane_size "$SID")"
fi

# --- a second device ----------------------------------------------------------------------------
start_client c2 "$TP" --origin "http://127.0.0.1:$PORT"
if wait_line c2 '^open' 10; then pass "a second client (same Origin) opens"; else fail "a second client (same Origin) opens" "$(cat "$T/c2.log")"; fi
wait_output c2 'fake claude' 10
assert_record "record: two clients" "$SID" '"\(.state) \(.clients)"' "attached 2"
if wait_tmux_clients "$SID" 2 5; then pass "two tmux clients"; else fail "two tmux clients" "$(tmx list-clients)"; fi
client_cmd c2 'send "from the second\r"'
if wait_output c1 'fake claude got: from the second' 10 && wait_output c2 'fake claude got: from the second' 10; then
	pass "both clients see what the second typed"
else
	fail "both clients see what the second typed" "c1: $(plain_output c1 | tail -n 3)" "c2: $(plain_output c2 | tail -n 3)"
fi
client_cmd c1 'send "from the first\r"'
if wait_output c2 'fake claude got: from the first' 10; then
	pass "the second client sees what the first typed"
else
	fail "the second client sees what the first typed" "$(plain_output c2 | tail -n 3)"
fi

# --- detach -------------------------------------------------------------------------------------
stop_client c1
assert_eq "the first client got a normal close" "closed 1000" "$(client_line c1 '^closed' | cut -d' ' -f1-2)"
assert_record "record: one client after the first closed" "$SID" '"\(.state) \(.clients)"' "attached 1"
if wait_tmux_clients "$SID" 1 5; then pass "closing a socket ends its tmux client"; else fail "closing a socket ends its tmux client" "$(tmx list-clients)"; fi
client_cmd c2 'send "still here\r"'
if wait_output c2 'fake claude got: still here' 10; then
	pass "the other client keeps working"
else
	fail "the other client keeps working" "$(plain_output c2 | tail -n 3)"
fi
stop_client c2
assert_record "record: running with no clients" "$SID" '"\(.state) \(.clients)"' "running 0"
get_session "$SID"
assert_json "GET /sessions/<id> shows running and clients 0" '[.state, .clients]' '["running",0]'
if wait_tmux_clients "$SID" 0 5; then pass "no tmux client lingers"; else fail "no tmux client lingers" "$(tmx list-clients)"; fi
assert_eq "claude keeps running (same pane process)" "$CLAUDE" "$(pane_pid "$SID")"
check "claude process alive" alive "$CLAUDE"

# --- reconnect ----------------------------------------------------------------------------------
start_client c3 "$TP"
if wait_output c3 'fake claude got: still here' 10; then
	pass "a reconnect shows the current screen"
else
	fail "a reconnect shows the current screen" "$(plain_output c3 | tail -n 5)"
fi
stop_client c3

# --- a viewer never sizes the window, even alone ---------------------------------------------------
# (tmux lets an ignore-size client size the window while it is the only one.)
VIEWER=$("$BUILD_DIR/fcgi-app/agentd-api" token add viewer --read-only)
SIZE0=$(pane_size "$SID")
start_client v1 "$TP?cols=1&rows=1" --header "Authorization: Bearer $VIEWER"
wait_line v1 '^open' 10 || fail "a viewer opens" "$(cat "$T/v1.log")"
wait_output v1 'fake claude' 10
client_cmd v1 'bytes 01323b32' # \x01 "2;2", dropped
sleep 1
assert_eq "a viewer alone with ?cols=1&rows=1 leaves the window's size ($SIZE0)" "$SIZE0" \
	"$(pane_size "$SID")"
start_client a1 "$TP?cols=90&rows=25"
if wait_pane_size "$SID" 90x25 5; then
	pass "an admin who joins the viewer sizes the window"
else
	fail "an admin who joins the viewer sizes the window" "got $(pane_size "$SID")"
fi
client_cmd a1 'bytes 0139353b3236' # \x01 "95;26"
if wait_pane_size "$SID" 95x26 5; then
	pass "... and resizes it"
else
	fail "... and resizes it" "got $(pane_size "$SID")"
fi
stop_client a1
wait_tmux_clients "$SID" 1 5
sleep 1
assert_eq "the admin gone, the viewer alone leaves the window as the admin left it" 95x26 \
	"$(pane_size "$SID")"
start_client v2 "$TP?cols=3&rows=3" --header "Authorization: Bearer $VIEWER"
wait_line v2 '^open' 10
sleep 1
assert_eq "... and so does a second viewer" 95x26 "$(pane_size "$SID")"
stop_client v2
stop_client v1
if wait_tmux_clients "$SID" 0 5; then pass "no tmux client after the viewers"; else fail "no tmux client after the viewers" "$(tmx list-clients)"; fi

# --- refusals -----------------------------------------------------------------------------------
start_client r404 /sessions/nosuch-7/terminal
wait_line r404 '^(status|open|error)' 10
assert_match "an unknown session is 404 with an error body" '^status 404 \{"error":"[^"]+","code":"not_found"\}' "$(head -n 1 "$T/r404.log")"
start_client r403 "$TP" --origin https://evil.example.net
wait_line r403 '^(status|open|error)' 10
assert_match "a foreign Origin is 403" '^status 403 .*"code":"forbidden_origin"' "$(head -n 1 "$T/r403.log")"
start_client r403b "$TP" --origin "http://127.0.0.1:$PORT.evil.example"
wait_line r403b '^(status|open|error)' 10
assert_match "a look-alike Origin is 403" '^status 403 ' "$(head -n 1 "$T/r403b.log")"
start_client rlisted "$TP" --origin "$ALLOWED"
wait_line rlisted '^(status|open|error)' 10
assert_eq "an Origin in AGENTD_ALLOWED_ORIGINS opens" open "$(head -n 1 "$T/rlisted.log")"
stop_client rlisted
# nginx sets X-Forwarded-Proto to its own scheme: a client cannot claim https.
start_client rhttps "$TP" --origin "https://127.0.0.1:$PORT" --header "X-Forwarded-Proto: https"
wait_line rhttps '^(status|open|error)' 10
assert_match "an https Origin with a client-sent X-Forwarded-Proto over http is 403" '^status 403 ' "$(head -n 1 "$T/rhttps.log")"
start_client rhttp "$TP" --origin "https://127.0.0.1:$PORT"
wait_line rhttp '^(status|open|error)' 10
assert_match "an https Origin on a plain http request is 403" '^status 403 ' "$(head -n 1 "$T/rhttp.log")"
start_client rbad "/sessions/bad..id/terminal"
wait_line rbad '^(status|open|error)' 10
assert_match "a malformed id is 400" '^status 400 ' "$(head -n 1 "$T/rbad.log")"

code=$(curl -s -o "$T/plain.body" -w '%{http_code}' -m 10 "$BASE_URL$TP")
assert_eq "a plain GET (no upgrade) is 400" 400 "$code"
assert_jq "... with an error body" '.code == "not_websocket"' "$(cat "$T/plain.body")"
code=$(upgrade_status "$TP" -H 'Sec-WebSocket-Version: 8')
assert_eq "an unsupported WebSocket version is 400" 400 "$code"
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -X POST "$BASE_URL$TP")
assert_eq "POST on the terminal is 405" 405 "$code"

# A session that fails while the upgrade waits: 409.
create acme nosuchrepo 2
FID=$(printf '%s' "$BODY" | jq -r .id)
start_client r409 "/sessions/$FID/terminal"
wait_line r409 '^(status|open|error)' 40
assert_match "a session that failed while the upgrade waited is 409" '^status 409 .*"code":"not_running"' "$(head -n 1 "$T/r409.log")"
start_client r409b "/sessions/$FID/terminal"
wait_line r409b '^(status|open|error)' 10
assert_match "a failed session is 409 at once" '^status 409 ' "$(head -n 1 "$T/r409b.log")"

assert_record "refused upgrades did not count as clients" "$SID" '"\(.state) \(.clients)"' "running 0"
if wait_tmux_clients "$SID" 0 5; then pass "no tmux client after the refusals"; else fail "no tmux client after the refusals" "$(tmx list-clients)"; fi

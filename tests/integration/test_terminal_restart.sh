#!/usr/bin/env bash
# Restarting the bridge closes its clients only: `kill -9` the bridge while two
# clients are attached -> the tmux session and claude are still alive, no tmux client of the dead
# bridge lingers, deploy/up starts a new bridge which resets the counts the dead one left
# (clients 0, attached -> running), and reattaching shows the current screen and types.
# SIGTERM closes every client with 1001 and the bridge exits by itself; tmux and claude stay.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

start_stack || exit 1
new_session acme widgets 1 || fail "session widgets-1 runs" "$BODY"
TP=/sessions/$SID/terminal
CLAUDE=$(pane_pid "$SID")
OLD=$(wait_bridge 10) || fail "a bridge runs"

start_client a "$TP"
start_client b "$TP"
wait_line a '^open' 10
wait_line b '^open' 10
client_cmd a 'send "before the crash\r"'
wait_output b 'fake claude got: before the crash' 10 || fail "b sees a's line" "$(plain_output b | tail -n 3)"
assert_record "two clients attached" "$SID" '"\(.state) \(.clients)"' "attached 2"
wait_tmux_clients "$SID" 2 5

# --- kill -9 --------------------------------------------------------------------------------------
echo "=== kill -9 agentd-bridge $OLD $(date +%T)" >>"$T/logs/up.log"
kill -KILL "$OLD"
if wait_line a '^closed' 10 && wait_line b '^closed' 10; then
	pass "both clients see their connection end"
else
	fail "both clients see their connection end" "a: $(cat "$T/a.log")" "b: $(cat "$T/b.log")"
fi
check "the tmux session is alive" tmux_has "$SID"
assert_eq "claude is the same process" "$CLAUDE" "$(pane_pid "$SID")"
check "claude is alive" alive "$CLAUDE"
if wait_tmux_clients "$SID" 0 10; then
	pass "the dead bridge's tmux clients are gone"
else
	fail "the dead bridge's tmux clients are gone" "$(tmx list-clients)"
fi
NEW=$(wait_bridge 30 "$OLD")
if [ -n "$NEW" ]; then
	pass "deploy/up starts a new bridge ($OLD -> $NEW)"
else
	fail "deploy/up starts a new bridge" "$(tail -n 20 "$T/logs/up.log")"
fi
assert_record "the new bridge resets the count the dead one left" "$SID" \
	'"\(.state) \(.clients)"' "running 0" 15
get_session "$SID"
assert_json "the API shows running with no clients" '[.state, .clients]' '["running",0]'

start_client c "$TP"
if wait_line c '^open' 15 && wait_output c 'fake claude got: before the crash' 10; then
	pass "reattaching shows the current screen"
else
	fail "reattaching shows the current screen" "$(cat "$T/c.log")" "$(plain_output c | tail -n 5)"
fi
client_cmd c 'send "after the restart\r"'
if pane_has "$SID" 'fake claude got: after the restart' 10 && wait_output c 'fake claude got: after the restart' 10; then
	pass "typing works after the restart"
else
	fail "typing works after the restart" "$(plain_output c | tail -n 5)"
fi
assert_record "one client again" "$SID" '"\(.state) \(.clients)"' "attached 1"

# --- SIGTERM --------------------------------------------------------------------------------------
echo "=== kill -TERM agentd-bridge $NEW $(date +%T)" >>"$T/logs/up.log"
kill -TERM "$NEW"
if wait_line c '^closed' 10; then
	assert_eq "SIGTERM closes the client with 1001" "closed 1001" "$(client_line c '^closed' | cut -d' ' -f1-2)"
else
	fail "SIGTERM closes the client" "$(cat "$T/c.log")"
fi
deadline=$((SECONDS + 10))
while alive "$NEW" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
check_not "the bridge exits after SIGTERM" alive "$NEW"
# deploy/up notices the exit on its next round (every 0.5 s) and logs the status.
deadline=$((SECONDS + 10))
until grep -q "agentd-bridge exited with status 0" "$T/logs/up.log" || [ $SECONDS -ge $deadline ]; do
	sleep 0.1
done
if grep -q "agentd-bridge exited with status 0" "$T/logs/up.log"; then
	pass "... with status 0"
else
	fail "... with status 0" "$(grep 'agentd-bridge' "$T/logs/up.log" | tail -n 5)"
fi
check "the tmux session is still alive" tmux_has "$SID"
check "claude is still alive" alive "$CLAUDE"
assert_record "the record shows no client" "$SID" '"\(.state) \(.clients)"' "running 0"
if wait_tmux_clients "$SID" 0 10; then pass "no tmux client lingers"; else fail "no tmux client lingers" "$(tmx list-clients)"; fi
NEW2=$(wait_bridge 30 "$NEW")
start_client d "$TP"
if wait_line d '^open' 15 && wait_output d 'fake claude got: after the restart' 10; then
	pass "the restarted bridge serves again"
else
	fail "the restarted bridge serves again" "$(cat "$T/d.log")"
fi
stop_client d
log "bridges: $OLD -> $NEW -> $NEW2"

#!/usr/bin/env bash
# Two sessions never share a tmux session, and no operation of one session acts
# on another session's tmux session.
# - acme/a.b#1 and acme/a_b#1 both run, each in its own tmux session ("a_b-1" and "a+b-1");
#   DELETE /sessions/a_b-1 leaves a.b-1 running with its claude alive;
# - a record made before the '+' separator whose tmuxName ("a_b-2") names another session's tmux
#   session (a.b-2's): POST /mode answers 409 tmux_session_mismatch and restarts nothing, a
#   terminal attach does not show the other session's screen, DELETE removes only the record.
# - a tmux session made before the '+' separator (name a_b-3 for id a_b-3) is recovered under that
#   name and deleted.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$REPO/tests/integration/terminal/lib_terminal.sh"

make_remote acme a.b
make_remote acme a_b
start_stack || exit 1

# --- the issue's reproduction -------------------------------------------------------------------
create acme a.b 1
assert_status "create acme/a.b#1: 201" 201
assert_json "a.b-1's tmuxName keeps tmux's rule for '.'" .tmuxName '"a_b-1"'
assert_state "a.b-1 is running" a.b-1 running 30
create acme a_b 1
assert_status "create acme/a_b#1: 201" 201
assert_json "a_b-1's tmuxName is another one" .tmuxName '"a+b-1"'
assert_state "a_b-1 is running too (no tmux name collision)" a_b-1 running 30

DOT_PID=$(pane_pid a_b-1)
US_PID=$(pane_pid a+b-1)
DOT_REC=$(claude_record a_b-1 10)
US_REC=$(claude_record a+b-1 10)
assert_json "a.b-1's claude runs in a.b's worktree" .cwd "\"$T/code/a.b-issue-1\"" "${DOT_REC:-null}"
assert_json "a_b-1's claude runs in a_b's worktree" .cwd "\"$T/code/a_b-issue-1\"" "${US_REC:-null}"
assert_eq "each tmux session carries its own @agentd_id" "a.b-1 a_b-1" \
	"$(tmx show-options -t =a_b-1: -qv @agentd_id) $(tmx show-options -t =a+b-1: -qv @agentd_id)"

api DELETE /sessions/a_b-1
assert_status "DELETE /sessions/a_b-1: 200" 200
check "a.b-1's claude is still alive" alive "${DOT_PID:-0}"
check "a.b-1's tmux session is still there" tmux_has a_b-1
check_not "a_b-1's tmux session is gone" tmux_has a+b-1
deadline=$((SECONDS + 10))
while alive "${US_PID:-0}" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
check_not "a_b-1's claude is gone" alive "${US_PID:-0}"
get_session a.b-1
assert_json "a.b-1 still says running" .state '"running"'
get_session a_b-1
assert_status "a_b-1 is gone: 404" 404

# --- a record from before the '+' separator naming another session's tmux session ---------------
create acme a.b 2
assert_status "create acme/a.b#2: 201" 201
assert_state "a.b-2 is running" a.b-2 running 30
OWNER_PID=$(pane_pid a_b-2)
check "a.b-2's claude runs" alive "${OWNER_PID:-0}"
# What an older agentd left when acme/a_b#2 collided: a record whose tmuxName is a.b-2's.
mkdir -p "$T/code/a_b-issue-2"
# (Written again before POST /mode: a reconciliation pass, every few seconds, rightly marks it
# lost, as its tmux session is another's.)
plant_old_record() {
	jq --arg wt "$T/code/a_b-issue-2" '.id = "a_b-2" | .repo.name = "a_b" | .worktree = $wt |
		.tmuxName = "a_b-2" | .state = "running" |
		.agentSessionId = "3f1c9a2e-5b7d-4e8f-9a1b-2c3d4e5f6a7b"' \
		"$T/state/sessions/a.b-2.json" >"$T/state/sessions/a_b-2.json.tmp" &&
		mv "$T/state/sessions/a_b-2.json.tmp" "$T/state/sessions/a_b-2.json"
}
plant_old_record
get_session a_b-2
assert_json "the old record reads (tmuxName a_b-2 is a_b-2's name before the '+' separator)" \
	'[.id, .tmuxName, .state]' '["a_b-2","a_b-2","running"]'

# The terminal: the bridge's tmux client checks @agentd_id before it attaches.
start_client t1 /sessions/a_b-2/terminal
wait_line t1 '^open' 10
sleep 1 # long enough for a tmux client to attach and draw the screen, had it attached
# In a subshell: the client may be gone already, and a write to its FIFO then raises SIGPIPE.
(client_cmd t1 'send "typed-into-the-wrong-session\r"')
if wait_line t1 '^closed' 10; then
	pass "the terminal of a_b-2 closes"
else
	fail "the terminal of a_b-2 closes" "$(tail -n 5 "$T/t1.log")"
fi
if plain_output t1 | grep -qE 'fake claude|a\.b#2'; then
	fail "a_b-2's terminal does not show a.b-2's screen" "$(plain_output t1 | head -n 20)"
else
	pass "a_b-2's terminal does not show a.b-2's screen"
fi
sleep 0.5
check_not "nothing typed reached a.b-2's claude" \
	grep -q typed-into-the-wrong-session <(tmx capture-pane -p -t =a_b-2:)

for _ in 1 2 3 4 5; do
	plant_old_record
	api POST /sessions/a_b-2/mode '{"mode":"structured"}'
	[ "$(jq -r .code <<<"$BODY" 2>/dev/null)" == not_running ] || break
done
assert_status "POST /mode through another session's tmux session: 409" 409
assert_json "code tmux_session_mismatch" .code '"tmux_session_mismatch"'
assert_error_body "the 409 is a JSON error"
assert_eq "a.b-2's pane process is the same" "${OWNER_PID:-none}" "$(pane_pid a_b-2)"
check "a.b-2's claude is still alive" alive "${OWNER_PID:-0}"
assert_eq "a.b-2's @agentd_mode is untouched" terminal "$(tmx show-options -t =a_b-2: -qv @agentd_mode)"

api DELETE /sessions/a_b-2
assert_status "DELETE /sessions/a_b-2: 200" 200
check "a.b-2's claude is still alive after the DELETE" alive "${OWNER_PID:-0}"
check "a.b-2's tmux session is still there" tmux_has a_b-2
get_session a_b-2
assert_status "the old record is gone: 404" 404
get_session a.b-2
assert_json "a.b-2 still says running" .state '"running"'

# --- a tmux session made before the '+' separator for acme/a_b#3, without its record ------------
mkdir -p "$T/code/a_b-issue-3"
tmx new-session -d -s a_b-3 -c "$T/code/a_b-issue-3" -- sleep 1000 3 \; \
	set-option -t =a_b-3: @agentd_id a_b-3 \; set-option -t =a_b-3: @agentd_owner acme \; \
	set-option -t =a_b-3: @agentd_repo a_b \; set-option -t =a_b-3: @agentd_issue 3 \; \
	set-option -t =a_b-3: @agentd_mode terminal
OLD_PID=$(pane_pid a_b-3)
kill_api || exit 1 # recovery runs when agentd-api starts
get_session a_b-3
assert_json "recovery adopts it under the name it has" '[.id, .tmuxName, .state]' \
	'["a_b-3","a_b-3","running"]'
api DELETE "/sessions/a_b-3?force=true"
assert_status "DELETE /sessions/a_b-3: 200" 200
check_not "its tmux session is gone" tmux_has a_b-3
deadline=$((SECONDS + 10))
while alive "${OLD_PID:-0}" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
check_not "its process is gone" alive "${OLD_PID:-0}"
check "a.b-1 still runs" alive "${DOT_PID:-0}"

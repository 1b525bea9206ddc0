#!/usr/bin/env bash
# A tmux server killed with SIGKILL under deploy/up is a small reboot: deploy/up starts another
# (agentd-api --init, as agentd-tmux.service does under systemd), /healthz answers 200 again, and
# the sessions that were running come back by themselves in the new server, claude started with
# --resume=<agentSessionId> of the same conversation, in terminal and in structured mode. A
# permission request pending in the dead server is withdrawn: an answer gets 409 and /events
# says withdrawn. A session that was not running (exited) stays as it was. agentd-api is not
# restarted for any of it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

readonly BACK_SECS=30 # a new server, --init and two resumed sessions, with ASan builds

make_remote acme widgets || exit 1
start_stack || exit 1

# is_fake_claude PID: PID runs the fake claude itself, not agentd-host (whose argv names it).
is_fake_claude() {
	tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | head -n 2 | grep -q 'tests/fakes/claude$'
}

# pane_claude TMUXNAME: the fake claude record of the claude at or below the pane's process
# (waits up to 10 s).
pane_claude() {
	local pid p deadline=$((SECONDS + 10))
	while [ $SECONDS -le $deadline ]; do
		pid=$(pane_pid "$1")
		for p in $pid $(descendants "${pid:-0}"); do
			if is_fake_claude "$p" && [ -f "$T/home/fake-claude/$p.json" ]; then
				cat "$T/home/fake-claude/$p.json"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

# transcript ID: gives session ID a claude transcript in the agent's HOME, as a real claude
# leaves one: a restart then resumes the conversation (--resume) instead of starting one.
transcript() {
	local wt uuid dir
	get_session "$1"
	wt=$(jq -r .worktree <<<"$BODY")
	uuid=$(jq -r .agentSessionId <<<"$BODY")
	dir=$T/home/.claude/projects/$(printf '%s' "$wt" | tr '/.' '--')
	mkdir -p "$dir" && echo '{}' >"$dir/$uuid.jsonl"
	echo "$uuid"
}

# events_has JQ: the /events follower got an event matching JQ (waits up to 10 s).
events_has_now() {
	jq -e -s "map(select(.event != null) | $1) | length > 0" "$T/ev.events" >/dev/null 2>&1
}
events_has() { wait_for 10 events_has_now "$1"; }

tmux_server_pid() { tmx display -p '#{pid}' 2>/dev/null; }
healthz_code() { curl -s -o /dev/null -m 2 -w '%{http_code}' "$BASE_URL/healthz" 2>/dev/null; }

sse_start ev GET /events

# --- before: a terminal session, a structured one waiting for an approval, an exited one --------
create acme widgets 1
assert_state "the terminal session runs" widgets-1 running 60
UUID1=$(transcript widgets-1)
PANE1=$(pane_pid widgets-1)
S=$(structured_session acme widgets 2) || exit 1
UUID2=$(transcript "$S")
sse_run boot POST "/sessions/$S/prompt" '{"prompt":"hi"}'
assert_eq "the structured session runs a turn" "system user assistant result" "$(sse_names boot)"
PANE2=$(pane_pid "$S")
sse_start turn POST "/sessions/$S/prompt" '{"prompt":"RUNBASH touch ran-after-tmux"}'
sse_wait_event turn '.event == "permission"' 20
RID=$(sse_permission_ids turn | head -n 1)
check "a permission request is pending" test -n "$RID"
check "... and /events announced it" events_has \
	"select(.event == \"permission\") | .data | fromjson | select(.requestId == \"$RID\")"
create acme widgets 3
assert_state "a third session runs" widgets-3 running 60
tmx send-keys -t '=widgets-3:' -l '/exit 3' && tmx send-keys -t '=widgets-3:' Enter
assert_state "... and its claude exits" widgets-3 exited 15
API=$(api_pid)
SERVER=$(tmux_server_pid)
check "the tmux server runs" test -n "$SERVER"

# --- kill -9 of the tmux server -------------------------------------------------------------------
echo "=== kill -9 the tmux server $SERVER $(date +%T.%N)" >>"$T/logs/up.log"
kill -KILL "$SERVER"
new_server() {
	local p
	p=$(tmux_server_pid) && [ -n "$p" ] && [ "$p" != "$SERVER" ]
}
check "deploy/up starts another tmux server" wait_for "$BACK_SECS" new_server
healthy() { [ "$(healthz_code)" == 200 ]; }
if wait_for "$BACK_SECS" healthy; then
	pass "GET /healthz answers 200 again"
else
	fail "GET /healthz answers 200 again" "$(curl -s -m 2 "$BASE_URL/healthz")" \
		"$(tail -n 20 "$T/logs/up.log")"
fi
assert_state "the terminal session runs again by itself" widgets-1 running "$BACK_SECS"
check "... in a new pane" bash -c "p=\$(tmux -S '$TMUX_SOCK' display -p -t '=widgets-1:' \
	'#{pane_pid}' 2>/dev/null); [ -n \"\$p\" ] && [ \"\$p\" != '$PANE1' ]"
REC=$(pane_claude widgets-1)
assert_json "terminal session: claude --resume=<agentSessionId> of the same conversation" '.argv' \
	"[\"--resume=$UUID1\",\"--settings=<settings>\"]" "${REC:-null}"
assert_eq "terminal session: its pane runs in the worktree" "$T/code/widgets-issue-1" \
	"$(tmx display -p -t '=widgets-1:' '#{pane_current_path}' 2>&1)"
assert_state "the structured session runs again by itself" "$S" running "$BACK_SECS"
assert_json "... still in structured mode" .mode '"structured"'
check "... in a new pane" bash -c "p=\$(tmux -S '$TMUX_SOCK' display -p -t '=$S:' \
	'#{pane_pid}' 2>/dev/null); [ -n \"\$p\" ] && [ \"\$p\" != '$PANE2' ]"
REC=$(pane_claude "$S")
assert_json "structured session: claude stream-json with --resume=<agentSessionId>" '.argv[9]' \
	"\"--resume=$UUID2\"" "${REC:-null}"
sse_run after POST "/sessions/$S/prompt" '{"prompt":"hello again"}'
assert_eq "structured session: the resumed claude runs a turn" "system user assistant result" \
	"$(sse_names after)"
get_session widgets-3
assert_json "the exited session is not started again: lost with its tmux session" \
	'[.state, (.error | test("killed outside agentd"))]' '["lost",true]'

# --- the request of the dead agent ------------------------------------------------------------------
api POST "/sessions/$S/permissions/$RID" '{"behavior":"allow"}'
assert_status "an answer to the dead agent's request: 409" 409
check "/events says the request was withdrawn" events_has \
	"select(.event == \"permission_resolved\") | .data | fromjson |
	 select(.requestId == \"$RID\" and .behavior == \"withdrawn\")"
check_not "the withdrawn tool never ran" test -e "$T/code/widgets-issue-2/ran-after-tmux"
check "the stream of the dead agent's turn ended" sse_wait_end turn 10
assert_eq "agentd-api was not restarted" "$API" "$(api_pid)"

# --- and once more: a second server's death is no different ----------------------------------------
SERVER=$(tmux_server_pid)
kill -KILL "$SERVER"
check "deploy/up starts a third tmux server" wait_for "$BACK_SECS" new_server
assert_state "the terminal session runs again after the second kill" widgets-1 running "$BACK_SECS"
assert_state "the structured session runs again after the second kill" "$S" running "$BACK_SECS"

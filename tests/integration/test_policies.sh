#!/usr/bin/env bash
# Policies that keep agents going (docs/API.md "Session", DESIGN "Policies"): the graceful stop
# (SIGINT to the agent, AGENTD_STOP_GRACE, then SIGKILL) of DELETE and the mode switch; the
# restart policy (an agent that crashes is resumed with --resume and counted, one that keeps
# crashing stops with restart_limit, "no" stays exited, the counter survives a restart of the
# daemons); the timeout; the setup command of a new worktree; in structured mode, claude gets the
# whole grace (agentd-host kills it no sooner), and one that took the SIGTERM and lingers ends at
# once. The fake claude crashes on command
# (/exit N, /signal N) and writes every SIGINT it gets to <pid>.signals beside its record.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GRACE=2

now_ms() { date +%s%3N; }

# signals_of PID: the SIGINT lines the fake claude PID wrote ("" when none).
signals_of() { cat "$T/home/fake-claude/$1.signals" 2>/dev/null; }

# transcript ID: gives claude a transcript of the session's conversation (as the real CLI would
# have written), so that a restart resumes it. Prints the agentSessionId.
transcript() {
	local wt asid dir
	api GET "/sessions/$1"
	wt=$(jq -r .worktree <<<"$BODY")
	asid=$(jq -r .agentSessionId <<<"$BODY")
	dir=$T/home/.claude/projects/$(printf '%s' "$wt" | tr '/.' '--')
	as_agent mkdir -p "$dir" && as_agent sh -c "echo '{}' >'$dir/$asid.jsonl'"
	echo "$asid"
}

# started_ms PID: when the fake claude PID started (unix ms), from its record.
started_ms() { jq -r '.started * 1000 | floor' "$T/home/fake-claude/$1.json"; }

# new_pane TMUXNAME OLDPID: waits until the pane runs a fake claude other than OLDPID; prints it.
new_pane() {
	local deadline=$((SECONDS + 15)) pid
	while [ $SECONDS -lt $deadline ]; do
		pid=$(pane_pid "$1")
		if [ -n "$pid" ] && [ "$pid" != "$2" ] && [ -f "$T/home/fake-claude/$pid.json" ]; then
			echo "$pid"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# create_with ISSUE JSON: POST /sessions for acme/widgets#ISSUE with the fields of JSON added.
create_with() {
	api POST /sessions "$(jq -cn --argjson i "$1" --argjson x "$2" \
		'{repo: {owner: "acme", name: "widgets"}, issue: $i} + $x')"
}

# type_in TMUXNAME TEXT: a line typed into the fake claude of the pane.
type_in() { tmx send-keys -t "=$1:" "$2" Enter; }

# structured_stop N PROMPT WHAT ARMED: widgets-N created in structured mode, its fake claude
# armed by PROMPT (WHAT: the check's name for the fake's answer, ARMED: what that answer holds),
# then DELETEd. Sets STOP_PID to its claude's pid and STOP_MS to how long the DELETE took.
structured_stop() {
	local t0
	create_with "$1" '{"mode":"structured"}'
	assert_status "create widgets-$1 in structured mode: 201" 201
	assert_state "widgets-$1 runs" "widgets-$1" running 30
	wait_activity "widgets-$1" '.activity == "idle"' 20
	api POST "/sessions/widgets-$1/prompt" "$(jq -cn --arg p "$2" '{prompt: $p}')"
	assert_match "$3" "$4" "$BODY"
	STOP_PID=$(for f in "$T"/home/fake-claude/*.json; do
		jq -r --arg c "$T/code/widgets-issue-$1" 'select(.mode == "structured" and .cwd == $c) | .pid' "$f"
	done | tail -n 1)
	t0=$(now_ms)
	api DELETE "/sessions/widgets-$1"
	STOP_MS=$(($(now_ms) - t0))
	assert_status "DELETE widgets-$1: 200" 200
}

# wait_ready TMUXNAME PID: the fake claude PID of the pane reads its input.
wait_ready() {
	wait_for 10 bash -c "tmux -S '$TMUX_SOCK' capture-pane -p -t '=$1:' | grep -q 'fake claude ready'"
}

make_remote acme widgets
BACKOFF=400
start_stack AGENTD_STOP_GRACE=$GRACE AGENTD_RESTART_POLICY=on-failure AGENTD_MAX_RESTARTS=2 \
	AGENTD_RESTART_BACKOFF_MS=$BACKOFF || exit 1

# --- DELETE interrupts the agent, which ends at once ---------------------------------------------
create acme widgets 1
assert_state "widgets-1 runs" widgets-1 running 30
claude_record widgets-1 10 >/dev/null || fail "the fake claude of widgets-1 started"
P1=$(pane_pid widgets-1)
wait_ready widgets-1
T0=$(now_ms)
api DELETE /sessions/widgets-1
T1=$(now_ms)
assert_status "DELETE widgets-1: 200" 200
assert_match "DELETE sent SIGINT to the agent first" '^SIGINT ' "$(signals_of "$P1")"
if [ $((T1 - T0)) -lt $((GRACE * 1000)) ]; then
	pass "an agent that ends on the interrupt is not waited for the grace ($((T1 - T0)) ms)"
else
	fail "an agent that ends on the interrupt is not waited for the grace" "took $((T1 - T0)) ms"
fi
if alive "$P1"; then fail "widgets-1's agent is gone (not even a zombie)" "pid $P1 lives"; else pass "widgets-1's agent is gone (not even a zombie)"; fi

# --- an agent that ignores the interrupt is killed after the grace -------------------------------
create acme widgets 2
assert_state "widgets-2 runs" widgets-2 running 30
claude_record widgets-2 10 >/dev/null || fail "the fake claude of widgets-2 started"
P2=$(pane_pid widgets-2)
wait_ready widgets-2
type_in widgets-2 /ignore-int
wait_for 5 bash -c "tmux -S '$TMUX_SOCK' capture-pane -p -t '=widgets-2:' | grep -q 'ignores SIGINT'"
T0=$(now_ms)
api DELETE /sessions/widgets-2
T1=$(now_ms)
assert_status "DELETE widgets-2: 200" 200
assert_match "DELETE sent SIGINT to the stubborn agent" '^SIGINT ' "$(signals_of "$P2")"
if [ $((T1 - T0)) -ge $((GRACE * 1000 - 100)) ]; then
	pass "the stubborn agent had the grace of $GRACE s ($((T1 - T0)) ms)"
else
	fail "the stubborn agent had the grace of $GRACE s" "DELETE took $((T1 - T0)) ms"
fi
if alive "$P2"; then fail "widgets-2's agent was killed" "pid $P2 lives"; else pass "widgets-2's agent was killed"; fi

# --- a mode switch interrupts the agent before it starts the other mode --------------------------
create acme widgets 3
assert_state "widgets-3 runs" widgets-3 running 30
claude_record widgets-3 10 >/dev/null || fail "the fake claude of widgets-3 started"
P3=$(pane_pid widgets-3)
wait_ready widgets-3
api POST /sessions/widgets-3/mode '{"mode":"structured"}'
assert_status "widgets-3 to structured: 200" 200
assert_match "the mode switch sent SIGINT to the terminal agent" '^SIGINT ' "$(signals_of "$P3")"
api DELETE /sessions/widgets-3
assert_status "DELETE widgets-3: 200" 200

# --- on-failure: a crash is resumed after the backoff, counted; restart_limit after maxRestarts ----
create acme widgets 4
assert_status "create widgets-4: 201" 201
assert_json "its policy is the configuration's" '[.restart, .maxRestarts, .restarts]' \
	'["on-failure",2,0]'
assert_state "widgets-4 runs" widgets-4 running 30
P=$(pane_pid widgets-4)
claude_record widgets-4 10 >/dev/null || fail "the fake claude of widgets-4 started"
wait_ready widgets-4
ASID=$(transcript widgets-4)
T0=$(now_ms)
type_in widgets-4 "/exit 3"
if NP=$(new_pane widgets-4 "$P"); then
	pass "an agent that exits 3 is started again in its tmux session"
	REC=$(cat "$T/home/fake-claude/$NP.json")
	assert_jq "... with --resume=<agentSessionId>" "any(.argv[]; . == \"--resume=$ASID\")" "$REC"
	assert_json "... in the same worktree" .cwd "\"$T/code/widgets-issue-4\"" "$REC"
	D=$(($(started_ms "$NP") - T0))
	if [ "$D" -ge "$BACKOFF" ]; then pass "... after the backoff ($D ms)"; else fail "... after the backoff" "after $D ms, backoff $BACKOFF"; fi
	wait_activity widgets-4 '.state == "running" and .restarts == 1' 10
	assert_json "running, restarts 1" '[.state, .restarts]' '["running",1]'
else
	fail "an agent that exits 3 is started again in its tmux session" "$(tmx capture-pane -p -t '=widgets-4:' | tail -5)"
fi
P=$(pane_pid widgets-4)
wait_ready widgets-4
T0=$(now_ms)
type_in widgets-4 "/signal 11"
if NP=$(new_pane widgets-4 "$P"); then
	pass "an agent killed by SIGSEGV is started again"
	D=$(($(started_ms "$NP") - T0))
	if [ "$D" -ge $((2 * BACKOFF)) ]; then pass "... after twice the backoff ($D ms)"; else fail "... after twice the backoff" "after $D ms"; fi
	wait_activity widgets-4 '.state == "running" and .restarts == 2' 10
	assert_json "running, restarts 2" '[.state, .restarts]' '["running",2]'
else
	fail "an agent killed by SIGSEGV is started again" "$(tmx capture-pane -p -t '=widgets-4:' | tail -5)"
fi
api GET /metrics
assert_match "agentd_session_restarts counts them" 'agentd_session_restarts\{session="widgets-4"\} 2' "$BODY"
OUT=$(AGENTD_URL=$BASE_URL AGENTD_TOKEN=$AGENTD_TEST_TOKEN HOME=$T/ctlhome "$BUILD_DIR/agentctl/agentctl" ls 2>&1)
assert_match "agentctl ls has a RESTARTS column" '^ID +STATE .* +RESTARTS$' "$(head -n 1 <<<"$OUT")"
assert_match "... showing widgets-4's 2" '^widgets-4 +running .* 2$' "$(grep '^widgets-4 ' <<<"$OUT")"
P=$(pane_pid widgets-4)
wait_ready widgets-4
type_in widgets-4 "/exit 4"
assert_state "a third crash: exited" widgets-4 exited 10
assert_json "... with exitReason restart_limit, its status kept" \
	'[.exitReason, .exitStatus, .restarts, has("restartAt")]' '["restart_limit",4,2,false]'
sleep $((BACKOFF * 4 / 1000 + 1))
get_session widgets-4
assert_json "... and it stays exited" '[.state, .restarts]' '["exited",2]'
assert_eq "... no new agent in its pane" "$P" "$(pane_pid widgets-4)"
# A person's restart starts the count over.
create acme widgets 4
assert_status "POST /sessions restarts it: 201" 201
assert_json "... running, restarts 0" '[.state, .restarts]' '["running",0]'

# --- "no" stays exited; "always" restarts after exit 0 -------------------------------------------
create_with 5 '{"restart":"no"}'
assert_status "create widgets-5 with restart no: 201" 201
assert_json "its policy" .restart '"no"'
assert_state "widgets-5 runs" widgets-5 running 30
P=$(pane_pid widgets-5)
wait_ready widgets-5
type_in widgets-5 "/exit 3"
assert_state "restart no: exited" widgets-5 exited 10
sleep $((BACKOFF * 2 / 1000 + 1))
get_session widgets-5
assert_json "... and stays so, exitReason exit" '[.state, .exitReason, .restarts]' '["exited","exit",0]'
assert_eq "... no new agent in its pane" "$P" "$(pane_pid widgets-5)"

create_with 6 '{"restart":"always","maxRestarts":1}'
assert_status "create widgets-6 with restart always: 201" 201
assert_state "widgets-6 runs" widgets-6 running 30
P=$(pane_pid widgets-6)
wait_ready widgets-6
type_in widgets-6 "/exit 0"
if NP=$(new_pane widgets-6 "$P"); then pass "always: an agent that exits 0 is started again"; else fail "always: an agent that exits 0 is started again"; fi
wait_activity widgets-6 '.restarts == 1' 10
assert_json "... counted" '[.state, .restarts]' '["running",1]'

# --- the counter and the next attempt's time survive a restart of the daemons --------------------
create_with 7 '{"maxRestarts":3}'
assert_state "widgets-7 runs" widgets-7 running 30
P=$(pane_pid widgets-7)
wait_ready widgets-7
stop_stack
type_in widgets-7 "/exit 5"
start_stack || exit 1
if NP=$(new_pane widgets-7 "$P"); then pass "a crash while agentd-api was down is restarted once it runs"; else fail "a crash while agentd-api was down is restarted once it runs"; fi
wait_activity widgets-7 '.restarts == 1' 10
assert_json "... counted" '[.state, .restarts]' '["running",1]'
P=$(pane_pid widgets-7)
wait_ready widgets-7
stop_stack
start_stack AGENTD_STOP_GRACE=$GRACE AGENTD_RESTART_POLICY=on-failure AGENTD_MAX_RESTARTS=2 \
	AGENTD_RESTART_BACKOFF_MS=60000 AGENTD_SESSION_TIMEOUT=1h || exit 1
create acme widgets 10
assert_json "AGENTD_SESSION_TIMEOUT is a new session's timeout" .timeout 3600
get_session widgets-7
assert_json "after a restart of the daemons: restarts 1 kept" .restarts 1
type_in widgets-7 "/exit 6"
wait_activity widgets-7 '.state == "exited" and has("restartAt")' 10
assert_json "a crash with a long backoff: exited, restartAt set" '[.state, .restarts]' '["exited",1]'
RA=$(jq -r .restartAt <<<"$BODY")
restart_stack || exit 1
get_session widgets-7
assert_json "after a restart of the daemons: the same restartAt" '[.state, .restartAt]' "[\"exited\",\"$RA\"]"
tmx kill-session -t '=widgets-7'
assert_state "its tmux session killed while it waits: lost" widgets-7 lost 10
assert_jq "... and no restart is due any more" 'has("restartAt") | not'

# --- timeout: stopped gracefully, exitReason timeout, never restarted ----------------------------
create_with 8 '{"timeout":"3s"}'
assert_status "create widgets-8 with timeout 3s: 201" 201
assert_json "its timeout in seconds, and when" '[.timeout, (.timeoutAt | test("^[0-9-]+T[0-9:]+Z$"))]' '[3,true]'
assert_state "widgets-8 runs" widgets-8 running 30
P=$(pane_pid widgets-8)
claude_record widgets-8 10 >/dev/null
wait_state widgets-8 exited 15
assert_json "past its timeout: exited, exitReason timeout" '[.state, .exitReason]' '["exited","timeout"]'
assert_match "... after an interrupt" '^SIGINT ' "$(signals_of "$P")"
sleep $((BACKOFF * 2 / 1000 + 1))
get_session widgets-8
assert_json "... and not restarted (on-failure)" '[.state, .restarts]' '["exited",0]'
assert_eq "... no new agent in its pane" "$P" "$(pane_pid widgets-8)"

create_with 9 '{"timeout":3}'
assert_status "create widgets-9 with timeout 3 (seconds): 201" 201
assert_state "widgets-9 runs" widgets-9 running 30
P=$(pane_pid widgets-9)
wait_ready widgets-9
type_in widgets-9 /ignore-int
wait_state widgets-9 exited 20
assert_json "a stubborn agent past its timeout: killed after the grace" \
	'[.state, .exitReason, .exitSignal]' '["exited","timeout","SIGKILL"]'
assert_match "... after an interrupt" '^SIGINT ' "$(signals_of "$P")"
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":1,"timeout":"2 h"}'
assert_status "a timeout that is no duration: 400" 400
assert_match "... naming the field" 'timeout' "$(jq -r .error <<<"$BODY")"

# --- setup command: once in a new worktree, as the agent, before claude; a failure fails --------
# AGENTD_SETUP_COMMAND for every repository, a program in AGENTD_SETUP_DIR/<owner>/<name> for one.
mkdir -p "$T/setup/acme"
cat >"$T/setup-all" <<'SH'
#!/bin/sh
echo "setup ran in $(pwd) as $(id -un) with [$1]"
echo ran >>.setup-count
SH
cat >"$T/setup/acme/gadgets" <<'SH'
#!/bin/sh
echo "step 1: copying .env"
echo "npm ERR! missing thing"
exit 3
SH
chmod 0755 "$T/setup-all" "$T/setup/acme/gadgets" "$T/setup" "$T/setup/acme"
make_remote acme gadgets
stop_stack
start_stack AGENTD_STOP_GRACE=$GRACE AGENTD_RESTART_POLICY=on-failure AGENTD_MAX_RESTARTS=2 \
	AGENTD_RESTART_BACKOFF_MS=$BACKOFF AGENTD_SETUP_DIR="$T/setup" \
	AGENTD_SETUP_COMMAND="[\"$T/setup-all\",\"one arg\"]" || exit 1

create acme widgets 11
assert_status "create widgets-11 (a setup command): 201" 201
assert_state "widgets-11 runs after its setup" widgets-11 running 60
assert_json "its setup: ok, exit status 0" '[.setup.status, .setup.exitStatus]' '["ok",0]'
assert_match "... with its output's last lines" "setup ran in $T/code/widgets-issue-11 as $AGENT_USER with \\[one arg\\]" \
	"$(jq -r .setup.output <<<"$BODY")"
assert_eq "it ran once, in the worktree" ran "$(cat "$T/code/widgets-issue-11/.setup-count" 2>&1)"
assert_eq "... as the agent" "$AGENT_USER" "$(stat -c %U "$T/code/widgets-issue-11/.setup-count" 2>&1)"
REC=$(claude_record widgets-11 10)
assert_json "claude started after it, in the same tmux session and worktree" .cwd \
	"\"$T/code/widgets-issue-11\"" "${REC:-null}"
if wait_for 10 grep -q 'setup ran in' "$T/state/events.log"; then
	pass "the setup's output is on /events (the session's setup object)"
else
	fail "the setup's output is on /events (the session's setup object)" "$(tail -c 600 "$T/state/events.log")"
fi
# It ran in the session's pane: `tmux attach` shows it above what claude draws.
PANE_TEXT=$(tmx capture-pane -p -J -S - -t "=widgets-11:" 2>&1)
assert_match "the setup's output is in the session's pane" \
	"setup ran in $T/code/widgets-issue-11 as $AGENT_USER" "$PANE_TEXT"
P=$(pane_pid widgets-11)
wait_ready widgets-11
type_in widgets-11 "/exit 3"
if new_pane widgets-11 "$P" >/dev/null; then pass "widgets-11 restarted by its policy"; else fail "widgets-11 restarted by its policy"; fi
assert_eq "... without running its setup again" ran "$(cat "$T/code/widgets-issue-11/.setup-count" 2>&1)"
api DELETE /sessions/widgets-11?force=true
assert_status "DELETE widgets-11: 200" 200

N0=$(ls "$T/home/fake-claude" | grep -c '\.json$')
api POST /sessions '{"repo":{"owner":"acme","name":"gadgets"},"issue":1}'
assert_status "create gadgets-1 (a setup that fails): 201" 201
assert_state "a failed setup fails the session" gadgets-1 failed 60
assert_match "... its error has the command's status and last lines" \
	'exit status 3.*step 1: copying .env.*npm ERR! missing thing' "$(jq -r .error <<<"$BODY" | tr '\n' ' ')"
assert_json "... and its setup says failed" '[.setup.status, .setup.exitStatus]' '["failed",3]'
if tmux_has gadgets-1; then fail "no tmux session is left of it" "gadgets-1 is there"; else pass "no tmux session is left of it"; fi
assert_eq "... and no claude started" "$N0" "$(ls "$T/home/fake-claude" | grep -c '\.json$')"

# --- structured mode: claude gets the whole grace too ------------------------------------------
# agentd-host passes the interrupt on to claude as SIGTERM; a claude that takes 4 s to write its
# transcript (the fake's TERMWAIT) must get them when AGENTD_STOP_GRACE is 8, not be SIGKILLed
# by the host before the grace the daemon waits.
GRACE=8
stop_stack
start_stack AGENTD_STOP_GRACE=$GRACE || exit 1
structured_stop 12 "TERMWAIT 4" "its claude takes 4 s to end from now on" 'Slow stop armed'
SP=$STOP_PID
assert_eq "claude (pid $SP) finished its transcript before it ended" done \
	"$(cat "$T/home/fake-claude/$SP.stopped" 2>&1)"
if [ "$STOP_MS" -ge 3900 ] && [ "$STOP_MS" -lt $((GRACE * 1000)) ]; then
	pass "DELETE waited for it, less than the grace ($STOP_MS ms)"
else
	fail "DELETE waited for it, less than the grace" "took $STOP_MS ms"
fi

# --- structured mode: an agent that took the stop ends with it --------------------------------
# opencode 1.18 handles the SIGTERM by setting it back to its default action, then its process
# lingers until its background dependency install ends (tens of seconds): the DELETE waited the
# whole grace and the client gave up. agentd-host sees the default action and sends SIGTERM
# again, which ends it. The fake's TERMLINGER lingers 60 s after the first SIGTERM.
structured_stop 13 "TERMLINGER 60" "its claude lingers after the first SIGTERM from now on" \
	'Lingering stop armed'
LP=$STOP_PID
assert_eq "claude (pid $LP) took the first SIGTERM" termed \
	"$(cat "$T/home/fake-claude/$LP.termed" 2>&1)"
if [ "$STOP_MS" -lt 3000 ]; then
	pass "DELETE did not wait the grace for it ($STOP_MS ms)"
else
	fail "DELETE did not wait the grace for it" "took $STOP_MS ms (grace $GRACE s)"
fi
if [ -n "$LP" ] && kill -0 "$LP" 2>/dev/null; then
	fail "claude (pid $LP) is gone" "$(ps -o pid,stat,args -p "$LP")"
else
	pass "claude (pid $LP) is gone"
fi

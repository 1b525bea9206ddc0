#!/usr/bin/env bash
# Policies that keep agents going (docs/API.md "Session", DESIGN "Policies"): the graceful stop
# (SIGINT to the agent, AGENTD_STOP_GRACE, then SIGKILL) of DELETE and the mode switch; the
# restart policy (an agent that crashes is resumed with --resume and counted, one that keeps
# crashing stops with restart_limit, "no" stays exited, the counter survives a restart of the
# daemons); the timeout; the setup command of a new worktree. The fake claude crashes on command
# (/exit N, /signal N) and writes every SIGINT it gets to <pid>.signals beside its record.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GRACE=2

now_ms() { date +%s%3N; }

# running PID: PID is a live process (a zombie tmux has not reaped yet has ended).
running() { [ -e "/proc/$1" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]; }

# signals_of PID: the SIGINT lines the fake claude PID wrote ("" when none).
signals_of() { cat "$T/home/fake-claude/$1.signals" 2>/dev/null; }

# type_in TMUXNAME TEXT: a line typed into the fake claude of the pane.
type_in() { tmx send-keys -t "=$1:" "$2" Enter; }

# wait_ready TMUXNAME PID: the fake claude PID of the pane reads its input.
wait_ready() {
	wait_for 10 bash -c "tmux -S '$TMUX_SOCK' capture-pane -p -t '=$1:' | grep -q 'fake claude ready'"
}

make_remote acme widgets
start_stack AGENTD_STOP_GRACE=$GRACE AGENTD_RESTART_POLICY=no || exit 1

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
if running "$P1"; then fail "widgets-1's agent is gone" "pid $P1 lives"; else pass "widgets-1's agent is gone"; fi

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
if running "$P2"; then fail "widgets-2's agent was killed" "pid $P2 lives"; else pass "widgets-2's agent was killed"; fi

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

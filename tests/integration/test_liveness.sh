#!/usr/bin/env bash
# Dead agents tell the truth: a pane whose claude (or agentd-host) ended makes
# its session `exited` with exitStatus within about a second (tmux hooks and pidfds, no polling),
# a vanished tmux server makes every session `lost` (while no new server runs: deploy/up's
# restart of it is held back here; those that were running say they come back with the next
# one, and do); terminal attaches to them answer 409 and an open one is closed with a reason; a
# prompt stream whose host died ends with an `error` event; POST /sessions restarts an exited
# session with --resume in the same tmux session, and a lost one in a new tmux session; the
# states survive an agentd-api restart. Latencies are printed as
# "# latency ..." lines (the checks only use generous deadlines).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/terminal/lib_terminal.sh"
source "$(dirname "${BASH_SOURCE[0]}")/structured/lib_structured.sh"

DEADLINE=5 # seconds; the design aims at well under 1 s

make_remote acme widgets || exit 1
# deploy/up starts a tmux server that died again with agentd-api --init: while $T/tmux-held
# exists, that --init fails (as a stopped agentd-tmux.service would), so a dead server stays
# dead for as long as the checks need it.
FAKE_BUILD=$T/build-tmux-held
mkdir -p "$FAKE_BUILD/fcgi-app" "$FAKE_BUILD/ptybridge"
printf '#!/bin/sh\n[ "$1" = --init ] && [ -e %s ] && exit 1\nexec %s "$@"\n' \
	"$T/tmux-held" "$BUILD_DIR/fcgi-app/agentd-api" >"$FAKE_BUILD/fcgi-app/agentd-api"
chmod +x "$FAKE_BUILD/fcgi-app/agentd-api"
ln -s "$BUILD_DIR/ptybridge/agentd-bridge" "$FAKE_BUILD/ptybridge/agentd-bridge"
start_stack AGENTD_BUILD_DIR="$FAKE_BUILD" || exit 1

now_ms() { date +%s%3N; }

# wait_exited ID SINCE_MS DESC: waits for state exited (reading the record itself, which is
# cheaper to poll than HTTP), prints the latency, then GETs the session into BODY.
wait_exited() {
	local deadline=$((SECONDS + DEADLINE)) st
	while :; do
		st=$(jq -r .state "$T/state/sessions/$1.json" 2>/dev/null)
		[ "$st" == exited ] && break
		[ $SECONDS -ge $deadline ] && break
		sleep 0.01
	done
	log "latency $3: $(($(now_ms) - $2)) ms until the record of $1 said $st"
	api GET "/sessions/$1"
	assert_json "$3: state exited within ${DEADLINE}s" .state '"exited"'
}

# note_state ID STATE FILE: in the background, writes the time (ms) at which the record of ID
# first says STATE into FILE (gives up after DEADLINE seconds).
note_state() {
	(
		local deadline=$((SECONDS + DEADLINE))
		until [ "$(jq -r .state "$T/state/sessions/$1.json" 2>/dev/null)" == "$2" ]; do
			[ $SECONDS -ge $deadline ] && exit 0
			sleep 0.01
		done
		now_ms >"$3"
	) &
	NOTE_PID=$!
}

# proc_args PID: the command line of PID, NUL bytes as spaces.
proc_args() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }

# transcript ID: gives claude a transcript of the session's conversation (as the real CLI would
# have written), so that a restart resumes it.
transcript() {
	local wt asid dir
	api GET "/sessions/$1"
	wt=$(jq -r .worktree <<<"$BODY")
	asid=$(jq -r .agentSessionId <<<"$BODY")
	dir=$T/home/.claude/projects/$(printf '%s' "$wt" | tr '/.' '--')
	mkdir -p "$dir" && echo '{}' >"$dir/$asid.jsonl"
	echo "$asid"
}

# --- terminal mode: claude exits by itself (/exit 3) -----------------------------------------------
create acme widgets 1
assert_state "widgets-1 runs" widgets-1 running 30
claude_record widgets-1 10 >/dev/null || fail "the fake claude of widgets-1 started"
start_client c1 /sessions/widgets-1/terminal
wait_line c1 '^open' 10 || fail "a terminal attaches to widgets-1" "$(cat "$T/c1.log")"
wait_output c1 'fake claude ready' 10 || true
T0=$(now_ms)
tmx send-keys -t '=widgets-1:' '/exit 3' Enter
wait_exited widgets-1 "$T0" "claude typed /exit 3"
assert_json "exitStatus is claude's exit code" .exitStatus 3
assert_jq "exitedAt is a time, no exitSignal, no error" \
	'(.exitedAt | test("^[0-9-]+T[0-9:]+Z$")) and (has("exitSignal") | not) and (has("error") | not)'
if wait_line c1 '^closed' "$DEADLINE"; then
	pass "the open terminal is closed when the agent exits"
	assert_match "... with a close frame that says why" '^closed 1000 agent_exited: status 3' \
		"$(client_line c1 '^closed')"
else
	fail "the open terminal is closed when the agent exits" "$(cat "$T/c1.log")"
fi
api GET /sessions
assert_json "GET /sessions (nginx's list file) shows it exited" \
	'[.[] | select(.id == "widgets-1") | [.state, .exitStatus]]' '[["exited",3]]'
start_client c2 /sessions/widgets-1/terminal
wait_line c2 '^(status|closed)' 10
assert_match "a terminal attach to an exited session answers 409 agent_exited" \
	'^status 409 .*"code":"agent_exited"' "$(client_line c2 '^(status|open)')"
api POST /sessions/widgets-1/mode '{"mode":"structured"}'
assert_status "a mode switch of an exited session is 409" 409

# --- POST /sessions restarts it with --resume in the same tmux session --------------------------
ASID=$(transcript widgets-1)
OLDPID=$(pane_pid widgets-1)
create acme widgets 1
assert_status "POST /sessions for the exited session: 201" 201
assert_json "... answered running" .state '"running"'
assert_jq "... without the exit fields" '(has("exitStatus") or has("exitedAt")) | not'
NEWPID=$(pane_pid widgets-1)
assert_ne "claude runs again in the same tmux session (a new pane process)" "$OLDPID" "$NEWPID"
REC=$(claude_record widgets-1 10)
assert_jq "claude runs again with --resume=<agentSessionId>" \
	"any(.argv[]; . == \"--resume=$ASID\")" "${REC:-null}"
assert_match "the process's own argv (/proc) has --resume" "--resume=$ASID" \
	"$(proc_args "$(jq -r .pid <<<"${REC:-null}")")"
assert_json "... in the same worktree" .cwd "\"$T/code/widgets-issue-1\"" "${REC:-null}"
get_session widgets-1
assert_json "GET says running again" .state '"running"'

# --- kill -9 of claude ------------------------------------------------------------------------------
PID=$(jq -r .pid <<<"${REC:-null}")
T0=$(now_ms)
kill -KILL "$PID"
wait_exited widgets-1 "$T0" "kill -9 of claude"
assert_json "exitStatus 137 and exitSignal SIGKILL" '[.exitStatus, .exitSignal]' '[137,"SIGKILL"]'

# --- structured mode: kill -9 of agentd-host mid-turn -----------------------------------------------
create acme widgets 2
assert_state "widgets-2 runs" widgets-2 running 30
api POST /sessions/widgets-2/mode '{"mode":"structured"}'
assert_status "widgets-2 switches to structured mode" 200
HOSTPID=$(pane_pid widgets-2)
sse_start p1 POST /sessions/widgets-2/prompt '{"prompt":"SLOW turn"}'
assert_sse_event "the SLOW turn streams" p1 '.event == "assistant" or .event == "system"' 20
note_state widgets-2 exited "$T/host-exited.ms"
T0=$(now_ms)
kill -KILL "$HOSTPID"
if sse_wait_end p1 "$DEADLINE"; then pass "the prompt stream ends when its host dies"; else
	fail "the prompt stream ends when its host dies" "$(cat "$T/p1.log")"
fi
assert_sse_event "... with an error event" p1 '.event == "error"' 1
assert_jq "... whose data is {error, code: host_exited}" \
	'.data | fromjson | (.code == "host_exited") and (.error | length > 0)' \
	"$(sse_events p1 | jq -c 'select(.event == "error")' | tail -n 1)"
assert_eq "... and no result" "" "$(sse_events p1 | jq -c 'select(.event == "result")')"
wait_exited widgets-2 "$T0" "kill -9 of agentd-host (with the stream checks)"
wait "$NOTE_PID"
if [ -s "$T/host-exited.ms" ]; then
	log "latency kill -9 of agentd-host: $(($(cat "$T/host-exited.ms") - T0)) ms until the" \
		"record of widgets-2 said exited"
else
	log "latency kill -9 of agentd-host: the record of widgets-2 never said exited"
fi
assert_json "exitStatus 137 and exitSignal SIGKILL (the host's)" '[.exitStatus, .exitSignal]' \
	'[137,"SIGKILL"]'
api POST /sessions/widgets-2/prompt '{"prompt":"hello"}'
assert_status "a prompt to the exited session: 409" 409
assert_json "... code agent_exited" .code '"agent_exited"'

# --- states survive an agentd-api restart; a pane that died meanwhile is found --------------------
create acme widgets 1 # running again
assert_status "widgets-1 restarted once more" 201
REC=$(claude_record widgets-1 10)
if stop_stack 20; then pass "deploy/up stops"; else fail "deploy/up stops"; fi
kill -KILL "$(jq -r .pid <<<"${REC:-null}")" # dies while no agentd-api runs
sleep 0.5
if start_stack; then
	get_session widgets-1
	assert_json "a pane that died while agentd-api was down: exited at start" \
		'[.state, .exitSignal]' '["exited","SIGKILL"]'
	get_session widgets-2
	assert_json "an exited session stays exited across a restart" '[.state, .exitStatus]' \
		'["exited",137]'
fi
if kill_api KILL; then
	get_session widgets-2
	assert_json "... and across kill -9 of agentd-api" .state '"exited"'
fi

# --- the tmux server is killed: every session is lost ----------------------------------------------
create acme widgets 1
create acme widgets 3
assert_state "widgets-3 runs" widgets-3 running 30
get_session widgets-1
assert_json "widgets-1 runs before the server is killed" .state '"running"'
start_client c3 /sessions/widgets-3/terminal
wait_line c3 '^open' 10 || fail "a terminal attaches to widgets-3" "$(cat "$T/c3.log")"
SERVER=$(tmx display-message -p '#{pid}')
touch "$T/tmux-held"
T0=$(now_ms)
kill -KILL "$SERVER"
deadline=$((SECONDS + DEADLINE))
while :; do
	LOST=$(jq -s -c '[.[].state] | unique' "$T"/state/sessions/*.json 2>/dev/null)
	[ "$LOST" == '["lost"]' ] && break
	[ $SECONDS -ge $deadline ] && break
	sleep 0.01
done
log "latency kill -9 of the tmux server: $(($(now_ms) - T0)) ms, then the states were $LOST"
assert_eq "every session is lost within ${DEADLINE}s" '["lost"]' "$LOST"
api GET /sessions
assert_json "GET /sessions (nginx's list file) shows them lost" '[.[].state] | unique' '["lost"]'
assert_jq "each lost session says why" 'all(.[]; .error | type == "string" and length > 0)'
assert_json "those that were running say they come back with the next server" \
	'[.[] | select(.error | test("starts again .* in the next server")) | .id] | sort' \
	'["widgets-1","widgets-3"]'
wait_line c3 '^closed' 10 || fail "the open terminal ends with the tmux server"
start_client c4 /sessions/widgets-3/terminal
wait_line c4 '^(status|closed)' 10
assert_match "a terminal attach to a lost session answers 409 session_lost" \
	'^status 409 .*"code":"session_lost"' "$(client_line c4 '^(status|open)')"
api GET /healthz
assert_status "/healthz is 503 without the tmux server" 503
api POST /sessions/widgets-2/prompt '{"prompt":"hello"}'
assert_json "a prompt to a lost session: 409 session_lost" '[.code]' '["session_lost"]'

# --- POST /sessions starts a lost session again (new tmux session, same worktree, --resume) -------
ASID=$(transcript widgets-3)
create acme widgets 3
assert_status "POST /sessions for the lost session: 201" 201
assert_state "it runs again" widgets-3 running 30
REC=$(claude_record widgets-3 10)
assert_jq "... with --resume=<agentSessionId>" "any(.argv[]; . == \"--resume=$ASID\")" \
	"${REC:-null}"
assert_json "... in the same worktree" .cwd "\"$T/code/widgets-issue-3\"" "${REC:-null}"
api GET /healthz
assert_status "/healthz is 200 again with a tmux server" 200
assert_state "the other session that was running comes back in the new server by itself" \
	widgets-1 running 30
get_session widgets-2
assert_json "the one that had exited stays lost" .state '"lost"'
rm -f "$T/tmux-held"

# --- without the pane-died hook (tmux 3.3a sometimes does not fire it) the pidfd still tells -----
# The watcher installs the hooks on the new server within WATCH_RETRY_MS; wait for that first, or
# it could put the hook back just after it is removed here.
deadline=$((SECONDS + DEADLINE))
until tmx show-hooks -g pane-died 2>/dev/null | grep -qF "wait-for -S agentd-liveness" ||
	[ $SECONDS -ge $deadline ]; do sleep 0.1; done
assert_match "the watcher installs the pane-died hook on a new tmux server" \
	'wait-for -S agentd-liveness' "$(tmx show-hooks -g pane-died 2>&1)"
tmx set-hook -gu pane-died
assert_eq "the pane-died hook is gone" "" "$(tmx show-hooks -g pane-died 2>&1 | grep -F wait-for)"
PID=$(jq -r .pid <<<"${REC:-null}")
T0=$(now_ms)
kill -KILL "$PID"
wait_exited widgets-3 "$T0" "kill -9 of claude without the pane-died hook"
assert_json "... with its signal" '[.exitStatus, .exitSignal]' '[137,"SIGKILL"]'

# --- an agentd-api that starts against a running server without the hooks installs them ---------
if kill_api KILL; then
	deadline=$((SECONDS + DEADLINE))
	until tmx show-hooks -g pane-died 2>/dev/null | grep -qF "wait-for -S agentd-liveness" ||
		[ $SECONDS -ge $deadline ]; do sleep 0.1; done
	assert_match "a restarted agentd-api installs the pane-died hook on the running server" \
		'wait-for -S agentd-liveness' "$(tmx show-hooks -g pane-died 2>&1)"
fi

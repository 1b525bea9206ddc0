#!/usr/bin/env bash
# The kill -9 matrix under a real systemd: the installed units (meson install)
# run in tests/integration/systemd/container, a systemd that is PID 1 of its own namespaces over a
# copy-on-write view of this machine (no need for the machine to boot with systemd, nothing
# reaches it), with Debian's nginx.service and our drop-in for it. With a terminal session and a
# structured one running (the fake claude):
# - systemctl restart, stop and start of agentd-api and agentd-bridge kill no agent;
# - agentd-api, agentd-bridge and nginx's master are killed with SIGKILL in turn, and systemd
#   brings each back (its unit's Restart=; NRestarts counts it); after each: the stack answers,
#   every record parses and they name the same ids as GET /sessions, every state is honest within
#   HONEST_SECS, the structured session's GET /sessions/<id>/events replays every event (ids 1..N,
#   no gap), a terminal client reattaches and sees the screen as it was, a turn runs, no agent
#   was killed; and at a moment each: agentd-api with a permission request pending (answered
#   once after: 200, then 409; the tool runs) and a creation worker running (it outlives the API:
#   KillMode=process, and finishes the session), agentd-bridge mid-turn (the turn goes on, an
#   interrupt ends it), nginx with a terminal client attached (its connection ends);
# - the tmux server (agentd-tmux's main process, from the pid file agentd-api --init writes) is
#   killed with a permission request pending: systemd starts another, and both sessions come
#   back in it by themselves (as under deploy/up: test_kill_matrix, test_tmux_revive); an answer
#   to the request gets 409 and its tool never runs, none of
#   their old processes is left; a terminal client attaches, a turn runs, and the structured
#   stream goes on where it was.
# At the end systemd stops every unit (poweroff), and nothing of it is left: no process of the
# namespace, no cgroup.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

source "$(dirname "$0")/systemd/lib_systemd.sh"

readonly HONEST_SECS=2     # the issue's bound for an honest state after a restart
readonly RESTART_SECS=30   # a unit's RestartSec= (2 s) plus an ASan start
trap 'rc=$?; kill_sse_clients; kill_clients; sysd_stop; sysctl_restore; (exit $rc); cleanup' EXIT

# --- the installation and the namespace ---------------------------------------------------------
sysd_stack_up

create acme widgets 1
assert_status "POST /sessions under systemd: 201" 201
TERM_ID=widgets-1
assert_state "a terminal session runs under the installed units" "$TERM_ID" running 60
S=$(structured_session acme widgets 2) || exit 1
pass "a structured session runs under the installed units"
IDS='["widgets-1","widgets-2"]'

# --- what must hold after every kill ---------------------------------------------------------------
SESS=$CR/var/lib/agentd/sessions # the units' records (AGENTD_STATE_DIR's default), seen from here

# ns_alive PID: a live process (not a zombie) of the namespace.
ns_alive() {
	local st
	st=$(sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' "$CR/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# dishonest: prints each session whose state is not what tmux and the processes say (pids are
# the namespace's).
dishonest() {
	local id tn st pid
	api GET /sessions
	[ "$STATUS" == 200 ] || {
		echo "GET /sessions: $STATUS"
		return
	}
	while IFS=$'\t' read -r id tn st; do
		pid=$(tmx display -p -t "=$tn:" '#{?pane_dead,dead,#{pane_pid}}' 2>/dev/null)
		case $st in
		running | attached)
			[ -n "$pid" ] && [ "$pid" != dead ] && ns_alive "$pid" ||
				echo "$id is $st but its pane process is ${pid:-gone}"
			;;
		exited | lost | failed)
			[ -n "$pid" ] && [ "$pid" != dead ] && ns_alive "$pid" &&
				echo "$id is $st but its pane process $pid lives"
			;;
		*) echo "$id is $st" ;;
		esac
	done < <(jq -r '.[] | [.id, .tmuxName, .state] | @tsv' <<<"$BODY")
}

# records_sound: every record file parses, and the files, GET /sessions and $IDS name the same ids.
records_sound() {
	local f files=() bad=
	for f in "$SESS"/*.json; do
		[ -f "$f" ] || continue
		jq -e '.id and .state' "$f" >/dev/null 2>&1 && files+=("$(jq -r .id "$f")") ||
			bad+=" $(basename "$f")"
	done
	api GET /sessions
	local listed files_ids
	listed=$(jq -c '[.[].id] | sort' <<<"$BODY" 2>/dev/null)
	files_ids=$(printf '%s\n' "${files[@]}" | jq -R . | jq -s -c 'map(select(. != "")) | sort')
	[ -z "$bad" ] && [ "$STATUS" == 200 ] && [ "$listed" == "$IDS" ] && [ "$files_ids" == "$IDS" ] &&
		return 0
	echo "corrupt:${bad:- none}; files $files_ids; GET /sessions $STATUS $listed; expected $IDS"
	return 1
}

# stream_replays NAME: GET /sessions/$S/events answers and replays every event so far, ids
# 1..N without gap (N, at least $EVENTS_MIN, goes to EVENTS_SEEN; what was wrong to WHY).
EVENTS_MIN=0
EVENTS_SEEN=0
WHY=
stream_replays() {
	local ids
	sse_start "$1" GET "/sessions/$S/events" - --timeout 4
	sse_wait_end "$1" 10
	ids=$(sse_events "$1" | jq -s -c 'map(select(.id != null) | .id)')
	EVENTS_SEEN=$(jq length <<<"$ids")
	[ "$(sse_status "$1")" == 200 ] && [ "$EVENTS_SEEN" -ge "$EVENTS_MIN" ] &&
		jq -e '. as $a | length > 0 and $a[0] == 1 and ([range(1; length) | $a[.] == $a[. - 1] + 1] | all)' \
			>/dev/null <<<"$ids" && return 0
	WHY="status $(sse_status "$1"), ids $ids (at least $EVENTS_MIN wanted)"
	return 1
}

# turn_runs NAME: a prompt's turn runs to its result.
turn_runs() {
	sse_run "$1" POST "/sessions/$S/prompt" "{\"prompt\":\"say $1\"}"
	sse_events "$1" | jq -s -e 'map(select(.event == "result")) | length == 1' >/dev/null
}

# term_reattaches NAME: a terminal client attaches, sees the screen as it was (the last mark) and
# types the next mark.
MARK=0
term_reattaches() {
	local ok=0
	start_client "$1" "/sessions/$TERM_ID/terminal"
	if [ "$MARK" -gt 0 ]; then
		wait_output "$1" "got: mark-$MARK" 15 || ok=1
	else
		wait_line "$1" '^open' 15 || ok=1
	fi
	MARK=$((MARK + 1))
	client_cmd "$1" "send \"mark-$MARK\r\""
	wait_output "$1" "got: mark-$MARK" 10 || ok=1
	stop_client "$1" 5
	return $ok
}

# after_kill WHAT [lost]: the checks after each kill ("lost": the structured session is, and its
# stream says so).
N=0
after_kill() {
	local d deadline=$((SECONDS + HONEST_SECS))
	N=$((N + 1))
	while d=$(dishonest) && [ -n "$d" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
	if [ -z "$d" ]; then pass "$1: every state honest within $HONEST_SECS s"; else
		fail "$1: every state honest within $HONEST_SECS s" "$d"
	fi
	if d=$(records_sound); then pass "$1: no record lost or corrupt"; else
		fail "$1: no record lost or corrupt" "$d"
	fi
	if [ "${2:-}" == lost ]; then
		sse_run "ev$N" GET "/sessions/$S/events" - --timeout 4
		assert_eq "$1: the lost session's stream says so (409 session_lost)" "409 session_lost" \
			"$(sse_status "ev$N") $(sse_body "ev$N" | jq -r .code 2>/dev/null)"
	elif stream_replays "ev$N"; then
		pass "$1: the structured stream answers ($EVENTS_SEEN events, no gap)"
		EVENTS_MIN=$EVENTS_SEEN
	else
		fail "$1: the structured stream answers, replaying every event" "$WHY"
	fi
}

check "before any kill: a terminal client attaches and types" term_reattaches tc0
check "before any kill: a structured turn runs" turn_runs t0
after_kill "before any kill"

pane_of() { tmx display -p -t "=$1:" '#{pane_pid}' 2>/dev/null; }
panes() { echo "$(pane_of "$TERM_ID") $(pane_of "$S")"; }
panes_alive() {
	local p
	for p in $PANES; do ns_alive "$p" || return 1; done
}
healthy() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$BASE_URL/healthz")" == 200 ]; }
PANES=$(panes)
SERVER=$(tmx display -p '#{pid}')

# --- restarting the daemons never kills an agent ----------------------------------------------------
check "systemctl restart agentd-api agentd-bridge" sctl restart agentd-api.service agentd-bridge.service
check "the stack answers after the restart" wait_for 30 healthy
assert_eq "the restart killed no agent: the same pane processes" "$PANES" "$(panes)"
check "... and they live" panes_alive
check "systemctl stop agentd-api agentd-bridge" sctl stop agentd-api.service agentd-bridge.service
check "stopping them killed no agent" panes_alive
check "systemctl start agentd-api agentd-bridge" sctl start agentd-api.service agentd-bridge.service
check "the stack answers after the start" wait_for 30 healthy
assert_eq "the tmux server is the one of before" "$SERVER" "$(tmx display -p '#{pid}')"
after_kill "systemctl restart and stop/start of agentd-api and agentd-bridge"

# --- kill -9 of each daemon's main process --------------------------------------------------------
# kill_main UNIT: SIGKILL to the unit's main process; systemd must start it again (NRestarts).
# (KM_OLD and KM_N0, when set, are the main pid and NRestarts read before: the kill comes sooner.)
KM_OLD=
KM_N0=
kill_main() {
	local old=${KM_OLD:-$(prop "$1" MainPID)} n0=${KM_N0:-$(prop "$1" NRestarts)}
	KM_OLD= KM_N0=
	# (check runs this in a subshell: what it saw goes to a file)
	[ -n "$WORKER" ] && { ns_alive "$WORKER" && echo lives || echo gone; } >"$T/worker.at-kill"
	cx kill -KILL "$old" || return 1
	# A creation worker must outlive the API (KillMode=process): looked at once systemd has seen
	# the main process die (it would have signalled the rest of the cgroup by then).
	if [ -n "$WORKER" ]; then
		wait_for 5 bash -c "[ \"\$(nsenter -t $P1 -m -p -- systemctl show -p MainPID --value \
			$1.service)\" != $old ]"
		{ ns_alive "$WORKER" && echo lives || echo gone; } >"$T/worker.after"
	fi
	wait_for "$RESTART_SECS" bash -c "[ \"\$(nsenter -t $P1 -m -p -- systemctl show -p NRestarts \
		--value $1.service)\" -gt $n0 ] && [ \"\$(nsenter -t $P1 -m -p -- systemctl show -p \
		ActiveState --value $1.service)\" == active ]"
}
# The moments (test_kill_matrix has them all under deploy/up): agentd-api is killed with a
# permission request pending and a creation worker running (KillMode=process must spare the
# worker), agentd-bridge mid-turn, nginx with a terminal client attached.
RID=
before_pending() {
	sse_start pend POST "/sessions/$S/prompt" "{\"prompt\":\"RUNBASH touch ran-$1\"}"
	sse_wait_event pend '.event == "permission"' 20 || fail "$1: a permission request is pending"
	RID=$(sse_permission_ids pend | head -n 1)
}
after_pending() {
	check "kill -9 $1: the request is still pending" wait_activity "$S" \
		".activity == \"waiting\" and [.pending[].requestId] == [\"$RID\"]" 10
	api POST "/sessions/$S/permissions/$RID" '{"behavior":"allow"}'
	assert_eq "kill -9 $1: answered once after the restart: 200" 200 "$STATUS"
	api POST "/sessions/$S/permissions/$RID" '{"behavior":"allow"}'
	assert_eq "kill -9 $1: a second answer: 409" 409 "$STATUS"
	check "kill -9 $1: the allowed tool ran" wait_for 20 test -e "$CR/code/widgets-issue-2/ran-$1"
	check "kill -9 $1: the turn ends: idle" wait_activity "$S" '.activity == "idle"' 20
	sse_wait_end pend 10
}
make_heavy_remote || fail "a big remote"
worker_pid() { cx pgrep -f -- '--create big-3' | head -n 1; }
WORKER=
before_create() {
	api POST /sessions "$(create_body acme big 3)"
	assert_eq "kill -9 $1 during a create: POST /sessions 201" 201 "$STATUS"
	local deadline=$((SECONDS + 20))
	until WORKER=$(worker_pid) && [ -n "$WORKER" ]; do
		[ $SECONDS -ge $deadline ] && break
		sleep 0.02
	done
}
not_creating() {
	api GET /sessions/big-3
	[ "$STATUS" == 200 ] && [ "$(jq -r .state <<<"$BODY")" != creating ]
}
after_create() {
	log "the creation worker ${WORKER:-(none found)} at the kill: $(cat "$T/worker.at-kill" 2>/dev/null)"
	assert_eq "kill -9 $1 during a create: the creation worker outlived it (KillMode=process)" \
		lives "$(cat "$T/worker.after" 2>/dev/null)"
	WORKER=
	wait_for 60 not_creating
	assert_eq "kill -9 $1 during a create: the worker finished it (running)" running \
		"$(jq -r .state <<<"$BODY")"
	api DELETE "/sessions/big-3?force=true"
	assert_eq "kill -9 $1 during a create: the session is deleted" 200 "$STATUS"
}
before_midturn() {
	sse_start turn POST "/sessions/$S/prompt" '{"prompt":"SLOW turn"}'
	sse_wait_event turn '.event == "system"' 20 || fail "$1: a turn runs"
}
after_midturn() {
	check "kill -9 $1 mid-turn: the turn still runs (working)" \
		wait_activity "$S" '.activity == "working"' 10
	api POST "/sessions/$S/interrupt"
	assert_eq "kill -9 $1 mid-turn: an interrupt after the restart: 200" 200 "$STATUS"
	check "kill -9 $1 mid-turn: the turn ends: idle" wait_activity "$S" '.activity == "idle"' 20
	sse_wait_end turn 10
}
before_attached() {
	start_client att "/sessions/$TERM_ID/terminal"
	wait_line att '^open' 15 || fail "$1: a terminal client is attached"
}
after_attached() {
	check "kill -9 $1: the attached client's connection ended" wait_line att '^closed' 10
	stop_client att 5
}
declare -A MOMENTS=([agentd-api]="pending create" [agentd-bridge]=midturn [nginx]=attached)
for u in agentd-api agentd-bridge nginx; do
	KM_OLD=$(prop "$u" MainPID) KM_N0=$(prop "$u" NRestarts)
	for m in ${MOMENTS[$u]}; do "before_$m" "$u"; done
	check "kill -9 $u's main process: systemd starts it again" kill_main "$u"
	check "$u: the stack answers again" wait_for 30 healthy
	[[ ${MOMENTS[$u]} == *create* ]] && after_create "$u"
	after_kill "kill -9 $u"
	for m in ${MOMENTS[$u]}; do [ "$m" != create ] && "after_$m" "$u"; done
	check "kill -9 $u: a terminal client reattaches and sees the screen" term_reattaches "tc-$u"
	check "kill -9 $u: a structured turn runs" turn_runs "t-$u"
	assert_eq "kill -9 $u: no agent was killed" "$PANES" "$(panes)"
done

# --- kill -9 of the tmux server: agentd-tmux's main process (the pid file agentd-api --init wrote) --
assert_eq "agentd-tmux's main process is the tmux server" "$SERVER" "$(prop agentd-tmux MainPID)"
assert_eq "/run/agentd/tmux.pid names it" "$SERVER" "$(cat "$CR/run/agentd/tmux.pid" 2>/dev/null)"
n0=$(prop agentd-tmux NRestarts)
before_pending tmux # the request dies with the agent: withdrawn
cx kill -KILL "$SERVER"
new_server() {
	local p
	p=$(tmx display -p '#{pid}' 2>/dev/null) && [ -n "$p" ] && [ "$p" != "$SERVER" ] &&
		[ "$(prop agentd-tmux NRestarts)" -gt "$n0" ] &&
		[ "$(prop agentd-tmux ActiveState)" == active ] && [ "$(prop agentd-tmux MainPID)" == "$p" ]
}
check "kill -9 the tmux server: systemd starts another (agentd-tmux restarted)" \
	wait_for "$RESTART_SECS" new_server
check "the stack answers again" wait_for 30 healthy
assert_state "the terminal session comes back by itself in the new server" "$TERM_ID" running 60
assert_state "the structured session comes back by itself in the new server" "$S" running 60
after_kill "kill -9 the tmux server"
any_pane_alive() {
	local p
	for p in $PANES; do ns_alive "$p" && return 0; done
	return 1
}
check_not "no agent of the killed server is left" any_pane_alive
api POST "/sessions/$S/permissions/$RID" '{"behavior":"allow"}'
assert_eq "an answer to the dead agent's request: 409" 409 "$STATUS"
check_not "the withdrawn tool never ran" test -e "$CR/code/widgets-issue-2/ran-tmux"
sse_wait_end pend 10
MARK=0
check "a terminal client attaches to the session that came back" term_reattaches tc-new
check "a structured turn runs in the session that came back" turn_runs t-new
after_kill "the sessions came back"
sctl list-units --all --no-legend 'agentd-*' nginx.service | sed 's/^/# /'
for u in "${UNITS[@]}" nginx; do log "$u: NRestarts $(prop "$u" NRestarts)"; done

# --- the end: systemd stops everything -----------------------------------------------------------
kill_sse_clients
kill_clients
PIDNS=$(readlink "/proc/$P1/ns/pid")
if sysd_stop; then pass "systemd stops every unit and exits (poweroff)"; else
	fail "systemd stops every unit and exits within 60 s (poweroff)"
fi
check_not "no cgroup of the namespace is left" test -d "/sys/fs/cgroup/systemd/$CG"
left=$(for p in /proc/[0-9]*; do
	[ "$(readlink "$p/ns/pid" 2>/dev/null)" == "$PIDNS" ] && echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline")"
done)
assert_eq "no process of the namespace is left" "" "$left"

#!/usr/bin/env bash
# The kill -9 matrix: each process of the stack killed with SIGKILL at each moment of a
# session's life, deploy/up bringing the daemons back, and after each kill:
# - no record lost or corrupt (every record parses; GET /sessions lists exactly the records);
# - every state honest within 2 s: running/attached only with a live pane process, exited/lost
#   where it is gone, nothing left `creating`;
# - GET /events and each structured session's GET /sessions/<id>/events, followed across every
#   kill by reconnecting with Last-Event-ID, without gap or duplicate;
# - a pending permission still answerable exactly once (200 then 409) after the restart of
#   anything but the process that asked; when the agent host or the tmux server dies, the request
#   is withdrawn: the answer gets 409 and /events says withdrawn; after the tmux server, deploy/up
#   starts another and the sessions come back in it (claude --resume);
# - a terminal client can reattach and sees the current screen.
# Processes: agentd-api, agentd-bridge, the nginx master, agentd-host, a creation worker, the tmux
# server. Moments: idle, create, attached (a terminal client), midturn (a structured turn
# running), pending (a permission request waiting). The table of outcomes is printed at the end.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

readonly HONEST_SECS=2   # the issue's bound for an honest state after a restart
readonly RESTART_SECS=30 # deploy/up's restart of a daemon (1 s backoff) with ASan builds
declare -A OUTCOME=()
CELL=

make_remote acme widgets || exit 1
make_heavy_remote || exit 1
start_stack || exit 1

# --- followers: an SSE client that is started again from its last id whenever its stream ends --
declare -A FOL_PATH=() FOL_N=()
follow_seg() { printf '%s_seg%03d' "$1" "${FOL_N[$1]}"; }
follow_events() { cat "$T/$1"_seg*.events 2>/dev/null | jq -c 'select(has("comment") | not)'; }
follow_next() {
	local last
	last=$(follow_events "$1" | jq -s 'map(select(.id != null) | .id) | max // empty')
	FOL_N[$1]=$((${FOL_N[$1]:-0} + 1))
	if [ -n "$last" ]; then
		sse_start "$(follow_seg "$1")" GET "${FOL_PATH[$1]}" - --timeout 3600 \
			--header "Last-Event-ID: $last"
	else
		sse_start "$(follow_seg "$1")" GET "${FOL_PATH[$1]}" - --timeout 3600
	fi
}
follow_start() {
	FOL_PATH[$1]=$2
	follow_next "$1"
}
follow_ensure() {
	local pid=${SSE_PID[$(follow_seg "$1")]:-}
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then follow_next "$1"; fi
}
follow_ensure_all() {
	local f
	for f in "${!FOL_PATH[@]}"; do follow_ensure "$f"; done
}
# assert_followed DESC NAME [MIN]: ids contiguous over every segment (at least MIN, default 1),
# and no snapshot after the first.
assert_followed() {
	local ev ids f
	ev=$(follow_events "$2" | jq -s -c '.')
	ids=$(jq -c 'map(select(.event != "snapshot" and .id != null) | .id)' <<<"$ev")
	if jq -e '. as $a | length >= '"${3:-1}"' and ([range(1; length) | $a[.] == $a[. - 1] + 1] | all)' \
		>/dev/null <<<"$ids"; then
		pass "$1"
	else
		fail "$1" "ids per segment (the stream ended and was resumed between them):" \
			"$(for f in "$T/$2"_seg*.events; do
				printf '%s: %s\n' "$(basename "$f" .events)" \
					"$(jq -r 'select(.id != null) | "\(.id)\(.event[0:2])"' "$f" | tr '\n' ' ')"
			done)"
	fi
	assert_jq "$1: no snapshot after a reconnect" \
		'[.[] | select(.event == "snapshot")] | length <= 1' "$ev"
}

# --- finding and killing each process -----------------------------------------------------------
nginx_master() {
	local p
	for p in $(descendants "$UP_PID"); do
		tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q '^nginx: master' && echo "$p" && return
	done
}
worker_pid() {
	local exe p
	exe=$(readlink -f "$BUILD_DIR/fcgi-app/agentd-api")
	for p in $(pgrep -f -- '--create' 2>/dev/null); do
		[ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" == "$exe" ] && echo "$p" && return
	done
}
tmux_server_pid() { tmx display -p '#{pid}' 2>/dev/null; }

# wait_new FINDER OLD: deploy/up started another one and the stack answers.
wait_new() {
	local deadline=$((SECONDS + RESTART_SECS)) new
	while [ $SECONDS -lt $deadline ]; do
		new=$($1)
		if [ -n "$new" ] && [ "$new" != "$2" ] && wait_healthy 20; then return 0; fi
		sleep 0.1
	done
	return 1
}

# kill_target PROC: SIGKILL, then wait for what deploy/up brings back.
kill_target() {
	local old
	echo "=== $CELL: kill -9 $1 $(date +%T.%N)" >>"$T/logs/up.log"
	case $1 in
	api) kill_api KILL ;;
	bridge)
		old=$(bridge_pid)
		kill -KILL "$old" && wait_new bridge_pid "$old" &&
			wait_for 10 test -S "$T/run/bridge.sock"
		;;
	nginx)
		old=$(nginx_master)
		kill -KILL "$old" && wait_new nginx_master "$old"
		;;
	host) kill -KILL "$(pane_pid "$S")" ;;
	tmux) kill -KILL "$(tmux_server_pid)" ;;
	worker)
		local deadline=$((SECONDS + 20))
		until old=$(worker_pid) && [ -n "$old" ]; do
			[ $SECONDS -ge $deadline ] && return 1
			sleep 0.01
		done
		kill -KILL "$old"
		;;
	esac
}

# --- what must hold after every kill ---------------------------------------------------------------
# dishonest: prints each session whose state is not what tmux and the processes say.
dishonest() {
	local id tn st act pid
	api GET /sessions
	[ "$STATUS" == 200 ] || {
		echo "GET /sessions: $STATUS"
		return
	}
	while IFS=$'\t' read -r id tn st act; do
		pid=$(tmx display -p -t "=$tn:" '#{?pane_dead,dead,#{pane_pid}}' 2>/dev/null)
		case $st in
		running | attached)
			if [ -z "$pid" ] || [ "$pid" == dead ] || ! alive "$pid"; then
				echo "$id is $st but its pane process is ${pid:-gone}"
			elif [ "$act" == exited ]; then
				echo "$id is $st with activity exited"
			fi
			;;
		exited | lost | failed)
			if [ -n "$pid" ] && [ "$pid" != dead ] && alive "$pid"; then
				echo "$id is $st but its pane process $pid lives"
			fi
			;;
		creating) [ "$id" == "$CREATED" ] || echo "$id is creating" ;; # after_create waits for it
		*) echo "$id is $st" ;;
		esac
	done < <(jq -r '.[] | [.id, .tmuxName, .state, .activity] | @tsv' <<<"$BODY")
}

records_sound() {
	local f n=0 bad=
	for f in "$T"/state/sessions/*.json; do
		[ -f "$f" ] || continue
		n=$((n + 1))
		jq -e '.id and .state' "$f" >/dev/null 2>&1 || bad+=" $(basename "$f")"
	done
	api GET /sessions
	[ -z "$bad" ] && [ "$STATUS" == 200 ] && [ "$(jq length <<<"$BODY")" == "$n" ] && return 0
	echo "records $n, corrupt:${bad:- none}; GET /sessions $STATUS $(jq -c '[.[].id]' <<<"$BODY" 2>/dev/null)"
	return 1
}

# after_kill: the checks common to every cell; records the cell's outcome.
after_kill() {
	local why= d deadline=$((SECONDS + HONEST_SECS))
	while d=$(dishonest) && [ -n "$d" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
	if [ -n "$d" ]; then
		why="dishonest: $d"
		fail "$CELL: every state honest within $HONEST_SECS s" "$d"
	else
		pass "$CELL: every state honest within $HONEST_SECS s"
	fi
	if d=$(records_sound); then
		pass "$CELL: no record lost or corrupt"
	else
		why+="${why:+; }records: $d"
		fail "$CELL: no record lost or corrupt" "$d"
	fi
	follow_ensure_all
	OUTCOME[$CELL]=${why:-ok}
}

# note OUTCOME: appends to the cell's outcome (a moment's own check that failed).
note() { OUTCOME[$CELL]="${OUTCOME[$CELL]/#ok/}${OUTCOME[$CELL]:+; }$1"; }
cell_check() { # DESC COMMAND...: check, noting a failure in the table
	local desc=$1
	shift
	if "$@"; then pass "$CELL: $desc"; else
		fail "$CELL: $desc"
		note "not: $desc"
	fi
}

# --- the sessions ---------------------------------------------------------------------------------
NEXT_ISSUE=10
new_structured() {
	NEXT_ISSUE=$((NEXT_ISSUE + 1))
	S=$(structured_session acme widgets "$NEXT_ISSUE") || return 1
	follow_start "s$NEXT_ISSUE" "/sessions/$S/events"
}

follow_start ev /events
create acme widgets 1
TERM_ID=widgets-1
assert_state "the terminal session runs" "$TERM_ID" running 60
new_structured || exit 1

# --- the moments ----------------------------------------------------------------------------------
# Each moment: before_M sets it up, after_M checks what must hold once the process is back.
before_idle() { :; }
after_idle() { :; }

MARK=0
before_attached() {
	MARK=$((MARK + 1))
	start_client tc "/sessions/$TERM_ID/terminal"
	wait_output tc 'fake claude' 20
	client_cmd tc "send \"mark-$MARK\r\""
	wait_output tc "got: mark-$MARK" 10
}
after_attached() {
	start_client tc2 "/sessions/$TERM_ID/terminal"
	cell_check "a terminal client reattaches and sees the screen" \
		wait_output tc2 "got: mark-$MARK" 10
	stop_client tc2 5
	stop_client tc 5
	kill_clients
}

before_midturn() {
	sse_start turn POST "/sessions/$S/prompt" '{"prompt":"SLOW turn"}'
	sse_wait_event turn '.event == "system"' 20
}
after_midturn() {
	if [ "$1" == host ]; then
		cell_check "the killed host's session says exited" wait_activity "$S" '.activity == "exited"' 5
		sse_wait_end turn 10
		return
	fi
	cell_check "the turn still runs: working" wait_activity "$S" '.activity == "working"' 10
	api POST "/sessions/$S/interrupt"
	cell_check "an interrupt after the restart: 200" test "$STATUS" == 200
	cell_check "the turn ends: idle" wait_activity "$S" '.activity == "idle"' 20
	sse_wait_end turn 10
}

RID=
before_pending() {
	sse_start turn POST "/sessions/$S/prompt" "{\"prompt\":\"RUNBASH touch ran-${S##*-}-$1\"}"
	sse_wait_event turn '.event == "permission"' 20
	RID=$(sse_permission_ids turn | head -n 1)
	# Pending as every client sees it: /events announced it too (the hub's copy of the host's
	# stream can lag the prompt's; a request never announced needs no withdrawal there).
	follow_has ev "select(.event == \"permission\") | .data | fromjson | select(.requestId == \"$RID\")"
}
after_pending() {
	local file=$T/code/widgets-issue-${S##*-}/ran-${S##*-}-$1
	if [ "$1" == host ] || [ "$1" == tmux ]; then
		api POST "/sessions/$S/permissions/$RID" '{"behavior":"allow"}'
		cell_check "an answer to the dead agent's request: 409" test "$STATUS" == 409
		cell_check "/events says the request was withdrawn" follow_has ev \
			"select(.event == \"permission_resolved\") | .data | fromjson |
			 select(.requestId == \"$RID\" and .behavior == \"withdrawn\")"
		cell_check "the withdrawn tool never ran" test ! -e "$file"
		sse_wait_end turn 10
		return
	fi
	cell_check "the request is still pending" wait_activity "$S" \
		".activity == \"waiting\" and [.pending[].requestId] == [\"$RID\"]" 10
	api POST "/sessions/$S/permissions/$RID" '{"behavior":"allow"}'
	cell_check "answered once after the restart: 200" test "$STATUS" == 200
	api POST "/sessions/$S/permissions/$RID" '{"behavior":"allow"}'
	cell_check "a second answer: 409" test "$STATUS" == 409
	cell_check "the allowed tool ran" wait_for 20 test -e "$file"
	cell_check "the turn ends: idle" wait_activity "$S" '.activity == "idle"' 20
	sse_wait_end turn 10
}
follow_has() { # NAME JQ: an event of the follower matches (waits up to 5 s)
	local deadline=$((SECONDS + 5))
	until follow_events "$1" | jq -e -s "map($2) | length > 0" >/dev/null 2>&1; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

CREATED=
CREATE_START=
before_create() {
	NEXT_ISSUE=$((NEXT_ISSUE + 1))
	# A repository of its own each time: a full clone, so that the worker lives longer.
	cp -a "$T/remotes/acme/big.git" "$T/remotes/acme/big$NEXT_ISSUE.git"
	CREATED=big$NEXT_ISSUE-$NEXT_ISSUE
	CREATE_START=$SECONDS
	api POST /sessions "$(create_body acme "big$NEXT_ISSUE" "$NEXT_ISSUE")"
}
not_creating() {
	api GET "/sessions/$CREATED"
	[ "$STATUS" == 200 ] && [ "$(jq -r .state <<<"$BODY")" != creating ]
}
after_create() {
	local st
	wait_for 60 not_creating
	st=$(jq -r '.state // empty' <<<"$BODY")
	log "$CELL: $CREATED left creating ($st) after $((SECONDS - CREATE_START)) s"
	case $st in
	running) cell_check "created: running, in tmux" tmux_has "$CREATED" ;;
	failed) cell_check "failed, with the reason" jq -e '.error | length > 0' <<<"$BODY" ;;
	*)
		fail "$CELL: the create ends running or failed" "$STATUS ${BODY:0:300}"
		note "create ended $STATUS ${st:-?}"
		;;
	esac
	OUTCOME[$CELL]+=" (${st:-?})"
	api DELETE "/sessions/$CREATED?force=true"
	cell_check "the created session is deleted" test "$STATUS" == 200
	CREATED=
}

# run_cell PROC MOMENT (KILL_MATRIX_ONLY=REGEX runs only the cells "PROC × MOMENT" it matches)
run_cell() {
	CELL="$1 × $2"
	[[ $CELL =~ ${KILL_MATRIX_ONLY:-.} ]] || return 0
	log "---- $CELL"
	"before_$2" "$1"
	if ! kill_target "$1"; then
		fail "$CELL: the kill and restart" "$(tail -n 20 "$T/logs/up.log")"
		OUTCOME[$CELL]="the restart failed"
		return
	fi
	after_kill
	"after_$2" "$1"
}

MOMENTS=(idle create attached midturn pending)
for proc in api bridge nginx; do
	for m in "${MOMENTS[@]}"; do run_cell "$proc" "$m"; done
done
run_cell worker create
for m in idle midturn pending; do
	[[ "host × $m" =~ ${KILL_MATRIX_ONLY:-.} ]] || continue
	run_cell host "$m"
	api DELETE "/sessions/$S?force=true"
	new_structured || exit 1
done
# The tmux server last: it takes every agent with it (a terminal client attached too).
if [[ "tmux × pending" =~ ${KILL_MATRIX_ONLY:-.} ]]; then
	before_attached
	run_cell tmux pending
	# A small reboot: deploy/up starts another server, and the sessions come back in it.
	cell_check "the terminal session comes back by itself" wait_state "$TERM_ID" running 60
	cell_check "the structured session comes back by itself" wait_state "$S" running 60
	kill_clients
fi

# --- the streams, across everything ---------------------------------------------------------------
api POST /sessions "$(create_body acme widgets 99)" # one more event at the end
follow_has ev 'select(.event == "session") | .data | fromjson | select(.session.id == "widgets-99")'
follow_ensure_all
sleep 1
kill_sse_clients
assert_followed "/events over every kill: no gap, no duplicate" ev
for f in "${!FOL_PATH[@]}"; do
	[ "$f" == ev ] && continue
	assert_followed "${FOL_PATH[$f]} over every kill: no gap, no duplicate" "$f" 0
done

echo "# ---- kill -9 matrix: outcome per process × moment"
printf '# %-8s' ''
for m in "${MOMENTS[@]}"; do printf ' %-14s' "$m"; done
echo
for proc in api bridge nginx worker host tmux; do
	printf '# %-8s' "$proc"
	for m in "${MOMENTS[@]}"; do
		o=${OUTCOME["$proc × $m"]:--}
		printf ' %-14s' "${o:0:14}"
	done
	echo
done
for c in "${!OUTCOME[@]}"; do
	[[ ${OUTCOME[$c]} == ok* ]] || echo "# $c: ${OUTCOME[$c]}"
done

stop_stack
scan_sanitizers

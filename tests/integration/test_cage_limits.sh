#!/usr/bin/env bash
# Each session's share of the machine (issue 22): POST /sessions' "limits" (each at most the
# configured maximum; bad values 400, nothing made), the session object's "limits" and "usage",
# the session's cgroup made with those limits before its pane starts, kept across a restart of
# the daemons, removed with the session. Then, with the pane inside its cgroup (agentd-cage), a
# memory hog, a fork bomb and a CPU hog in sessions of their own while session B, the API and the
# tmux server keep answering; the hog's session ends `exited` with exitReason "oom".
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ "$(id -u)" -ne 0 ] || [ -z "$(find /sys/fs/cgroup -maxdepth 1 -mindepth 1 2>/dev/null)" ]; then
	log "SKIP: needs root and a cgroup filesystem (sessions are not caged otherwise)"
	exit 0
fi

make_remote acme widgets || exit 1
# The fake agent (cage_limits/agent, in the repository: a caged pane has a /tmp of its own, so
# not in $T): what a session does is chosen by its issue, so that a hog runs as the session's
# agent itself, inside its pane.
AGENT=$REPO/tests/integration/cage_limits/agent
# AGENTD_CAGE=auto: the panes run under agentd-cage where it and bwrap are there (lib.sh turns
# it off for the other tests).
# A secrets dir of its own (the cage hides it; the default /etc/agentd/secrets need not exist).
mkdir -p "$T/secrets" && chmod 0700 "$T/secrets"
start_stack AGENTD_CLAUDE="$AGENT" AGENTD_SECRETS_DIR="$T/secrets" AGENTD_SESSION_MEMORY_MAX=1G AGENTD_SESSION_CPUS=2 \
	AGENTD_SESSION_TASKS_MAX=512 AGENTD_CAGE=auto AGENTD_HOMES_DIR="$T/homes" || exit 1

if ! grep -q "sessions get cgroups under $CGROUP_PARENT" "$T"/logs/* "$T"/run/*.log 2>/dev/null; then
	fail "agentd-api says at start that sessions get cgroups" \
		"$(grep -h "cgroup" "$T"/logs/* "$T"/run/*.log 2>/dev/null | head -5)"
else
	pass "agentd-api says at start that sessions get cgroups"
fi

# limits_body ISSUE LIMITS_JSON
limits_body() {
	jq -cn --argjson i "$1" --argjson l "$2" '{repo: {owner: "acme", name: "widgets"}, issue: $i,
		limits: $l}'
}

# bad_limits DESC LIMITS_JSON WORD: 400, an error naming WORD, nothing made.
bad_limits() {
	api POST /sessions "$(limits_body 1 "$2")"
	assert_status "$1: 400" 400
	assert_error_body "$1: an error body"
	assert_jq "$1: the error names $3" ".error | contains(\"$3\")"
	assert_nothing_created "$1: creates nothing"
	assert_eq "$1: no cgroup for the session" "" "$(cgroup_dirs widgets-1)"
}

bad_limits "memory above the maximum" '{"memory": "2G"}' "limits.memory"
bad_limits "memory not a size" '{"memory": "lots"}' "limits.memory"
bad_limits "memory too small to run claude" '{"memory": "4096"}' "limits.memory"
bad_limits "cpus above the maximum" '{"cpus": 3}' "limits.cpus"
bad_limits "cpus zero" '{"cpus": 0}' "limits.cpus"
bad_limits "cpus negative" '{"cpus": -1}' "limits.cpus"
bad_limits "tasks above the maximum" '{"tasks": 513}' "limits.tasks"
bad_limits "tasks zero" '{"tasks": 0}' "limits.tasks"
bad_limits "tasks not an integer" '{"tasks": "10"}' "limits.tasks"
bad_limits "an unknown limit" '{"disk": "1G"}' "disk"
bad_limits "limits not an object" '"256M"' "limits"

# --- a session with limits of its own, one with the configured ones --------------------------
api POST /sessions "$(limits_body 1 '{"memory": "256M", "cpus": 0.5, "tasks": 256}')"
assert_status "POST with limits: 201" 201
assert_json "the answer shows the limits" '.limits' '{"memory":268435456,"cpus":0.5,"tasks":256}'
A=widgets-1
wait_state "$A" running 30 || fail "session A runs" "last: ${BODY:0:300}"
create acme widgets 20
B=widgets-20
assert_status "POST without limits: 201" 201
assert_json "without limits: the configured maxima" '.limits' '{"memory":1073741824,"cpus":2,"tasks":512}'
wait_state "$B" running 30 || fail "session B runs" "last: ${BODY:0:300}"

# cg_file SESSION FILE: the first of the session's cgroup directories that has FILE, its text.
cg_file() {
	local d
	for d in $(cgroup_dirs "$1"); do
		[ -f "$d/$2" ] && { cat "$d/$2"; return 0; }
	done
	echo "(no $2)"
}

if [ -n "$(cg_file "$A" memory.limit_in_bytes | grep -v '^(no')" ]; then
	assert_eq "A's memory limit (v1)" 268435456 "$(cg_file "$A" memory.limit_in_bytes)"
	assert_eq "A's CPU quota over 100 ms (v1)" 50000 "$(cg_file "$A" cpu.cfs_quota_us)"
	assert_eq "A's CPU period (v1)" 100000 "$(cg_file "$A" cpu.cfs_period_us)"
	assert_eq "B's memory limit: the configured one" 1073741824 "$(cg_file "$B" memory.limit_in_bytes)"
else
	assert_eq "A's memory limit (v2)" 268435456 "$(cg_file "$A" memory.max)"
	assert_eq "A's CPU quota over 100 ms (v2)" "50000 100000" "$(cg_file "$A" cpu.max)"
fi
assert_eq "A's task limit" 256 "$(cg_file "$A" pids.max)"
assert_eq "B's task limit" 512 "$(cg_file "$B" pids.max)"
owner=$(stat -c %u $(cgroup_dirs "$A") | sort -u)
assert_eq "A's cgroup directories are root's alone (a chowned one is a way out)" 0 "$owner"

get_session "$A"
assert_jq "GET shows usage {memoryBytes, memoryPeakBytes, cpuSeconds, tasks}" \
	'.usage | (.memoryBytes | type == "number") and (.memoryPeakBytes | type == "number") and
		(.cpuSeconds | type == "number") and (.tasks | type == "number")'
assert_json "GET shows the limits" '.limits' '{"memory":268435456,"cpus":0.5,"tasks":256}'
assert_match "cpuSeconds is written with at most 6 decimals (microseconds)" \
	'"cpuSeconds": ?[0-9]+(\.[0-9]{1,6})?[,}]' "$BODY"

# --- the record keeps its limits across a restart of the daemons ------------------------------
restart_stack || exit 1
get_session "$A"
assert_json "limits survive a restart" '.limits' '{"memory":268435456,"cpus":0.5,"tasks":256}'
assert_eq "the cgroup survives a restart" 256 "$(cg_file "$A" pids.max)"

# --- ... and a reboot: the tmux server killed (every agent ends with it), its sessions started
# again by the boot pass in a new one, each in a cgroup made again from its record. A reboot loses
# the cgroups: A's is removed first where nothing holds it (no agentd-cage put its pane in it).
tmux_server_pid() { tmx display -p '#{pid}' 2>/dev/null; }
SERVER=$(tmux_server_pid)
for d in $(cgroup_dirs "$A"); do rmdir "$d" 2>/dev/null; done
kill -KILL "$SERVER"
new_server() {
	local p
	p=$(tmux_server_pid) && [ -n "$p" ] && [ "$p" != "$SERVER" ]
}
check "deploy/up starts another tmux server" wait_for 30 new_server
assert_state "A runs again by itself" "$A" running 30
assert_json "limits survive a reboot" '.limits' '{"memory":268435456,"cpus":0.5,"tasks":256}'
assert_eq "A's cgroup is made again with its limits" 256 "$(cg_file "$A" pids.max)"
assert_state "B runs again by itself" "$B" running 30

# --- the hogs, each the agent of a session of its own ----------------------------------------
# agentd-cage (branch h22-cage) puts the pane in its session's cgroup before it runs the agent.
# Until it does, the test moves each pane in itself (as root, as the cage would), before the hog
# starts: the agent waits for .go in its worktree first.
caged=
if grep -q "sessions are caged" "$T"/logs/* "$T"/run/*.log 2>/dev/null; then
	caged=1
	b_pane=$(pane_pid "$B")
	for d in $(cgroup_dirs "$B"); do
		check "B's pane ($b_pane, agentd-cage) runs inside B's cgroup $d" \
			grep -qx "$b_pane" "$d/cgroup.procs"
	done
else
	log "sessions are not caged here (no agentd-cage or bwrap): the test moves each hog's pane" \
		"into its cgroup itself"
fi

# start_hog ID: the pane inside its cgroup (agentd-cage put it there, or the test does where no
# cage runs), then the hog. A caged pane outside its cgroup gets no .go: no hog runs uncaged.
start_hog() {
	local id=$1 pid d
	wait_state "$id" running 30 || fail "$id runs" "last: ${BODY:0:300}"
	pid=$(pane_pid "$id")
	for d in $(cgroup_dirs "$id"); do
		if [ -n "$caged" ]; then
			grep -qx "$pid" "$d/cgroup.procs" || {
				fail "$id's caged pane is in $d: its hog is not started"
				return 1
			}
		else
			echo "$pid" >"$d/cgroup.procs" || fail "$id's pane joins $d"
		fi
	done
	touch "$T/code/widgets-issue-${id##*-}/.go"
}

b_pid=$(pane_pid "$B")
# Memory: limit 256M; the kernel kills the hog inside it.
api POST /sessions "$(limits_body 11 '{"memory": "256M"}')"
assert_status "memory hog session: 201" 201
M=widgets-11
start_hog "$M"
if wait_state "$M" exited 60; then
	pass "the memory hog's session becomes exited"
	assert_json "its exitReason is oom" '.exitReason' '"oom"'
	assert_jq "exitStatus as today (SIGKILL: 137)" '.exitStatus == 137'
	assert_jq "its peak stayed inside its limit" \
		".usage.memoryPeakBytes <= 268435456 and .usage.memoryPeakBytes > 134217728"
else
	fail "the memory hog's session becomes exited" "last: ${BODY:0:400}"
fi
# /events publishes the session objects the bridge sees: the exit with its reason. Its log
# ($AGENTD_STATE_DIR/events.log) is what a client replays.
if wait_for 10 grep -qE '"id": ?"widgets-11".*"exitReason": ?"oom"' "$T/state/events.log"; then
	pass "/events says exitReason oom"
else
	fail "/events says exitReason oom" "$(grep -c . "$T/state/events.log") events" \
		"$(grep -o '"exitReason"[^,]*' "$T/state/events.log" | tail -3)"
fi

# Tasks: limit 256; the bounded bomb gets EAGAIN past it.
api POST /sessions "$(limits_body 12 '{"tasks": 256}')"
assert_status "fork bomb session: 201" 201
F=widgets-12
start_hog "$F"
wait_for 60 test -s "$T/code/widgets-issue-12/.forks"
read -r ok failed <"$T/code/widgets-issue-12/.forks"
assert_jq "the bomb hit its task limit (forks ok=$ok, refused=$failed)" \
	"$ok < 256 and $failed > 0" '{}'
get_session "$F"
assert_jq "its tasks stay at most 256" '.usage.tasks <= 256'

# CPU: half a CPU; four busy processes get about that.
api POST /sessions "$(limits_body 13 '{"cpus": 0.5}')"
assert_status "CPU hog session: 201" 201
C=widgets-13
start_hog "$C"
sleep 1
get_session "$C"
c0=$(jq -r .usage.cpuSeconds <<<"$BODY")
sleep 3
get_session "$C"
c1=$(jq -r .usage.cpuSeconds <<<"$BODY")
assert_jq "the CPU hog used at most its quota (0.5 CPU over 3 s: $c0 -> $c1)" \
	"($c1 - $c0) <= 0.5 * 3 * 1.3 and ($c1 - $c0) > 0.5" '{}'

# B, the API and the tmux server kept answering through all of it.
get_session "$B"
assert_status "B answers" 200
assert_json "B still runs" .state '"running"'
check "B's agent is the same process" alive "$b_pid"
check "the tmux server answers" tmx list-sessions
api DELETE "/sessions/$F"
assert_status "DELETE the fork bomb's session" 200
assert_eq "its cgroup is gone, bomb and all" "" "$(cgroup_dirs "$F")"
api DELETE "/sessions/$C"
assert_status "DELETE the CPU hog's session" 200

# --- deleting a session removes its cgroup ---------------------------------------------------
api DELETE "/sessions/$A"
assert_status "DELETE A" 200
assert_eq "A's cgroup is gone" "" "$(cgroup_dirs "$A")"
check "B's cgroup is still there" test -n "$(cgroup_dirs "$B")"

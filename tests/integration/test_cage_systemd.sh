#!/usr/bin/env bash
# Cages under the installed systemd units (issue 22, "Where it runs"): where systemd is PID 1 each
# session's share of the machine is systemd's own units (core/sdunit.h), in the systemd container
# of test_kill_matrix_systemd.sh (tests/integration/systemd/):
# - agentd-api says at start that sessions get systemd units;
# - a caged session gets its slice agentd-sessions-<id>.slice with MemoryMax, TasksMax and
#   CPUQuotaPerSecUSec from its limits, and its pane (agentd-cage, then bwrap) runs in its scope
#   agentd-session-<id>.scope inside it, with the limits in the kernel's cgroup files; GET shows
#   its usage;
# - the sessions and their units survive `systemctl restart agentd-api agentd-bridge`;
# - a memory hog (limit 256M) ends `exited` with exitReason "oom"; a fork bomb stops at its task
#   limit (256); the other session keeps running;
# - DELETE stops the units: slice and scope gone, no process of the session left.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/systemd/lib_systemd.sh"

trap 'rc=$?; sysd_stop; sysctl_restore; (exit $rc); cleanup' EXIT

# The hogs' fake agent (cage_limits/agent: its issue picks what it does), from inside $T, with the
# fake claude where it looks for it (../../fakes/claude).
mkdir -p "$T/tests/integration"
cp -a "$REPO/tests/integration/cage_limits" "$T/tests/integration/"
cp -a "$REPO/tests/fakes" "$T/tests/fakes"
# AGENTD_RESTART_POLICY: lib.sh's (no) in the units' config too, which sysd_stack_up does not
# carry over: under the default (on-failure) the OOM-killed hog was started again and again
# through the checks that follow it, each time filling its 256M and being killed anew.
sysd_stack_up AGENTD_CLAUDE=$CT/tests/integration/cage_limits/agent \
	AGENTD_SESSION_MEMORY_MAX=1G AGENTD_SESSION_CPUS=2 AGENTD_SESSION_TASKS_MAX=512 \
	AGENTD_RESTART_POLICY="$AGENTD_RESTART_POLICY"

api_log() { cx journalctl --no-pager -o cat -u agentd-api.service 2>/dev/null; }
if api_log | grep -q "sessions are caged"; then
	pass "the sessions are caged under the units"
else
	fail "the sessions are caged under the units" "$(api_log | grep -i cage | head -3)"
fi
if api_log | grep -q "sessions get systemd units"; then
	pass "agentd-api says at start that sessions get systemd units"
else
	fail "agentd-api says at start that sessions get systemd units" \
		"$(api_log | grep -i cgroup | head -3)"
fi

limits_body() {
	jq -cn --argjson i "$1" --argjson l "$2" '{repo: {owner: "acme", name: "widgets"}, issue: $i,
		limits: $l}'
}
slice_of() { printf 'agentd-sessions-%s.slice' "${1//-/\\x2d}"; }
scope_of() { printf 'agentd-session-%s.scope' "$1"; }
uprop() { sctl show -p "$2" --value "$1" 2>/dev/null; }
pane_of() { tmx display -p -t "=$1:" '#{pane_pid}' 2>/dev/null; }
# cg_of PID HIERARCHY: the process's cgroup there (the namespace's view).
cg_of() { cx sed -n "s/^[0-9]*:$2:\(.*\)/\1/p" "/proc/$1/cgroup"; }
cgfile() { cx cat "/sys/fs/cgroup/$1"; }

# --- a session's units, with its limits ----------------------------------------------------------
api POST /sessions "$(limits_body 1 '{"memory": "256M", "cpus": 0.5, "tasks": 256}')"
assert_status "POST with limits: 201" 201
A=widgets-1
assert_state "A runs" "$A" running 60
create acme widgets 2
B=widgets-2
assert_state "B runs (the configured limits)" "$B" running 60

SA=$(slice_of "$A")
assert_eq "A's slice is active" active "$(uprop "$SA" ActiveState)"
assert_eq "A's slice: MemoryMax" 268435456 "$(uprop "$SA" MemoryMax)"
assert_eq "A's slice: TasksMax" 256 "$(uprop "$SA" TasksMax)"
assert_eq "A's slice: CPUQuotaPerSecUSec (half a CPU)" 500ms "$(uprop "$SA" CPUQuotaPerSecUSec)"
assert_eq "B's slice: MemoryMax, the configured one" 1073741824 "$(uprop "$(slice_of "$B")" MemoryMax)"
assert_eq "A's scope is active" active "$(uprop "$(scope_of "$A")" ActiveState)"
assert_eq "A's scope is in A's slice" "$SA" "$(uprop "$(scope_of "$A")" Slice)"

a_pane=$(pane_of "$A")
b_pane=$(pane_of "$B")
unit_path="/agentd.slice/agentd-sessions.slice/$SA"
assert_eq "A's pane (agentd-cage, then bwrap) runs in A's scope" "$unit_path/$(scope_of "$A")" \
	"$(cg_of "$a_pane" name=systemd)"
mem=$(cg_of "$a_pane" memory)
if [ -n "$mem" ]; then
	# The scope asks for no memory cgroup of its own: the slice's holds the agent (sdunit.h).
	assert_eq "A's pane is in the slice's memory cgroup" "$unit_path" "$mem"
	assert_eq "the kernel holds A's memory limit" 268435456 "$(cgfile "memory$mem/memory.limit_in_bytes")"
fi
[ -n "$(cg_of "$a_pane" pids)" ] &&
	assert_eq "the kernel holds A's task limit (the slice's)" 256 "$(cgfile "pids$unit_path/pids.max")"
get_session "$A"
assert_jq "GET shows A's usage" \
	'.usage | (.memoryBytes > 0) and (.memoryPeakBytes > 0) and (.tasks > 0) and
		(.cpuSeconds | type == "number")'
# GET /metrics reads the same slice (docs/API.md "Metrics": a caged session's figures are its
# cgroup's): A's memory near its usage, its tasks and peak there.
A_MEM=$(jq -r .usage.memoryBytes <<<"$BODY")
api GET /metrics
A_METRIC=$(awk -v s="agentd_session_memory_bytes{session=\"$A\"}" '$1 == s { print $2 }' <<<"$BODY")
check "GET /metrics: A's memory is its slice's ($A_METRIC; usage said $A_MEM)" awk -v m="$A_METRIC" \
	-v u="$A_MEM" 'BEGIN { d = m - u; exit !(m != "" && d < 4194304 && d > -4194304) }'
check "GET /metrics: A's tasks from its slice" grep -Eq \
	"^agentd_session_tasks\{session=\"$A\"\} [1-9]" <<<"$BODY"
check "... and its peak" grep -Eq "^agentd_session_memory_peak_bytes\{session=\"$A\"\} [1-9]" <<<"$BODY"

# --- the sessions and their units survive a restart of the daemons ------------------------------
check "systemctl restart agentd-api agentd-bridge" sctl restart agentd-api.service agentd-bridge.service
check "the stack answers after the restart" wait_for 30 bash -c \
	"[ \"\$(curl -s -o /dev/null -w '%{http_code}' $BASE_URL/healthz)\" == 200 ]"
assert_eq "the restart killed no agent" "$a_pane $b_pane" "$(pane_of "$A") $(pane_of "$B")"
assert_eq "A's scope is still active" active "$(uprop "$(scope_of "$A")" ActiveState)"
assert_eq "A's slice keeps its limit" 268435456 "$(uprop "$SA" MemoryMax)"
assert_state "A still runs" "$A" running 10

# --- a memory hog and a fork bomb, each the agent of a session of its own -----------------------
# start_hog ID: the hog waits for .go in its worktree, given once its pane is in its scope.
start_hog() {
	local id=$1 pid
	assert_state "$id runs" "$id" running 60
	pid=$(pane_of "$id")
	if [ "$(cg_of "$pid" name=systemd)" != "/agentd.slice/agentd-sessions.slice/$(slice_of "$id")/$(scope_of "$id")" ]; then
		fail "$id's pane is in its scope: its hog is not started" "$(cx cat "/proc/$pid/cgroup")"
		return 1
	fi
	touch "$CR/code/widgets-issue-${id##*-}/.go"
}
api POST /sessions "$(limits_body 11 '{"memory": "256M"}')"
assert_status "memory hog session: 201" 201
M=widgets-11
if start_hog "$M" && wait_state "$M" exited 60; then
	pass "the memory hog's session becomes exited"
	assert_json "its exitReason is oom" '.exitReason' '"oom"'
	assert_jq "exitStatus as today (SIGKILL: 137)" '.exitStatus == 137'
	assert_jq "its peak stayed inside its limit" \
		".usage.memoryPeakBytes <= 268435456 and .usage.memoryPeakBytes > 134217728"
else
	fail "the memory hog's session becomes exited" "last: ${BODY:0:400}"
fi

api POST /sessions "$(limits_body 12 '{"tasks": 256}')"
assert_status "fork bomb session: 201" 201
F=widgets-12
if start_hog "$F" && wait_for 60 test -s "$CR/code/widgets-issue-12/.forks"; then
	read -r ok failed <"$CR/code/widgets-issue-12/.forks"
	assert_jq "the bomb hit its task limit (forks ok=$ok, refused=$failed)" \
		"$ok < 256 and $failed > 0" '{}'
else
	fail "the fork bomb ran and wrote what it got"
fi
get_session "$B"
assert_json "B still runs through the hogs" .state '"running"'
assert_eq "B's agent is the same process" "$b_pane" "$(pane_of "$B")"

# --- DELETE stops the units ---------------------------------------------------------------------
gone() { [ -z "$(sctl list-units --all --no-legend "$1" 2>/dev/null)" ] ||
	[ "$(uprop "$1" ActiveState)" == inactive ]; }
for id in "$F" "$A"; do
	api DELETE "/sessions/$id?force=true"
	assert_status "DELETE $id" 200
	check "$id's scope is gone" gone "$(scope_of "$id")"
	check "$id's slice is gone" gone "$(slice_of "$id")"
	check_not "$id's slice's cgroup is gone" cx test -d "/sys/fs/cgroup/systemd/agentd.slice/agentd-sessions.slice/$(slice_of "$id")"
done
check_not "A's agent is gone" cx kill -0 "$a_pane"
check_not "no bomb process is left" cx pgrep -f 'os.fork'
assert_eq "B's slice is still active" active "$(uprop "$(slice_of "$B")" ActiveState)"

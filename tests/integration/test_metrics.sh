#!/usr/bin/env bash
# GET /metrics (docs/API.md "Metrics"): through nginx's door with a read-only token or
# AGENTD_METRICS_TOKEN (which opens nothing else), refused without credentials; the text passes
# `promtool check metrics`; the numbers move when a session is created and when a permission
# request waits; a real Prometheus scrapes it (up == 1, an agentd_ series queried over its HTTP
# API); the example alert rules pass `promtool check rules` and their unit test. Then (as root,
# with cgroups) a caged session's memory, peak, CPU and tasks come from its cgroup, and its
# memory figure moves when its agent takes 64 MiB more; its setup command ran as its own uid in
# its cage; a terminal client of it is counted by the bridge.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

PROM_PID=
# Keeps the status it was called with: the exit trap's cleanup reports it.
stop_prometheus() {
	local rc=$?
	if [ -n "$PROM_PID" ]; then
		kill "$PROM_PID" 2>/dev/null
		wait "$PROM_PID" 2>/dev/null
		PROM_PID=
	fi
	return $rc
}
trap 'rc=$?; stop_prometheus; kill_sse_clients; kill_clients; (exit $rc); cleanup' EXIT

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
	fail "prometheus and promtool are installed (Debian's prometheus package)" "not found"
	exit 1
fi

# --- the example alert rules (no stack needed) ------------------------------------------------
check "promtool check rules deploy/prometheus/agentd-alerts.yml" \
	promtool check rules "$REPO/deploy/prometheus/agentd-alerts.yml"
check "promtool test rules: the approval wait, restart loop and daemon down alerts" \
	promtool test rules "$REPO/tests/integration/metrics/agentd-alerts.test.yml"

METRICS_TOKEN=mt-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
make_remote acme widgets
start_stack AGENTD_METRICS_TOKEN="$METRICS_TOKEN" || exit 1
VIEWER=$("$BUILD_DIR/fcgi-app/agentd-api" token add viewer --read-only)

# mget PATH [curl args...]: GET as the arguments say (curl -q: no curlrc, so no admin token).
# Sets STATUS and BODY.
mget() {
	local path=$1
	shift
	STATUS=$(curl -q -s -o "$T/m.body" -D "$T/m.headers" -w '%{http_code}' -m 20 "$@" \
		"$BASE_URL$path")
	BODY=$(cat "$T/m.body")
}
# metric TEXT SERIES: the value of one series line (name{labels} exactly), or "" when absent.
metric() {
	awk -v s="$2" '$1 == s { print $2 }' <<<"$1"
}
scrape() {
	mget /metrics -H "Authorization: Bearer $VIEWER"
	M=$BODY
}

# --- the door -----------------------------------------------------------------------------------
mget /metrics
assert_eq "GET /metrics without credentials: 401" 401 "$STATUS"
assert_json "... unauthenticated" .code '"unauthenticated"' "$BODY"
mget /metrics -H "Authorization: Bearer mt-wrong$METRICS_TOKEN"
assert_eq "GET /metrics with a wrong metrics token: 401" 401 "$STATUS"
mget /metrics -H "Authorization: Bearer $VIEWER"
assert_eq "GET /metrics with a read-only token: 200" 200 "$STATUS"
check "... Content-Type text/plain; version=0.0.4" \
	grep -qi '^content-type: text/plain; version=0.0.4' "$T/m.headers"
mget /metrics -H "Authorization: Bearer $METRICS_TOKEN"
assert_eq "GET /metrics with AGENTD_METRICS_TOKEN: 200" 200 "$STATUS"
check "... with the families" grep -q '^# TYPE agentd_sessions gauge$' "$T/m.body"
for p in /sessions /sessions/widgets-1 /healthz /whoami /events /worktrees /; do
	mget "$p" -H "Authorization: Bearer $METRICS_TOKEN"
	if [ "$p" = / ]; then
		assert_eq "AGENTD_METRICS_TOKEN opens no page: GET $p is sent to /login" 303 "$STATUS"
	else
		assert_eq "AGENTD_METRICS_TOKEN opens nothing else: GET $p 401" 401 "$STATUS"
	fi
done
mget /metrics -X POST -H "Authorization: Bearer $METRICS_TOKEN"
check "POST /metrics with the metrics token: not answered 2xx" test "${STATUS:0:1}" != 2
mget /metrics -H "Authorization: Bearer $AGENTD_TEST_TOKEN"
assert_eq "GET /metrics with an admin token: 200" 200 "$STATUS"

# --- the text ---------------------------------------------------------------------------------
scrape
if out=$(promtool check metrics <<<"$M" 2>&1); then
	pass "promtool check metrics: no problem"
else
	fail "promtool check metrics: no problem" "$out"
fi
assert_eq "no session: agentd_sessions{state=\"running\"} 0" 0 \
	"$(metric "$M" 'agentd_sessions{state="running"}')"
assert_eq "both daemons answered: agentd_up{daemon=\"bridge\"} 1" 1 \
	"$(metric "$M" 'agentd_up{daemon="bridge"}')"
assert_eq "agentd_api_build_info has the version" 1 \
	"$(metric "$M" "agentd_api_build_info{version=\"$(jq -r .version <<<"$(curl -s "$BASE_URL/healthz")")\"}")"
check "the bridge's families are there" grep -q '^agentd_bridge_clients{kind="terminal"} 0$' <<<"$M"
VERSION=$(jq -r .version <<<"$(curl -s "$BASE_URL/healthz")")
assert_eq "agentd_bridge_build_info has the version" 1 \
	"$(metric "$M" "agentd_bridge_build_info{version=\"$VERSION\"}")"
for d in api bridge; do
	check "agentd_${d}_uptime_seconds and agentd_${d}_start_time_seconds are there" awk \
		-v u="$(metric "$M" "agentd_${d}_uptime_seconds")" \
		-v s="$(metric "$M" "agentd_${d}_start_time_seconds")" -v now="$(date +%s)" \
		'BEGIN { exit !(u != "" && u >= 0 && u < 600 && s > now - 600 && s <= now + 1) }'
done
check "the door's requests are counted by route" \
	grep -Eq '^agentd_api_requests_total\{method="GET",route="/.agentd/auth",code="2xx"\} [1-9]' <<<"$M"
check "... and the 401s of the metrics door" \
	grep -Eq '^agentd_api_requests_total\{method="GET",route="/.agentd/auth-metrics",code="4xx"\} [1-9]' <<<"$M"
check "latency histograms per route" \
	grep -Eq '^agentd_api_request_duration_seconds_bucket\{method="GET",route="/metrics",le="\+Inf"\} [1-9]' <<<"$M"

# --- the numbers move: a session, then a permission request that waits -------------------------
SID=$(structured_session acme widgets 1) || exit 1
scrape
assert_eq "a running session: agentd_sessions{state=\"running\"} 1" 1 \
	"$(metric "$M" 'agentd_sessions{state="running"}')"
check "the create is counted: POST /sessions 2xx" \
	grep -Eq '^agentd_api_requests_total\{method="POST",route="/sessions",code="2xx"\} 1$' <<<"$M"
mem=$(metric "$M" "agentd_session_memory_bytes{session=\"$SID\"}")
check "the session's processes' memory is read (got '$mem')" test "${mem:-0}" -gt 0
check "... and their CPU time" grep -q "^agentd_session_cpu_seconds_total{session=\"$SID\"} " <<<"$M"
check_not "... and, uncaged, no agentd_session_tasks sample (tasks are the cgroup's count)" \
	grep -q "^agentd_session_tasks{session=\"$SID\"} " <<<"$M"
assert_eq "nothing waits: agentd_pending_approvals 0" 0 "$(metric "$M" agentd_pending_approvals)"
EVENTS_BEFORE=$(metric "$M" 'agentd_bridge_events_total{type="permission"}')

sse_start p1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch metrics-file"}'
assert_sse_event "a permission request arrives" p1 '.event == "permission"' 20
wait_activity "$SID" '.activity == "waiting"' 10
sleep 1.2
scrape
assert_eq "a pending request: agentd_pending_approvals 1" 1 "$(metric "$M" agentd_pending_approvals)"
assert_eq "... agentd_sessions_activity{activity=\"waiting\"} 1" 1 \
	"$(metric "$M" 'agentd_sessions_activity{activity="waiting"}')"
age=$(metric "$M" agentd_approval_wait_oldest_seconds)
check "... the oldest wait is counted (got $age s)" awk -v a="$age" 'BEGIN { exit !(a >= 1 && a < 60) }'
assert_eq "... one more permission event published" $((EVENTS_BEFORE + 1)) \
	"$(metric "$M" 'agentd_bridge_events_total{type="permission"}')"
assert_eq "... its prompt stream is a connected client" 1 \
	"$(metric "$M" 'agentd_bridge_clients{kind="stream"}')"
check "the bridge counts the prompt's route" \
	grep -Eq '^agentd_bridge_requests_total\{route="/sessions/\*/prompt"\} [1-9]' <<<"$M"
check "... and how long it took to hand it over (a histogram per route)" \
	grep -Eq '^agentd_bridge_dispatch_duration_seconds_bucket\{route="/sessions/\*/prompt",le="\+Inf"\} [1-9]' <<<"$M"
if out=$(promtool check metrics <<<"$M" 2>&1); then
	pass "promtool check metrics with a session: no problem"
else
	fail "promtool check metrics with a session: no problem" "$out"
fi

# --- a real Prometheus scrapes it -------------------------------------------------------------
PROM_PORT=$(free_port)
mkdir -p "$T/prom/data"
printf '%s' "$METRICS_TOKEN" >"$T/prom/token"
cat >"$T/prom/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
rule_files:
  - $REPO/deploy/prometheus/agentd-alerts.yml
scrape_configs:
  - job_name: agentd
    metrics_path: /metrics
    authorization:
      credentials_file: $T/prom/token
    static_configs:
      - targets: ["127.0.0.1:$PORT"]
CONF
prometheus --config.file="$T/prom/prometheus.yml" --storage.tsdb.path="$T/prom/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$T/logs/prometheus.log" 2>&1 &
PROM_PID=$!
# pquery QUERY: the first result's value from Prometheus' HTTP API, or "".
pquery() {
	curl -q -s -m 5 -G "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}
up=
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ]; do
	up=$(pquery 'up{job="agentd"}')
	[ "$up" = 1 ] && break
	sleep 1
done
assert_eq "Prometheus scrapes agentd with the metrics token: up == 1" 1 "$up"
assert_eq "... and queries agentd_sessions{state=\"running\"}" 1 "$(pquery 'agentd_sessions{state="running"}')"
assert_eq "... and agentd_pending_approvals" 1 "$(pquery 'agentd_pending_approvals')"
check "Prometheus read the alert rules" sh -c \
	"curl -q -s 'http://127.0.0.1:$PROM_PORT/api/v1/rules' | jq -e '[.data.groups[].rules[]] | length == 4' >/dev/null"
pid=$PROM_PID
stop_prometheus
check "Prometheus is stopped" sh -c "! kill -0 $pid 2>/dev/null"

api POST "/sessions/$SID/interrupt"
sse_wait_end p1 20

# --- a caged session: its figures are its cgroup's --------------------------------------------
if [ "$(id -u)" -ne 0 ] || [ -z "$(find /sys/fs/cgroup -maxdepth 1 -mindepth 1 2>/dev/null)" ]; then
	log "SKIP the caged session: needs root and a cgroup filesystem (sessions are not caged" \
		"otherwise)"
	exit 0
fi
api DELETE "/sessions/$SID"
assert_status "DELETE the structured session before the caged stack" 200
stop_stack || fail "deploy/up stops on SIGTERM"
# As test_cage_limits.sh: the panes under agentd-cage, a secrets dir of its own (the cage hides
# it), and an agent (metrics/agent) that takes 64 MiB when the test says so.
mkdir -p "$T/secrets" && chmod 0700 "$T/secrets"
# The setup command (issue 27: "as the agent in its cage") says who and where it ran: its uid,
# and how many processes it could see (the cage's pid namespace: its own).
SETUP='["/bin/sh","-c","id -u >.setup-uid && ls /proc | grep -c \"^[0-9]\" >.setup-procs"]'
start_stack AGENTD_METRICS_TOKEN="$METRICS_TOKEN" AGENTD_CLAUDE="$REPO/tests/integration/metrics/agent" \
	AGENTD_SECRETS_DIR="$T/secrets" AGENTD_CAGE=auto AGENTD_HOMES_DIR="$T/homes" \
	AGENTD_SETUP_COMMAND="$SETUP" || exit 1
check "agentd-api says sessions get cgroups" \
	grep -q "sessions get cgroups under $CGROUP_PARENT" "$T"/logs/* "$T"/run/*.log
create acme widgets 7
assert_status "a caged session: 201" 201
CID=widgets-7
wait_state "$CID" running 30 || fail "the caged session runs" "last: ${BODY:0:300}"
check "its cgroup is there" test -n "$(cgroup_dirs "$CID")"
CUID=$(jq -r .uid <<<"$BODY")
assert_json "its setup command succeeded" .setup.status '"ok"'
check "... as the session's own uid ($CUID), not root's nor the agent user's" \
	test "$(cat "$T/code/widgets-issue-7/.setup-uid" 2>&1)" = "$CUID" -a "$CUID" != 0 -a \
	"$CUID" != "$AGENT_UID"
check "... in its cage, seeing only its own processes (got $(cat "$T/code/widgets-issue-7/.setup-procs" 2>&1))" \
	test "$(cat "$T/code/widgets-issue-7/.setup-procs" 2>&1)" -le 5

# cg_memory ID: the session's memory as its cgroup counts it (v1 memory.usage_in_bytes, v2
# memory.current), or 0.
cg_memory() {
	local d f
	for f in memory.usage_in_bytes memory.current; do
		for d in $(cgroup_dirs "$1"); do
			[ -f "$d/$f" ] && { cat "$d/$f"; return 0; }
		done
	done
	echo 0
}
# caged_scrape: a scrape between two readings of the cgroup's memory (CG_LO, CG_HI); MEM, PEAK,
# TASKS: the session's samples.
caged_scrape() {
	local a b
	a=$(cg_memory "$CID")
	scrape
	b=$(cg_memory "$CID")
	CG_LO=$((a < b ? a : b)) CG_HI=$((a > b ? a : b))
	MEM=$(metric "$M" "agentd_session_memory_bytes{session=\"$CID\"}")
	PEAK=$(metric "$M" "agentd_session_memory_peak_bytes{session=\"$CID\"}")
	TASKS=$(metric "$M" "agentd_session_tasks{session=\"$CID\"}")
}
# near LO HI VALUE: VALUE within 4 MiB of [LO, HI] (the pane's shell and agent breathe).
near() {
	awk -v lo="$1" -v hi="$2" -v v="$3" 'BEGIN { s = 4 * 1048576; exit !(v != "" && v >= lo - s && v <= hi + s) }'
}

caged_scrape
check "the caged session's memory is its cgroup's ($MEM, cgroup $CG_LO..$CG_HI)" \
	near "$CG_LO" "$CG_HI" "$MEM"
check "... its peak is there, at least its memory ($PEAK >= $MEM)" \
	awk -v p="$PEAK" -v m="$MEM" 'BEGIN { exit !(p != "" && p + 4 * 1048576 >= m) }'
check "... its tasks are counted (got '$TASKS')" test "${TASKS:-0}" -ge 1
check "... and its CPU time" grep -q "^agentd_session_cpu_seconds_total{session=\"$CID\"} " <<<"$M"
for f in memory_bytes cpu_seconds_total memory_peak_bytes tasks; do
	check "# HELP agentd_session_$f says it is the cgroup's" \
		grep -q "^# HELP agentd_session_$f .*cgroup" <<<"$M"
done
for f in memory_bytes cpu_seconds_total; do
	check "# HELP agentd_session_$f says /proc for a session without one" \
		grep -q "^# HELP agentd_session_$f .*without a cgroup.*/proc" <<<"$M"
done
if out=$(promtool check metrics <<<"$M" 2>&1); then
	pass "promtool check metrics with a caged session: no problem"
else
	fail "promtool check metrics with a caged session: no problem" "$out"
fi

# A terminal client of the caged session is counted by the bridge, its route timed.
start_client t1 "/sessions/$CID/terminal"
wait_line t1 '^open' 10 || fail "a terminal client connects" "$(cat "$T/t1.log")"
scrape
assert_eq "a connected terminal: agentd_bridge_clients{kind=\"terminal\"} 1" 1 \
	"$(metric "$M" 'agentd_bridge_clients{kind="terminal"}')"
check "... its route counted and timed" \
	grep -Eq '^agentd_bridge_dispatch_duration_seconds_bucket\{route="/sessions/\*/terminal",le="\+Inf"\} [1-9]' <<<"$M"
stop_client t1
if wait_for 10 sh -c "curl -q -s -H 'Authorization: Bearer $VIEWER' '$BASE_URL/metrics' |
	grep -qx 'agentd_bridge_clients{kind=\"terminal\"} 0'"; then
	pass "the closed terminal is no longer counted"
else
	fail "the closed terminal is no longer counted"
fi

MEM0=$MEM
touch "$T/code/widgets-issue-7/.grow"
check "the caged agent holds 64 MiB more" wait_for 30 test -e "$T/code/widgets-issue-7/.grown"
caged_scrape
check "the figure moves: $MEM0 -> $MEM (at least 60 MiB more)" \
	awk -v a="$MEM0" -v b="$MEM" 'BEGIN { exit !(b != "" && b - a >= 60 * 1048576) }'
check "... and is still the cgroup's ($MEM, cgroup $CG_LO..$CG_HI)" near "$CG_LO" "$CG_HI" "$MEM"
check "... the peak follows ($PEAK)" \
	awk -v p="$PEAK" -v m="$MEM" 'BEGIN { exit !(p != "" && p + 4 * 1048576 >= m) }'
get_session "$CID"
check "... and agrees with GET /sessions/$CID's usage.memoryBytes" \
	near "$CG_LO" "$CG_HI" "$(jq -r .usage.memoryBytes <<<"$BODY")"
api DELETE "/sessions/$CID"
assert_status "DELETE the caged session" 200

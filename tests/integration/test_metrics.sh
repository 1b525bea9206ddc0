#!/usr/bin/env bash
# GET /metrics (docs/API.md "Metrics"): through nginx's door with a read-only token or
# AGENTD_METRICS_TOKEN (which opens nothing else), refused without credentials; the text passes
# `promtool check metrics`; the numbers move when a session is created and when a permission
# request waits; a real Prometheus scrapes it (up == 1, an agentd_ series queried over its HTTP
# API); the example alert rules pass `promtool check rules` and their unit test.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

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
trap 'rc=$?; stop_prometheus; kill_sse_clients; (exit $rc); cleanup' EXIT

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

# Shared setup of the scripts that drive the REAL claude CLI offline (sourced after lib.sh):
# the pinned CLI from the npm registry in a cache directory, the fake Messages API
# (tests/fakes/messages_api.py) on loopback, the CLI's pre-seeded state in $T/home, a stack whose
# agent gets the fake API's address, and the helpers for one structured turn over SSE.
# Environment: AGENTD_TEST_CLAUDE_CACHE, AGENTD_TEST_CLAUDE_VERSION (default 2.1.328),
# AGENTD_TEST_CLAUDE=<claude executable> (no npm install); see tests/integration/test_real_claude.sh.
# shellcheck shell=bash disable=SC2034

RC_DIR=$REPO/tests/integration/real_claude
FAKE_API=$REPO/tests/fakes/messages_api.py
NPM_PACKAGE=@anthropic-ai/claude-code
CLAUDE_VERSION=${AGENTD_TEST_CLAUDE_VERSION:-2.1.328}
API_KEY=sk-ant-test-0123456789abcdefghij-not-a-real-key
TURN_WAIT=90 # seconds for a structured turn
LOCK_WAIT=300
API_PID=
SSE_PID=
API_LOG=$T/api-requests.jsonl # not under $T/logs: its lines are whole prompts

# The fake API and curl must go even when a check fails; lib.sh's cleanup does the rest.
rc_stop_helpers() {
	[ -n "$SSE_PID" ] && kill "$SSE_PID" 2>/dev/null
	[ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null && wait "$API_PID" 2>/dev/null
	API_PID=
}
trap 'rc=$?; rc_stop_helpers; (exit $rc); cleanup' EXIT

rc_cache_dir() {
	local d
	if [ -n "${AGENTD_TEST_CLAUDE_CACHE:-}" ]; then
		echo "$AGENTD_TEST_CLAUDE_CACHE"
		return
	fi
	d=/var/cache/agentd-tests/claude-code
	if mkdir -p "$d" 2>/dev/null && [ -w "$d" ]; then
		echo "$d"
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/agentd-tests/claude-code"
	fi
}

# rc_install_claude: sets CLAUDE (the executable). Installs $NPM_PACKAGE@$CLAUDE_VERSION into the
# cache unless that version is there already (under a lock: runs may share the cache).
rc_install_claude() {
	local lockfd out cache
	if [ -n "${AGENTD_TEST_CLAUDE:-}" ]; then
		CLAUDE=$AGENTD_TEST_CLAUDE
	else
		cache=$(rc_cache_dir)
		CLAUDE=$cache/node_modules/.bin/claude
		if ! mkdir -p "$cache"; then
			fail "the CLI cache $cache can be created"
			return 1
		fi
		exec {lockfd}>"$cache/.lock"
		if ! flock -w "$LOCK_WAIT" "$lockfd"; then
			fail "lock $cache/.lock within $LOCK_WAIT s (another npm install is running)"
			return 1
		fi
		out=$(HOME=$T/home "$CLAUDE" --version 2>/dev/null)
		if [ "${out%% *}" != "$CLAUDE_VERSION" ]; then
			if ! command -v npm >/dev/null; then
				fail "npm is installed" "install nodejs and npm (tests/run does)"
				return 1
			fi
			log "installing $NPM_PACKAGE@$CLAUDE_VERSION into $cache (about 360 MB)"
			if ! npm install --prefix "$cache" --no-audit --no-fund --save-exact \
				"$NPM_PACKAGE@$CLAUDE_VERSION" >"$T/logs/npm.log" 2>&1; then
				fail "npm install $NPM_PACKAGE@$CLAUDE_VERSION" "$(tail -n 30 "$T/logs/npm.log")"
				return 1
			fi
			# An npm that skips install scripts leaves the stub: run the postinstall then.
			if ! HOME=$T/home "$CLAUDE" --version >/dev/null 2>&1; then
				(cd "$cache/node_modules/$NPM_PACKAGE" && node install.cjs) \
					>>"$T/logs/npm.log" 2>&1
			fi
		fi
		exec {lockfd}>&-
	fi
	if ! out=$(HOME=$T/home "$CLAUDE" --version 2>&1); then
		fail "the claude CLI runs (claude --version)" "$out"
		return 1
	fi
	log "claude CLI: $CLAUDE, version $out"
}

rc_start_fake_api() {
	local deadline=$((SECONDS + 20))
	python3 "$FAKE_API" --port 0 --port-file "$T/api.port" --log "$API_LOG" \
		>>"$T/logs/fake-api.log" 2>&1 &
	API_PID=$!
	while [ ! -s "$T/api.port" ]; do
		if ! alive "$API_PID" || [ $SECONDS -ge $deadline ]; then
			fail "the fake Messages API starts" "$(cat "$T/logs/fake-api.log")"
			return 1
		fi
		sleep 0.1
	done
	API_PORT=$(cat "$T/api.port")
	log "fake Messages API on 127.0.0.1:$API_PORT (pid $API_PID)"
}

# rc_seed_home WORKTREE: the CLI's own state: onboarding done, dark theme, the worktree trusted,
# the API key approved (the CLI remembers approved keys by their last 20 characters).
rc_seed_home() {
	jq -n --arg wt "$1" --arg key "${API_KEY: -20}" '{
		hasCompletedOnboarding: true, theme: "dark",
		customApiKeyResponses: {approved: [$key], rejected: []},
		projects: {($wt): {hasTrustDialogAccepted: true}}}' >"$T/home/.claude.json"
}

# rc_start_stack: the stack with the real CLI as agent, talking to the fake API.
rc_start_stack() {
	local env="HOME PATH LANG ANTHROPIC_API_KEY ANTHROPIC_BASE_URL CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC DISABLE_TELEMETRY DISABLE_AUTOUPDATER"
	start_stack AGENTD_CLAUDE="$CLAUDE" AGENTD_AGENT_ENV="$env" \
		ANTHROPIC_BASE_URL="http://127.0.0.1:$API_PORT" ANTHROPIC_API_KEY="$API_KEY" \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1
}

# rc_test_claudes: pids of every claude process of this test, wherever it runs (its HOME is ours).
rc_test_claudes() {
	local p
	for p in $(pgrep -x claude); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "HOME=$T/home" && echo "$p"
	done
}

# rc_sse_start ID PROMPT: POST /sessions/ID/prompt in the background; the stream goes to
# $T/sse.out, the response head to $T/sse.headers (written as they arrive).
rc_sse_start() {
	: >"$T/sse.out"
	: >"$T/sse.headers"
	curl -sN -m "$TURN_WAIT" -X POST -H 'Content-Type: application/json' \
		--data-binary "$(jq -cn --arg p "$2" '{prompt: $p}')" -D "$T/sse.headers" \
		-o "$T/sse.out" "$BASE_URL/sessions/$1/prompt" &
	SSE_PID=$!
}

rc_sse_running() { [ -n "$SSE_PID" ] && alive "$SSE_PID"; }

# rc_sse_reap: SSE_RC = curl's exit status once it ended.
rc_sse_reap() {
	wait "$SSE_PID"
	SSE_RC=$?
	SSE_PID=
}

rc_sse_status() { head -n 1 "$T/sse.headers" 2>/dev/null | awk '{ print $2 }'; }

# rc_sse_data EVENT: the data of the first SSE event named EVENT in $T/sse.out.
rc_sse_data() {
	awk -v ev="$1" '
		/^event: / { name = substr($0, 8); sub(/\r$/, "", name); next }
		/^data: / && name == ev { d = substr($0, 7); sub(/\r$/, "", d); print d; exit }
		/^\r?$/ { name = "" }' "$T/sse.out"
}

rc_sse_events() { grep '^event: ' "$T/sse.out" | cut -c8- | tr -d '\r' | tr '\n' ' '; }

# rc_wait_sse_until PATTERN: waits (up to TURN_WAIT) until the stream has a line matching PATTERN
# (grep -E) or ends. Returns 0 when the pattern was seen.
rc_wait_sse_until() {
	local deadline=$((SECONDS + TURN_WAIT))
	while [ $SECONDS -lt $deadline ]; do
		grep -qE "$1" "$T/sse.out" && return 0
		rc_sse_running || break
		sleep 0.1
	done
	grep -qE "$1" "$T/sse.out"
}

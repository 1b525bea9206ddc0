# Helpers of the tests that run the REAL claude CLI offline (sourced after lib.sh): the CLI from
# the npm registry, installed once into a cache directory, and a fake Messages API on loopback
# (tests/fakes/messages_api.py) that logs every request to $API_LOG.
# Environment: AGENTD_TEST_CLAUDE_CACHE (default /var/cache/agentd-tests/claude-code, or
# ~/.cache/agentd-tests/claude-code when that is not writable), AGENTD_TEST_CLAUDE_VERSION
# (default 2.1.328), AGENTD_TEST_CLAUDE=<claude executable> (no npm install).
# shellcheck shell=bash disable=SC2034

# shellcheck source=SCRIPTDIR/../../fakes/lib_fakes.sh
source "$REPO/tests/fakes/lib_fakes.sh"

FAKE_API=$REPO/tests/fakes/messages_api.py
NPM_PACKAGE=@anthropic-ai/claude-code
CLAUDE_VERSION=${AGENTD_TEST_CLAUDE_VERSION:-2.1.328}
API_KEY=sk-ant-test-0123456789abcdefghij-not-a-real-key
LOCK_WAIT=300
API_PID=
API_LOG=$T/api-requests.jsonl # not under $T/logs: its lines are whole prompts

# ------------------------------------------------------------------------------------------------
# the CLI

cache_dir() {
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

# install_claude: sets CLAUDE (the executable), CLAUDE_EXE (what /proc/<pid>/exe shows) and
# CLAUDE_VERSION_OUT (what claude --version says). Counts no check.
# Installs $NPM_PACKAGE@$CLAUDE_VERSION into the cache unless that version is there already.
install_claude() {
	local t0 lockfd out cache
	if [ -n "${AGENTD_TEST_CLAUDE:-}" ]; then
		CLAUDE=$AGENTD_TEST_CLAUDE
	else
		cache=$(cache_dir)
		CLAUDE=$cache/node_modules/.bin/claude
		if ! mkdir -p "$cache"; then
			fail "the CLI cache $cache can be created"
			return 1
		fi
		# Two test runs must not install into the same directory at once.
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
			t0=$EPOCHREALTIME
			log "installing $NPM_PACKAGE@$CLAUDE_VERSION into $cache (about 360 MB)"
			if ! npm install --prefix "$cache" --no-audit --no-fund --save-exact \
				"$NPM_PACKAGE@$CLAUDE_VERSION" >"$T/logs/npm.log" 2>&1; then
				fail "npm install $NPM_PACKAGE@$CLAUDE_VERSION" "$(tail -n 30 "$T/logs/npm.log")"
				return 1
			fi
			# The package's postinstall copies the native binary over a stub; an npm that
			# skips install scripts leaves the stub, so run it then.
			if ! HOME=$T/home "$CLAUDE" --version >/dev/null 2>&1; then
				(cd "$cache/node_modules/$NPM_PACKAGE" && node install.cjs) \
					>>"$T/logs/npm.log" 2>&1
			fi
			log "npm install took $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
		fi
		exec {lockfd}>&-
	fi
	if ! out=$(HOME=$T/home "$CLAUDE" --version 2>&1); then
		fail "the claude CLI runs (claude --version)" "$out" \
			"$(tail -n 30 "$T/logs/npm.log" 2>/dev/null)"
		return 1
	fi
	log "claude CLI: $CLAUDE, version $out"
	CLAUDE_VERSION_OUT=$out
	CLAUDE_EXE=$(readlink -f "$CLAUDE")
}

# assert_pinned_claude: after install_claude, one check that the cached CLI is the pinned version
# (none with AGENTD_TEST_CLAUDE, which may be any version). Apart from install_claude so that
# each script decides which checks it counts.
assert_pinned_claude() {
	if [ -z "${AGENTD_TEST_CLAUDE:-}" ]; then
		assert_eq "claude --version is the pinned $CLAUDE_VERSION" "$CLAUDE_VERSION (Claude Code)" \
			"$CLAUDE_VERSION_OUT"
	fi
}

# test_claudes: pids of every claude process of this test, wherever it runs (its HOME is ours).
test_claudes() {
	local p
	for p in $(pgrep -x claude); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "HOME=$T/home" && echo "$p"
	done
}

# ------------------------------------------------------------------------------------------------
# the TUI and the fake API

pane_text() { tmx capture-pane -p -J -t "=$1:" 2>/dev/null; }

# wait_pane TMUXNAME FIXED_STRING TIMEOUT
wait_pane() {
	local deadline=$((SECONDS + $3))
	while :; do
		pane_text "$1" | grep -qF -- "$2" && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.3
	done
}

# pane_settle TMUXNAME TIMEOUT: waits until the pane's text has stayed the same for 0.5 s. A TUI
# dialog that is drawn is not yet one that takes keys (the CLI attaches its input handler after
# the render): a key sent at once can be lost. Returns 1 when the pane still changes at TIMEOUT.
pane_settle() {
	local deadline=$((SECONDS + $2)) last now same=0
	last=$(pane_text "$1")
	while [ $same -lt 5 ]; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
		now=$(pane_text "$1")
		if [ "$now" == "$last" ]; then
			same=$((same + 1))
		else
			same=0
			last=$now
		fi
	done
}

# main_requests: the conversation requests the fake API got (those offering tools; the CLI also
# asks for titles and the like without tools), one compact {"messages":[...]} a line.
main_requests() {
	jq -c 'select(.method == "POST" and (.path | startswith("/v1/messages")) and
		(.body.tools | type == "array" and length > 0)) | {messages: .body.messages}' \
		"$API_LOG" 2>/dev/null
}

start_fake_api() {
	fake_start API_PID API_PORT "the fake Messages API" "$T/logs/fake-api.log" "$T/api.port" \
		"$FAKE_API" --log "$API_LOG" || return 1
	log "fake Messages API on 127.0.0.1:$API_PORT (pid $API_PID)"
}

# ------------------------------------------------------------------------------------------------
# the stack

TURN_WAIT=90 # seconds for a structured turn
SSE_PID=
# What the agent gets: the fake API's address and key, and no traffic of its own.
AGENT_ENV="HOME PATH LANG ANTHROPIC_API_KEY ANTHROPIC_BASE_URL CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC DISABLE_TELEMETRY DISABLE_AUTOUPDATER"

# The fake API and curl must go even when a check fails; lib.sh's cleanup does the rest.
stop_helpers() {
	[ -n "$SSE_PID" ] && kill "$SSE_PID" 2>/dev/null
	[ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null && wait "$API_PID" 2>/dev/null
	API_PID=
}
trap 'rc=$?; stop_helpers; (exit $rc); cleanup' EXIT

# seed_home WORKTREE...: the CLI's own state: onboarding done, dark theme, the worktrees trusted,
# the API key approved (the CLI remembers approved keys by their last 20 characters).
seed_home() {
	printf '%s\n' "$@" | jq -R . | jq -s --arg key "${API_KEY: -20}" '{
		hasCompletedOnboarding: true, theme: "dark",
		customApiKeyResponses: {approved: [$key], rejected: []},
		projects: (map({key: ., value: {hasTrustDialogAccepted: true}}) | from_entries)}' \
		>"$T/home/.claude.json"
}

# start_real_stack [VAR=value ...]: the stack with the real CLI as agent, talking to the fake
# API (and the further variables given).
start_real_stack() {
	start_stack AGENTD_CLAUDE="$CLAUDE" AGENTD_AGENT_ENV="$AGENT_ENV" \
		ANTHROPIC_BASE_URL="http://127.0.0.1:$API_PORT" ANTHROPIC_API_KEY="$API_KEY" \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 "$@"
}

# ------------------------------------------------------------------------------------------------
# the structured turn: POST /prompt through nginx and the bridge

# sse_start ID PROMPT: POST /sessions/ID/prompt in the background; the stream goes to $T/sse.out,
# the response head to $T/sse.headers (written as it arrives).
sse_start() {
	: >"$T/sse.out"
	: >"$T/sse.headers"
	curl -sN -m "$TURN_WAIT" -X POST -H 'Content-Type: application/json' \
		--data-binary "$(jq -cn --arg p "$2" '{prompt: $p}')" -D "$T/sse.headers" \
		-o "$T/sse.out" "$BASE_URL/sessions/$1/prompt" &
	SSE_PID=$!
}

sse_running() { [ -n "$SSE_PID" ] && alive "$SSE_PID"; }

# sse_reap: SSE_RC = curl's exit status once it ended (bash keeps it for wait; not in a subshell).
sse_reap() {
	wait "$SSE_PID"
	SSE_RC=$?
	SSE_PID=
}

sse_status() { head -n 1 "$T/sse.headers" 2>/dev/null | awk '{ print $2 }'; }

# sse_data EVENT: the data of the first SSE event named EVENT in $T/sse.out.
sse_data() {
	awk -v ev="$1" '
		/^event: / { name = substr($0, 8); sub(/\r$/, "", name); next }
		/^data: / && name == ev { d = substr($0, 7); sub(/\r$/, "", d); print d; exit }
		/^\r?$/ { name = "" }' "$T/sse.out"
}

# re STRING: STRING as an extended regular expression matching itself.
re() { printf '%s' "$1" | sed 's/[][\.^$*+?(){}|]/\\&/g'; }

sse_events() { grep '^event: ' "$T/sse.out" | cut -c8- | tr -d '\r' | tr '\n' ' '; }

# wait_sse_until PATTERN: waits (up to TURN_WAIT) until the stream has a line matching PATTERN
# (grep -E) or ends. Returns 0 when the pattern was seen.
wait_sse_until() {
	local deadline=$((SECONDS + TURN_WAIT))
	while [ $SECONDS -lt $deadline ]; do
		grep -qE "$1" "$T/sse.out" && return 0
		sse_running || break
		sleep 0.1
	done
	grep -qE "$1" "$T/sse.out"
}

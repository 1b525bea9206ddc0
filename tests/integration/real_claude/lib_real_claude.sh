# Helpers of the tests that run the REAL claude CLI offline (sourced after lib.sh): the CLI from
# the npm registry, installed once into a cache directory, and a fake Messages API on loopback
# (tests/fakes/messages_api.py) that logs every request to $API_LOG.
# Environment: AGENTD_TEST_CLAUDE_CACHE (default /var/cache/agentd-tests/claude-code, or
# ~/.cache/agentd-tests/claude-code when that is not writable), AGENTD_TEST_CLAUDE_VERSION
# (default 2.1.328), AGENTD_TEST_CLAUDE=<claude executable> (no npm install).
# shellcheck shell=bash disable=SC2034

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

# install_claude: sets CLAUDE (the executable) and CLAUDE_EXE (what /proc/<pid>/exe shows).
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
	if [ -z "${AGENTD_TEST_CLAUDE:-}" ]; then
		assert_eq "claude --version is the pinned $CLAUDE_VERSION" "$CLAUDE_VERSION (Claude Code)" "$out"
	fi
	CLAUDE_EXE=$(readlink -f "$CLAUDE")
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

# main_requests: the conversation requests the fake API got (those offering tools; the CLI also
# asks for titles and the like without tools), one compact {"messages":[...]} a line.
main_requests() {
	jq -c 'select(.method == "POST" and (.path | startswith("/v1/messages")) and
		(.body.tools | type == "array" and length > 0)) | {messages: .body.messages}' \
		"$API_LOG" 2>/dev/null
}

start_fake_api() {
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

# The real codex, gemini and opencode CLIs offline (sourced after lib.sh and lib_fakes.sh by
# test_real_agents_*.sh). The CLIs are tests/package.json's pins, installed by tests/run
# (`npm ci` in tests/); each talks to a fake model API of tests/fakes on loopback, which logs
# every request (notes: /work/shared/notes/agent-clis.md).
#   codex    -> openai_api.py, POST /v1/responses, through a custom provider in
#               $CODEX_HOME/config.toml (codex no longer reads OPENAI_BASE_URL)
#   opencode -> openai_api.py, POST /v1/chat/completions, through an openai-compatible provider
#               in OPENCODE_CONFIG_CONTENT
#   gemini   -> gemini_api.py, :streamGenerateContent, through GOOGLE_GEMINI_BASE_URL
# shellcheck shell=bash disable=SC2034

source "$REPO/tests/fakes/lib_fakes.sh"

NODE_MODULES=$REPO/tests/node_modules
# codex.js stays as the parent of the vendored binary on Node 20 (no process.execve): run the
# binary itself, as a daemon should.
CODEX_EXE=$NODE_MODULES/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
GEMINI_EXE=$NODE_MODULES/@google/gemini-cli/bundle/gemini.js
# opencode's postinstall puts the Bun-built binary here (a stub when install scripts were off).
OPENCODE_EXE=$NODE_MODULES/opencode-ai/bin/opencode.exe
CODEX_VERSION=0.169.0
GEMINI_VERSION=0.61.0
OPENCODE_VERSION=1.18.33
GEMINI_MODEL=gemini-2.5-flash # pinned: "auto" first asks a classifier model
FAKE_API_KEY=fake-key-0123456789abcdefghij
OPENAI_PID=
GEMINI_PID=
OPENAI_LOG=$T/logs/openai-requests.jsonl
GEMINI_LOG=$T/logs/gemini-requests.jsonl

# assert_pinned_agents: each CLI is there and is the pinned version.
assert_pinned_agents() {
	assert_match "codex is $CODEX_VERSION" "^codex-cli $(re "$CODEX_VERSION")\$" \
		"$("$CODEX_EXE" --version 2>&1)"
	assert_eq "gemini is $GEMINI_VERSION" "$GEMINI_VERSION" \
		"$(GEMINI_CLI_NO_RELAUNCH=1 HOME=$T/smoke-home timeout 60 node "$GEMINI_EXE" --version 2>&1)"
	assert_eq "opencode is $OPENCODE_VERSION" "$OPENCODE_VERSION" \
		"$(HOME=$T/smoke-home timeout 60 "$OPENCODE_EXE" --version 2>&1)"
}

# re STRING: STRING as an extended regular expression that matches it literally.
re() { printf '%s' "$1" | sed 's/[][\.^$*+?(){}|]/\\&/g'; }

start_fake_apis() {
	fake_start OPENAI_PID OPENAI_PORT "the fake OpenAI API" "$T/logs/fake-openai.log" \
		"$T/openai.port" "$REPO/tests/fakes/openai_api.py" --log "$OPENAI_LOG" || return 1
	fake_start GEMINI_PID GEMINI_PORT "the fake Gemini API" "$T/logs/fake-gemini.log" \
		"$T/gemini.port" "$REPO/tests/fakes/gemini_api.py" --log "$GEMINI_LOG" || return 1
	log "fake OpenAI API on 127.0.0.1:$OPENAI_PORT, fake Gemini API on 127.0.0.1:$GEMINI_PORT"
}

stop_fake_apis() {
	[ -n "$OPENAI_PID" ] && kill "$OPENAI_PID" 2>/dev/null && wait "$OPENAI_PID" 2>/dev/null
	[ -n "$GEMINI_PID" ] && kill "$GEMINI_PID" 2>/dev/null && wait "$GEMINI_PID" 2>/dev/null
	OPENAI_PID= GEMINI_PID=
}

# codex_provider_toml: the lines of config.toml that send codex to the fake Responses API.
codex_provider_toml() {
	cat <<TOML
model = "fake-model"
model_provider = "fake"
[model_providers.fake]
name = "Fake"
base_url = "http://127.0.0.1:$OPENAI_PORT/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
TOML
}

# opencode_config: OPENCODE_CONFIG_CONTENT for the fake Chat Completions API.
opencode_config() {
	jq -cn --arg u "http://127.0.0.1:$OPENAI_PORT/v1" '{model: "fake/fake-model",
		provider: {fake: {npm: "@ai-sdk/openai-compatible",
			options: {baseURL: $u, apiKey: "{env:FAKE_API_KEY}"},
			models: {"fake-model": {name: "Fake", tool_call: true}}}}}'
}

# gemini_settings: settings.json for a gemini with an API key (headless runs need the auth type).
gemini_settings() {
	jq -cn '{security: {auth: {selectedType: "gemini-api-key"}}}'
}

# requests_with LOG WORD: how many requests the fake logged whose body holds WORD.
requests_with() {
	jq -c 'select(.method == "POST") | .body' "$1" 2>/dev/null | grep -cF -- "$2"
}

# need_codex_acp: sets CODEX_ACP_EXE to tests/package.json's codex-acp, or fails the script.
need_codex_acp() {
	CODEX_ACP_EXE=$NODE_MODULES/@zed-industries/codex-acp-linux-x64/bin/codex-acp
	if [ ! -x "$CODEX_ACP_EXE" ]; then
		fail "codex-acp is installed (tests/package.json)" "$CODEX_ACP_EXE is missing"
		exit 1
	fi
}

# start_acp_agents_stack [VAR=VALUE...]: the stack with codex, gemini and opencode sent to the
# fake APIs (start_fake_apis first), each asking before a shell command: codex-acp's home with
# the fake provider and escalations asked, gemini's and opencode's as in
# test_real_agents_structured.sh. The arguments go to start_stack after these.
start_acp_agents_stack() {
	mkdir -p "$T/home/.codex" "$T/home/.gemini" "$T/agent-tmp"
	codex_provider_toml | sed '1a approval_policy = "on-request"' >"$T/home/.codex/config.toml"
	gemini_settings >"$T/home/.gemini/settings.json"
	agent_owns "$T/home" "$T/agent-tmp"
	start_stack AGENTD_PERMISSION_TIMEOUT=300 AGENTD_AGENT_CODEX_ACP="$CODEX_ACP_EXE" \
		AGENTD_AGENT_GEMINI_COMMAND="$GEMINI_EXE" AGENTD_AGENT_OPENCODE_COMMAND="$OPENCODE_EXE" \
		AGENTD_AGENT_ENV="HOME PATH LANG TMPDIR FAKE_API_KEY GEMINI_API_KEY GOOGLE_GEMINI_BASE_URL GEMINI_MODEL OPENCODE_CONFIG_CONTENT OPENCODE_DISABLE_MODELS_FETCH" \
		TMPDIR="$T/agent-tmp" FAKE_API_KEY="$FAKE_API_KEY" GEMINI_API_KEY="$FAKE_API_KEY" \
		GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$GEMINI_PORT" GEMINI_MODEL="$GEMINI_MODEL" \
		OPENCODE_CONFIG_CONTENT="$(opencode_config | jq -c '. + {permission: {bash: "ask"}}')" \
		OPENCODE_DISABLE_MODELS_FETCH=1 "$@"
}

# codex_acps: the codex-acp processes of this test (working under $T; other tests run theirs).
codex_acps() {
	local p
	for p in $(pgrep -f "$CODEX_ACP_EXE"); do
		[[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$T"/* ]] && echo "$p"
	done
}

# --- a CLI's TUI in its pane, driven as a person would ----------------------------------------
TUI_WAIT=${TUI_WAIT:-90} # seconds for a TUI to show an answer (gemini's node start is the slowest)
TYPE_RETRY=${TYPE_RETRY:-10} # seconds type_line waits for the fake before it presses Enter again
ATTACH_PID=
# attach_client TMUXNAME: a tmux client on the session, in a terminal of its own (script(1)), as
# a browser's would be (opencode's TUI starts nothing until a terminal answers its queries).
attach_client() {
	setsid bash -c 'sleep 3600 | script -q -c "tmux -S \"$1\" attach -t \"=$2:\"" /dev/null' \
		_ "$TMUX_SOCK" "$1" </dev/null >/dev/null 2>&1 &
	ATTACH_PID=$!
}
detach_client() {
	[ -n "$ATTACH_PID" ] && kill -- "-$ATTACH_PID" 2>/dev/null
	ATTACH_PID=
}
pane_text() { tmx capture-pane -p -J -t "=$1:" 2>/dev/null; }
pane_history() { tmx capture-pane -p -J -S - -t "=$1:" 2>/dev/null; }
cmdline() { tr '\0' ' ' <"/proc/${1:-0}/cmdline" 2>/dev/null | sed 's/ $//'; }
# wait_pane TMUXNAME FIXED_STRING [TIMEOUT]: the TUI shows it (TIMEOUT: TUI_WAIT).
wait_pane() {
	local deadline=$((SECONDS + ${3:-$TUI_WAIT}))
	while :; do
		pane_text "$1" | grep -qF -- "$2" && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.3
	done
}
# pane_settle TMUXNAME: waits (up to 20 s) until the pane's text stays the same for 1 s: a TUI
# that still draws (a turn's end, its hooks running) may drop a key.
pane_settle() {
	local deadline=$((SECONDS + 20)) last now same=0
	last=$(pane_text "$1")
	while [ $same -lt 10 ] && [ $SECONDS -lt $deadline ]; do
		sleep 0.1
		now=$(pane_text "$1")
		if [ "$now" == "$last" ]; then same=$((same + 1)); else same=0 last=$now; fi
	done
}
# request_bodies LOG PATHPART: the request bodies of the fake that went to PATHPART.
request_bodies() {
	jq -c --arg p "$2" 'select(.method == "POST" and (.path | contains($p))) | .body' "$1" 2>/dev/null
}
# wait_request LOG PATHPART WORD...: waits (TUI_WAIT) until one request body to PATHPART holds
# every WORD.
wait_request() {
	local log=$1 part=$2 deadline=$((SECONDS + TUI_WAIT)) w bodies
	shift 2
	while :; do
		bodies=$(request_bodies "$log" "$part")
		for w in "$@"; do bodies=$(printf '%s\n' "$bodies" | grep -F -- "$w"); done
		[ -n "$bodies" ] && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.3
	done
}
# type_line TMUXNAME TEXT LOG PATHPART WORD: types TEXT into the TUI and submits it, until the
# fake got a request to PATHPART holding WORD: gemini was seen keeping an Enter that came while
# it finished a turn unanswered (the text stays in its input box); a second Enter on a submitted
# (empty) box does nothing.
type_line() {
	local try deadline
	pane_settle "$1"
	tmx send-keys -t "=$1:" -l "$2"
	sleep 1
	for try in 1 2 3 4; do
		tmx send-keys -t "=$1:" Enter
		deadline=$((SECONDS + TYPE_RETRY))
		while [ $SECONDS -lt $deadline ]; do
			request_bodies "$3" "$4" | grep -qF -- "$5" && return 0
			sleep 0.3
		done
	done
	return 1
}

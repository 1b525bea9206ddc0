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

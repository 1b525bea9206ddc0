#!/usr/bin/env bash
# The pinned codex, gemini and opencode CLIs (tests/package.json) run headless, offline, against
# the fake model APIs of tests/fakes: each CLI's prompt reaches its fake, the fake's answer comes
# back, and a second run that resumes the conversation by its id sends the earlier turn again.
# This proves the fakes speak what each CLI expects before any daemon is involved
# (test_real_agents_terminal.sh drives the same CLIs through agentd).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$REPO/tests/integration/real_agents/lib_real_agents.sh"
trap 'rc=$?; stop_fake_apis; (exit $rc); cleanup' EXIT

H=$T/smoke-home
mkdir -p "$H/.codex" "$H/.gemini" "$H/tmp" "$T/work/codex" "$T/work/gemini" "$T/work/opencode"
for d in codex gemini opencode; do git -C "$T/work/$d" init -q . || exit 1; done
assert_pinned_agents
start_fake_apis || exit 1
# codex refuses to place its helper binaries under the temporary directory, where $T is.
export TMPDIR=$H/tmp
RUN_WAIT=120

# --- codex: exec --json, then exec resume <thread id> -----------------------------------------
{
	codex_provider_toml
	printf '[projects."%s"]\ntrust_level = "trusted"\n' "$T/work/codex"
} >"$H/.codex/config.toml"
codex_run() {
	(cd "$T/work/codex" && HOME=$H CODEX_HOME=$H/.codex FAKE_API_KEY=$FAKE_API_KEY \
		timeout "$RUN_WAIT" "$CODEX_EXE" exec --json --skip-git-repo-check "$@" </dev/null \
		2>>"$T/logs/codex.err")
}
OUT=$(codex_run -- "say hello SMOKECODEXONE")
THREAD=$(printf '%s\n' "$OUT" | jq -r 'select(.type == "thread.started") | .thread_id' 2>/dev/null)
assert_match "codex: exec starts a thread" '^[0-9a-f-]{36}$' "$THREAD"
assert_eq "codex: the fake's answer comes back" "Hello from the fake model (SMOKECODEXONE)" \
	"$(printf '%s\n' "$OUT" | jq -r 'select(.type == "item.completed" and
		.item.type == "agent_message") | .item.text' 2>/dev/null)"
check "codex: the prompt reached POST /v1/responses" \
	test "$(jq -c 'select(.path == "/v1/responses") | .body' "$OPENAI_LOG" | grep -c SMOKECODEXONE)" -gt 0
OUT=$(codex_run resume "${THREAD:-none}" -- "again SMOKECODEXTWO")
assert_eq "codex: exec resume answers the new prompt" "Hello from the fake model (SMOKECODEXTWO)" \
	"$(printf '%s\n' "$OUT" | jq -r 'select(.type == "item.completed" and
		.item.type == "agent_message") | .item.text' 2>/dev/null)"
check "codex: the resumed request carries the earlier turn" sh -c \
	"jq -c 'select(.path == \"/v1/responses\") | .body' '$OPENAI_LOG' | grep SMOKECODEXTWO | grep -q SMOKECODEXONE"

# --- gemini: -p -o json, then --resume <session id> -------------------------------------------
gemini_settings >"$H/.gemini/settings.json"
gemini_run() {
	(cd "$T/work/gemini" && HOME=$H GEMINI_CLI_NO_RELAUNCH=1 GEMINI_API_KEY=$FAKE_API_KEY \
		GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$GEMINI_PORT" timeout "$RUN_WAIT" \
		node "$GEMINI_EXE" -m "$GEMINI_MODEL" --skip-trust -o json "$@" </dev/null \
		2>>"$T/logs/gemini.err")
}
OUT=$(gemini_run -p "say hello SMOKEGEMINIONE")
GSID=$(printf '%s' "$OUT" | jq -r '.session_id // empty' 2>/dev/null)
assert_match "gemini: -p names its session" '^[0-9a-f-]{36}$' "$GSID"
assert_eq "gemini: the fake's answer comes back" "Hello from the fake model (SMOKEGEMINIONE)" \
	"$(printf '%s' "$OUT" | jq -r .response 2>/dev/null)"
check "gemini: the prompt reached :streamGenerateContent" \
	test "$(jq -c 'select(.path | contains(":streamGenerateContent")) | .body' "$GEMINI_LOG" |
		grep -c SMOKEGEMINIONE)" -gt 0
OUT=$(gemini_run --resume "${GSID:-none}" -p "again SMOKEGEMINITWO")
assert_eq "gemini: --resume answers the new prompt" "Hello from the fake model (SMOKEGEMINITWO)" \
	"$(printf '%s' "$OUT" | jq -r .response 2>/dev/null)"
assert_eq "gemini: --resume keeps the session id" "$GSID" \
	"$(printf '%s' "$OUT" | jq -r .session_id 2>/dev/null)"
check "gemini: the resumed request carries the earlier turn" sh -c \
	"jq -c '.body' '$GEMINI_LOG' | grep SMOKEGEMINITWO | grep -q SMOKEGEMINIONE"

# --- opencode: run --format json, then run -s <session id> -------------------------------------
opencode_run() {
	(cd "$T/work/opencode" && HOME=$H XDG_CONFIG_HOME=$H/.config XDG_DATA_HOME=$H/.local/share \
		XDG_CACHE_HOME=$H/.cache XDG_STATE_HOME=$H/.local/state \
		OPENCODE_CONFIG_CONTENT="$(opencode_config)" OPENCODE_DISABLE_MODELS_FETCH=1 \
		OPENCODE_DISABLE_AUTOUPDATE=1 FAKE_API_KEY=$FAKE_API_KEY timeout "$RUN_WAIT" \
		"$OPENCODE_EXE" run --format json "$@" </dev/null 2>>"$T/logs/opencode.err")
}
OUT=$(opencode_run "say hello SMOKEOPENCODEONE")
OSID=$(printf '%s\n' "$OUT" | jq -r '.sessionID // empty' 2>/dev/null | head -n 1)
assert_match "opencode: run names its session" '^ses_[A-Za-z0-9]+$' "$OSID"
assert_eq "opencode: the fake's answer comes back" "Hello from the fake model (SMOKEOPENCODEONE)" \
	"$(printf '%s\n' "$OUT" | jq -r 'select(.type == "text") | .part.text' 2>/dev/null)"
check "opencode: the prompt reached POST /v1/chat/completions" \
	test "$(jq -c 'select(.path == "/v1/chat/completions") | .body' "$OPENAI_LOG" |
		grep -c SMOKEOPENCODEONE)" -gt 0
OUT=$(opencode_run -s "${OSID:-none}" "again SMOKEOPENCODETWO")
assert_eq "opencode: run -s answers the new prompt" "Hello from the fake model (SMOKEOPENCODETWO)" \
	"$(printf '%s\n' "$OUT" | jq -r 'select(.type == "text") | .part.text' 2>/dev/null)"
assert_eq "opencode: run -s keeps the session id" "$OSID" \
	"$(printf '%s\n' "$OUT" | jq -r '.sessionID // empty' 2>/dev/null | head -n 1)"
check "opencode: the resumed request carries the earlier turn" sh -c \
	"jq -c 'select(.path == \"/v1/chat/completions\") | .body' '$OPENAI_LOG' | grep SMOKEOPENCODETWO | grep -q SMOKEOPENCODEONE"

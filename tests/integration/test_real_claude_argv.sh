#!/usr/bin/env bash
# With the REAL claude CLI offline (see real_claude/lib_real_claude.sh): a
# prompt that looks like claude's options is the prompt, never an option.
# - terminal mode, prompt "--version please DASHONE": claude starts (it does not print its version
#   and exit), and the fake Messages API gets "--version please DASHONE" as the user's text; the
#   TUI shows the answer;
# - structured mode, prompt "--dangerously-skip-permissions": it reaches the fake API as the first
#   user message's text, and claude's argv has no such option.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$REPO/tests/integration/real_claude/lib_real_claude.sh"

TUI_WAIT=60  # seconds for the TUI to show an answer

# user_texts: the text of every user message the fake API got, one a line (system reminders
# removed), for the conversation requests.
user_texts() {
	main_requests | jq -r '.messages[] | select(.role == "user") | .content |
		if type == "string" then . else (.[] | select(.type == "text") | .text) end |
		gsub("<system-reminder>[\\s\\S]*?</system-reminder>"; "") | gsub("^\\s+|\\s+$"; "")' |
		grep -v '^$'
}

# wait_user_text TEXT TIMEOUT: the fake API got a user message whose text is exactly TEXT.
wait_user_text() {
	local deadline=$((SECONDS + $2))
	while :; do
		user_texts | grep -qxF -- "$1" && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.3
	done
}

install_claude || exit 1
assert_pinned_claude
start_fake_api || exit 1
make_remote acme widgets

# The CLI's own state: onboarding done, both worktrees trusted, the API key approved.
seed_home "$T/code/widgets-issue-1" "$T/code/widgets-issue-2"
start_real_stack || exit 1

# --- terminal mode --------------------------------------------------------------------------------
PROMPT1="--version please DASHONE"
api POST /sessions "$(jq -cn --arg p "$PROMPT1" '{repo: {owner: "acme", name: "widgets"}, issue: 1,
	prompt: $p}')"
assert_status "POST /sessions with a prompt starting with --: 201" 201
assert_json "the prompt is kept verbatim" .prompt "$(jq -cn --arg p "$PROMPT1" '$p')"
assert_state "widgets-1 is running" widgets-1 running 60
if wait_user_text "$PROMPT1" "$TUI_WAIT"; then
	pass "the fake API got '$PROMPT1' as the user's text"
else
	fail "the fake API got '$PROMPT1' as the user's text" "user texts: $(user_texts | head -n 5)" \
		"pane: $(pane_text widgets-1)"
fi
if wait_pane widgets-1 "Hello from the fake model (DASHONE)" "$TUI_WAIT"; then
	pass "the TUI shows the answer to it"
else
	fail "the TUI shows the answer to it" "$(pane_text widgets-1)"
fi
check_not "the pane does not show claude's version" grep -qF "$CLAUDE_VERSION (Claude Code)" \
	<(pane_text widgets-1)
T_CLAUDE=$(pane_pid widgets-1)
check "claude still runs in the pane" alive "${T_CLAUDE:-0}"
assert_eq "claude's argv ends its options with -- before the prompt" \
	"-- $PROMPT1" "$(tr '\0' '\n' <"/proc/${T_CLAUDE:-0}/cmdline" 2>/dev/null | tail -n 2 | tr '\n' ' ' | sed 's/ $//')"

# --- structured mode ------------------------------------------------------------------------------
PROMPT2="--dangerously-skip-permissions"
api POST /sessions "$(jq -cn --arg p "$PROMPT2" '{repo: {owner: "acme", name: "widgets"}, issue: 2,
	mode: "structured", prompt: $p}')"
assert_status "POST /sessions structured with prompt --dangerously-skip-permissions: 201" 201
assert_state "widgets-2 is running" widgets-2 running 60
if wait_user_text "$PROMPT2" "$TURN_WAIT"; then
	pass "the fake API got '$PROMPT2' as the first user message's text"
else
	fail "the fake API got '$PROMPT2' as the first user message's text" \
		"user texts: $(user_texts | head -n 5)" "$(tail -n 5 "$T/state/agents/widgets-2/events.log" 2>/dev/null)"
fi
S_CLAUDE=
for p in $(descendants "$(pane_pid widgets-2)"); do
	[ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" == "$CLAUDE_EXE" ] && S_CLAUDE=$p
done
check "a structured claude runs under agentd-host" test -n "$S_CLAUDE"
check_not "no word of claude's argv is --dangerously-skip-permissions" \
	grep -qxF -- "$PROMPT2" <(tr '\0' '\n' <"/proc/${S_CLAUDE:-0}/cmdline" 2>/dev/null)
check "claude runs with --replay-user-messages" \
	grep -qxF -- --replay-user-messages <(tr '\0' '\n' <"/proc/${S_CLAUDE:-0}/cmdline" 2>/dev/null)
# The session's event log holds the bootstrap prompt: claude's replay of it, right after its
# init (the web UI shows it as the user's first message).
EVLOG2=$T/state/agents/widgets-2/events.log
deadline=$((SECONDS + TURN_WAIT))
until grep -q '"event":"result"' "$EVLOG2" 2>/dev/null || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
assert_jq "the event log: system/init, then the prompt replayed (user, isReplay), then the answer" \
	"$(jq -cn --arg p "$PROMPT2" '$p') as \$p | "'[.[] | select(.event != "command_lifecycle")] as $e |
	 ($e | map(.event) | index("system")) as $i | $i != null and
	 $e[$i].data.subtype == "init" and $e[$i + 1].event == "user" and
	 $e[$i + 1].data.isReplay == true and $e[$i + 1].data.message.content == $p and
	 ($e[$i + 2:] | map(.event) | index("assistant")) != null' \
	"$(jq -sc . "$EVLOG2" 2>/dev/null)"

api DELETE "/sessions/widgets-1?force=true"
assert_status "DELETE widgets-1: 200" 200
api DELETE "/sessions/widgets-2?force=true"
assert_status "DELETE widgets-2: 200" 200

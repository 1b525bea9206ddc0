#!/usr/bin/env bash
# POST /sessions/<id>/mode through nginx with the fake claude: terminal -> structured -> terminal
# in the same tmux session and worktree, --session-id while claude has no transcript and
# --resume=<uuid> once it has one, the mode in the record, in GET and in the tmux option, exactly
# one claude under the pane after each switch, agentd-host answering on host.sock; a session
# created with "mode":"structured" gets its bootstrap prompt as the first user message; the
# refusals (400 bad mode, 404 unknown, 409 not running, same mode: 200 without a restart).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1
start_stack || exit 1

# is_fake_claude PID: PID runs the fake claude itself (argv[0] or the interpreter's script), not
# agentd-host, whose argv names claude after "--".
is_fake_claude() {
	tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | head -n 2 | grep -q 'tests/fakes/claude$'
}

# claudes_under PID: the fake claude processes at or below PID.
claudes_under() {
	local p
	for p in "$1" $(descendants "$1"); do
		is_fake_claude "$p" && echo "$p"
	done
}

# claudes_in DIR: every fake claude on the machine whose cwd is DIR (an orphan of an old pane
# process would show here, not under the pane).
claudes_in() {
	local p
	for p in $(pgrep -f 'tests/fakes/claude'); do
		[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" == "$1" ] && is_fake_claude "$p" && echo "$p"
	done
}

# one_claude DESC TMUXNAME: exactly one fake claude runs under the pane, and it is the only
# one in the session's worktree.
one_claude() {
	local pid under all wt deadline=$((SECONDS + 10))
	wt=$(tmx display -p -t "=$2:" '#{pane_current_path}' 2>/dev/null)
	while :; do
		pid=$(pane_pid "$2")
		under=$(claudes_under "$pid" | wc -l)
		all=$(claudes_in "$wt" | wc -l)
		[ "$under$all" == 11 ] && break
		[ $SECONDS -ge $deadline ] && break
		sleep 0.1
	done
	assert_eq "$1" "1 under the pane, 1 in the worktree" \
		"$under under the pane, $all in the worktree"
}

# host_turn SESSION PROMPT: one turn over host.sock; prints the event names, one a line.
host_turn() {
	python3 - "$T/run/agents/$1/host.sock" "$2" <<'EOF'
import json, socket, sys, time
deadline = time.time() + 20
while True:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        break
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(0.1)
s.settimeout(20)
s.sendall((json.dumps({"type": "prompt", "prompt": sys.argv[2]}) + "\n").encode())
f = s.makefile("rb")
for line in f:
    msg = json.loads(line)
    print(msg.get("event") or msg.get("type"))
    if msg.get("event") == "result":
        break
EOF
}

# pane_claude TMUXNAME: waits (10 s) for the record of the one fake claude under the pane.
pane_claude() {
	local pid deadline=$((SECONDS + 10)) c
	while [ $SECONDS -le $deadline ]; do
		pid=$(pane_pid "$1")
		c=$(claudes_under "$pid")
		if [ -n "$c" ] && [ -f "$T/home/fake-claude/$c.json" ]; then
			cat "$T/home/fake-claude/$c.json"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

create acme widgets 7
assert_status "create widgets-7" 201
assert_state "widgets-7 runs" widgets-7 running 10
WT=$(jq -r .worktree <<<"$BODY")
ASID=$(jq -r .agentSessionId <<<"$BODY")
PANE0=$(pane_pid widgets-7)
one_claude "one claude in terminal mode" widgets-7

# --- refusals change nothing ----------------------------------------------------------------------
api POST /sessions/widgets-7/mode '{"mode":"tui"}'
assert_status "an unknown mode is 400" 400
api POST /sessions/widgets-7/mode '{"mode":7}'
assert_status "a mode that is not a string is 400" 400
api POST /sessions/widgets-7/mode 'not json'
assert_status "a body that is not JSON is 400" 400
api POST /sessions/nope-1/mode '{"mode":"structured"}'
assert_status "an unknown session is 404" 404
api POST /sessions/widgets-7/mode '{"mode":"terminal"}'
assert_status "already terminal: 200" 200
assert_json "... with the session in terminal mode" .mode '"terminal"'
assert_eq "... and nothing restarted" "$PANE0" "$(pane_pid widgets-7)"

# --- terminal -> structured (no transcript yet: --session-id) -----------------------------------
api POST /sessions/widgets-7/mode '{"mode":"structured"}'
assert_status "switch to structured: 200" 200
assert_json "the answer shows mode structured" .mode '"structured"'
get_session widgets-7
assert_json "GET shows mode structured and running" '[.mode, .state]' '["structured","running"]'
assert_eq "the tmux option says structured" structured \
	"$(tmx show-options -v -t "=widgets-7:" @agentd_mode 2>&1)"
assert_eq "the pane cwd is still the worktree" "$WT" \
	"$(tmx display -p -t "=widgets-7:" '#{pane_current_path}' 2>&1)"
check_not "the terminal claude is gone" alive "$PANE0"
PANE1=$(pane_pid widgets-7)
assert_match "the pane runs agentd-host" 'agentd-host --set AGENTD_RUNTIME_DIR=[^ ]+ --set AGENTD_STATE_DIR=[^ ]+ --set AGENTD_PERMISSION_TIMEOUT=600 --set AGENTD_STOP_GRACE=[0-9]+ widgets-7 -- ' \
	"$(tr '\0' ' ' <"/proc/$PANE1/cmdline" 2>/dev/null)"
one_claude "one claude in structured mode" widgets-7
REC=$(pane_claude widgets-7)
assert_json "structured claude argv" '.argv[0:9]' \
	'["-p","--input-format","stream-json","--output-format","stream-json","--verbose","--replay-user-messages","--permission-prompt-tool","stdio"]' \
	"${REC:-null}"
assert_json "no transcript yet: --session-id=<uuid>" '.argv[9]' "\"--session-id=$ASID\"" "${REC:-null}"
# user: claude's replay of the prompt (--replay-user-messages), after its init.
assert_eq "a prompt over host.sock runs a turn to its result" "system user assistant result" \
	"$(host_turn widgets-7 'say hi' 2>&1 | grep -v '^accepted$' | tr '\n' ' ' | sed 's/ $//')"

# --- structured -> terminal, now with a transcript: --resume ------------------------------------
MANGLED=$(printf '%s' "$WT" | tr '/.' '--')
mkdir -p "$T/home/.claude/projects/$MANGLED"
echo '{}' >"$T/home/.claude/projects/$MANGLED/$ASID.jsonl"
api POST /sessions/widgets-7/mode '{"mode":"terminal"}'
assert_status "switch back to terminal: 200" 200
assert_json "GET shows terminal" .mode '"terminal"'
check_not "agentd-host is gone" alive "$PANE1"
assert_eq "no host socket is left" "" "$(ls "$T/run/agents/widgets-7/host.sock" 2>/dev/null)"
one_claude "one claude in terminal mode again" widgets-7
REC=$(claude_record widgets-7 10)
assert_json "terminal claude resumes: --resume=<uuid>, the hooks' settings, no prompt" '.argv' \
	"[\"--resume=$ASID\",\"--settings=<settings>\"]" "${REC:-null}"
assert_eq "the tmux option says terminal" terminal \
	"$(tmx show-options -v -t "=widgets-7:" @agentd_mode 2>&1)"

api POST /sessions/widgets-7/mode '{"mode":"structured"}'
REC=$(pane_claude widgets-7)
assert_json "structured again with a transcript: --resume=<uuid>" '.argv[9]' \
	"\"--resume=$ASID\"" "${REC:-null}"
one_claude "one claude after the second switch" widgets-7

# --- the mode survives an agentd-api restart (record and tmux option agree) ---------------------
kill_api KILL || true
get_session widgets-7
assert_json "after kill -9 of agentd-api the session is still structured and running" \
	'[.mode, .state]' '["structured","running"]'

# --- created in structured mode: the bootstrap prompt is the first user message -----------------
api POST /sessions "$(jq -cn '{repo: {owner: "acme", name: "widgets"}, issue: 9,
	mode: "structured", prompt: "bootstrap: say hi"}')"
assert_status "create in structured mode: 201" 201
assert_json "... answered with mode structured" .mode '"structured"'
assert_state "widgets-9 runs" widgets-9 running 10
LOG9=$T/state/agents/widgets-9/events.log
deadline=$((SECONDS + 10))
until grep -q '"event":"result"' "$LOG9" 2>/dev/null || [ $SECONDS -ge $deadline ]; do sleep 0.1; done
assert_eq "the first turn ran to its result without any client" 1 \
	"$(grep -c '"event":"result"' "$LOG9" 2>/dev/null)"
assert_match "the pane shows the bootstrap prompt as the user's message" 'user: bootstrap: say hi' \
	"$(tmx capture-pane -p -t "=widgets-9:" 2>&1)"
assert_eq "... once (claude's replay of it is not printed again)" 1 \
	"$(tmx capture-pane -p -t "=widgets-9:" 2>&1 | grep -c 'user: bootstrap: say hi')"
assert_eq "the event log holds the bootstrap prompt, replayed by claude after its init" \
	'["system","user"] "bootstrap: say hi" true' \
	"$(jq -sc '[.[0:2][].event]' "$LOG9") $(jq -sc '.[1].data.message.content, .[1].data.isReplay' "$LOG9" | tr '\n' ' ' | sed 's/ $//')"
one_claude "one claude in widgets-9" widgets-9

# --- 409 when not running ---------------------------------------------------------------------------
tmx kill-session -t "=widgets-9"
kill_api KILL || true # the session is lost once its tmux session is gone
assert_state "widgets-9 is lost once its tmux session is gone" widgets-9 lost 10
api POST /sessions/widgets-9/mode '{"mode":"terminal"}'
assert_status "switching a lost session is 409" 409
assert_error_body "... with an error body"

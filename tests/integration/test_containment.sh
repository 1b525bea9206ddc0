#!/usr/bin/env bash
# Agents are contained. The stack runs as root (as deploy/up does); its agents
# run as the agents' user (lib.sh: AGENT_USER). From that user (setpriv with the pane's uid, gid
# and groups, and from inside a structured session's pane, through a tool the fake claude runs)
# an agent:
#   - runs as that user, in a worktree and clone it owns, under a tmux server that is root's;
#   - cannot connect to agentd-api's, agentd-bridge's or the tmux server's socket (EACCES), so
#     it cannot type into another pane through tmux, nor to nginx's trusted Tailscale listener;
#     it does reach the bridge's hook socket, where its claude's hooks report; another local user cannot reach a host's
#     socket either, and the bridge does not talk to a "host socket" that is not the agent's;
#   - cannot read or replace the token store, write a session record, the list view, the event
#     log, the tmux config, or read nginx's logs;
#   - through nginx on 127.0.0.1, with no credentials, forged Tailscale-User-* headers, guessed
#     cookie names or a made-up bearer token, can neither create, delete, type into a terminal,
#     prompt, nor answer a permission request: each is refused with 401 or 403, and nothing
#     happened. These checks run on every branch; they pass once the access control
#     (one door in nginx) is in.
# Last, an installation whose agents ran as root: deploy/up gives the base dir to the agent user
# once, and no commit, branch or uncommitted file is lost.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

PROBE=$REPO/tests/integration/containment/probe.py
STATE=$T/state

if [ "$(id -u)" -ne 0 ]; then
	fail "the containment test runs as root (the daemons do; the agents then do not)"
	exit 1
fi

# probe ARGS...: tests/integration/containment/probe.py as the agents' user.
probe() { as_agent python3 "$PROBE" "$@"; }

# proc_ids PID: "uid gid groups" of a process (real ids; all four uids must agree).
proc_ids() {
	awk '/^Uid:/ { u = $2; if ($3 != u || $4 != u || $5 != u) u = "mixed" }
		/^Gid:/ { g = $2 } /^Groups:/ { $1 = ""; gr = $0 }
		END { sub(/^ +/, "", gr); print u, g, gr }' "/proc/$1/status" 2>/dev/null
}

# assert_refused DESC STATUS: 401 or 403.
assert_refused() {
	if [ "$2" == 401 ] || [ "$2" == 403 ]; then
		pass "$1"
	else
		fail "$1" "expected 401 or 403, got ${2:-nothing}"
	fi
}

# The operator's admin token, where the access control finds it (agentd-api token add).
TOKEN=$(AGENTD_STATE_DIR=$STATE "$BUILD_DIR/fcgi-app/agentd-api" token add operator 2>"$T/logs/token.err")
check "the operator has a token" test -n "$TOKEN"
make_remote acme widgets
# With a Tailscale user, nginx's trusted listener for tailscale serve (where Tailscale's identity
# headers count) exists: the agent must not reach it either.
TS_SOCK=$T/ts/nginx.sock
start_stack AGENTD_STATE_DIR="$STATE" AGENTD_TAILSCALE_USERS=operator@example.com \
	AGENTD_TAILSCALE_SOCKET="$TS_SOCK" || exit 1

create acme widgets 1
assert_state "widgets-1 (terminal) runs" widgets-1 running 30
SID2=$(structured_session acme widgets 2) || exit 1
WT1=$T/code/widgets-issue-1
WT2=$T/code/widgets-issue-2
WWW_GID=$(getent group www-data | cut -d: -f3)

# --- who runs what -------------------------------------------------------------------------------
REC1=$(claude_record widgets-1 10)
check "the terminal agent started" test -n "$REC1"
PANE1=$(pane_pid widgets-1)
AGENT_IDS=$(proc_ids "${PANE1:-0}")
assert_eq "terminal: claude runs as the agents' user, group, and its groups alone" \
	"$AGENT_UID $AGENT_GID $(id -G "$AGENT_USER")" "$AGENT_IDS"
case " $AGENT_IDS " in
*" 0 "* | *" $WWW_GID "*) fail "the agent is in neither root's nor nginx's group" "$AGENT_IDS" ;;
*) pass "the agent is in neither root's nor nginx's group" ;;
esac
HOST2=$(pane_pid widgets-2)
CLAUDE2=
for p in $(descendants "${HOST2:-0}"); do
	tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q fakes/claude && CLAUDE2=$p
done
assert_eq "structured: agentd-host and its claude run as the agents' user" \
	"$AGENT_UID $AGENT_UID" "$(proc_ids "${HOST2:-0}" | cut -d' ' -f1) $(proc_ids "${CLAUDE2:-0}" | cut -d' ' -f1)"
assert_eq "the tmux server, agentd-api and agentd-bridge run as root" "0 0 0" \
	"$(proc_ids "$(tmx display -p '#{pid}')" | cut -d' ' -f1) $(proc_ids "$(api_pid)" | cut -d' ' -f1) $(proc_ids "$(bridge_pid)" | cut -d' ' -f1)"
assert_eq "the worktree and the bare clone are the agent's" "$AGENT_USER $AGENT_USER" \
	"$(stat -c %U "$WT1") $(stat -c %U "$(bare_clone acme widgets)")"
assert_eq "its HOME is the agent's (AGENTD_AGENT_HOME)" "$T/home" "$(jq -r .env.HOME <<<"$REC1")"
check "the agent commits in its worktree" agent_sh "$WT1" \
	'echo agent >agent.txt && git add agent.txt && git commit -q -m "by the agent"'
assert_eq "the commit is on the session's branch" "by the agent" \
	"$(git --git-dir="$(bare_clone acme widgets)" log -1 --format=%s feat/issue-1 2>&1)"
# A checkout of many files runs in two threads (core/worktree.c): both write as the agent.
make_heavy_remote
create acme big 3
assert_state "big-3 (3,000 files) runs" big-3 running 60
WT3=$T/code/big-issue-3
assert_eq "every file of a large worktree, its admin files and index are the agent's" "" \
	"$(find "$WT3" "$(bare_clone acme big)/worktrees/issue-3" ! -user "$AGENT_USER" 2>&1 | head -3)"
assert_eq "git, as the agent, sees all 3,000 files and nothing changed" "3000 " \
	"$(agent_sh "$WT3" 'echo "$(git ls-files | wc -l) $(git status --porcelain)"' 2>&1)"

# --- sockets ---------------------------------------------------------------------------------------
for s in api.sock bridge.sock tmux.sock; do
	assert_eq "the agent cannot connect to $s" EACCES "$(probe connect "$T/run/$s")"
done
assert_eq "the agent reaches the bridge's hook socket (claude's hooks report there)" ok \
	"$(probe connect "$T/run/hooks/hooks.sock")"
# The control: the refusal is the agent's, not the test's (nginx's workers reach the daemons).
assert_eq "www-data (nginx's workers) can connect to api.sock" ok \
	"$(setpriv --reuid=www-data --regid=www-data --init-groups -- env python3 "$PROBE" connect "$T/run/api.sock")"
assert_eq "the agent cannot connect to nginx's trusted Tailscale listener" EACCES \
	"$(probe connect "$TS_SOCK")"
# The control: there a Tailscale header is an identity (root, as tailscaled, gets in with it).
assert_eq "through the trusted listener a listed Tailscale login gets in" 200 \
	"$(curl -q -s -o /dev/null -w '%{http_code}' --unix-socket "$TS_SOCK" \
		-H 'Tailscale-User-Login: operator@example.com' "http://127.0.0.1:$PORT/sessions")"
check_not "tmux as the agent cannot send keys to another pane" \
	as_agent tmux -S "$TMUX_SOCK" send-keys -t =widgets-1: 'typed-through-tmux' Enter
assert_eq "another local user cannot reach a host's socket" EACCES \
	"$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- env python3 "$PROBE" connect "$T/run/agents/$SID2/host.sock")"
assert_eq "the agents' directory is the agent's, group root, 2750" "$AGENT_USER root 2750" \
	"$(stat -c '%U %G %a' "$T/run/agents")"
# The hosts' event logs outlive a reboot in the state dir: the same rules there.
assert_eq "the agents' directory in the state dir is the agent's, group root, 2750" \
	"$AGENT_USER root 2750" "$(stat -c '%U %G %a' "$STATE/agents")"
assert_eq "a host's event log there is the agent's" "$AGENT_USER" \
	"$(stat -c '%U' "$(host_log "$SID2")" 2>&1)"
assert_eq "another local user cannot read a host's event log" EACCES \
	"$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- env python3 "$PROBE" open "$(host_log "$SID2")" r)"
assert_eq "the agent cannot make a file in the state dir" EACCES \
	"$(probe open "$STATE/agent-was-here" create)"

# The host's directory is the agent's: it can put a link to tmux's socket where the bridge looks
# for its host. The bridge talks only to a socket the agent user listens on.
H=$T/run/agents/$SID2
as_agent mv "$H/host.sock" "$H/host.sock.real" && as_agent ln -s ../../tmux.sock "$H/host.sock"
api POST "/sessions/$SID2/prompt" '{"prompt":"say hello"}' -m 10
assert_status "a host socket that links to tmux's: the bridge answers 503" 503
check "... because that socket is not the agent user's" \
	grep -q "session $SID2: the socket at its host's path is not the agent user's" "$T/logs/up.log"
check "the tmux server still answers" tmx has-session -t =widgets-1
as_agent rm -f "$H/host.sock" && as_agent mv "$H/host.sock.real" "$H/host.sock"

# --- files -----------------------------------------------------------------------------------------
check "the token store exists" test -s "$STATE/tokens.json"
assert_eq "the agent cannot read the token store" EACCES "$(probe open "$STATE/tokens.json" r)"
assert_eq "... nor replace it" EACCES "$(probe rename "$STATE/tokens.json")"
assert_eq "the agent cannot read a record" EACCES "$(probe open "$T/state/sessions/widgets-1.json" r)"
assert_eq "... nor write one" EACCES "$(probe open "$T/state/sessions/widgets-1.json" w)"
assert_eq "... nor replace one" EACCES "$(probe rename "$T/state/sessions/widgets-1.json")"
assert_eq "... nor make one" EACCES "$(probe open "$T/state/sessions/widgets-9.json" create)"
assert_eq "the agent cannot read the list view (prompts, pending tools)" EACCES \
	"$(probe open "$T/run/sessions.json" r)"
assert_eq "the agent cannot write the list view" EACCES "$(probe open "$T/run/sessions.json" w)"
assert_eq "... nor replace it" EACCES "$(probe rename "$T/run/sessions.json")"
assert_eq "the agent cannot write the /events log" EACCES "$(probe open "$T/state/events.log" w)"
assert_eq "the agent cannot write the tmux config" EACCES "$(probe open "$T/run/tmux.conf" w)"
assert_eq "the agent cannot open deploy/up's lock (holding it would keep deploy/up from starting)" \
	EACCES "$(probe open "$T/run/up.lock" r)"
assert_eq "the agent cannot make a file in the runtime dir" EACCES \
	"$(probe open "$T/run/agent-was-here" create)"
assert_eq "the agent cannot add to the door's cache (nginx's workers' alone)" EACCES \
	"$(probe open "$T/run/auth-cache/agent-grant" create)"
assert_eq "the agent cannot read nginx's access log" EACCES \
	"$(probe open "$T/run/nginx/logs/access.log" r)"

# --- the same from inside the structured session's pane -------------------------------------------
# A tool the fake claude runs (after the operator allowed it), as an agent's tool runs.
IN_PANE="for s in api.sock bridge.sock tmux.sock; do python3 $PROBE connect $T/run/\$s; done;"
IN_PANE+=" python3 $PROBE open $STATE/tokens.json r; python3 $PROBE open $T/state/sessions/widgets-1.json w"
sse_start inside POST "/sessions/$SID2/prompt" \
	"$(jq -cn --arg c "( $IN_PANE ) >pane-probe.txt 2>&1" '{prompt: ("RUNBASH " + $c)}')"
if sse_wait_event inside '.event == "permission"' 20; then
	api POST "/sessions/$SID2/permissions/$(sse_events inside | jq -r 'select(.event == "permission") | .data | fromjson | .requestId' | head -n 1)" \
		'{"behavior":"allow"}'
	sse_wait_end inside 30
fi
assert_eq "inside the pane: api.sock, bridge.sock, tmux.sock, tokens.json, a record: EACCES" \
	"EACCES EACCES EACCES EACCES EACCES" "$(tr '\n' ' ' <"$WT2/pane-probe.txt" 2>/dev/null | sed 's/ $//')"
assert_eq "the tool ran as the agents' user (it wrote its output as it)" "$AGENT_USER" \
	"$(stat -c %U "$WT2/pane-probe.txt" 2>/dev/null)"

# --- HTTP to nginx on 127.0.0.1, as the agent ----------------------------------------------------
# Refused once the access control (one door in nginx) is in; every check runs on every branch.
R=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
declare -A CREDS=(
	[no credentials]=""
	[forged Tailscale headers]="Tailscale-User-Login: operator@example.com|Tailscale-User-Name: Operator|Tailscale-User-Profile-Pic: https://example.com/p.png"
	[guessed cookie names]="Cookie: agentd=$R; agentd_token=$R; agentd_session=$R; token=$R; session=$R"
	[a made-up bearer token]="Authorization: Bearer $R"
)
# cred_args NAME: -H arguments for probe.py.
cred_args() {
	local IFS='|' h
	CRED_ARGS=()
	for h in ${CREDS[$1]}; do CRED_ARGS+=(-H "$h"); done
}

# type: a terminal WebSocket, and the keys it would send.
for c in "${!CREDS[@]}"; do
	cred_args "$c"
	assert_refused "type ($c): the terminal WebSocket is refused" \
		"$(probe ws "$PORT" /sessions/widgets-1/terminal "${CRED_ARGS[@]}" --send $'agent-typed\r')"
done
sleep 0.5
assert_eq "nothing the agent typed reached a pane" "" \
	"$(tmx capture-pane -p -t =widgets-1: | grep -e agent-typed -e typed-through-tmux)"

# prompt
for c in "${!CREDS[@]}"; do
	cred_args "$c"
	assert_refused "prompt ($c)" "$(probe http "$PORT" POST "/sessions/$SID2/prompt" \
		"${CRED_ARGS[@]}" --data '{"prompt":"say hello"}')"
done

# answer a permission: the operator's turn waits for one.
deadline=$((SECONDS + 20))
while :; do
	sse_start op POST "/sessions/$SID2/prompt" '{"prompt":"RUNBASH touch approved-by-agent"}'
	sse_wait_event op '.event == "permission"' 10 && break
	sse_wait_end op 5
	[ $SECONDS -ge $deadline ] && break
	# A turn the agent started (where prompts are not refused yet) may still run.
	sleep 0.5
done
RID=$(sse_events op | jq -r 'select(.event == "permission") | .data | fromjson | .requestId' | head -n 1)
check "the operator's turn waits for a permission" test -n "$RID"
for c in "${!CREDS[@]}"; do
	cred_args "$c"
	assert_refused "answer a permission ($c)" "$(probe http "$PORT" POST \
		"/sessions/$SID2/permissions/$RID" "${CRED_ARGS[@]}" --data '{"behavior":"allow"}')"
done
sleep 0.5
check_not "the tool the agent tried to approve did not run" test -e "$WT2/approved-by-agent"
get_session "$SID2"
assert_jq "the permission still waits for the operator" \
	"[.pending[]?.requestId] | index(\"$RID\") != null"
api POST "/sessions/$SID2/permissions/$RID" '{"behavior":"deny","message":"no"}'
sse_wait_end op 20

# create
for c in "${!CREDS[@]}"; do
	cred_args "$c"
	assert_refused "create ($c)" "$(probe http "$PORT" POST /sessions "${CRED_ARGS[@]}" \
		--data "$(create_body acme widgets 9)")"
done
check_not "no session widgets-9 was made" test -e "$T/state/sessions/widgets-9.json"

# delete
for c in "${!CREDS[@]}"; do
	cred_args "$c"
	assert_refused "delete ($c)" "$(probe http "$PORT" DELETE /sessions/widgets-1 "${CRED_ARGS[@]}")"
done
get_session widgets-1
assert_json "widgets-1 still runs" .state '"running"'

# --- an installation whose agents ran as root: deploy/up gives the base dir to the agent, once ---
# Everything under the base dir root's again, with a commit and an uncommitted file made as root,
# as an older deploy/up left them: nothing of it may be lost.
stop_stack
chown -R -h root:root "$T/code"
git -C "$WT2" commit -q --allow-empty -m "made when agents were root" || fail "a commit as root"
echo "uncommitted, root's" >"$WT2/root-era.txt"
start_stack || exit 1
check "deploy/up says it gives the base dir to the agent" \
	grep -q "giving $T/code (worktrees, bare clones) to $AGENT_USER" "$T/logs/up.log"
assert_eq "nothing under the base dir is root's any more" "" \
	"$(find "$T/code" ! -user "$AGENT_USER" -print -quit)"
assert_eq "the root-era commit is still on the branch" "made when agents were root" \
	"$(git -C "$WT2" log -1 --format=%s feat/issue-2 2>&1)"
check "the root-era uncommitted file is still there" grep -q "uncommitted, root's" "$WT2/root-era.txt"
check "the agent commits on top of it" agent_sh "$WT2" \
	'git add root-era.txt && git commit -q -m "after the handover" && echo more >more.txt'
api DELETE "/sessions/$SID2"
assert_json "a dirty worktree is still kept" '[.status, .worktree, .reason]' \
	'["stopped","kept","uncommitted changes"]'
assert_eq "the branch has both commits" "after the handover|made when agents were root" \
	"$(git --git-dir="$(bare_clone acme widgets)" log -2 --format=%s feat/issue-2 | tr '\n' '|' | sed 's/|$//')"

#!/usr/bin/env bash
# Issue 22, cages: two sessions A (widgets-1) and B (widgets-2), each checked FROM INSIDE its pane
# as its agent, by a fake claude (tests/integration/cages/claude) that probes at every start and
# writes what it found into its own worktree. In terminal mode, in structured mode, after mode
# switches and after a restart of every daemon, A:
#   - runs as its own uid (the record's `uid`, AGENTD_SESSION_UIDS; not the agent user's, not
#     B's), with its own HOME (AGENTD_HOMES_DIR/<id>) as HOME, USER its uid's name, and
#     the secret of AGENTD_SECRETS_DIR in its environment (winning over AGENTD_AGENT_ENV's);
#   - its repository and HOME are its uid's on the host (so B's uid could not write them even
#     with the mount view bypassed), files it made stay its uid's across mode switches,
#     restarts and a reboot (the uid claimed again), and B's uid cannot reach its host socket;
#   - writes and commits in its own worktree, writes its HOME;
#   - cannot list or read B's worktree or HOME, the shared agent HOME, the token store, the
#     records, the /events log, the daemons' runtime dir or the secrets dir;
#   - sees no process but its own (no B, no daemon, no tmux), and kill -0, ptrace and
#     /proc/<pid>/environ against B's pane pids fail; B keeps running;
#   - has a /tmp of its own.
# The secret never appears in ps, a record, the API's answers or the logs.
source "$(dirname "$0")/lib.sh"

CAGE_CLAUDE=$REPO/tests/integration/cages/claude
SECRET=cage-s3cr3t-$$

if [ "$(id -u)" -ne 0 ]; then
	fail "the cages test runs as root (the daemons do; the agents then do not)"
	exit 1
fi
if ! command -v bwrap >/dev/null; then
	fail "bwrap is installed (Debian package bubblewrap)"
	exit 1
fi

mkdir -p "$T/secrets" && chmod 0700 "$T/secrets"
printf '%s\n' "$SECRET" >"$T/secrets/CAGE_SECRET"
printf 'hidden\n' >"$T/secrets/.hidden"
# A file only root may read in /tmp: the agent's /tmp is its own, so it must not be listed.
ROOT_TMP=$(mktemp /tmp/agentd-cage-root.XXXXXX)
chmod 0600 "$ROOT_TMP"
touch "$T/home/.template-marker"
# Another session's CLI home and caches in the shared HOME: not a new session's to have.
mkdir -p "$T/home/.agentd-agents/other-9" "$T/home/.cache/pip" "$T/home/.npm/_cacache"
printf 'secret\n' >"$T/home/.agentd-agents/other-9/auth.json"
touch "$T/home/.cache/pip/big" "$T/home/.npm/_cacache/big"
# Another conversation's transcript in the shared HOME, the template: no session's HOME gets it.
mkdir -p "$T/home/.claude/projects/-code-other-issue-9"
printf '{"secret":"transcript"}\n' >"$T/home/.claude/projects/-code-other-issue-9/t.jsonl"
# claude installed in the agent user's HOME the way its native installer does it (a link in
# ~/.local/bin to a version under ~/.local/share): that HOME is hidden in the cage, so the cage
# must run claude by its real path with that directory bound back read-only.
INSTALLED=$T/home/.local/share/claude/versions/1.0.0
mkdir -p "$INSTALLED" "$T/home/.local/bin"
printf '#!/bin/sh\nexec %q "$@"\n' "$CAGE_CLAUDE" >"$INSTALLED/claude"
chmod 0755 "$INSTALLED/claude"
ln -s "$INSTALLED/claude" "$T/home/.local/bin/claude"
chown -R "$AGENT_UID:$AGENT_GID" "$T/home/.local"
agent_owns "$T/home"

make_remote acme widgets
CAGE_STACK=(AGENTD_CAGE=auto AGENTD_CLAUDE="$T/home/.local/bin/claude" AGENTD_HOMES_DIR="$T/homes"
	AGENTD_SECRETS_DIR="$T/secrets" CAGE_SECRET=from-agent-env
	AGENTD_AGENT_ENV="HOME PATH LANG CAGE_SECRET")
start_stack "${CAGE_STACK[@]}" || exit 1
check "agentd-api says at start that sessions are caged" \
	grep -q "sessions are caged" "$T/logs/up.log"

WT_A=$T/code/widgets-issue-1
WT_B=$T/code/widgets-issue-2

# latest_probe WT [BEFORE]: the newest probe file in WT's .cage-probe/ (other than BEFORE, the
# newest one before a respawn), waiting up to 20 s.
latest_probe() {
	local f deadline=$((SECONDS + 20))
	while [ $SECONDS -le $deadline ]; do
		f=$(ls -t "$1"/.cage-probe/*.json 2>/dev/null | head -1)
		if [ -n "$f" ] && [ "$(basename "$f" .json)" != "${2:-}" ]; then
			cat "$f"
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# pane_tree TMUXNAME: the pane's pid and every process below it.
pane_tree() {
	local p
	p=$(pane_pid "$1") || return 1
	echo "$p"
	descendants "$p"
}

# session_uid N: the uid the record of widgets-N names (GET /sessions/<id>).
session_uid() { api GET "/sessions/widgets-$1" && jq -r '.uid // empty' <<<"$BODY"; }

# check_cage LABEL PROBE OWN_N OTHER_N: the checks on one probe of session OWN_N.
check_cage() {
	local label=$1 p=$2 own=$3 other=$4 uid
	uid=$(session_uid "$own")
	assert_match "$label: the session has a uid of its own" '^[0-9]+$' "$uid"
	assert_ne "$label: not the agent user's" "$AGENT_UID" "$uid"
	assert_ne "$label: not the other session's" "$(session_uid "$other")" "$uid"
	assert_eq "$label: runs as its own uid" "$uid" "$(jq -r .uid <<<"$p")"
	assert_eq "$label: HOME is the session's own" "$T/homes/widgets-$own" "$(jq -r .home <<<"$p")"
	assert_eq "$label: USER is its uid's name" "agentd-$uid" "$(jq -r .user <<<"$p")"
	assert_eq "$label: the secret file wins over AGENTD_AGENT_ENV" "$SECRET" \
		"$(jq -r .secret <<<"$p")"
	assert_eq "$label: commits in its own worktree" ok "$(jq -r .commit <<<"$p")"
	assert_eq "$label: writes its own HOME" ok "$(jq -r .home_write <<<"$p")"
	assert_eq "$label: lists its own worktree" listed "$(jq -r ".reach.wt$own" <<<"$p")"
	assert_eq "$label: lists its own HOME" listed "$(jq -r ".reach.home$own" <<<"$p")"
	local k
	# The shared HOME shows only the way to claude's installation, bound back read-only.
	assert_match "$label: the shared agent HOME shows nothing but claude's installation" \
		'^(\.local)?$' "$(jq -r '.shared_home_entries | join(" ")' <<<"$p")"
	for k in "wt$other" "home$other" tokens sessions events secrets api_sock \
		bridge_sock tmux_sock; do
		# absent, or an empty tmpfs where a hidden directory was
		assert_match "$label: cannot reach $k" '^(absent|empty)$' "$(jq -r ".reach.$k" <<<"$p")"
	done
	check_not "$label: sees no process of the other session" \
		grep -q -e "widgets-issue-$other" -e "widgets-$other" <<<"$(jq -r '.procs[]' <<<"$p")"
	check_not "$label: sees no daemon or tmux" \
		grep -q -e agentd-api -e agentd-bridge -e nginx -e "tmux" <<<"$(jq -r '.procs[]' <<<"$p")"
	check_not "$label: /tmp is its own" grep -qF "$(basename "$ROOT_TMP")" <<<"$(jq -r '.tmp[]' <<<"$p")"
	local bad
	bad=$(jq -r '.against | to_entries[] | select(.value.kill0 == "ok" or .value.ptrace == "ok"
		or .value.environ == "read") | .key' <<<"$p")
	assert_eq "$label: kill, ptrace and environ of the other session's processes fail" "" "$bad"
	[ "${5:-}" != tried ] || assert_ne "$label: the other session's pids were tried" 0 \
		"$(jq -r '.against | length' <<<"$p")"
}

# round LABEL: probes A again with B's pids planted, by respawning A (a mode switch).
round() {
	local label=$1 mode=$2 before probe
	pane_tree widgets-2 >"$WT_A/.cage-pids"
	before=$(basename "$(ls -t "$WT_A"/.cage-probe/*.json | head -1)" .json)
	api POST /sessions/widgets-1/mode "{\"mode\":\"$mode\"}"
	assert_status "$label: A switches to $mode" 200
	wait_state widgets-1 running 20
	probe=$(latest_probe "$WT_A" "$before")
	check "$label: A probed from inside its $mode pane" test -n "$probe"
	check_cage "$label (A, $mode)" "$probe" 1 2 tried
	check "$label: B still runs" alive "$(pane_pid widgets-2)"
	check_in_cgroup "$label" widgets-1
}

# check_in_cgroup LABEL ID: where this host gives sessions cgroups, the pane's process (agentd-cage,
# which became bwrap) is a member of the session's cgroup in every hierarchy that has one.
check_in_cgroup() {
	local pid dir missing=
	[ -n "$(cgroup_dirs "$2")" ] || return 0
	pid=$(pane_pid "$2")
	for dir in $(cgroup_dirs "$2"); do
		grep -qx "$pid" "$dir/cgroup.procs" || missing+=" $dir"
	done
	assert_eq "$1: $2's pane is in its cgroup in every hierarchy" "" "$missing"
}

create acme widgets 2
assert_status "B is created" 201
wait_state widgets-2 running 30 || fail "B runs" "$BODY"
create acme widgets 1
assert_status "A is created" 201
wait_state widgets-1 running 30 || fail "A runs" "$BODY"
PB=$(latest_probe "$WT_B")
check "B probed from inside its terminal pane" test -n "$PB"
check_cage "B, terminal" "$PB" 2 1
PA=$(latest_probe "$WT_A")
check "A probed from inside its terminal pane" test -n "$PA"
check_cage "A, terminal" "$PA" 1 2
check_in_cgroup "A, terminal" widgets-1
check_in_cgroup "B, terminal" widgets-2
check "A's HOME was made from the template" test -f "$T/homes/widgets-1/.template-marker"
UID_A=$(session_uid 1)
UID_B=$(session_uid 2)
assert_eq "A's HOME is A's uid's" "$UID_A" \
	"$(stat -c %u "$T/homes/widgets-1/.template-marker" 2>/dev/null)"
check_not "A's HOME has no transcript of the template's" test -e "$T/homes/widgets-1/.claude/projects"
check_not "A's HOME has no copy of claude's installation" \
	test -e "$T/homes/widgets-1/.local/share/claude"
check_not "A's HOME has no other session's CLI home" test -e "$T/homes/widgets-1/.agentd-agents/other-9"
check_not "A's HOME has no copy of the template's caches" \
	test -e "$T/homes/widgets-1/.cache/pip" -o -e "$T/homes/widgets-1/.npm/_cacache"
check "A's commit is in its branch" \
	git -C "$WT_A" log --oneline -1 --format=%s | grep -q "cage probe"
# Caged sessions get the store layout by default: a repository of their own each.
assert_eq "A's repository borrows the store's objects" "$(git_store acme widgets)/objects" \
	"$(cat "$WT_A/.git/objects/info/alternates" 2>&1)"
check_not "no bare clone is shared by the sessions" test -e "$(bare_clone acme widgets)"

# The kernel's own rules, as if the mount view were bypassed: B's repository and HOME are B's
# uid's and closed to A's uid (whose one group is its own).
assert_eq "B's repository is B's uid's, 0750, group the agent user's" "$UID_B 750 $AGENT_GID" \
	"$(stat -c '%u %a %g' "$WT_B" 2>&1)"
assert_eq "B's HOME is B's uid's, 0700" "$UID_B 700" "$(stat -c '%u %a' "$T/homes/widgets-2" 2>&1)"
as_uid() { setpriv --reuid="$1" --regid="$1" --clear-groups -- "${@:2}"; }
check_not "A's uid cannot write B's repository" as_uid "$UID_A" touch "$WT_B/.from-a"
check_not "A's uid cannot list B's repository" as_uid "$UID_A" ls "$WT_B"
check_not "A's uid cannot write B's branch" as_uid "$UID_A" touch "$WT_B/.git/refs/heads/x"
check_not "A's uid cannot read B's HOME" as_uid "$UID_A" ls "$T/homes/widgets-2"
check "B's uid writes its own repository" as_uid "$UID_B" touch "$WT_B/.from-b"
check "B's uid lists its own HOME" as_uid "$UID_B" ls "$T/homes/widgets-2"
rm -f "$WT_B/.from-b"

round "A in structured mode" structured
# A's host socket is A's uid's alone: B's uid cannot connect to it.
HOST_A=$T/run/agents/widgets-1/host.sock
wait_for 10 test -S "$HOST_A" || fail "A's host socket exists" "$(ls -la "$T/run/agents" 2>&1)"
assert_eq "A's host directory is A's uid's" "$UID_A" "$(stat -c %u "$T/run/agents/widgets-1" 2>&1)"
connect_as() {
	as_uid "$1" /usr/bin/python3 -c 'import socket,sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])' "$2"
}
check_not "B's uid cannot connect to A's host socket" connect_as "$UID_B" "$HOST_A"
check "A's uid can" connect_as "$UID_A" "$HOST_A"
round "A back in terminal mode" terminal

restart_stack || exit 1
round "after a restart of every daemon, structured" structured
round "after a restart of every daemon, terminal" terminal
# files_not_of UID DIR...: what under DIR is not UID's (A's probes, commits, HOME file).
files_not_of() { find "${@:2}" ! -uid "$1" 2>&1 | head -3; }
assert_eq "after mode switches and a restart, what A made is still A's uid's" "" \
	"$(files_not_of "$UID_A" "$WT_A/.cage-probe" "$WT_A"/cage-*.txt "$T/homes/widgets-1/.cage-home-probe")"
assert_eq "A keeps its uid across mode switches and a restart" "$UID_A" "$(session_uid 1)"

# A reboot: the stack stops, the tmux server and every agent die, the runtime dir goes. Both
# sessions come back by themselves, caged again, A's HOME (with what it wrote) kept.
stop_stack
tmx kill-server
rm -rf "$T/run"
BEFORE_A=$(basename "$(ls -t "$WT_A"/.cage-probe/*.json | head -1)" .json)
BEFORE_B=$(basename "$(ls -t "$WT_B"/.cage-probe/*.json | head -1)" .json)
start_stack || exit 1
wait_state widgets-1 running 30 || fail "after a reboot: A runs again" "$BODY"
wait_state widgets-2 running 30 || fail "after a reboot: B runs again" "$BODY"
PB=$(latest_probe "$WT_B" "$BEFORE_B")
check "after a reboot: B probed from inside its pane" test -n "$PB"
check_cage "after a reboot (B)" "$PB" 2 1
PA=$(latest_probe "$WT_A" "$BEFORE_A")
check "after a reboot: A probed from inside its pane" test -n "$PA"
check_cage "after a reboot (A)" "$PA" 1 2
check "after a reboot: A's HOME kept what A wrote" test -f "$T/homes/widgets-1/.cage-home-probe"
assert_eq "after a reboot: A has its uid again" "$UID_A" "$(session_uid 1)"
check "after a reboot: A's uid is registered again" test -f "/run/agentd-uids/$UID_A"
assert_eq "after a reboot: what A made is still A's uid's" "" \
	"$(files_not_of "$UID_A" "$WT_A/.cage-probe" "$WT_A"/cage-*.txt)"
check_in_cgroup "after a reboot" widgets-1
round "after a reboot, structured" structured

check "claude ran from its installation in the hidden agent HOME" \
	grep -qF -- "--ro-bind $INSTALLED $INSTALLED " <<<"$(ps -eo args | grep -F "$T/homes/widgets-2")"
# The secret is nowhere but in the agent's environment.
check_not "the secret is in no process's argv" grep -qF "$SECRET" <<<"$(ps -eo args)"
check_not "the secret is in no record" grep -rqF "$SECRET" "$T/state"
check_not "the secret is in no log" grep -rqF "$SECRET" "$T/logs" "$T/run"
get_session widgets-1
check_not "the secret is not in GET /sessions/<id>" grep -qF "$SECRET" <<<"$BODY"

# Delete removes the cage's HOME but never a commit.
HEAD_A=$(git -C "$WT_A" rev-parse HEAD)
api DELETE "/sessions/widgets-1?force=true"
assert_status "A is deleted" 200
check_not "A's HOME is gone" test -e "$T/homes/widgets-1"
check_not "A's uid is given back" test -e "/run/agentd-uids/$UID_A"
check_not "A's uid has no passwd entry left" getent passwd "$UID_A"
check "A's commits are kept in the store" git -C "$(git_store acme widgets)" cat-file -e "$HEAD_A^{commit}"
api DELETE "/sessions/widgets-2?keepHome=true&force=true"
assert_status "B is deleted with keepHome" 200
check "B's HOME stays with keepHome" test -d "$T/homes/widgets-2"
check "B's uid stays B's while its HOME does" test -f "/run/agentd-uids/$UID_B"

rm -f "$ROOT_TMP"

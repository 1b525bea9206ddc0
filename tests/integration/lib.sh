# Shared harness of the integration tests (sourced by tests/integration/test_*.sh).
#
# Each script gets a private temp dir $T with its own bare git remotes, runtime dir, base dir,
# HOMEs and tmux server, and starts the whole stack (deploy/up: nginx + agentd-api + agentd-bridge)
# on a free loopback port. Checks never stop the script: each prints "ok - ..." or
# "not ok - ...: expected ..., got ...", and the exit trap stops everything, scans the logs for
# sanitizer reports, prints the logs when something failed, removes $T and sets the exit code.
#
#   source "$(dirname "$0")/lib.sh"
#   make_remote acme widgets
#   start_stack [VAR=value ...]          extra environment for deploy/up
#   render_nginx PREFIX [ARGS...]        agentd-api config --render-nginx (this tree's templates)
#   api POST /sessions '{"repo":...}'    -> $STATUS, $BODY, $HEADERS
#   assert_status "create" 201
#
# The agents run as an unprivileged user, as in production (deploy/up runs as root): AGENT_USER
# (ITEST_AGENT_USER, default agentd-it, created once as a system user without a home), with
# $T/home as its HOME (AGENTD_AGENT_HOME) and $T/code its base dir; as_agent CMD... runs a command
# as it. Not run as root, the agents are the tests' own user.
#
# The daemons' own HOME is $T/roothome, made as root's real home is: 0700, the operator's, with
# a .gitconfig and a git dir under .config (ROOT_HOME). The agent cannot read it, and what it says
# must not reach the daemons' git work: its url.<base>.insteadOf sends every file:// URL to a path
# that does not exist, so a clone that read it fails even where the agent could read the file.
#
# The access door: nginx lets in only requests with credentials. Before the first start_stack
# the harness makes an admin token `itest` in the stack's token store ($T/state, exported as
# AGENTD_STATE_DIR) and every test client sends it: curl through $CURL_HOME/.curlrc (so a plain
# `curl` of a test is the operator's; `curl -q` ignores it and sends none), the node and python
# clients from $AGENTD_TEST_TOKEN (an explicit Authorization header of their caller wins).
#
# Environment: AGENTD_TEST_BUILD_DIR (default <repo>/build-asan), ITEST_KEEP=1 keeps $T,
# ITEST_TMPDIR=<dir> where $T is made (default /tmp), ITEST_AGENT_USER (default agentd-it),
# ITEST_ROOT_HOME=<dir> the daemons' HOME (default $T/roothome, see above; e.g. /root).
# shellcheck shell=bash disable=SC2034

set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${AGENTD_TEST_BUILD_DIR:-$REPO/build-asan}
FAKE_CLAUDE=$REPO/tests/fakes/claude
export LC_ALL=C.UTF-8

# Wherever the checkout lives: the agents (another user, and each caged session's own uid, whose
# cage has a /tmp and /var/tmp of its own) run what the tests give them by its path in the
# checkout (the fakes and agents of tests/, the real CLIs of tests/node_modules, agentd-host and
# agentd-hook of the build). A checkout under a directory only root may enter (a clone under
# `mktemp -d`, 0700; root's HOME), or in /tmp, hides it from them. Rather than open the
# checkout's own permissions, the script then runs again in a mount namespace of its own, from
# the checkout bound at $VIEW_MOUNT/<$T's name>/src (a build dir outside it at .../build), on a
# tmpfs over VIEW_MOUNT: /media, seen only in that namespace, where no test looks and no cage
# hides ($T/view where there is no /media). Nothing of the view is under $T unless it is its own
# file system: the removal of $T, which stays on $T's, never reaches into the checkout.
VIEW_MOUNT=

# others_reach DIR...: a user unrelated to the checkout (nobody's uid, no groups) may enter
# every DIR that exists, outside the cages' own /tmp and /var/tmp.
others_reach() {
	local d
	for d in "$@"; do
		[ -d "$d" ] || continue
		case $(realpath -- "$d")/ in /tmp/* | /var/tmp/*) return 1 ;; esac
		setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$d" || return 1
	done
}

# view_exec ARGS...: runs this script again from the checkout's view (see above), with a new $T.
view_exec() {
	local t repo script build mnt=/media
	repo=$(realpath -- "$REPO") && script=$(realpath -- "$0") && build=$(realpath -m -- "$BUILD_DIR")
	case $script in "$repo"/*) ;; *)
		echo "not ok - $script is a script of the checkout $repo" >&2
		exit 1
		;;
	esac
	t=$(mktemp -d "${ITEST_TMPDIR:-/tmp}/agentd-it.XXXXXX") && chmod 0755 "$t" || exit 1
	[ -d "$mnt" ] || { mnt=$t/view && mkdir "$mnt"; } || exit 1
	# shellcheck disable=SC2016 # expanded by the inner bash
	exec env AGENTD_ITEST_VIEW="$t" AGENTD_ITEST_VIEW_MOUNT="$mnt" \
		unshare --mount --propagation private -- bash -c '
		t=$1 mnt=$2 repo=$3 build=$4 script=$5
		shift 5
		v=$mnt/${t##*/}
		mount -t tmpfs -o mode=0755 agentd-it-view "$mnt" && mkdir -p "$v/src" &&
			mount --bind "$repo" "$v/src" || exit 1
		case $build in
		"$repo"/*) build=$v/src/${build#"$repo"/} ;;
		*) [ ! -d "$build" ] || { mkdir "$v/build" &&
			mount --bind "$build" "$v/build" && build=$v/build; } || exit 1 ;;
		esac
		case $PWD/ in "$repo"/*) cd "$v/src/${PWD#"$repo"}" || exit 1 ;; esac
		AGENTD_TEST_BUILD_DIR=$build exec bash "$v/src/${script#"$repo"/}" "$@"
	' agentd-it-view "$t" "$mnt" "$repo" "$build" "$script" "$@"
}

if [ -n "${AGENTD_ITEST_VIEW:-}" ]; then
	T=$AGENTD_ITEST_VIEW # made by view_exec, which this is the second run of
	VIEW_MOUNT=${AGENTD_ITEST_VIEW_MOUNT:-}
	unset AGENTD_ITEST_VIEW AGENTD_ITEST_VIEW_MOUNT
elif [ "$(id -u)" -eq 0 ] && ! others_reach "$REPO" "$BUILD_DIR"; then
	view_exec "$@"
else
	T=$(mktemp -d "${ITEST_TMPDIR:-/tmp}/agentd-it.XXXXXX")
fi
# nginx workers may run as another user (www-data): they must reach the sockets under $T/run.
chmod 0755 "$T"
mkdir -p "$T/remotes" "$T/run" "$T/code" "$T/home" "$T/logs" "$T/san" "$T/work" "$T/state"
# ITEST_ROOT_HOME=/root gives the daemons the operator's real HOME instead (only read).
ROOT_HOME=${ITEST_ROOT_HOME:-$T/roothome}
if [ -z "${ITEST_ROOT_HOME:-}" ]; then
	mkdir -p "$ROOT_HOME/.config/git" && chmod 0700 "$ROOT_HOME"
	printf '[user]\n\tname = operator\n[url "file:///nonexistent-operator-config/"]\n\tinsteadOf = file://\n' |
		tee "$ROOT_HOME/.gitconfig" >"$ROOT_HOME/.config/git/config"
	printf '* text=auto eol=crlf\n' >"$ROOT_HOME/.config/git/attributes"
fi
export AGENTD_STATE_DIR=$T/state
export CURL_HOME=$T
AGENTD_TEST_TOKEN=
: >"$T/agentd.conf" # keeps a host /etc/agentd/agentd.conf out of the test
TMUX_SOCK=$T/run/tmux.sock
UP_PID=
PORT=
BASE_URL=
STATUS=
BODY=
HEADERS=
CHECKS=0
FAILURES=0
FAILED_CHECKS=()
STACK_ENV=()

# Sanitizer reports of every daemon process (including detached workers whose stderr is
# /dev/null) go to $T/san/*.<pid>; leaks at daemon exit are not what these tests judge.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1}:detect_leaks=0:log_path=$T/san/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}:log_path=$T/san/ubsan"

# The git CLI used by the tests themselves: no user config but safe.directory=* (root reads the
# agent's repositories, the agent pushes to root's remotes: git refuses another user's repository
# otherwise; a global file, since git drops GIT_CONFIG_COUNT for a local transport), a fixed
# identity.
printf '[safe]\n\tdirectory = *\n' >"$T/gitconfig"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=$T/gitconfig
export GIT_AUTHOR_NAME=itest GIT_AUTHOR_EMAIL=itest@example.invalid
export GIT_COMMITTER_NAME=itest GIT_COMMITTER_EMAIL=itest@example.invalid

log() { printf '# %s\n' "$*"; }

# remove_t: removes $T, the checkout's view unmounted first (see view_exec; only the view's own
# tmpfs, should AGENTD_ITEST_VIEW_MOUNT come from anywhere else).
remove_t() {
	if [ -n "$VIEW_MOUNT" ] &&
		[ "$(findmnt -n -o SOURCE --mountpoint "$VIEW_MOUNT" 2>/dev/null | tail -n 1)" == agentd-it-view ]; then
		umount -R "$VIEW_MOUNT" 2>/dev/null || umount -R -l "$VIEW_MOUNT"
	fi
	rm -rf --one-file-system "$T"
}

# ------------------------------------------------------------------------------------------------
# the agents' user

# ensure_agent_user: sets AGENT_USER, AGENT_UID, AGENT_GID; creates the test user once (a lock:
# test scripts run side by side, and useradd refuses while another holds /etc/passwd).
ensure_agent_user() {
	local lockfd
	if [ "$(id -u)" -ne 0 ]; then
		AGENT_USER=$(id -un)
	else
		AGENT_USER=${ITEST_AGENT_USER:-agentd-it}
		if ! id -u "$AGENT_USER" >/dev/null 2>&1; then
			exec {lockfd}>/run/lock/agentd-itest-user.lock
			flock -w 60 "$lockfd"
			id -u "$AGENT_USER" >/dev/null 2>&1 ||
				useradd --system --user-group --no-create-home --home-dir /nonexistent \
					--shell /bin/bash --comment "agent-daemon test agents" "$AGENT_USER"
			exec {lockfd}>&-
		fi
	fi
	AGENT_UID=$(id -u "$AGENT_USER") && AGENT_GID=$(id -g "$AGENT_USER")
}
ensure_agent_user || {
	echo "not ok - the test agent user $AGENT_USER exists" >&2
	remove_t
	exit 1
}
export AGENTD_AGENT_USER=$AGENT_USER AGENTD_AGENT_HOME=$T/home
# Sessions are not caged in the tests unless a test asks (test_cages.sh: AGENTD_CAGE=auto):
# the other tests look into the agent's shared HOME and their fakes write where a cage hides.
export AGENTD_CAGE=${AGENTD_CAGE:-off}
# The git layout (docs/DESIGN.md "The git store layout"): uncaged, the worktrees of the agent's
# bare clones; ITEST_GIT_LAYOUT=store gives the stack the store layout caged sessions have by
# default ($T/state/git). Scripts that check where git keeps things branch on GIT_LAYOUT.
GIT_LAYOUT=${ITEST_GIT_LAYOUT:-worktree}
[ "$GIT_LAYOUT" != store ] || export AGENTD_GIT_STORE_DIR=$T/state/git
# Agents that end stay ended unless a test asks for a restart policy (test_policies.sh): the
# other tests judge an exited session as the agent left it.
export AGENTD_RESTART_POLICY=${AGENTD_RESTART_POLICY:-no}

# The sessions' cgroups of this script's stacks go under a parent of its own (stacks side by side
# never share one), which cleanup removes with everything left in it.
CGROUP_PARENT=${T##*/}
export AGENTD_CGROUP_PARENT=$CGROUP_PARENT

# cgroup_dirs [SESSION]: this stack's cgroup parent (or one session's cgroup under it) in every
# hierarchy, one directory a line (none without cgroups or without root).
cgroup_dirs() {
	find /sys/fs/cgroup -maxdepth 8 -type d -path "*/$CGROUP_PARENT${1:+/$1}" 2>/dev/null
}

# host_log ID: the event log of a structured session's agentd-host (its dir is the agent's).
host_log() { printf '%s/state/agents/%s/events.log' "$T" "$1"; }

# as_agent CMD...: runs CMD as the agents' user, with its HOME (the way a pane's process runs)
# and without the harness's credentials (AGENTD_TEST_TOKEN, CURL_HOME's .curlrc).
as_agent() {
	if [ "$(id -u)" -ne 0 ]; then
		env -u AGENTD_TEST_TOKEN -u CURL_HOME HOME="$T/home" "$@"
	else
		setpriv --reuid="$AGENT_UID" --regid="$AGENT_GID" --init-groups -- \
			env -u AGENTD_TEST_TOKEN -u CURL_HOME HOME="$T/home" "$@"
	fi
}

# agent_sh DIR SCRIPT [ARG...]: bash -c SCRIPT in DIR as the agents' user ($1... are the ARGs),
# e.g. a commit in a worktree, as the agent makes it.
agent_sh() {
	local dir=$1 script=$2
	shift 2
	as_agent bash -c "cd \"\$0\" && $script" "$dir" "$@"
}

# agent_owns PATH...: gives files the test wrote for the agent (its HOME) to the agent.
agent_owns() {
	[ "$(id -u)" -ne 0 ] || chown -R -h "$AGENT_UID:$AGENT_GID" -- "$@"
}

# ------------------------------------------------------------------------------------------------
# checks

pass() {
	CHECKS=$((CHECKS + 1))
	printf 'ok - %s\n' "$1"
}

# fail DESC [DETAIL...]
fail() {
	local desc=$1
	shift
	CHECKS=$((CHECKS + 1))
	FAILURES=$((FAILURES + 1))
	FAILED_CHECKS+=("$desc")
	printf 'not ok - %s\n' "$desc"
	local d
	for d in "$@"; do printf '%s\n' "$d" | sed 's/^/#     /' | head -c 4000; done
}

# tap_report OUTFILE RC ERRFILE [WHAT]: counts a node test client's "ok - NAME" and
# "not ok - NAME<TAB>WHY" lines (web/tap.js) as checks, shows its "# " notes, and fails once
# when the client exited non-zero without a failed check (it crashed): "WHAT ends cleanly"
# (WHAT: "the browser run").
tap_report() {
	local line name what=${4:-the browser run}
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "${line#ok - }" ;;
		"not ok - "*)
			name=${line#not ok - }
			fail "${name%%$'\t'*}" "${name#*$'\t'}"
			;;
		"# "*) echo "$line" ;;
		esac
	done <"$1"
	if [ "$2" -ne 0 ] && ! grep -q '^not ok' "$1"; then
		fail "$what ends cleanly" "node exited $2: $(tail -n 20 "$3")"
	fi
}

# The browser tests: Debian's chromium driven by puppeteer-core (tests/run installs both).
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}

# browser_ready: both are there; a failed check (and 1) when not.
browser_ready() {
	[ -x "$CHROMIUM" ] && [ -d "$REPO/tests/node_modules/puppeteer-core" ] && return 0
	fail "chromium and puppeteer-core are installed (tests/run installs both)" \
		"chromium: $CHROMIUM; $REPO/tests/node_modules/puppeteer-core"
	return 1
}

# browser_run SCRIPT LOG SECONDS [VAR=VALUE...]: runs tests/integration/web/SCRIPT.js with
# BASE_URL, CHROMIUM and the VARs in its environment, killed after SECONDS, its output in
# $T/logs/LOG.out and LOG.err, and counts its checks (tap_report; WHAT from $BROWSER_WHAT).
browser_run() {
	local script=$1 out=$T/logs/$2 secs=$3 rc
	shift 3
	env BASE_URL="$BASE_URL" CHROMIUM="$CHROMIUM" "$@" timeout -k 5 "$secs" \
		node "$REPO/tests/integration/web/$script.js" >"$out.out" 2>"$out.err"
	rc=$?
	tap_report "$out.out" $rc "$out.err" "${BROWSER_WHAT:-}"
}

# assert_eq DESC EXPECTED ACTUAL
assert_eq() {
	if [ "$2" == "$3" ]; then pass "$1"; else fail "$1" "expected: $2" "got:      $3"; fi
}

assert_ne() {
	if [ "$2" != "$3" ]; then pass "$1"; else fail "$1" "expected anything but: $2"; fi
}

# assert_match DESC EXTENDED_REGEX ACTUAL
assert_match() {
	if [[ $3 =~ $2 ]]; then pass "$1"; else fail "$1" "expected to match: $2" "got: $3"; fi
}

# assert_status DESC EXPECTED_STATUS   (on $STATUS, shows $BODY when wrong)
assert_status() {
	if [ "$STATUS" == "$2" ]; then
		pass "$1"
	else
		fail "$1" "expected status $2, got $STATUS" "body: ${BODY:0:600}"
	fi
}

# assert_jq DESC FILTER [JSON]   FILTER must yield true (default JSON: $BODY)
assert_jq() {
	local json=${3-$BODY} out
	out=$(printf '%s' "$json" | jq -e "$2" 2>&1)
	if [ $? -eq 0 ] && [ "$out" == true ]; then
		pass "$1"
	else
		fail "$1" "expected true from jq: $2" "got: $out" "json: ${json:0:600}"
	fi
}

# assert_json DESC FILTER EXPECTED [JSON]   compares jq -c output of FILTER with EXPECTED
assert_json() {
	local json=${4-$BODY} out
	out=$(printf '%s' "$json" | jq -c "$2" 2>&1)
	if [ "$out" == "$3" ]; then
		pass "$1"
	else
		fail "$1" "expected $2 == $3" "got: $out" "json: ${json:0:600}"
	fi
}

# assert_error_body DESC   $BODY is {"error": "<non-empty string>", "code": "<snake_case>"}
assert_error_body() {
	assert_jq "$1" '(.error | type == "string" and length > 0) and
		(.code | type == "string" and test("^[a-z][a-z0-9_]*$"))'
}

# check DESC COMMAND...   passes when the command succeeds
check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then pass "$desc"; else fail "$desc" "command failed: $*" "$out"; fi
}

# check_not DESC COMMAND...   passes when the command fails
check_not() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then fail "$desc" "command succeeded: $*" "$out"; else pass "$desc"; fi
}

# ------------------------------------------------------------------------------------------------
# git fixtures

# make_remote OWNER NAME: a bare remote at $T/remotes/OWNER/NAME.git with two commits on main.
# Everyone may write it (--shared=0777): the agents push to it, the tests push "upstream" as root.
make_remote() {
	local owner=$1 name=$2 bare=$T/remotes/$1/$2.git work=$T/work/seed-$1-$2
	mkdir -p "$(dirname "$bare")"
	git init -q --bare --shared=0777 -b main "$bare" || return 1
	git init -q -b main "$work" || return 1
	(
		cd "$work" &&
			printf '# %s/%s\n' "$owner" "$name" >README.md &&
			git add README.md && git commit -q -m "initial commit" &&
			printf 'int main(void) { return 0; }\n' >main.c &&
			git add main.c && git commit -q -m "add main.c" &&
			git push -q "$bare" main
	) || return 1
	rm -rf "$work"
}

# make_heavy_remote: the bare remote $T/remotes/acme/big.git whose main holds 3,000 files of 40
# lines in 20 directories, so that a creation worker (agentd-api --create) checking it out still
# runs when a test kills something (the kill matrices).
make_heavy_remote() {
	local bare=$T/remotes/acme/big.git work=$T/work/seed-big
	git init -q --bare -b main "$bare" && git init -q -b main "$work" || return 1
	python3 - "$work" <<'EOP' || return 1
import os, sys
root = sys.argv[1]
for d in range(20):
    os.makedirs(f"{root}/d{d}", exist_ok=True)
    for f in range(150):
        with open(f"{root}/d{d}/f{f}.c", "w") as fh:
            fh.write(f"int f_{d}_{f}(void) {{ return {d * 1000 + f}; }}\n" * 40)
EOP
	(cd "$work" && git add -A && git commit -q -m big && git push -q "$bare" main) || return 1
	rm -rf "$work"
}

# remote_commit OWNER NAME BRANCH: adds one commit on BRANCH of the remote (creating it from main).
remote_commit() {
	local work=$T/work/rc-$RANDOM
	git clone -q "$T/remotes/$1/$2.git" "$work" || return 1
	(
		cd "$work" && git checkout -q -B "$3" "origin/${3}" 2>/dev/null ||
			git checkout -q -b "$3"
		date +%s%N >>upstream.txt && git add upstream.txt &&
			git commit -q -m "upstream change" && git push -q origin "$3"
	) || return 1
	rm -rf "$work"
}

bare_clone() { printf '%s/code/.repos/%s/%s.git' "$T" "$1" "$2"; }
# git_store OWNER NAME: the store of the store layout.
git_store() { printf '%s/state/git/%s/%s.git' "$T" "$1" "$2"; }
# kept_repo OWNER NAME: where a deleted session's branch stays: the bare clone, or the store.
kept_repo() {
	if [ "$GIT_LAYOUT" = store ]; then git_store "$1" "$2"; else bare_clone "$1" "$2"; fi
}

# ------------------------------------------------------------------------------------------------
# the stack

free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# provision_token: the admin token `itest` every test client sends (see the top of this file).
# ITEST_FIRST_START=1 makes none (deploy/up's first start does; the test reads its ready line).
provision_token() {
	[ -n "$AGENTD_TEST_TOKEN" ] && return 0
	[ "${ITEST_FIRST_START:-0}" == 1 ] && return 0
	AGENTD_TEST_TOKEN=$("$BUILD_DIR/fcgi-app/agentd-api" token add itest 2>>"$T/logs/up.log") || {
		fail "the harness's admin token is made (agentd-api token add itest)" \
			"$(tail -n 5 "$T/logs/up.log")"
		return 1
	}
	export AGENTD_TEST_TOKEN
	# 0600: the agents (another user) must not find the operator's token here either.
	(umask 077 && printf 'header = "Authorization: Bearer %s"\n' "$AGENTD_TEST_TOKEN" >"$T/.curlrc")
}

# render_nginx PREFIX [ARGS...]: nginx's config rendered and checked (nginx -t) into PREFIX/conf
# from this tree's templates and web UI, as deploy/up --render does, by the one renderer
# (agentd-api config --render-nginx) with the caller's environment.
render_nginx() {
	"$BUILD_DIR/fcgi-app/agentd-api" config --render-nginx "$1" --templates "$REPO/nginx" \
		--www "$REPO/nginx/html" "${@:2}"
}

# start_stack [VAR=value ...]: starts deploy/up (own process group) and waits for /healthz 200.
# The extra variables are remembered for restart_stack. Returns non-zero (after a failed check)
# when the stack does not come up.
start_stack() {
	[ $# -gt 0 ] && STACK_ENV=("$@")
	if [ ! -x "$REPO/deploy/up" ]; then
		fail "deploy/up exists" "$REPO/deploy/up is missing or not executable"
		return 1
	fi
	if [ ! -x "$BUILD_DIR/fcgi-app/agentd-api" ]; then
		fail "agentd-api is built" "$BUILD_DIR/fcgi-app/agentd-api is missing (run tests/run)"
		return 1
	fi
	provision_token || return 1
	[ -n "$PORT" ] || PORT=$(free_port)
	BASE_URL=http://127.0.0.1:$PORT
	echo "=== start_stack $(date +%T) port $PORT ${STACK_ENV[*]}" >>"$T/logs/up.log"
	agent_owns "$T/home" # deploy/up refuses a HOME the agent does not own
	(
		cd "$T" || exit 1
		# setsid: deploy/up leads its own process group (and session), so the harness can
		# signal it and everything it leaves behind without touching anything else.
		exec setsid env AGENTD_NO_INSTALL=1 AGENTD_BUILD_DIR="$BUILD_DIR" \
			AGENTD_CONFIG="$T/agentd.conf" AGENTD_LISTEN="127.0.0.1:$PORT" \
			AGENTD_RUNTIME_DIR="$T/run" AGENTD_BASE_DIR="$T/code" \
			AGENTD_REPO_URL="file://$T/remotes/{owner}/{name}.git" \
			AGENTD_CLAUDE="$FAKE_CLAUDE" HOME="$ROOT_HOME" "${STACK_ENV[@]}" \
			"$REPO/deploy/up"
	) </dev/null >>"$T/logs/up.log" 2>&1 &
	UP_PID=$!
	if wait_healthy 90; then
		log "stack up on $BASE_URL (deploy/up pid $UP_PID)"
		return 0
	fi
	fail "stack comes up (GET /healthz 200)" "$(tail -n 40 "$T/logs/up.log")"
	return 1
}

# wait_healthy TIMEOUT: /healthz answers 200 (fails early if deploy/up died).
wait_healthy() {
	local deadline=$((SECONDS + $1)) code
	while [ $SECONDS -lt $deadline ]; do
		if [ -n "$UP_PID" ] && ! kill -0 "$UP_PID" 2>/dev/null; then
			echo "deploy/up (pid $UP_PID) exited" >>"$T/logs/up.log"
			return 1
		fi
		code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$BASE_URL/healthz" 2>/dev/null)
		[ "$code" == 200 ] && return 0
		# Without a token of its own (ITEST_FIRST_START): up once the door decides, and
		# deploy/up has printed its ready line.
		[ -z "$AGENTD_TEST_TOKEN" ] && [ "$code" == 401 ] &&
			grep -aq '^agentd ready: ' "$T/logs/up.log" && return 0
		sleep 0.2
	done
	return 1
}

# stop_stack [TIMEOUT]: SIGTERM to deploy/up and wait; SIGKILL to its group if it hangs.
# Returns 1 when it had to be killed.
stop_stack() {
	local timeout=${1:-20} deadline rc=0
	[ -n "$UP_PID" ] || return 0
	echo "=== stop_stack $(date +%T)" >>"$T/logs/up.log"
	kill -TERM "$UP_PID" 2>/dev/null
	deadline=$((SECONDS + timeout))
	while kill -0 "$UP_PID" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
	if kill -0 "$UP_PID" 2>/dev/null; then
		echo "deploy/up did not stop within ${timeout}s; killing its process group" \
			>>"$T/logs/up.log"
		kill -KILL -- "-$UP_PID" 2>/dev/null
		rc=1
	fi
	wait "$UP_PID" 2>/dev/null
	UP_PID=
	return $rc
}

restart_stack() {
	stop_stack && start_stack
}

# descendants PID: every process below PID (by parent links), one pid a line.
descendants() {
	ps -e -o pid=,ppid= | awk -v root="$1" '
		{ parent[$1] = $2; pids[NR] = $1 }
		END {
			want[root] = 1
			do {
				changed = 0
				for (i in pids) {
					p = pids[i]
					if (!(p in want) && (parent[p] in want)) { want[p] = 1; changed = 1 }
				}
			} while (changed)
			for (p in want) if (p != root) print p
		}'
}

# api_pid: the pid of the running agentd-api request server started by deploy/up (not a
# creation worker, nor one waiting, nor an --init deploy/up runs for a new tmux server), or
# nothing.
api_pid() {
	local exe p args
	exe=$(readlink -f "$BUILD_DIR/fcgi-app/agentd-api")
	[ -n "$UP_PID" ] || return 0
	for p in $(descendants "$UP_PID"); do
		[ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" == "$exe" ] || continue
		args=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
		[[ $args == *--create* || $args == *--standby* || $args == *--init* ]] && continue
		echo "$p"
		return 0
	done
}

# standby_pid: the creation worker this stack's agentd-api keeps waiting for a session
# (agentd-api --standby, detached: not the session leader its first process was), or nothing.
standby_pid() {
	local exe p
	exe=$(readlink -f "$BUILD_DIR/fcgi-app/agentd-api")
	for p in $(pgrep -f -- '--standby'); do
		[ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" == "$exe" ] || continue
		tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" |
			grep -qxF "AGENTD_RUNTIME_DIR=$T/run" || continue
		[ "$(ps -o sid= -p "$p" | tr -d ' ')" != "$p" ] || continue
		echo "$p"
		return 0
	done
}

# daemon_pid EXE: the pid of the process running EXE (a path under $BUILD_DIR) that deploy/up
# started, or nothing.
daemon_pid() {
	local exe p
	exe=$(readlink -f "$BUILD_DIR/$1")
	[ -n "$UP_PID" ] || return 0
	for p in $(descendants "$UP_PID"); do
		if [ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" == "$exe" ]; then
			echo "$p"
			return 0
		fi
	done
}

# bridge_pid: the pid of the agentd-bridge started by deploy/up, or nothing.
bridge_pid() { daemon_pid ptybridge/agentd-bridge; }

# kill_api [SIGNAL]: kills agentd-api and waits until deploy/up has started a new one and
# /healthz answers. Returns non-zero (after a failed check) otherwise.
kill_api() {
	local sig=${1:-KILL} old new deadline
	old=$(api_pid)
	if [ -z "$old" ]; then
		fail "agentd-api process found under deploy/up" "$(ps -e -o pid,ppid,pgid,args | grep -v ' ps ')"
		return 1
	fi
	echo "=== kill -$sig agentd-api $old $(date +%T)" >>"$T/logs/up.log"
	kill "-$sig" "$old"
	deadline=$((SECONDS + 30))
	while [ $SECONDS -lt $deadline ]; do
		new=$(api_pid)
		if [ -n "$new" ] && [ "$new" != "$old" ] && wait_healthy 20; then
			log "agentd-api restarted: $old -> $new"
			return 0
		fi
		sleep 0.2
	done
	fail "deploy/up restarts agentd-api after kill -$sig" "old pid $old, now: ${new:-none}" \
		"$(tail -n 20 "$T/logs/up.log")"
	return 1
}

# ------------------------------------------------------------------------------------------------
# HTTP

# api METHOD PATH [BODY] [CURL_ARGS...]: through nginx. The third argument is the body unless it
# starts with '-' (then it and the rest are curl arguments; send such a body from a file). With a
# BODY (even ""), the request carries it with Content-Type $API_CT (default application/json;
# API_CT=none sends no Content-Type header). BODY "@file" sends a file.
# Sets STATUS, BODY, HEADERS.
api() {
	local method=$1 path=$2
	shift 2
	local args=(-s --path-as-is -X "$method" -o "$T/resp.body" -D "$T/resp.headers" -w '%{http_code}' -m 30)
	if [ $# -gt 0 ] && [[ $1 != -* ]]; then
		local ct=${API_CT:-application/json}
		if [ "$ct" == none ]; then
			args+=(-H 'Content-Type:')
		else
			args+=(-H "Content-Type: $ct")
		fi
		args+=(--data-binary "$1")
		shift
	fi
	: >"$T/resp.body"
	: >"$T/resp.headers"
	STATUS=$(curl "${args[@]}" "$@" "$BASE_URL$path")
	[ -n "$STATUS" ] || STATUS=000
	BODY=$(cat "$T/resp.body")
	HEADERS=$(tr -d '\r' <"$T/resp.headers")
}

# header NAME: the value of response header NAME from the last api call (case-insensitive).
header() {
	printf '%s\n' "$HEADERS" | awk -v n="$(printf '%s' "$1" | tr 'A-Z' 'a-z')" '
		{ i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == n) {
			v = substr($0, i + 1); sub(/^[ \t]+/, "", v); print v } }' | tail -n 1
}

has_header() {
	printf '%s\n' "$HEADERS" | grep -qi "^$1:"
}

# create_body OWNER NAME ISSUE
create_body() {
	jq -cn --arg o "$1" --arg n "$2" --argjson i "$3" '{repo: {owner: $o, name: $n}, issue: $i}'
}

# create OWNER NAME ISSUE: POST /sessions (sets STATUS/BODY).
create() {
	api POST /sessions "$(create_body "$1" "$2" "$3")"
}

get_session() { api GET "/sessions/$1"; }

# wait_state ID STATE TIMEOUT: polls GET /sessions/ID until .state == STATE. Leaves the last
# answer in BODY. Returns 1 on timeout, or at once when the session failed (unless STATE is
# failed). No check is counted: callers assert.
wait_state() {
	local id=$1 want=$2 deadline=$((SECONDS + $3)) st
	while :; do
		api GET "/sessions/$id"
		st=$(printf '%s' "$BODY" | jq -r '.state? // empty' 2>/dev/null)
		[ "$st" == "$want" ] && return 0
		[ "$st" == failed ] && [ "$want" != failed ] && return 1
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# wait_activity ID JQ SECONDS: polls GET /sessions/ID until JQ holds on it.
wait_activity() {
	local id=$1 expr=$2 deadline=$((SECONDS + $3))
	while :; do
		api GET "/sessions/$id"
		[ "$STATUS" == 200 ] && jq -e "$expr" >/dev/null 2>&1 <<<"$BODY" && return 0
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.05
	done
}

# wait_for DEADLINE_SECONDS COMMAND...: until COMMAND succeeds; 1 on timeout.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $deadline ] && return 1
		sleep 0.1
	done
}

# assert_state DESC ID STATE TIMEOUT
assert_state() {
	if wait_state "$2" "$3" "$4"; then
		pass "$1"
	else
		fail "$1" "expected state $3 within $4 s" "got: $STATUS ${BODY:0:600}"
	fi
}

# ------------------------------------------------------------------------------------------------
# tmux, worktrees and the fake claude

tmx() { tmux -S "$TMUX_SOCK" "$@"; }

tmux_has() { tmx has-session -t "=$1" 2>/dev/null; }

tmux_count() {
	local n
	n=$(tmx list-sessions -F x 2>/dev/null | wc -l)
	echo "${n:-0}"
}

pane_pid() { tmx display -p -t "=$1:" '#{pane_pid}' 2>/dev/null; }

# claude_record TMUXNAME [TIMEOUT]: prints the fake claude record of the pane's process.
claude_record() {
	local pid deadline=$((SECONDS + ${2:-10}))
	while [ $SECONDS -le $deadline ]; do
		pid=$(pane_pid "$1")
		if [ -n "$pid" ] && [ -f "$T/home/fake-claude/$pid.json" ]; then
			cat "$T/home/fake-claude/$pid.json"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# claude_pids: pids of every fake claude that ever started in this test.
claude_pids() {
	local f
	for f in "$T"/home/fake-claude/*.json; do
		[ -f "$f" ] && basename "$f" .json
	done
}

alive() { kill -0 "$1" 2>/dev/null; }

record_count() {
	local n
	n=$(find "$T/state/sessions" -maxdepth 1 -name '*.json' 2>/dev/null | wc -l)
	echo "${n:-0}"
}

worktree_count() {
	local n
	n=$(find "$T/code" -mindepth 1 -maxdepth 1 -name '*-issue-*' 2>/dev/null | wc -l)
	echo "${n:-0}"
}

# assert_nothing_created DESC: no record, no worktree, no tmux session, no bare clone.
assert_nothing_created() {
	local r w s c
	r=$(record_count)
	w=$(worktree_count)
	s=$(tmux_count)
	c=$(find "$T/code/.repos" -mindepth 2 -maxdepth 2 -name '*.git' 2>/dev/null | wc -l)
	if [ "$r$w$s$c" == 0000 ]; then
		pass "$1"
	else
		fail "$1" "records=$r worktrees=$w tmux sessions=$s clones=$c (all expected 0)" \
			"$(ls -la "$T/state/sessions" "$T/code" 2>&1 | head -20)"
	fi
}

# ------------------------------------------------------------------------------------------------
# cleanup

scan_sanitizers() {
	local hits
	hits=$(grep -rsIl -D skip -e 'ERROR: AddressSanitizer' -e 'runtime error:' \
		-e 'ERROR: LeakSanitizer' -e 'ERROR: UndefinedBehaviorSanitizer' \
		"$T/san" "$T/logs" "$T/run" 2>/dev/null)
	if [ -n "$hits" ]; then
		local f
		fail "no sanitizer reports in daemon logs" "$(for f in $hits; do
			echo "== $f"
			grep -n -A 12 -m 1 -e 'ERROR: ' -e 'runtime error:' "$f"
		done | head -n 80)"
	else
		pass "no sanitizer reports in daemon logs"
	fi
}

# A stream's access decision held in nginx's cache for the stream's life (agentd.conf.in:
# $agentd_auth_uncached): the cache manager says so every 10 s. Only where a stack ran.
scan_nginx_cache() {
	local msg="long locked inactive cache entry"
	compgen -G "$T/logs/up*.log" >/dev/null || return 0
	if grep -q "$msg" "$T"/logs/up*.log; then
		fail "nginx's cache held no access decision locked for a stream's life" \
			"$(grep -h -m 3 "$msg" "$T"/logs/up*.log)"
	else
		pass "nginx's cache held no access decision locked for a stream's life"
	fi
}

# remove_cgroups: kills whatever still runs in this stack's sessions' cgroups and removes them
# and their parent (a v1 hierarchy has no cgroup.kill: its members are killed one by one).
remove_cgroups() {
	local d s i
	for s in $(cgroup_dirs); do
		for d in "$s"/*/; do
			[ -e "$d/cgroup.kill" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null
		done
	done
	for s in $(cgroup_dirs); do
		for d in "$s"/*/; do
			[ -d "$d" ] || continue
			for i in $(seq 50); do
				rmdir "$d" 2>/dev/null && break
				xargs -r kill -KILL <"$d/cgroup.procs" 2>/dev/null
				sleep 0.1
			done
		done
		rmdir "$s" 2>/dev/null || log "cannot remove cgroup $s"
	done
}

# release_uids: gives back the host-wide uids (core/cageuid.h) this stack's sessions still hold
# (a HOME kept with keepHome, a script that stopped early): their registry entries and the passwd
# drop-ins, which getpwuid would otherwise know until some stack took the uid again.
release_uids() {
	local f u
	for f in /run/agentd-uids/[0-9]*; do
		[ -f "$f" ] || continue
		case "$(cat "$f" 2>/dev/null)" in "$T/state "*) ;; *) continue ;; esac
		u=${f##*/}
		rm -f "/run/userdb/agentd-$u.user" "/run/userdb/agentd-$u.group" \
			"/run/userdb/$u.user" "/run/userdb/$u.group" "$f"
	done
}

cleanup() {
	local rc=$? p f
	trap - EXIT INT TERM
	set +e
	stop_stack 20 || fail "deploy/up stops on SIGTERM within 20 s"
	tmux -S "$TMUX_SOCK" kill-server >/dev/null 2>&1
	remove_cgroups
	release_uids
	# Fake agents that outlived their tmux server (they should not).
	for p in $(claude_pids); do
		if alive "$p" && tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q fakes/claude; then
			kill -KILL "$p" 2>/dev/null
		fi
	done
	scan_sanitizers
	scan_nginx_cache
	if [ "$FAILURES" -gt 0 ] || [ "$rc" -ne 0 ]; then
		echo
		echo "######## logs ($T) ########"
		for f in "$T"/logs/* "$T"/run/*.log "$T"/run/logs/* "$T"/san/*; do
			[ -f "$f" ] || continue
			echo "======== $f (last 150 lines)"
			tail -n 150 "$f"
		done
	fi
	echo
	if [ "$FAILURES" -gt 0 ]; then
		echo "# $FAILURES of $CHECKS checks failed:"
		printf '#   %s\n' "${FAILED_CHECKS[@]}"
		rc=1
	elif [ "$rc" -ne 0 ]; then
		echo "# script ended with status $rc after $CHECKS checks"
	else
		echo "# all $CHECKS checks passed"
	fi
	if [ "${ITEST_KEEP:-0}" == 1 ]; then
		echo "# kept $T"
	else
		remove_t
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

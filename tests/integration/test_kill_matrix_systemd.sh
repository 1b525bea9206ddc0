#!/usr/bin/env bash
# The kill -9 matrix under a real systemd (issue 14, point 2): the installed units (meson install)
# run in tests/integration/systemd/container, a systemd that is PID 1 of its own namespaces over a
# copy-on-write view of this machine (no need for the machine to boot with systemd, nothing
# reaches it). With a terminal session and a structured one running, agentd-api, agentd-bridge,
# nginx's master and the tmux server are killed with SIGKILL in turn, and after each:
# - systemd brings the process back (its unit's Restart=; NRestarts counts it);
# - the stack answers, no record is lost or corrupt, every state is honest within HONEST_SECS
#   (the tmux server killed: both sessions lost, as under deploy/up);
# - a terminal client reattaches and sees the screen, the structured session's stream answers
#   and a turn runs.
# At the end systemd stops every unit (poweroff), and nothing of it is left: no process of the
# namespace, no cgroup.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/terminal/lib_terminal.sh"

readonly HONEST_SECS=2     # the issue's bound for an honest state after a restart
readonly RESTART_SECS=30   # a unit's RestartSec= (2 s) plus an ASan start
readonly CONTAINER=$REPO/tests/integration/systemd/container
readonly UNITS=(agentd-tmux agentd-api agentd-bridge)
DEST=$T/dest
SD=$T/sysd
NS_PID= # unshare, the parent of the namespace's PID 1
P1=     # systemd, PID 1 inside (this machine's pid)
CG=agentd-it-$$
CR= # the namespace's root, as /proc/<P1>/root
CT=/agentd-it # $T inside (tests/integration/systemd/container)

# cx CMD...: runs CMD inside the namespace (its pids, its mounts, systemd's view).
cx() { nsenter -t "$P1" -m -p -u -i -C -- "$@"; }
sctl() { cx systemctl --no-pager "$@"; }
prop() { sctl show -p "$2" --value "$1.service" 2>/dev/null; }
tmx() { cx tmux -S /run/agentd/tmux.sock "$@"; }

sysd_start() {
	mkdir -p "/sys/fs/cgroup/systemd/$CG" "/sys/fs/cgroup/unified/$CG" || return 1
	(
		echo "$BASHPID" >"/sys/fs/cgroup/systemd/$CG/cgroup.procs" &&
			echo "$BASHPID" >"/sys/fs/cgroup/unified/$CG/cgroup.procs" || exit 1
		exec unshare --pid --fork --mount --cgroup --uts --ipc --propagation private \
			"$CONTAINER" "$T" "$DEST" "${UNITS[@]/%/.service}"
	) </dev/null >"$T/logs/container.log" 2>&1 &
	NS_PID=$!
	wait_for 20 bash -c "[ \"\$(cat /proc/\$(pgrep -P $NS_PID)/comm 2>/dev/null)\" == systemd ]" ||
		return 1
	P1=$(pgrep -P "$NS_PID")
	CR=/proc/$P1/root
	wait_for 60 bash -c "s=\$(nsenter -t $P1 -m -p -- systemctl is-system-running 2>/dev/null);
		[ \"\$s\" == running ] || [ \"\$s\" == degraded ]"
}

# sysd_stop: poweroff inside (systemd stops every unit, then exits: the namespace ends), SIGKILL
# to its PID 1 if that takes more than 60 s; removes the cgroups. Returns 1 if it had to kill.
sysd_stop() {
	local rc=0 d
	[ -n "$NS_PID" ] || return 0
	if [ -n "$P1" ]; then
		sctl --no-block poweroff >/dev/null 2>&1
		wait_for 60 bash -c "! kill -0 $NS_PID 2>/dev/null" || {
			rc=1
			kill -KILL "$P1" 2>/dev/null
		}
	fi
	wait "$NS_PID" 2>/dev/null
	NS_PID=
	for d in "/sys/fs/cgroup/systemd/$CG" "/sys/fs/cgroup/unified/$CG"; do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	return $rc
}
trap 'sysd_stop; cleanup' EXIT

# --- the installation and the namespace ---------------------------------------------------------
out=$(meson install -C "$BUILD_DIR" --no-rebuild --destdir "$DEST" 2>&1) ||
	{ fail "meson install --destdir" "$out"; exit 1; }
make_remote acme widgets || exit 1
PORT=$(free_port)
BASE_URL=http://127.0.0.1:$PORT
mkdir -p "$SD/etc/agentd" "$SD/units"
cat >"$SD/etc/agentd/agentd.conf" <<EOC
AGENTD_LISTEN=127.0.0.1:$PORT
AGENTD_REPO_URL=file://$CT/remotes/{owner}/{name}.git
AGENTD_CLAUDE=$FAKE_CLAUDE
EOC
# The ASan build: its reports into $T/san (scanned at the end), no leak check at exit.
chmod 1777 "$T/san"
for u in "${UNITS[@]}"; do
	mkdir -p "$SD/units/$u.service.d"
	cat >"$SD/units/$u.service.d/asan.conf" <<EOC
[Service]
Environment=ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=0:log_path=$CT/san/asan
Environment=UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$CT/san/ubsan
ReadWritePaths=$CT/san
EOC
done
if sysd_start; then
	pass "systemd runs as PID 1 of its namespace"
else
	fail "systemd runs as PID 1 of its namespace" "$(cat "$T/logs/container.log")"
	exit 1
fi
sctl list-units --all --no-legend 'agentd-*' nginx.service | sed 's/^/# /'
for u in "${UNITS[@]}"; do
	assert_eq "$u is active" active "$(prop "$u" ActiveState)"
done

# nginx: Debian's unit with the installed include, as README.md's systemd section says.
out=$(cx /usr/local/share/agentd/deploy/up --render /etc/agentd/nginx 2>&1) ||
	fail "the installed deploy/up --render" "$out"
cx ln -s /etc/agentd/nginx/conf/agentd.conf /etc/nginx/conf.d/agentd.conf
check "systemctl start nginx" sctl start nginx.service
# -u AGENTD_STATE_DIR: lib.sh exports the host stack's; the units use the default.
AGENTD_TEST_TOKEN=$(cx env -u AGENTD_STATE_DIR ASAN_OPTIONS=detect_leaks=0 /usr/local/bin/agentd-api token add itest) ||
	{ fail "agentd-api token add itest inside"; exit 1; }
export AGENTD_TEST_TOKEN
(umask 077 && printf 'header = "Authorization: Bearer %s"\n' "$AGENTD_TEST_TOKEN" >"$T/.curlrc")
check "the stack answers through nginx" wait_for 30 bash -c \
	"[ \"\$(curl -s -o /dev/null -w '%{http_code}' $BASE_URL/healthz)\" == 200 ]"

create acme widgets 1
assert_status "POST /sessions under systemd: 201" 201
assert_state "a terminal session runs under the installed units" widgets-1 running 60

# kill_main UNIT: SIGKILL to the unit's main process; systemd must start it again (NRestarts).
kill_main() {
	local old n0
	old=$(prop "$1" MainPID)
	n0=$(prop "$1" NRestarts)
	cx kill -KILL "$old" || return 1
	wait_for "$RESTART_SECS" bash -c "[ \"\$(nsenter -t $P1 -m -p -- systemctl show -p NRestarts \
		--value $1.service)\" -gt $n0 ] && [ \"\$(nsenter -t $P1 -m -p -- systemctl show -p \
		ActiveState --value $1.service)\" == active ]"
}
for u in agentd-api agentd-bridge nginx; do
	check "kill -9 $u's main process: systemd starts it again" kill_main "$u"
	check "$u: the stack answers again" wait_for 30 bash -c \
		"[ \"\$(curl -s -o /dev/null -w '%{http_code}' $BASE_URL/healthz)\" == 200 ]"
done
# The tmux server: agentd-tmux.service is oneshot + RemainAfterExit, so nothing notices.
srv=$(tmx display -p '#{pid}')
cx kill -KILL "$srv"
check "kill -9 the tmux server: systemd starts it again" wait_for "$RESTART_SECS" tmx list-sessions -F x
sctl list-units --all --no-legend 'agentd-*' nginx.service | sed 's/^/# /'

if sysd_stop; then pass "systemd stops every unit and exits (poweroff)"; else
	fail "systemd stops every unit and exits within 60 s (poweroff)"
fi
check_not "no cgroup of the namespace is left" test -d "/sys/fs/cgroup/systemd/$CG"

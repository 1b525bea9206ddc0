# The installed units under a real systemd (tests/integration/systemd/container), for the tests
# that need one (test_kill_matrix_systemd.sh, test_cage_systemd.sh). Sourced after lib.sh:
#
#   sysd_stack_up [KEY=value ...]   meson install, the namespace with its systemd as PID 1, the
#                                   units (agentd.conf gets the KEY=value lines too), nginx, a token;
#                                   checks as it goes, exits the script when it cannot go on
#   cx CMD...                       runs CMD inside (its pids, mounts, cgroups: systemd's view)
#   sctl ARGS... / prop UNIT PROP   systemctl inside / a service's property
#   tmx ARGS...                     the units' tmux server
#   sysd_stop                       poweroff, then the namespace's cgroups removed
# CR is the namespace's root seen from here (/proc/<P1>/root), CT the test's $T inside.
# shellcheck shell=bash disable=SC2034

readonly CONTAINER=$REPO/tests/integration/systemd/container
readonly UNITS=(agentd-tmux agentd-api agentd-bridge)
DEST=$T/dest
SD=$T/sysd
NS_PID= # unshare, the parent of the namespace's PID 1
P1=     # systemd, PID 1 inside (this machine's pid)
CG=agentd-it-$$
CR= # the namespace's root, as /proc/<P1>/root
CT=/agentd-it # $T inside (tests/integration/systemd/container)
# The v1 hierarchies systemd inside mounts and makes units' cgroups in, each given a cgroup of
# the test's own first (the namespace's root there), so that what it makes is removed with it.
SYSD_V1=(memory pids)

# cx CMD...: runs CMD inside the namespace (its pids, its mounts, systemd's view).
cx() { nsenter -t "$P1" -m -p -u -i -C -- "$@"; }
sctl() { cx systemctl --no-pager "$@"; }
prop() { sctl show -p "$2" --value "$1.service" 2>/dev/null; }
tmx() { cx tmux -S /run/agentd/tmux.sock "$@"; }

# The kernel settings systemd as PID 1 raises at start (global, not the namespace's: /proc
# stays whole so that the cages can mount their own), put back as they were once it runs.
SYSCTLS=(fs/nr_open fs/file-max)
declare -A SYSCTL_WAS=()
for k in "${SYSCTLS[@]}"; do SYSCTL_WAS[$k]=$(cat "/proc/sys/$k"); done
sysctl_restore() {
	local k
	for k in "${SYSCTLS[@]}"; do
		[ "$(cat "/proc/sys/$k")" == "${SYSCTL_WAS[$k]}" ] ||
			echo "${SYSCTL_WAS[$k]}" >"/proc/sys/$k"
	done
}

# sysd_cgdirs: the test's own cgroup directories the namespace is rooted at.
sysd_cgdirs() {
	local h p
	echo "/sys/fs/cgroup/systemd/$CG" "/sys/fs/cgroup/unified/$CG"
	for h in "${SYSD_V1[@]}"; do
		p=$(sed -n "s/^[0-9]*:$h:\(.*\)/\1/p" /proc/self/cgroup)
		[ -d "/sys/fs/cgroup/$h" ] && [ -n "$p" ] && echo "/sys/fs/cgroup/$h${p%/}/$CG"
	done
}

sysd_start() {
	local dirs
	read -ra dirs <<<"$(sysd_cgdirs | tr '\n' ' ')"
	mkdir -p "${dirs[@]}" || return 1
	(
		for d in "${dirs[@]}"; do echo "$BASHPID" >"$d/cgroup.procs" || exit 1; done
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
	local rc=$?
	sysctl_restore
	return $rc
}

# sysd_stop: poweroff inside (systemd stops every unit, then exits: the namespace ends), SIGKILL
# to its PID 1 if that takes more than 60 s; removes the cgroups. Returns 1 if it had to kill.
sysd_stop() {
	local rc=0 d
	[ -n "$NS_PID" ] || return 0
	sysd_journal
	if [ -n "$P1" ]; then
		sctl --no-block poweroff >/dev/null 2>&1
		wait_for 60 bash -c "! kill -0 $NS_PID 2>/dev/null" || {
			rc=1
			kill -KILL "$P1" 2>/dev/null
		}
	fi
	wait "$NS_PID" 2>/dev/null
	NS_PID= P1=
	for d in $(sysd_cgdirs); do
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	return $rc
}
# sysd_journal: what systemd saw, into the logs cleanup prints when a check failed.
sysd_journal() {
	[ -n "$P1" ] && [ "$FAILURES" -gt 0 ] &&
		cx journalctl --no-pager -o short-precise >"$T/logs/journal.log" 2>&1
}

# sysd_stack_up [KEY=value ...]: the installation, the namespace, the units, nginx and a token.
sysd_stack_up() {
	local out k u kv
	out=$(meson install -C "$BUILD_DIR" --no-rebuild --destdir "$DEST" 2>&1) ||
		{ fail "meson install --destdir" "$out"; exit 1; }
	make_remote acme widgets || exit 1
	PORT=$(free_port)
	BASE_URL=http://127.0.0.1:$PORT
	mkdir -p "$SD/etc/agentd" "$SD/units"
	# The fake claude from inside $T: the container's /tmp is a fresh tmpfs, so a checkout that
	# lives in the temp dir would not be visible there at its own path.
	cp -a "$REPO/tests/fakes" "$T/fakes"
	# The caller's KEY=value lines win over these (each key once).
	for kv in "AGENTD_LISTEN=127.0.0.1:$PORT" \
		"AGENTD_REPO_URL=file://$CT/remotes/{owner}/{name}.git" \
		"AGENTD_CLAUDE=$CT/fakes/claude" "$@"; do
		printf '%s\n' "$kv"
	done | tac | awk -F= '!seen[$1]++' | tac >"$SD/etc/agentd/agentd.conf"
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
		for k in "${SYSCTLS[@]}"; do
			assert_eq "the machine's $k is as it was" "${SYSCTL_WAS[$k]}" "$(cat "/proc/sys/$k")"
		done
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
}

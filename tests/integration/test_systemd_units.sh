#!/usr/bin/env bash
# systemd as operators expect:
#   1. meson install --destdir puts the programs, the units, tmpfiles.d, sysusers.d, the nginx
#      templates, the web UI and deploy/up where the units and the nginx include expect them; the
#      daemons run as root, the agents as agentd (made by agentd-tmux: sysusers.d, tmpfiles.d);
#   2. systemd-analyze verify accepts the installed units and nginx.service with our drop-in
#      (Restart=always; agentd-tmux restarts a dead tmux server the same way) without a warning, and
#      systemd-analyze security --offline=true rates agentd-api, agentd-bridge and agentd-telegram
#      <= 4.5;
#   3. the installed deploy/up --render renders an nginx include that nginx -t accepts, serving the
#      installed web UI;
#   4. both daemons send READY=1 once their socket exists and STOPPING=1 on SIGTERM (sd_notify),
#      and write "<N>" priorities when stderr is their JOURNAL_STREAM, plain lines otherwise;
#      agentd-telegram says READY=1 once its state file is written, STOPPING=1 on SIGTERM;
#   5. agentd-api --no-tmux-start (the unit's ExecStart) never starts a tmux server: without one,
#      a session fails with the reason, and works once agentd-api --init (agentd-tmux) ran.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly EXPOSURE_MAX=4.5
readonly NOTIFY_PY=$REPO/tests/integration/systemd/notify.py
PREFIX=/usr/local
DEST=$T/dest
NOTIFY_PIDS=()

# exposure UNITFILE: the overall figure of systemd-analyze security --offline=true ("1.7").
exposure() {
	systemd-analyze security --offline=true "$1" 2>&1 |
		sed -n 's/^→ Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'
}

stop_listeners() {
	local p
	for p in "${NOTIFY_PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	NOTIFY_PIDS=()
}
trap 'stop_listeners; cleanup' EXIT

if ! command -v systemd-analyze >/dev/null; then
	fail "systemd-analyze is installed (tests/run installs the systemd package)"
	exit 1
fi

# --- 1. meson install --destdir -----------------------------------------------------------------
out=$(meson install -C "$BUILD_DIR" --no-rebuild --destdir "$DEST" 2>&1)
if [ $? -eq 0 ]; then pass "meson install --destdir succeeds"; else fail "meson install --destdir succeeds" "$out"; fi
R=$DEST$PREFIX
for f in bin/agentd-api bin/agentd-bridge bin/agentd-host bin/agentd-hook bin/agentd-telegram; do
	check "installed executable: $f" test -x "$R/$f"
done
UNITDIR=$R/lib/systemd/system
for f in lib/systemd/system/agentd-tmux.service lib/systemd/system/agentd-api.service \
	lib/systemd/system/agentd-bridge.service lib/systemd/system/agentd-telegram.service \
	lib/tmpfiles.d/agentd.conf lib/sysusers.d/agentd.conf \
	share/agentd/nginx/agentd.conf.in share/agentd/nginx/nginx.conf.in \
	share/agentd/nginx/html/index.html share/doc/agentd/README.md share/doc/agentd/docs/API.md; do
	check "installed: $f" test -s "$R/$f"
done
check "installed: share/agentd/deploy/up is executable" test -x "$R/share/agentd/deploy/up"
check "installed web UI is the repository's" cmp "$REPO/nginx/html/index.html" \
	"$R/share/agentd/nginx/html/index.html"
check_not "no test program is installed" compgen -G "$R/bin/test_*"

# Every ExecStart=/ExecStop= program of the installed units exists in the install (or is tmux,
# or systemd's own sysusers and tmpfiles, which make the agents' user and its directories).
for u in agentd-tmux agentd-api agentd-bridge agentd-telegram; do
	while read -r prog; do
		if [[ $prog == "$PREFIX"/* ]]; then
			check "$u: $prog is installed" test -x "$DEST$prog"
		else
			assert_match "$u: the only programs outside the install are tmux and systemd's" \
				'^(/usr/bin/tmux|systemd-sysusers|systemd-tmpfiles)$' "$prog"
		fi
	done < <(sed -n 's/^Exec[A-Za-z]*=[-+!@:]*\([^ ]*\).*/\1/p' "$UNITDIR/$u.service")
	check "$u: no @placeholder@ left" bash -c "! grep -n '@[a-z_]*@' '$UNITDIR/$u.service'"
done
assert_eq "agentd-api runs with --no-tmux-start" "ExecStart=$PREFIX/bin/agentd-api --no-tmux-start" \
	"$(grep '^ExecStart=' "$UNITDIR/agentd-api.service")"
assert_eq "agentd-api checks the configuration before it starts" \
	"ExecStartPre=$PREFIX/bin/agentd-api config --check" \
	"$(grep '^ExecStartPre=' "$UNITDIR/agentd-api.service")"
# The runtime dir the units may write is the one tmpfiles.d creates, and the api's base dir is
# AGENTD_BASE_DIR's default.
assert_match "tmpfiles.d creates /run/agentd (root's, setgid, group www-data, o+x only)" \
	'^d /run/agentd 2751 root www-data' "$(grep -v '^#' "$R/lib/tmpfiles.d/agentd.conf")"
assert_match "tmpfiles.d gives the agents their directory in it (group root, setgid, sticky, o+wx: each session's uid makes its own entry)" \
	'd /run/agentd/agents 3733 agentd root' "$(grep -v '^#' "$R/lib/tmpfiles.d/agentd.conf")"
assert_match "tmpfiles.d makes the agent's HOME and the base dir, the agent's" \
	'd /home/agentd 0700 agentd agentd -.d /code 0755 agentd agentd -' \
	"$(grep -v '^#' "$R/lib/tmpfiles.d/agentd.conf" | tr '\n' '.')"
assert_eq "sysusers.d makes the agents' user agentd, HOME /home/agentd" \
	'u agentd - "agent-daemon agents" /home/agentd /bin/bash' \
	"$(grep -v '^#' "$R/lib/sysusers.d/agentd.conf")"
assert_eq "agentd-tmux makes them before it starts" \
	"ExecStartPre=+systemd-sysusers $PREFIX/lib/sysusers.d/agentd.conf|ExecStartPre=+systemd-tmpfiles --create $PREFIX/lib/tmpfiles.d/agentd.conf" \
	"$(grep '^ExecStartPre=' "$UNITDIR/agentd-tmux.service" | tr '\n' '|' | sed 's/|$//')"
for u in agentd-tmux agentd-api agentd-bridge; do
	check_not "$u runs as root (no User=): the agents are the ones another user" \
		grep -q '^User=' "$UNITDIR/$u.service"
done
# CAP_DAC_READ_SEARCH: libgit2's access(2) checks the real uid (root), not the agent's fsuid
# (test_kill_matrix_systemd creates a session under the real unit).
assert_eq "agentd-api may only take the agent's file identity (setfsuid, setfsgid), read, and interrupt an agent of another uid (the graceful stop)" \
	"CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_DAC_READ_SEARCH CAP_KILL" \
	"$(grep '^CapabilityBoundingSet=' "$UNITDIR/agentd-api.service")"
assert_eq "agentd-bridge has no capability" "CapabilityBoundingSet=" \
	"$(grep '^CapabilityBoundingSet=' "$UNITDIR/agentd-bridge.service")"
assert_eq "agentd-api may write /run/agentd, /code, the caged sessions' HOMEs and the per-session uid registry" \
	"ReadWritePaths=/run/agentd /code /var/lib/agentd-homes|ReadWritePaths=-/run/agentd-uids -/run/userdb" \
	"$(grep '^ReadWritePaths=' "$UNITDIR/agentd-api.service" | tr '\n' '|' | sed 's/|$//')"
assert_eq "agentd-api's state dir is AGENTD_STATE_DIR's default, /var/lib/agentd (tokens, records)" \
	StateDirectory=agentd "$(grep '^StateDirectory=' "$UNITDIR/agentd-api.service")"
assert_eq "agentd-bridge may write /run/agentd" "ReadWritePaths=/run/agentd" \
	"$(grep '^ReadWritePaths=' "$UNITDIR/agentd-bridge.service")"
# Reboot survival: the records and the /events log outlive a reboot in the state dir, which both write;
# the agents pass through it to their hosts' event logs (0711, as tmpfiles.d makes it).
for u in agentd-api agentd-bridge; do
	assert_eq "$u writes the state dir /var/lib/agentd, mode 0711" \
		"StateDirectory=agentd StateDirectoryMode=0711" \
		"$(grep -E '^StateDirectory(Mode)?=' "$UNITDIR/$u.service" | tr '\n' ' ' | sed 's/ $//')"
done
assert_match "tmpfiles.d makes the state dir (0711) and the agents' directory in it" \
	'd /var/lib/agentd 0711 root root -.d /var/lib/agentd/agents 3733 agentd root -' \
	"$(grep -v '^#' "$R/lib/tmpfiles.d/agentd.conf" | tr '\n' '.')"
for u in agentd-api agentd-bridge agentd-telegram; do
	assert_eq "$u is Type=notify" Type=notify "$(grep '^Type=' "$UNITDIR/$u.service")"
done
# The tmux server is agentd-tmux's main process (the pid file agentd-api --init writes), so a
# server that dies is started again.
assert_eq "agentd-tmux: Type=forking, the server's pid file, restarted always" \
	"Type=forking PIDFile=/run/agentd/tmux.pid Restart=always" \
	"$(grep -E '^(Type|PIDFile|Restart)=' "$UNITDIR/agentd-tmux.service" | tr '\n' ' ' | sed 's/ $//')"
# nginx is the only door: Debian's nginx.service has no Restart=, our drop-in adds it.
NGINX_DROPIN=$UNITDIR/nginx.service.d/agentd.conf
check "installed: lib/systemd/system/nginx.service.d/agentd.conf" test -s "$NGINX_DROPIN"
assert_eq "the nginx drop-in restarts nginx always" "[Service] Restart=always" \
	"$(grep -E '^(\[|Restart=)' "$NGINX_DROPIN" | tr '\n' ' ' | sed 's/ $//')"
# The bot needs nothing of agentd's files: a user of its own, its state directory only.
assert_eq "agentd-telegram runs as a dynamic user" DynamicUser=yes \
	"$(grep '^DynamicUser=' "$UNITDIR/agentd-telegram.service")"
assert_eq "agentd-telegram's state dir is its own" StateDirectory=agentd-telegram \
	"$(grep '^StateDirectory=' "$UNITDIR/agentd-telegram.service")"
check_not "agentd-telegram may write nothing else" grep -q '^ReadWritePaths=' \
	"$UNITDIR/agentd-telegram.service"
assert_eq "agentd-telegram reads its secrets from telegram.env" \
	EnvironmentFile=/etc/agentd/telegram.env \
	"$(grep '^EnvironmentFile=' "$UNITDIR/agentd-telegram.service")"

# --- 2. systemd-analyze verify and security -----------------------------------------------------
# verify wants the ExecStart= programs to exist: check copies that point into the destdir.
V=$T/verify
mkdir -p "$V"
for u in agentd-tmux agentd-api agentd-bridge agentd-telegram; do
	sed "s|^\\(Exec[A-Za-z]*=[-+!@:]*\\)$PREFIX/|\\1$R/|" "$UNITDIR/$u.service" >"$V/$u.service"
done
out=$(cd "$V" && systemd-analyze verify --man=no ./agentd-tmux.service ./agentd-api.service \
	./agentd-bridge.service ./agentd-telegram.service 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then
	pass "systemd-analyze verify: the four units, no warning"
else
	fail "systemd-analyze verify: the four units, no warning" "exit $rc" "$out"
fi
# The nginx drop-in with Debian's nginx.service: verify reads a unit's drop-ins when it is named
# (not given as a path) and found in the unit path.
if [ -f /lib/systemd/system/nginx.service ]; then
	mkdir -p "$V/ngx/nginx.service.d"
	cp /lib/systemd/system/nginx.service "$V/ngx/"
	cp "$NGINX_DROPIN" "$V/ngx/nginx.service.d/"
	out=$(cd "$V/ngx" && SYSTEMD_UNIT_PATH="$V/ngx:" systemd-analyze verify --man=no nginx.service 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		pass "systemd-analyze verify: nginx.service with the drop-in, no warning"
	else
		fail "systemd-analyze verify: nginx.service with the drop-in, no warning" "exit $rc" "$out"
	fi
	# ... and it did read it: a bad value there is reported.
	sed -i 's/^Restart=always$/Restart=alwayz/' "$V/ngx/nginx.service.d/agentd.conf"
	out=$(cd "$V/ngx" && SYSTEMD_UNIT_PATH="$V/ngx:" systemd-analyze verify --man=no nginx.service 2>&1)
	assert_match "systemd-analyze verify reads the drop-in (a bad Restart= is reported)" \
		"agentd.conf:.*restart specifier.*alwayz" "$out"
else
	fail "Debian's nginx.service is installed (the nginx package)"
fi
# The check can fail: a misspelt key is reported.
sed 's/^ProtectSystem=strict$/ProtectSytem=strict/' "$V/agentd-api.service" >"$V/typo.service"
out=$(cd "$V" && systemd-analyze verify --man=no ./typo.service 2>&1)
assert_match "systemd-analyze verify reports a misspelt key" "Unknown key.* 'ProtectSytem'" "$out"
rm -f "$V/typo.service"

for u in agentd-api agentd-bridge agentd-telegram agentd-tmux; do
	e=$(exposure "$UNITDIR/$u.service")
	log "systemd-analyze security --offline=true $u: exposure $e"
	if [ "$u" == agentd-tmux ]; then
		assert_match "$u: an exposure figure" '^[0-9]+\.[0-9]$' "$e"
		continue
	fi
	if [[ $e =~ ^[0-9]+\.[0-9]$ ]] && awk -v e="$e" -v m="$EXPOSURE_MAX" 'BEGIN { exit !(e <= m) }'; then
		pass "$u: exposure $e <= $EXPOSURE_MAX"
	else
		fail "$u: exposure <= $EXPOSURE_MAX" "got: '$e'" \
			"$(systemd-analyze security --offline=true "$UNITDIR/$u.service" 2>&1 | grep '✗')"
	fi
done
# The figure is read right: the unhardened unit of before is far above the limit.
printf '[Service]\nExecStart=%s/bin/agentd-api\nUser=agentd\n' "$R" >"$V/bare.service"
e=$(exposure "$V/bare.service")
assert_match "an unhardened unit rates above the limit ($e)" '^(9|10)\.[0-9]$' "$e"

# --- 3. the nginx include from the installed templates ------------------------------------------
NGX=$T/nginx-rendered
PORT=$(free_port)
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_RUNTIME_DIR="$T/run" AGENTD_LISTEN="127.0.0.1:$PORT" \
	"$R/share/agentd/deploy/up" --render "$NGX" 2>&1)
if [ $? -eq 0 ]; then pass "installed deploy/up --render (nginx -t passes)"; else fail "installed deploy/up --render (nginx -t passes)" "$out"; fi
check "rendered include serves the installed web UI" \
	grep -q "^ *root $R/share/agentd/nginx/html;" "$NGX/conf/agentd.conf"
check "rendered include reaches agentd-api's socket" \
	grep -q "server unix:$T/run/api.sock;" "$NGX/conf/agentd.conf"
check_not "no placeholder left in the rendered include (comments aside)" \
	bash -c "grep -v '^ *#' '$NGX/conf/agentd.conf' | grep -n '@[A-Z_]*@'"
# What deploy/up --render runs: the installed agentd-api, from the installed templates.
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_RUNTIME_DIR="$T/run" AGENTD_LISTEN="127.0.0.1:$PORT" \
	"$R/bin/agentd-api" config --render-nginx "$NGX-api" --templates "$R/share/agentd/nginx" 2>&1)
if [ $? -eq 0 ]; then pass "installed agentd-api config --render-nginx (nginx -t passes)"; else fail "installed agentd-api config --render-nginx (nginx -t passes)" "$out"; fi
check "it writes what deploy/up --render wrote" diff -r "$NGX/conf" "$NGX-api/conf"

# --- 4. sd_notify and journald priorities -------------------------------------------------------
# run_notified NAME SOCKET ARGV...: starts the daemon with NOTIFY_SOCKET and JOURNAL_STREAM naming
# its stderr file; waits for READY=1 (which must come after SOCKET, or whatever file READY=1 says
# is there, exists, with the STATUS that matches $READY_STATUS); SIGTERM; waits for its exit. Sets
# NOTES (what the socket got) and DAEMON_LOG.
READY_STATUS='listening on .*'

run_notified() {
	local name=$1 sock=$2 pid ns=$T/$1.notify rc dog
	shift 2
	NOTES=$T/$name.notes
	DAEMON_LOG=$T/logs/$name.log
	: >"$DAEMON_LOG"
	python3 "$NOTIFY_PY" "$ns" "$NOTES" "$sock" &
	NOTIFY_PIDS+=($!)
	wait_for 10 grep -q '^listening$' "$NOTES" 2>/dev/null ||
		fail "$name: the notify listener starts"
	env NOTIFY_SOCKET="$ns" JOURNAL_STREAM="$(stat -c '%d:%i' "$DAEMON_LOG")" \
		AGENTD_CONFIG="$T/agentd.conf" AGENTD_RUNTIME_DIR="$T/run" AGENTD_BASE_DIR="$T/code" \
		AGENTD_CLAUDE="$FAKE_CLAUDE" HOME="$T/home" "$@" </dev/null 2>>"$DAEMON_LOG" &
	pid=$!
	if wait_for 30 grep -q '^READY=1' "$NOTES"; then
		pass "$name: READY=1"
	else
		fail "$name: READY=1" "$(cat "$NOTES")" "$(tail -n 20 "$DAEMON_LOG")"
	fi
	assert_match "$name: READY=1 came after $(basename "$sock") existed, with a STATUS" \
		"^READY=1\\|STATUS=$READY_STATUS watch=1\$" "$(grep '^READY=1' "$NOTES")"
	check_not "$name: nothing but READY=1 before SIGTERM" grep -q STOPPING "$NOTES"
	kill -TERM "$pid"
	# A watchdog, not a synchronisation: a daemon that ignores SIGTERM fails the check below.
	(sleep 20 && kill -KILL "$pid") 2>/dev/null &
	dog=$!
	wait "$pid"
	rc=$?
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	assert_eq "$name: exit status 0 after SIGTERM" 0 "$rc"
	check "$name: STOPPING=1" wait_for 5 grep -q '^STOPPING=1' "$NOTES"
}

run_notified agentd-api "$T/run/api.sock" "$BUILD_DIR/fcgi-app/agentd-api" --no-tmux-start
check "agentd-api: info lines carry <6> on the journal stream" \
	grep -q '^<6>agentd-api info: listening on ' "$DAEMON_LOG"
check_not "agentd-api: no line without a priority on the journal stream" grep -v '^<[0-9]>' "$DAEMON_LOG"
check_not "agentd-api --no-tmux-start started no tmux server" test -e "$TMUX_SOCK"

run_notified agentd-bridge "$T/run/bridge.sock" "$BUILD_DIR/ptybridge/agentd-bridge"
check "agentd-bridge: info lines carry <6> on the journal stream" \
	grep -q '^<6>agentd-bridge info: listening on ' "$DAEMON_LOG"
# The bot is ready once its state file is written (no Telegram needed: nothing listens at the
# Bot API it is given, and it only retries).
READY_STATUS='polling Telegram'
AGENTD_TELEGRAM_TOKEN=123:test-token AGENTD_TELEGRAM_USERS=1 AGENTD_TELEGRAM_API=http://127.0.0.1:9 \
	AGENTD_TELEGRAM_STATE=$T/telegram/telegram.json \
	run_notified agentd-telegram "$T/telegram/telegram.json" "$BUILD_DIR/telegram/agentd-telegram"
check "agentd-telegram: info lines carry <6> on the journal stream" \
	grep -q '^<6>agentd-telegram info: serving 1 Telegram users' "$DAEMON_LOG"
check "agentd-telegram: its state file is there, mode 0600" \
	test "$(stat -c %a "$T/telegram/telegram.json")" = 600
stop_listeners

# Stderr that is not the journal stream (a file a child inherited JOURNAL_STREAM past): plain.
out=$(env JOURNAL_STREAM=1:1 AGENTD_CONFIG="$T/agentd.conf" AGENTD_RUNTIME_DIR="$T/nonexistent/x" \
	"$BUILD_DIR/fcgi-app/agentd-api" --init 2>&1 </dev/null)
assert_match "errors elsewhere are plain lines (time, name, level)" \
	'^[0-9]{2}:[0-9]{2}:[0-9]{2} agentd-api error: ' "$out"

# --- 5. --no-tmux-start in a running stack ------------------------------------------------------
# deploy/up runs agentd-api without arguments: a build dir whose agentd-api adds the flag (exec:
# the API still finds itself, and its creation worker, as the real program). deploy/up starts a
# tmux server that died again with --init, as agentd-tmux.service would: while $T/tmux-stopped
# exists that --init fails (the unit is stopped), so only the API could start one.
FAKE_BUILD=$T/build-no-tmux-start
mkdir -p "$FAKE_BUILD/fcgi-app" "$FAKE_BUILD/ptybridge"
printf '#!/bin/sh\n[ $# -eq 0 ] && set -- --no-tmux-start\n[ "$1" = --init ] && [ -e %s ] && exit 1\nexec %s "$@"\n' \
	"$T/tmux-stopped" "$BUILD_DIR/fcgi-app/agentd-api" >"$FAKE_BUILD/fcgi-app/agentd-api"
chmod +x "$FAKE_BUILD/fcgi-app/agentd-api"
ln -s "$BUILD_DIR/ptybridge/agentd-bridge" "$FAKE_BUILD/ptybridge/agentd-bridge"
make_remote acme widgets || exit 1
start_stack AGENTD_BUILD_DIR="$FAKE_BUILD" || exit 1
check "the API runs with --no-tmux-start" \
	bash -c "tr '\\0' ' ' </proc/$(api_pid)/cmdline | grep -q -- --no-tmux-start"
# deploy/up's agentd-api --init started the server (as agentd-tmux.service does); it goes away.
check "the tmux server of agentd-api --init runs" tmx list-sessions -F x
touch "$T/tmux-stopped"
tmx kill-server
wait_for 10 bash -c "! tmux -S '$TMUX_SOCK' list-sessions >/dev/null 2>&1" ||
	fail "the tmux server is gone"
create acme widgets 1
assert_status "POST /sessions without a tmux server: 201 (creation is asynchronous)" 201
assert_state "without a tmux server the session fails" widgets-1 failed 30
assert_jq "the failure says the tmux server does not run" \
	'.error | test("tmux server does not run")'
check_not "no tmux server was started by the API or its worker" tmx list-sessions -F x
# What systemctl restart agentd-tmux does: the server comes back, creation works again.
out=$(env AGENTD_CONFIG="$T/agentd.conf" AGENTD_RUNTIME_DIR="$T/run" AGENTD_BASE_DIR="$T/code" \
	AGENTD_CLAUDE="$FAKE_CLAUDE" HOME="$T/home" "$BUILD_DIR/fcgi-app/agentd-api" --init 2>&1 </dev/null)
assert_eq "agentd-api --init starts the server again" 0 "$?"
create acme widgets 1
assert_status "POST /sessions again once the server runs: 201" 201
assert_state "with the server back the session runs" widgets-1 running 60
check "its tmux session is in the server" tmux_has widgets-1

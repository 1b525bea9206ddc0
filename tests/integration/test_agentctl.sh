#!/usr/bin/env bash
# agentctl against the real stack with the fake claude: every subcommand (ls, new, attach,
# prompt, approve, deny, logs, events, mode, rm, whoami) and --help, the exit codes scripts read
# (0 ok, 1 server failure, 2 usage, 3 not found, 4 access denied), the settings file (used when
# the environment is empty, refused when others may read it), and attach driven through a pty:
# it shows the pane, types a line, resizes the window on SIGWINCH and detaches with Ctrl-]; ls's
# cost column; and what `meson install` puts in place: the program, its man page (rendered
# without warnings) and its bash completion (commands, options, session ids, modes).
source "$(dirname "$0")/lib.sh"

CTL=$BUILD_DIR/agentctl/agentctl
API_BIN=$BUILD_DIR/fcgi-app/agentd-api
make_remote acme widgets
make_remote acme gadgets
# AGENTD_ALLOWED_HOSTS: the https front below (a TLS proxy on its own port) says Host localhost:P.
start_stack AGENTD_ALLOWED_HOSTS=localhost || exit 1
export AGENTD_URL=$BASE_URL AGENTD_TOKEN=$AGENTD_TEST_TOKEN HOME=$T/ctlhome
unset XDG_CONFIG_HOME
mkdir -p "$HOME"

# ctl ARGS...: runs agentctl; OUT, ERR and RC hold what it did.
ctl() {
	"$CTL" "$@" >"$T/ctl.out" 2>"$T/ctl.err"
	RC=$?
	OUT=$(cat "$T/ctl.out")
	ERR=$(cat "$T/ctl.err")
}

# --- usage and --help ---------------------------------------------------------------------------
ctl --help
assert_eq "agentctl --help: exit 0" 0 "$RC"
assert_match "--help lists the commands and the exit codes" 'attach ID.*' "$OUT"
assert_match "--help names the exit codes" '3 not found, 4 access denied' "$OUT"
for c in ls new attach prompt approve deny logs events mode rm whoami; do
	ctl "$c" --help
	assert_match "agentctl $c --help: exit 0 with its usage" "^0 usage: agentctl $c( |\$)" \
		"$RC ${OUT%%$'\n'*}"
done
# The README's "Daily use" block: each agentctl line names a command --help lists, and each
# option it (or its comment) names is one that command's --help lists.
while read -r line; do
	c=$(awk '{ print $2 }' <<<"$line")
	help=$("$CTL" "$c" --help 2>&1)
	assert_match "README: agentctl $c is a command" "^usage: agentctl $c( |\$)" "${help%%$'\n'*}"
	for o in $(grep -oE -- '--[a-z]+' <<<"$line"); do
		assert_match "README: agentctl $c $o is an option of it" " $o( |\$)" "$help"
	done
done < <(awk '/^## Daily use/ { f = 1 } f && /^```$/ { exit } f && /^agentctl / { print }' \
	"$REPO/README.md")
ctl
assert_eq "no command: exit 2" 2 "$RC"
check_not "--help: no line ends in a space" grep -n ' $' <<<"$(
	"$CTL" --help
	for c in ls new attach prompt approve deny logs events mode rm whoami; do "$CTL" "$c" --help; done
)"
ctl frobnicate
assert_eq "an unknown command: exit 2" 2 "$RC"
assert_match "... and says so" "unknown command 'frobnicate'" "$ERR"
ctl ls --force
assert_eq "an option the command does not take: exit 2" 2 "$RC"
ctl new acme/../x 1
assert_eq "new with a bad owner/name: exit 2 before any request" 2 "$RC"
ctl new acme/widgets 0
assert_eq "new with issue 0: exit 2" 2 "$RC"
ctl mode widgets-1 sideways
assert_eq "mode with a bad mode: exit 2" 2 "$RC"
ctl attach 'no/such'
assert_eq "a malformed session id: exit 2" 2 "$RC"

# --- whoami, access ---------------------------------------------------------------------------------
ctl whoami
assert_eq "whoami: exit 0" 0 "$RC"
assert_eq "whoami: the token's identity and role" "itest (admin)" "$OUT"
AGENTD_TOKEN= ctl ls
assert_eq "no token: exit 4 (access denied)" 4 "$RC"
AGENTD_TOKEN=agentd_$(printf 'x%.0s' $(seq 43)) ctl whoami
assert_eq "a bad token: exit 4" 4 "$RC"
VIEWER=$("$API_BIN" token add viewer --read-only)
AGENTD_TOKEN=$VIEWER ctl new acme/widgets 1
assert_eq "a read-only token creating: exit 4" 4 "$RC"
assert_match "... with the server's reason" 'read_only' "$ERR"
AGENTD_URL=http://127.0.0.1:$(free_port) ctl ls
assert_eq "no server: exit 1" 1 "$RC"
AGENTD_URL=ftp://x ctl ls
assert_eq "AGENTD_URL not http(s): exit 2" 2 "$RC"

# --- the settings file --------------------------------------------------------------------------------
mkdir -p "$HOME/.config/agentd"
CONF=$HOME/.config/agentd/agentctl.conf
printf '# agentctl\nAGENTD_URL=%s\nAGENTD_TOKEN="%s"\n' "$BASE_URL" "$AGENTD_TEST_TOKEN" >"$CONF"
chmod 600 "$CONF"
AGENTD_URL= AGENTD_TOKEN= ctl whoami
assert_eq "the settings file is used when the environment sets nothing" "0 itest (admin)" "$RC $OUT"
chmod 640 "$CONF"
AGENTD_URL= AGENTD_TOKEN= ctl whoami
assert_eq "a settings file others may read is refused: exit 2" 2 "$RC"
assert_match "... saying why and how to fix it" 'read or written by others.*chmod 600' "$ERR"
chmod 604 "$CONF"
ctl whoami
assert_eq "... also when the environment sets both" 2 "$RC"
chmod 600 "$CONF"
printf 'AGENTD_TOKN=x\n' >>"$CONF"
ctl whoami
assert_eq "an unknown key in the settings file: exit 2" 2 "$RC"
assert_match "... naming the line" 'line 4: unknown key' "$ERR"
rm -f "$CONF"

# --- new, ls, mode ------------------------------------------------------------------------------------
ctl ls
assert_eq "ls with no session: exit 0, only the header" "0 1" "$RC $(printf '%s\n' "$OUT" | wc -l)"
ctl new acme/widgets 1
assert_eq "new: exit 0, prints the id" "0 widgets-1" "$RC $OUT"
assert_match "... says it was created, and its agent" 'widgets-1 created \(.*, claude, terminal mode\)' "$ERR"
ctl new acme/widgets 3 --agent nope
assert_ne "new --agent nope: fails" 0 "$RC"
assert_match "... with the server's answer naming the known agents" \
	"unknown agent 'nope'; known: claude, codex, gemini, opencode" "$ERR"
ctl new acme/widgets 1
assert_eq "new again: exit 0 (it exists)" "0 widgets-1" "$RC $OUT"
assert_state "widgets-1 runs" widgets-1 running 60
ctl new acme/gadgets 2 --structured --prompt "RUNBASH touch from-bootstrap"
assert_eq "new --structured --prompt: exit 0" "0 gadgets-2" "$RC $OUT"
assert_state "gadgets-2 runs" gadgets-2 running 60
api GET /sessions/gadgets-2
assert_json "gadgets-2 is structured, with the prompt given" '[.mode, .prompt]' \
	'["structured","RUNBASH touch from-bootstrap"]'
wait_activity gadgets-2 '.activity == "waiting"' 30 || fail "the bootstrap prompt asks for a permission" "$BODY"
ctl ls
assert_eq "ls: exit 0" 0 "$RC"
assert_match "ls: a header with the columns" '^ID +STATE +ACTIVITY +AGENT +MODE +AGE +PENDING +COST' "$OUT"
assert_eq "ls: the waiting session first" "gadgets-2 widgets-1" \
	"$(printf '%s\n' "$OUT" | awk 'NR > 1 { printf "%s%s", sep, $1; sep = " " }')"
assert_match "ls: gadgets-2 waiting, structured, one pending request" \
	'gadgets-2 +running +waiting +claude +structured +[0-9]+s +1 +-' "$OUT"
ctl ls --json
assert_eq "ls --json: exit 0" 0 "$RC"
assert_jq "ls --json: the server's objects, waiting first" \
	'[.[].id] == ["gadgets-2", "widgets-1"] and .[0].pending[0].toolName == "Bash"' "$OUT"

# --- approve, deny -------------------------------------------------------------------------------------
ctl approve widgets-1
assert_eq "approve with nothing pending: exit 3" 3 "$RC"
ctl approve gadgets-2 no-such-request
assert_eq "approve an unknown request: exit 3" 3 "$RC"
ctl approve gadgets-2
assert_eq "approve the only pending request: exit 0" 0 "$RC"
assert_match "... says so" '^gadgets-2: allowed ' "$OUT"
RID=${OUT##* }
wait_activity gadgets-2 '.activity == "idle"' 30 || fail "the turn ends after the approval" "$BODY"
check "the approved tool ran" test -e "$T/code/gadgets-issue-2/from-bootstrap"
ctl ls
assert_match "ls: the cost of gadgets-2's turn (the fake claude's \$0.0001)" \
	'^gadgets-2 .* \$0\.0001 +[0-9]+$' "$(printf '%s\n' "$OUT" | grep '^gadgets-2 ')"
assert_match "ls: none yet for widgets-1" '^widgets-1 .* - +[0-9]+$' \
	"$(printf '%s\n' "$OUT" | grep '^widgets-1 ')"
ctl approve gadgets-2 "$RID"
assert_eq "approve it again: exit 1 (409 already answered)" 1 "$RC"
assert_match "... with the server's reason" 'already_answered' "$ERR"

# --- prompt --------------------------------------------------------------------------------------------
ctl prompt gadgets-2 "say hello"
assert_eq "prompt: exit 0" 0 "$RC"
assert_eq "prompt: the answer's text on stdout" "Hello!" "$OUT"
assert_match "prompt: the result on stderr" '\[success, 1 turns' "$ERR"
# The cost column: known once a structured turn has a result (the fake says $0.0001 a turn),
# "-" for a terminal session (whose turns the server does not count). The record counts a
# result a moment after the client has it: looked at until it does (10 s).
for _ in $(seq 50); do
	ctl ls
	printf '%s\n' "$OUT" | grep -qE '^gadgets-2 .* \$0\.000[2-9] ' && break
	sleep 0.2
done
assert_match "ls: the structured session's cost once its turns have results" \
	'gadgets-2 +running +[a-z]+ +claude +structured +[0-9]+s +0 +\$0\.000[2-9] ' "$OUT"
assert_match "ls: no cost known for the terminal session" \
	'widgets-1 +running +[a-z]+ +claude +terminal +[0-9]+s +0 +- ' "$OUT"
ctl prompt widgets-1 "hi"
assert_eq "prompt to a terminal session: exit 1 (409)" 1 "$RC"
ctl prompt nosuch-9 "hi"
assert_eq "prompt to an unknown session: exit 3" 3 "$RC"
# A turn that asks: the request is printed with the command that answers it; deny answers it.
"$CTL" prompt gadgets-2 "RUNBASH touch denied-file" >"$T/p2.out" 2>"$T/p2.err" &
P2=$!
wait_for 20 grep -q '^\[permission .* Bash' "$T/p2.err" || fail "the prompt's permission request is printed"
ctl deny gadgets-2 --message "not today"
assert_eq "deny the only pending request with a message: exit 0" 0 "$RC"
wait "$P2"
assert_eq "the prompt ends with the turn: exit 0" 0 "$?"
assert_match "it names the answer" 'deny by itest' "$(cat "$T/p2.err")"
check_not "the denied tool did not run" test -e "$T/code/gadgets-issue-2/denied-file"

# --- logs, events ----------------------------------------------------------------------------------------
ctl logs gadgets-2
assert_eq "logs: exit 0 once the replay is over" 0 "$RC"
assert_jq "logs: the session's events from the first, as JSON lines with ids" \
	'.[0].id == 1 and ([.[].event] | index("permission") != null) and
	 ([.[] | select(.event == "user" and .data.isReplay) | .data.message.content] ==
	  ["RUNBASH touch from-bootstrap", "say hello", "RUNBASH touch denied-file"])' \
	"$(jq -s -c . "$T/ctl.out")"
"$CTL" logs gadgets-2 -f >"$T/lf.out" 2>"$T/lf.err" &
LF=$!
"$CTL" events -f >"$T/ef.out" 2>"$T/ef.err" &
EF=$!
sleep 1
ctl prompt gadgets-2 "say hello again"
assert_eq "another prompt: exit 0" 0 "$RC"
wait_for 20 grep -q '"say hello again"' "$T/lf.out" || fail "logs -f follows the new turn"
wait_for 20 grep -q '"event":"result"' "$T/ef.out" || fail "events -f follows: the result event"
kill -INT "$LF" "$EF"
wait "$LF"
assert_eq "logs -f ends on SIGINT: exit 0" 0 "$?"
wait "$EF"
assert_eq "events -f ends on SIGINT: exit 0" 0 "$?"
assert_jq "events -f: the snapshot first" '.event == "snapshot" and (.data.sessions | length) == 2' \
	"$(head -n 1 "$T/ef.out")"
ctl events
assert_eq "events without -f: exit 0 after the snapshot" "0 1" "$RC $(printf '%s\n' "$OUT" | wc -l)"
assert_jq "... which lists both sessions" '[.data.sessions[].id] | sort == ["gadgets-2", "widgets-1"]' "$OUT"
ctl logs nosuch-9
assert_eq "logs of an unknown session: exit 3" 3 "$RC"

# --- attach through a pty ------------------------------------------------------------------------------
# The pty's window starts at 100x30; the script types a line once the pane shows, then resizes
# to 90x25 (TIOCSWINSZ and SIGWINCH to agentctl), then detaches with Ctrl-]. It prints what it
# saw and the exit status.
python3 - "$CTL" "$T" "$TMUX_SOCK" >"$T/attach.log" 2>&1 <<'EOF'
import fcntl, os, pty, select, signal, struct, subprocess, sys, termios, time
ctl, tdir, sock = sys.argv[1:4]
def size(fd, cols, rows):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
def tmux_size():
    return subprocess.run(["tmux", "-S", sock, "display", "-p", "-t", "=widgets-1:",
                           "#{window_width}x#{window_height}"], capture_output=True, text=True).stdout.strip()
pid, fd = pty.fork()
if pid == 0:
    os.execv(ctl, [ctl, "attach", "widgets-1"])
size(fd, 100, 30)
os.kill(pid, signal.SIGWINCH)
seen = b""
def read_until(pred, timeout):
    global seen
    end = time.time() + timeout
    while time.time() < end and not pred():
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                return pred()
    return pred()
# The pane shows the fake's banner, whose end is the bootstrap prompt.
print("shows the pane:", read_until(lambda: b"attached to widgets-1" in seen and b"Start by running: gh issue view 1" in seen, 20))
os.write(fd, b"hello from agentctl\r")
print("typed line echoed:", read_until(lambda: b"fake claude got: hello from agentctl" in seen, 20))
end = time.time() + 10
while time.time() < end and tmux_size() != "100x30":
    read_until(lambda: False, 0.2)
print("first size:", tmux_size())
size(fd, 90, 25)
os.kill(pid, signal.SIGWINCH)
end = time.time() + 10
while time.time() < end and tmux_size() != "90x25":
    read_until(lambda: False, 0.2)
print("resized:", tmux_size())
os.write(fd, b"\x1d")
read_until(lambda: b"detached from widgets-1" in seen, 10)
_, status = os.waitpid(pid, 0)
print("exit:", os.waitstatus_to_exitcode(status))
print("detached message:", b"detached from widgets-1" in seen)
if b"fake claude got" not in seen:
    print("seen:", repr(seen[:800]))
EOF
ATTACH=$(cat "$T/attach.log")
assert_match "attach: the pane's output reaches the local terminal" 'shows the pane: True' "$ATTACH"
assert_match "attach: a typed line reaches claude" 'typed line echoed: True' "$ATTACH"
assert_match "attach: the first size is the local terminal's" 'first size: 100x30' "$ATTACH"
assert_match "attach: SIGWINCH resizes the window" 'resized: 90x25' "$ATTACH"
assert_match "attach: Ctrl-] detaches, exit 0" 'exit: 0' "$ATTACH"
assert_match "attach: it says it detached" 'detached message: True' "$ATTACH"
check "attach: the session runs on after the detach" tmux_has widgets-1
api GET /sessions/widgets-1
assert_json "attach: no client left attached" .clients 0
# --- attach over https (as behind tailscale serve): a TLS front with its own CA ---------------------
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
	-addext subjectAltName=DNS:localhost -keyout "$T/tls.key" -out "$T/tls.crt" 2>/dev/null
TLS_PORT=$(free_port)
python3 - "$TLS_PORT" "$PORT" "$T/tls.crt" "$T/tls.key" >"$T/tls.log" 2>&1 <<'EOF' &
import socket, ssl, sys, threading
port, up, crt, key = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(crt, key)
ls = socket.create_server(("127.0.0.1", port))
def pump(a, b):
    try:
        while (d := a.recv(65536)):
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
while True:
    c, _ = ls.accept()
    try:
        t = ctx.wrap_socket(c, server_side=True)
    except (OSError, ssl.SSLError):
        c.close()
        continue
    u = socket.create_connection(("127.0.0.1", up))
    threading.Thread(target=pump, args=(t, u), daemon=True).start()
    threading.Thread(target=pump, args=(u, t), daemon=True).start()
EOF
TLS_PID=$!
wait_for 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$TLS_PORT" 2>/dev/null || fail "the TLS front listens"
python3 - "$CTL" "$TLS_PORT" "$T/tls.crt" >"$T/tls-attach.log" 2>&1 <<'EOF'
import os, pty, select, sys, time
ctl, port, crt = sys.argv[1:4]
env = dict(os.environ, AGENTD_URL="https://localhost:" + port, SSL_CERT_FILE=crt)
pid, fd = pty.fork()
if pid == 0:
    os.execve(ctl, [ctl, "attach", "widgets-1"], env)
# The screen as the first attach left it: the line it typed, and the fake's answer.
def shown():
    return b"fake claude got: hello from agentctl" in seen.partition(b"attached to widgets-1")[2]
seen, end = b"", time.time() + 20
while time.time() < end and not shown():
    if select.select([fd], [], [], 0.2)[0]:
        try:
            seen += os.read(fd, 65536)
        except OSError:
            break
print("https shows the pane:", shown())
if not shown():
    print("seen:", repr(seen[:800]))
os.write(fd, b"\x1d")
_, status = os.waitpid(pid, 0)
print("https exit:", os.waitstatus_to_exitcode(status))
EOF
assert_match "attach over https: the pane shows through the TLS front" 'https shows the pane: True' \
	"$(cat "$T/tls-attach.log")"
assert_match "attach over https: Ctrl-] detaches, exit 0" 'https exit: 0' "$(cat "$T/tls-attach.log")"
AGENTD_URL=https://localhost:$TLS_PORT "$CTL" attach widgets-1 </dev/null >/dev/null 2>"$T/a.err"
assert_eq "attach over https to a server whose certificate is not trusted: exit 1" 1 "$?"
assert_match "... saying why" 'TLS with localhost' "$(cat "$T/a.err")"
kill "$TLS_PID" 2>/dev/null

"$CTL" attach nosuch-9 </dev/null >/dev/null 2>"$T/a.err"
assert_eq "attach to an unknown session: exit 3" 3 "$?"
AGENTD_TOKEN= "$CTL" attach widgets-1 </dev/null >/dev/null 2>"$T/a.err"
assert_eq "attach without a token: exit 4" 4 "$?"

# --- meson install: the program, its man page and its bash completion ---------------------------
DEST=$T/dest
PREFIX=$(meson introspect "$BUILD_DIR" --buildoptions | jq -r '.[] | select(.name == "prefix") | .value')
out=$(meson install -C "$BUILD_DIR" --no-rebuild --destdir "$DEST" 2>&1)
if [ $? -eq 0 ]; then pass "meson install --destdir succeeds"; else fail "meson install --destdir succeeds" "$out"; fi
check "installed: bin/agentctl" test -x "$DEST$PREFIX/bin/agentctl"
MAN=$DEST$PREFIX/share/man/man1/agentctl.1
check "installed: the man page share/man/man1/agentctl.1" test -s "$MAN"
out=$(groff -man -ww -z "$MAN" 2>&1)
assert_eq "the man page renders without a warning" "" "$out"
PAGE=$(MANWIDTH=100 man -l "$MAN" 2>/dev/null | col -b)
for c in ls new attach prompt approve deny logs events mode rm whoami; do
	assert_match "the man page documents agentctl $c" "agentctl $c" "$PAGE"
done
assert_match "... the settings file and its mode" 'agentctl\.conf' "$PAGE"
assert_match "... and the exit codes" 'EXIT STATUS' "$PAGE"
COMPL=$DEST$PREFIX/share/bash-completion/completions/agentctl
check "installed: share/bash-completion/completions/agentctl (where bash-completion looks)" \
	test -s "$COMPL"
# complete WORDS...: what the installed completion offers for the last word (the installed
# agentctl on PATH, for the session ids it asks the server for).
complete_words() {
	PATH=$DEST$PREFIX/bin:$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _agentctl; printf "%s\n" "${COMPREPLY[@]}" | sort' \
		complete "$COMPL" "$@"
}
assert_eq "completion: the commands --help lists" \
	"$( ("$CTL" --help | awk '/^  [a-z]/ { print $1 }'; echo --help) | sort)" \
	"$(complete_words agentctl '')"
assert_eq "completion: ls's options" "$(printf '%s\n' --all --help --json)" \
	"$(complete_words agentctl ls --)"
assert_eq "completion: the session ids from the server" "$(printf '%s\n' gadgets-2 widgets-1)" \
	"$(complete_words agentctl attach '')"
assert_eq "completion: mode's modes" "$(printf '%s\n' structured terminal)" \
	"$(complete_words agentctl mode widgets-1 '')"
rm -rf "$DEST"

# --- mode, rm ------------------------------------------------------------------------------------------
ctl mode widgets-1 structured
assert_eq "mode structured: exit 0" "0 widgets-1: structured mode" "$RC $OUT"
ctl mode nosuch-9 terminal
assert_eq "mode of an unknown session: exit 3" 3 "$RC"
printf 'dirty\n' >"$T/code/widgets-issue-1/untracked.txt"
ctl rm widgets-1
assert_eq "rm: exit 0" 0 "$RC"
assert_match "rm: the worktree is kept, with the reason and the way out" \
	'widgets-1: stopped; worktree kept \(.*\; --force removes it\)' "$OUT"
ctl rm widgets-1
assert_eq "rm of a session that is gone: exit 3" 3 "$RC"
ctl rm gadgets-2 --force
assert_eq "rm --force: exit 0" 0 "$RC"
assert_match "rm --force: the worktree is removed" 'gadgets-2: stopped; worktree removed' "$OUT"
ctl ls --all --json
assert_eq "ls --all: no session left" "0 []" "$RC $OUT"


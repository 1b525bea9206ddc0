#!/usr/bin/env bash
# The README's runnable examples, run as written against test stacks, so that the README and the
# code cannot disagree unnoticed:
#  - "A second stack for tests": must give the second stack its own state, runtime and base dirs
#    and configuration file (checked before it runs: an example without them would use the
#    machine's /var/lib/agentd), then runs beside the harness's stack with nothing shared: its
#    own first-start token, records and sessions;
#  - every `curl` command of the REST API section (its ```sh blocks), in README order, against the
#    harness's stack: what each comment promises (a JSON answer, a status, a state) holds, and no
#    command meets an unknown route, a refused method or body, or a server error. Each command
#    runs as written; the harness only points $A at its stack, puts the session it acts on in the
#    state the command is about (running, a worktree with work in it, ...) and adds -w and -m to
#    curl to see the status and bound the streams. Commands with a <placeholder> are skipped.
# shellcheck disable=SC2016
source "$(dirname "$0")/lib.sh"

README=$REPO/README.md

# readme_block REGEX: the first ```sh block after the first line matching REGEX.
readme_block() {
	awk -v re="$1" '
		f == 0 && $0 ~ re { f = 1; next }
		f == 1 && /^```sh$/ { f = 2; next }
		f == 2 && /^```$/ { exit }
		f == 2 { print }' "$README"
}

# readme_section_blocks HEADING: the lines of every ```sh block of the "## HEADING" section,
# each block ended by a line "#--- end of block".
readme_section_blocks() {
	awk -v h="## $1" '
		$0 == h { f = 1; next }
		f && /^## / { exit }
		f && /^```sh$/ { b = 1; next }
		f && b && /^```$/ { b = 0; print "#--- end of block"; next }
		f && b { print }' "$README"
}

make_remote acme widgets || fail "remote acme/widgets made"
make_remote acme widget || fail "remote acme/widget made"
start_stack || exit 1
FIRST_TOKEN=$AGENTD_TEST_TOKEN

# ------------------------------------------------------------------------------------------------
# the second stack

T2=$T/second
PORT2=$(free_port)
UP2_PID=
stop_second() {
	local p up='' deadline
	[ -n "$UP2_PID" ] || return 0
	# deploy/up itself (bash deploy/up), not the bash -c running the example.
	for p in $UP2_PID $(descendants "$UP2_PID"); do
		[[ $(tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | sed -n 2p) == *deploy/up ]] &&
			up=$p
	done
	[ -n "$up" ] && kill -TERM "$up" 2>/dev/null
	deadline=$((SECONDS + 20))
	while { kill -0 "$UP2_PID" || { [ -n "$up" ] && kill -0 "$up"; }; } 2>/dev/null &&
		[ $SECONDS -lt $deadline ]; do sleep 0.1; done
	if kill -0 "$UP2_PID" 2>/dev/null; then
		fail "the second stack's deploy/up stops on SIGTERM within 20 s"
		kill -KILL -- "-$UP2_PID" 2>/dev/null
	fi
	wait "$UP2_PID" 2>/dev/null
	tmux -S "$T2/run/tmux.sock" kill-server >/dev/null 2>&1
	UP2_PID=
}
# The second stack stops before lib.sh's cleanup, which judges the logs and removes $T.
second_exit() {
	local rc=$?
	stop_second
	(exit "$rc")
	cleanup
}
trap second_exit EXIT

SECOND=$(readme_block '^A second stack for tests')
assert_match "the README has the second stack's example, with deploy/up" 'deploy/up' "$SECOND"
# What the example must give the second stack of its own: without AGENTD_STATE_DIR it shares the
# first stack's tokens, records and events (/var/lib/agentd); without AGENTD_CONFIG it runs the
# first stack's Telegram bot and Tailscale listener from /etc/agentd/agentd.conf.
OWN_OK=1
for key in AGENTD_STATE_DIR AGENTD_RUNTIME_DIR AGENTD_BASE_DIR AGENTD_CONFIG AGENTD_LISTEN; do
	if [[ $SECOND =~ (^|[[:space:]])$key=\$T/ ]] || { [ $key == AGENTD_LISTEN ] &&
		[[ $SECOND =~ (^|[[:space:]])$key=[^[:space:]]+ ]]; }; then
		pass "the second stack's example sets its own $key"
	else
		fail "the second stack's example sets its own $key" "$SECOND"
		OWN_OK=0
	fi
done

if [ "$OWN_OK" == 1 ]; then
	mkdir -p "$T2/bin"
	ln -s "$FAKE_CLAUDE" "$T2/bin/claude"
	ln -s "$T/remotes" "$T2/remotes"
	# Its own port: 18080 may be taken on a machine running tests side by side.
	SECOND_RUN=$(printf '%s\n' "$SECOND" |
		sed -E "s/(AGENTD_LISTEN=)[^[:space:]]+/\1127.0.0.1:$PORT2/")
	echo "=== the second stack $(date +%T) port $PORT2" >>"$T/logs/up2.log"
	# As an operator's shell has it: none of the harness's AGENTD_STATE_DIR and AGENTD_CONFIG.
	(
		cd "$REPO" || exit 1
		exec setsid env -u AGENTD_STATE_DIR -u AGENTD_CONFIG -u AGENTD_TEST_TOKEN \
			T="$T2" AGENTD_NO_INSTALL=1 AGENTD_BUILD_DIR="$BUILD_DIR" HOME="$ROOT_HOME" \
			bash -c "$SECOND_RUN"
	) </dev/null >>"$T/logs/up2.log" 2>&1 &
	UP2_PID=$!
	if wait_for 60 grep -aq '^agentd ready: ' "$T/logs/up2.log"; then
		pass "the second stack comes up"
	else
		fail "the second stack comes up" "$(tail -n 30 "$T/logs/up2.log")"
	fi
	READY=$(grep -a -m 1 '^agentd ready: ' "$T/logs/up2.log")
	TOKEN2=$(sed -nE 's/.*[?]token=(agentd_[A-Za-z0-9_-]+).*/\1/p' <<<"$READY")
	assert_match "its first start makes its own admin token (its own token store)" \
		'^agentd_' "$TOKEN2"
	check "its token store is in its own state dir" test -s "$T2/state/tokens.json"
	A2=http://127.0.0.1:$PORT2
	code() { curl -q -s -o /dev/null -m 10 -w '%{http_code}' "$@"; }
	assert_eq "the first stack's token is unknown to the second" 401 \
		"$(code -H "Authorization: Bearer $FIRST_TOKEN" "$A2/sessions")"
	assert_eq "the second stack's token is unknown to the first" 401 \
		"$(code -H "Authorization: Bearer $TOKEN2" "$BASE_URL/sessions")"
	api2() {
		BODY=$(curl -q -s -m 10 -H "Authorization: Bearer $TOKEN2" \
			-H 'Content-Type: application/json' "$@")
	}
	api2 -X POST "$A2/sessions" -d "$(create_body acme widgets 5)"
	assert_json "the second stack creates a session" '[.id, .state]' '["widgets-5","creating"]'
	deadline=$((SECONDS + 20))
	until api2 "$A2/sessions/widgets-5" && jq -e '.state == "running"' >/dev/null <<<"$BODY" ||
		[ $SECONDS -ge $deadline ]; do sleep 0.1; done
	assert_json "its session becomes running" '.state' '"running"'
	check "its record is in its own state dir" test -f "$T2/state/sessions/widgets-5.json"
	check "its worktree is in its own base dir" test -d "$T2/code/widgets-issue-5"
	api GET /sessions
	assert_json "the first stack knows none of the second's sessions" 'map(.id)' '[]'
	check_not "the first stack's state dir holds no record of it" \
		test -e "$T/state/sessions/widgets-5.json"
	stop_second
fi

# ------------------------------------------------------------------------------------------------
# the curl examples of the REST API

SID=widget-7
WT=$T/code/widget-issue-7

# session_now: .state and .mode of widget-7 ("gone" when there is none).
session_now() {
	api GET "/sessions/$SID"
	if [ "$STATUS" == 200 ]; then jq -r '"\(.state) \(.mode)"' <<<"$BODY"; else echo gone; fi
}

# ensure_running [MODE]: widget-7 exists and runs (created again when gone, exited or failed),
# in MODE when given.
ensure_running() {
	local now
	now=$(session_now)
	if [[ $now != running* && $now != attached* ]]; then
		create acme widget 7
		wait_state "$SID" running 20 || fail "$SID runs again for the next example" "$BODY"
		now=$(session_now)
	fi
	if [ -n "${1:-}" ] && [ "${now#* }" != "$1" ]; then
		api POST "/sessions/$SID/mode" "{\"mode\":\"$1\"}"
		wait_activity "$SID" ".mode == \"$1\" and .state == \"running\"" 20 ||
			fail "$SID runs in $1 mode for the next example" "$BODY"
	fi
}

# with_work: the worktree holds work a delete would lose (an untracked file of the agent's).
with_work() {
	agent_sh "$WT" 'echo wip >scratch.txt'
}

# prepare CMD: puts widget-7 in the state the example is about (nothing for the others).
prepare() {
	case $1 in
	*'-X DELETE $A/worktrees/'*)
		# A worktree a DELETE kept: the session gone, its work still there.
		ensure_running && with_work && api DELETE "/sessions/$SID"
		;;
	*'-X DELETE $A/branches/'*)
		# No worktree left on the branch (a forced delete keeps the branch).
		api DELETE "/sessions/$SID?force=true"
		api DELETE "/worktrees/widget-issue-7?force=true"
		;;
	*'-X DELETE'*"/sessions/$SID"*) ensure_running && with_work ;;
	*"/sessions/$SID/mode"*) ensure_running terminal ;;
	*"/sessions/$SID/"*) ensure_running structured ;; # prompt, interrupt, events
	*"/sessions/$SID"*) ensure_running ;;
	esac
}

# run_example CMD COMMENT: runs CMD as written in bash, with $A this stack and curl reporting its
# status; checks what the README says of it.
run_example() {
	local cmd=$1 comment=$2 out status body desc want max=20
	desc="README: ${cmd:0:90}"
	[[ $cmd == *-sN* && $cmd != */prompt* ]] && max=2 # a stream: its first events are enough
	if [[ $cmd == *' | '* ]]; then
		if out=$(cd "$T" && A=$BASE_URL CURL_HOME=$EX_CURL_HOME bash -o pipefail -c "
			curl() { command curl -m $max \"\$@\"; }
			$cmd" 2>&1) && jq . >/dev/null 2>&1 <<<"$out"; then
			pass "$desc: runs and prints JSON"
		else
			fail "$desc: runs and prints JSON" "$out"
		fi
		return
	fi
	out=$(cd "$T" && A=$BASE_URL CURL_HOME=$EX_CURL_HOME bash -c "
		curl() { command curl -m $max -w '\n%{http_code}' \"\$@\"; }
		$cmd" 2>&1)
	status=${out##*$'\n'}
	body=${out%$'\n'*}
	# A stream cut by -m ends without the newline -w adds on a completed transfer.
	[[ $status =~ ^[0-9]{3}$ ]] || { status=${out: -3} && body=${out:0:-3}; }
	if [[ $status =~ ^[0-9]{3}$ ]] && ! [[ $status =~ ^(400|405|415|5..)$ ]] &&
		! { [ "$status" == 404 ] && [[ $body == *'"not_found"'* ]]; }; then
		pass "$desc: the code knows it (status $status)"
	else
		fail "$desc: the code knows it" "status: $status" "body: ${body:0:600}"
	fi
	if [[ $comment == *'Prometheus text'* ]]; then
		check "$desc: answers the Prometheus text format" \
			bash -c 'grep -q "^# TYPE agentd_" && ! grep -qi "<html"' <<<"$body"
	elif [[ $cmd != *-sN* ]]; then
		check "$desc: answers JSON (not the web UI's page)" jq -e 'type' <<<"$body"
	fi
	# What the comment promises: its fields, with its values (the answer may say more, such as
	# healthz' uptime, which no comment can spell).
	if [[ $comment =~ ^(\{.*\})$ ]]; then
		assert_eq "$desc: answers $comment" "$(jq -cS . <<<"$comment")" \
			"$(jq -cS --argjson c "$comment" 'with_entries(select(.key as $k | $c | has($k)))' \
				2>&1 <<<"$body")"
	fi
	if [[ $comment =~ ^([1-5][0-9][0-9])[^0-9] ]]; then
		want=${BASH_REMATCH[1]}
	elif [[ $cmd == *"-X DELETE \$A/worktrees/"* ]]; then
		want=409 # a kept worktree has work in it: "same rules" keep it (409 worktree_kept)
		assert_json "$desc: the same rules as DELETE /sessions keep it" '.code' \
			'"worktree_kept"' "$body"
	else
		want=200
	fi
	assert_eq "$desc: status" "$want" "$status"
	if [[ $comment =~ state\ \"([a-z]+)\" ]]; then
		assert_json "$desc: state ${BASH_REMATCH[1]}" '.state' "\"${BASH_REMATCH[1]}\"" "$body"
	fi
	case $cmd in
	*"-X DELETE \$A/sessions/$SID "*)
		assert_jq "$desc: keeps a worktree with work, and says why" \
			'.worktree == "kept" and (.reason | length > 0)' "$body"
		;;
	*"-X DELETE \"\$A/sessions/$SID?force=true\""*)
		assert_json "$desc: removes it anyway" '.worktree' '"removed"' "$body"
		;;
	*/prompt*)
		assert_eq "$desc: an SSE stream that ends with the turn's result" "event: result" \
			"$(grep '^event: ' <<<"$body" | tail -n 1)"
		;;
	*-sN*)
		# Events, or nothing yet (no event after Last-Event-ID 41 in a short session).
		assert_eq "$desc: an SSE stream" "" \
			"$(grep -Ev '^((id|event|data|retry): |:|$)' <<<"$body" | head -n 3)"
		;;
	esac
}

REST=$(readme_section_blocks 'REST API')
assert_match "the README's REST API section has curl examples" 'curl ' "$REST"
EX_CURL_HOME=
RAN=0
CMD=
while IFS= read -r line; do
	if [ "$line" == '#--- end of block' ]; then
		CMD=
		continue
	fi
	# A line that is only a comment goes on with the comment of the command above it.
	[[ -z $CMD && $line =~ ^[[:space:]]*# ]] && continue
	CMD+=$line
	if [[ $CMD == *\\ ]]; then
		CMD=${CMD%\\}
		continue
	fi
	cmd=$CMD comment=
	CMD=
	# The comment: after the last " # " (no example has '#' in its words).
	if [[ $cmd =~ ^(.*[^[:space:]])[[:space:]]+#[[:space:]]+(.*)$ ]]; then
		cmd=${BASH_REMATCH[1]} comment=${BASH_REMATCH[2]}
	fi
	case $cmd in
	'A='*) continue ;; # the harness's stack instead
	'export CURL_HOME='*)
		# With the echo after it, as written, $TOKEN the harness's: the .curlrc that
		# authenticates every example after it.
		EX_CURL_HOME=$(cd "$T" && TMPDIR=$T TOKEN=$FIRST_TOKEN bash -c "
			$(grep -E '^(export CURL_HOME=|echo .*curlrc)' <<<"$REST")
			printf %s \"\$CURL_HOME\"")
		check "README: the example's .curlrc is made" test -s "$EX_CURL_HOME/.curlrc"
		continue
		;;
	'echo '*'.curlrc'*) continue ;; # run with the export above
	curl\ *) ;;
	*) [[ $cmd =~ ^[[:space:]]*$ ]] || fail "README: an example the test knows how to run" "$cmd"
		continue ;;
	esac
	if [[ $cmd =~ \<[A-Za-z]+\> ]]; then
		log "skipped (a placeholder): $cmd"
		continue
	fi
	prepare "$cmd"
	run_example "$cmd" "$comment"
	RAN=$((RAN + 1))
done <<<"$REST"
assert_match "at least the 17 curl examples of the REST API ran" '^(1[7-9]|[2-9][0-9])$' "$RAN"

#!/usr/bin/env bash
# Restarts and recovery through nginx: kill -9 of agentd-api (deploy/up restarts it), a full
# stop/start of deploy/up (agents keep running in tmux), records rebuilt from tmux after they were
# deleted, and a session whose tmux session vanished becomes lost.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1
make_remote acme socket.io || exit 1
start_stack || exit 1

IDS=(socket.io-3 widgets-7 widgets-8)
create acme widgets 7
create acme widgets 8
api POST /sessions '{"repo":{"owner":"acme","name":"socket.io"},"issue":3,"prompt":"custom; prompt"}'
for id in "${IDS[@]}"; do
	assert_state "$id becomes running" "$id" running 15
done

# snapshot: every session, sorted, without the fields that move on their own: lastActivity is
# the pane's last output as tmux tells it, and a restarted agentd-api records a newer one (a
# write: updatedAt and rev move with it; under load the fake's first line comes a second after
# the creation's last write).
snapshot() {
	api GET /sessions
	jq -S 'sort_by(.id) | map(del(.updatedAt, .lastActivity, .rev))' <<<"$BODY" 2>&1
}
agent_pids() {
	local id
	for id in "${IDS[@]}"; do
		pane_pid "$(jq -r --arg id "$id" '.[] | select(.id == $id) | .tmuxName' <<<"$BEFORE")"
	done | tr '\n' ' '
}
all_alive() {
	local p
	for p in $1; do alive "$p" || return 1; done
}
# wait_listed N TIMEOUT: GET /sessions lists N sessions.
wait_listed() {
	local deadline=$((SECONDS + $2))
	while [ $SECONDS -lt $deadline ]; do
		api GET /sessions
		[ "$(jq 'length' <<<"$BODY" 2>/dev/null)" == "$1" ] && return 0
		sleep 0.2
	done
	return 1
}

BEFORE=$(snapshot)
PIDS=$(agent_pids)
NREC=$(claude_pids | wc -l)
assert_eq "three agents run" 3 "$(wc -w <<<"$PIDS")"
assert_eq "three fake claude started" 3 "$NREC"

# --- kill -9 agentd-api: deploy/up restarts it; nothing changes -----------------------------------
if kill_api KILL; then
	pass "deploy/up restarts agentd-api after kill -9"
	assert_eq "after kill -9 of agentd-api: same sessions, same fields" "$BEFORE" "$(snapshot)"
	check "after kill -9 of agentd-api: the agents still run" all_alive "$PIDS"
	assert_eq "after kill -9 of agentd-api: the same agent processes" "$PIDS" "$(agent_pids)"
	assert_eq "after kill -9 of agentd-api: no claude started again" "$NREC" "$(claude_pids | wc -l)"
fi

# --- stop deploy/up (SIGTERM), start it again: the agents live on ---------------------------------
if stop_stack 20; then pass "deploy/up stops on SIGTERM"; else fail "deploy/up stops on SIGTERM"; fi
check_not "after stop: nginx no longer answers" curl -s -m 2 -o /dev/null "$BASE_URL/healthz"
check "after stop: the tmux server still runs" tmx list-sessions
check "after stop: the agents still run" all_alive "$PIDS"
if start_stack; then
	pass "deploy/up starts again"
	wait_listed 3 15
	assert_eq "after restart: same sessions, same fields, running" "$BEFORE" "$(snapshot)"
	assert_json "after restart: all running" '[.[].state] | unique' '["running"]'
	check "after restart: the agents still run" all_alive "$PIDS"
	assert_eq "after restart: the same agent processes" "$PIDS" "$(agent_pids)"
	assert_eq "after restart: no claude started again" "$NREC" "$(claude_pids | wc -l)"
fi

# --- records deleted: rebuilt from tmux ------------------------------------------------------------
rm -f "$T"/state/sessions/*.json
if kill_api KILL; then
	if wait_listed 3 15; then pass "records rebuilt from tmux: 3 sessions"; else
		fail "records rebuilt from tmux: 3 sessions" "got: ${BODY:0:600}"
	fi
	AFTER=$(snapshot)
	KEYS='map({id, repo, issue, agentSessionId, prompt, tmuxName, worktree, branch, mode, state})'
	assert_eq "recovered: same id, owner, name, issue, agentSessionId, prompt (and paths, state)" \
		"$(jq -c "$KEYS" <<<"$BEFORE")" "$(jq -c "$KEYS" <<<"$AFTER")"
	assert_eq "recovered records are on disk again" 3 "$(record_count)"
	api GET /sessions
	assert_jq "recovered sessions have every field" 'all(.[]; has("createdAt") and has("updatedAt")
		and has("lastActivity") and (.clients | type == "number"))'
	check "recovered: the agents still run" all_alive "$PIDS"
	assert_eq "recovered: no claude started again" "$NREC" "$(claude_pids | wc -l)"
fi

# --- a tmux session killed behind our back ---------------------------------------------------------
tmx kill-session -t '=widgets-8' || fail "kill tmux session widgets-8"
if kill_api KILL; then
	assert_state "vanished tmux session: widgets-8 becomes lost" widgets-8 lost 15
	assert_jq "vanished tmux session: lost with a reason" '.error | type == "string" and length > 0'
	get_session widgets-7
	assert_json "the other sessions still run" '.state' '"running"'
	get_session socket.io-3
	assert_json "socket.io-3 still runs" '.state' '"running"'
fi

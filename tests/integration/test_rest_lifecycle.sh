#!/usr/bin/env bash
# REST through nginx: create (201/200, concurrent), list, get, running with tmux + claude in the
# worktree, session fields, branches and worktrees, healthz, delete (clean, dirty, forced, with an
# empty JSON body), 409 for another owner, a repository named socket.io, one whose name starts
# with a dot (listed, counted, resumed after a restart, held to AGENTD_MAX_SESSIONS), the creation
# worker waiting ahead of need (used, replaced, and not needed when it died).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1
make_remote acme socket.io || exit 1
make_remote acme .github || exit 1
start_stack || exit 1

# --- healthz before anything exists -------------------------------------------------------------
api GET /healthz
assert_status "GET /healthz 200" 200
assert_json "healthz is {status:ok,sessions:0,tmux:true}" '{status,sessions,tmux}' \
	'{"status":"ok","sessions":0,"tmux":true}'
assert_json "healthz says the version agentd-api --version prints" '.version' \
	"\"$("$BUILD_DIR/fcgi-app/agentd-api" --version | awk '{print $2}')\""
assert_jq "healthz says how long agentd-api has run (whole seconds, from 0)" \
	'(.uptimeSeconds | type == "number" and . >= 0 and . < 600 and . == floor)'
sleep 1.2
api GET /healthz
assert_jq "healthz' uptimeSeconds grows" '.uptimeSeconds >= 1'

api GET /sessions
assert_status "GET /sessions 200 when empty" 200
assert_json "GET /sessions is [] when empty" '.' '[]'

# --- create ---------------------------------------------------------------------------------------
create acme widgets 7
assert_status "POST /sessions creates: 201" 201
FIRST=$BODY
assert_json "new session is in state creating" '.state' '"creating"'
assert_eq "Location header names the session" "/sessions/widgets-7" "$(header Location)"
assert_match "answer is JSON" '^application/json' "$(header Content-Type)"
assert_json "id is <name>-<issue>" '.id' '"widgets-7"'

create acme widgets 7
assert_status "repeated POST answers 200" 200
assert_json "repeated POST answers the same session" '[.id, .agentSessionId, .createdAt]' \
	"$(jq -c '[.id, .agentSessionId, .createdAt]' <<<"$FIRST")"

assert_state "session becomes running within 10 s" widgets-7 running 10
S7=$BODY
TMUX7=$(jq -r .tmuxName <<<"$S7")
WT7=$(jq -r .worktree <<<"$S7")
ASID7=$(jq -r .agentSessionId <<<"$S7")

# --- every field of API.md, with its JSON type ---------------------------------------------------
assert_jq "session has every API.md field with the right type" '
	(.id | type == "string") and
	(.repo | type == "object") and (.repo.owner | type == "string") and
	(.repo.name | type == "string") and
	(.issue | type == "number" and . == floor) and
	(.worktree | type == "string") and (.branch | type == "string") and
	(.tmuxName | type == "string") and (.state | type == "string") and
	(.mode | type == "string") and (.agentSessionId | type == "string") and
	(.clients | type == "number" and . == floor) and (.prompt | type == "string") and
	(.createdAt | type == "string") and (.updatedAt | type == "string") and
	(.lastActivity | type == "string")' "$S7"
assert_json "repo, issue, branch, tmuxName, mode, clients" \
	'[.repo, .issue, .branch, .tmuxName, .mode, .clients]' \
	'[{"owner":"acme","name":"widgets"},7,"feat/issue-7","widgets-7","terminal",0]' "$S7"
assert_json "worktree is <base>/<name>-issue-<N>" '.worktree' "\"$T/code/widgets-issue-7\"" "$S7"
assert_match "agentSessionId is a UUID v4" \
	'^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "$ASID7"
assert_jq "timestamps are RFC 3339 UTC" '[.createdAt, .updatedAt, .lastActivity] |
	all(test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$"))' "$S7"
assert_json "default prompt" '.prompt' \
	'"Work on acme/widgets#7. Start by running: gh issue view 7 -R acme/widgets"' "$S7"

# --- tmux, claude, git ---------------------------------------------------------------------------
check "tmux session $TMUX7 exists" tmux_has "$TMUX7"
assert_eq "pane cwd is the worktree" "$WT7" \
	"$(tmx display -p -t "=$TMUX7:" '#{pane_current_path}' 2>&1)"
REC7=$(claude_record "$TMUX7" 10)
if [ -n "$REC7" ]; then
	pass "fake claude started in the pane"
	assert_json "claude's first argument is --session-id=<agentSessionId>" '.argv[0]' \
		"\"--session-id=$ASID7\"" "$REC7"
	assert_json "claude's last argument is the bootstrap prompt" '.argv[-1]' \
		'"Work on acme/widgets#7. Start by running: gh issue view 7 -R acme/widgets"' "$REC7"
	assert_json "claude runs in the worktree" '.cwd' "\"$WT7\"" "$REC7"
	assert_json "claude gets the hooks' settings of the runtime dir (--settings)" '.settings' \
		"\"$T/run/claude-settings.json\"" "$REC7"
	HOOK_BIN=$(readlink -f "$BUILD_DIR/agent-hook/agentd-hook")
	assert_jq "the settings run this build's agentd-hook on the bridge's hook socket" \
		"[.hooks | to_entries[] | .value[0].hooks[0].command] | length == 9 and
		 all(startswith(\"$HOOK_BIN --socket $T/run/hooks/hooks.sock \"))" \
		"$(cat "$T/run/claude-settings.json" 2>/dev/null || echo null)"
	assert_json "claude gets HOME from AGENTD_AGENT_ENV" '.env.HOME' "\"$T/home\"" "$REC7"
else
	fail "fake claude started in the pane" "no record for pane pid '$(pane_pid "$TMUX7")'" \
		"$(ls -la "$T/home/fake-claude" 2>&1)" \
		"$(tmx capture-pane -p -t "=$TMUX7:" 2>&1 | tail -n 5)"
fi
BARE=$(kept_repo acme widgets)
if [ "$GIT_LAYOUT" = store ]; then
	check "branch feat/issue-7 exists in the session's own repository" \
		git --git-dir="$WT7/.git" rev-parse --verify -q refs/heads/feat/issue-7
	assert_eq "the session's repository borrows the store's objects" "$BARE/objects" \
		"$(cat "$WT7/.git/objects/info/alternates" 2>&1)"
else
	check "branch feat/issue-7 exists in the bare clone" \
		git --git-dir="$BARE" rev-parse --verify -q refs/heads/feat/issue-7
fi
assert_eq "worktree is on feat/issue-7" refs/heads/feat/issue-7 \
	"$(git -C "$WT7" symbolic-ref HEAD 2>&1)"
assert_eq "branch starts at origin's main" \
	"$(git --git-dir="$T/remotes/acme/widgets.git" rev-parse main)" \
	"$(git -C "$WT7" rev-parse HEAD 2>&1)"

# --- list / get ----------------------------------------------------------------------------------
api GET /sessions
assert_status "GET /sessions 200" 200
assert_json "GET /sessions lists the session" '[.[].id]' '["widgets-7"]'
assert_jq "listed session has every field" '.[0] | has("prompt") and has("tmuxName") and
	has("agentSessionId") and has("lastActivity")'
get_session widgets-7
assert_status "GET /sessions/widgets-7 200" 200
assert_json "GET /sessions/<id> answers the session" '[.id, .agentSessionId]' \
	"[\"widgets-7\",\"$ASID7\"]"
# Uncaged (lib.sh), the pane joins no cgroup: no empty one, and no usage of zeros.
assert_jq "an uncaged session reports no usage" 'has("usage") | not'
check_not "an uncaged session gets no cgroup" test -n "$(cgroup_dirs widgets-7)"

# --- 10 concurrent identical POSTs ---------------------------------------------------------------
B8=$(create_body acme widgets 8)
CURLS=()
for i in $(seq 1 10); do
	curl -s -m 30 -o "$T/work/c$i.body" -w '%{http_code}\n' -X POST \
		-H 'Content-Type: application/json' --data-binary "$B8" "$BASE_URL/sessions" \
		>"$T/work/c$i.status" &
	CURLS+=($!)
done
wait "${CURLS[@]}" # not a bare wait: deploy/up is a child too
CODES=$(cat "$T"/work/c*.status | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
assert_eq "10 concurrent POSTs: exactly one 201, nine 200" "200:9 201:1 " "$CODES"
assert_eq "10 concurrent POSTs: one agentSessionId" 1 \
	"$(cat "$T"/work/c*.body | jq -r .agentSessionId | sort -u | wc -l)"
assert_state "concurrently created session becomes running" widgets-8 running 10
assert_eq "one worktree for issue 8" 1 \
	"$(find "$T/code" -mindepth 1 -maxdepth 1 -name 'widgets-issue-8*' | wc -l)"
if [ "$GIT_LAYOUT" = store ]; then
	check "issue 8 has a repository of its own" test -d "$T/code/widgets-issue-8/.git"
	assert_eq "the store knows no worktree" 0 \
		"$(git --git-dir="$BARE" worktree list --porcelain | grep -c '^worktree .*widgets-issue')"
else
	assert_eq "git knows one worktree for issue 8" 1 \
		"$(git --git-dir="$BARE" worktree list --porcelain | grep -c '^worktree .*widgets-issue-8$')"
fi
assert_eq "one tmux session for issue 8" 1 "$(tmx list-sessions -F '#S' | grep -c '^widgets-8$')"
claude_record widgets-8 10 >/dev/null # its record is written just after the pane starts
assert_eq "one claude started for issue 8" 1 \
	"$(grep -l -- '--session-id=' "$T"/home/fake-claude/*.json | xargs cat |
		jq -s '[.[] | select(.cwd | endswith("/widgets-issue-8"))] | length')"

# --- 409 for the same name+issue under another owner ---------------------------------------------
create other widgets 7
assert_status "same name+issue under another owner: 409" 409
assert_error_body "409 has an error body"
get_session widgets-7
assert_json "the session still belongs to acme" '.repo.owner' '"acme"'
check_not "no clone made for the other owner" test -e "$(kept_repo other widgets)"

# --- healthz counts ------------------------------------------------------------------------------
api GET /healthz
assert_json "healthz counts 2 sessions" '{status,sessions,tmux}' \
	'{"status":"ok","sessions":2,"tmux":true}'

# --- worktrees and branches ----------------------------------------------------------------------
api GET /worktrees
assert_status "GET /worktrees 200" 200
assert_jq "worktrees: [{repo{owner,name},issue,path}] with both sessions" "
	(. | type == \"array\") and
	(map(select(.repo == {owner:\"acme\",name:\"widgets\"} and .issue == 7 and
		.path == \"$WT7\")) | length == 1) and
	(map(select(.issue == 8)) | length == 1) and
	all(.[]; (.issue | type == \"number\") and (.path | type == \"string\"))"

api GET /branches
assert_status "GET /branches 200" 200
assert_jq "branches: shape and a fresh branch is local-only" '
	(map(select(.repo == {owner:"acme",name:"widgets"} and .issue == 7)) | length == 1) and
	all(.[]; (.name | type == "string") and (.sync | type == "string") and
		(.ahead | type == "number") and (.behind | type == "number")) and
	(.[] | select(.issue == 7) | .name == "feat/issue-7" and .sync == "local-only")'
as_agent git -C "$WT7" push -q origin feat/issue-7 2>"$T/work/push.err" ||
	fail "push feat/issue-7 from the worktree" "$(cat "$T/work/push.err")"
api GET /branches
assert_json "after a push the branch is synced" \
	'.[] | select(.issue == 7) | [.sync, .ahead, .behind]' '["synced",0,0]'
agent_sh "$WT7" 'echo change >>README.md && git commit -q -am "local work"' ||
	fail "commit in the worktree (as the agent)"
api GET /branches
assert_json "after a commit in the worktree the branch is ahead 1" \
	'.[] | select(.issue == 7) | [.sync, .ahead, .behind]' '["ahead",1,0]'

# --- DELETE: clean worktree, sent like gh-dashboard (Content-Type: application/json, no body) ----
PID8=$(pane_pid widgets-8)
api DELETE /sessions/widgets-8 -H 'Content-Type: application/json'
assert_status "DELETE with Content-Type: application/json and no body: 200" 200
assert_json "DELETE of a clean session removes the worktree" '.' \
	'{"status":"stopped","worktree":"removed","ignoredRemoved":0}'
check_not "tmux session widgets-8 is gone" tmux_has widgets-8
check_not "worktree widgets-issue-8 is gone" test -e "$T/code/widgets-issue-8"
check "branch feat/issue-8 is kept" git --git-dir="$BARE" rev-parse --verify -q refs/heads/feat/issue-8
if [ -n "$PID8" ]; then
	sleep 0.3
	check_not "the agent of widgets-8 is stopped" alive "$PID8"
fi
get_session widgets-8
assert_status "deleted session is gone: 404" 404
api GET /sessions
assert_json "GET /sessions no longer lists the deleted session" '[.[].id]' '["widgets-7"]'
api DELETE /sessions/widgets-8
assert_status "DELETE of a deleted session: 404" 404
api GET /worktrees
assert_jq "deleted worktree not listed" 'map(select(.issue == 8)) | length == 0'

# --- DELETE: dirty worktree is kept, re-creating reuses it, force removes it ---------------------
agent_sh "$WT7" 'echo precious >untracked.txt'
api DELETE /sessions/widgets-7
assert_status "DELETE of a dirty session: 200" 200
assert_json "dirty worktree is kept" '.' \
	'{"status":"stopped","worktree":"kept","reason":"uncommitted changes"}'
check "untracked file still exists" test -f "$WT7/untracked.txt"
check_not "tmux session of the dirty session is gone" tmux_has "$TMUX7"
get_session widgets-7
assert_status "dirty-deleted session has no record: 404" 404
api GET /sessions
assert_json "GET /sessions lists nothing after both deletes" '.' '[]'
api GET /worktrees
assert_jq "kept worktree is still listed by /worktrees" 'map(select(.issue == 7)) | length == 1'

create acme widgets 7
assert_status "re-creating after a kept worktree: 201" 201
assert_state "re-created session becomes running" widgets-7 running 10
check "re-created session keeps the untracked file" test -f "$WT7/untracked.txt"
assert_eq "re-created session keeps the local commit" "local work" \
	"$(git -C "$WT7" log -1 --format=%s 2>&1)"
api DELETE '/sessions/widgets-7?force=true'
assert_status "DELETE ?force=true: 200" 200
assert_json "forced DELETE removes the dirty worktree" '.' \
	'{"status":"stopped","worktree":"removed","ignoredRemoved":0}'
check_not "forced DELETE removed the directory" test -e "$WT7"
check "forced DELETE keeps the branch" git --git-dir="$BARE" rev-parse --verify -q refs/heads/feat/issue-7

# --- a repository named socket.io ----------------------------------------------------------------
create acme socket.io 3
assert_status "socket.io: 201" 201
assert_json "socket.io: id and tmuxName" '[.id, .tmuxName]' '["socket.io-3","socket_io-3"]'
assert_state "socket.io session becomes running" socket.io-3 running 10
check "tmux session socket_io-3 exists" tmux_has socket_io-3
assert_eq "socket.io pane cwd is its worktree" "$T/code/socket.io-issue-3" \
	"$(tmx display -p -t "=socket_io-3:" '#{pane_current_path}' 2>&1)"
api DELETE /sessions/socket.io-3
assert_json "socket.io: DELETE removes it" '.' '{"status":"stopped","worktree":"removed","ignoredRemoved":0}'
check_not "socket.io: tmux session gone" tmux_has socket_io-3

# --- a repository whose name starts with a dot ---------------------------------------------------
# Its record file is <state>/sessions/.github-1.json: every reader of the records must see it.
create acme .github 1
assert_status ".github: 201" 201
assert_json ".github: id, tmuxName and worktree" '[.id, .tmuxName, .worktree]' \
	"[\".github-1\",\"_github-1\",\"$T/code/.github-issue-1\"]"
assert_state ".github session becomes running" .github-1 running 10
check "tmux session _github-1 exists" tmux_has _github-1
api GET /sessions
assert_json ".github: GET /sessions lists it" '[.[].id]' '[".github-1"]'
api GET /healthz
assert_json ".github: healthz counts it" '.sessions' '1'
api GET /events -m 3
assert_jq ".github: the snapshot of /events holds it" '.sessions | map(.id) == [".github-1"]' \
	"$(printf '%s\n' "$BODY" | sed -n 's/^data: //p' | head -n 1)"
api GET /worktrees
assert_jq ".github: GET /worktrees lists its worktree with the session" \
	'map(select(.repo.name == ".github")) == [{"repo":{"owner":"acme","name":".github"},"issue":1,"path":"'"$T/code/.github-issue-1"'","session":".github-1"}]'
# The boot pass reads the same records: the session is resumed, and counts for the limit.
stop_stack
start_stack AGENTD_MAX_SESSIONS=2 || exit 1
assert_state ".github: running again after a restart" .github-1 running 15
api GET /sessions
assert_json ".github: listed after a restart" '[.[].id]' '[".github-1"]'
create acme .github 2
assert_status ".github-2: 201 (the second of AGENTD_MAX_SESSIONS=2)" 201
assert_state ".github-2 becomes running" .github-2 running 10
create acme .github 3
assert_status ".github-3: 429 over AGENTD_MAX_SESSIONS=2 (both .github sessions count)" 429
create acme widgets 30
assert_status "widgets-30: 429 over AGENTD_MAX_SESSIONS=2" 429
api GET /healthz
assert_json ".github: healthz counts both" '.sessions' '2'
for id in .github-1 .github-2; do
	api DELETE "/sessions/$id"
	assert_status "DELETE $id: 200" 200
done
check_not "tmux session _github-1 gone" tmux_has _github-1

api GET /sessions
assert_json "no sessions left" '.' '[]'
api GET /healthz
assert_json "healthz counts 0 sessions at the end" '.sessions' '0'

# --- the creation worker waiting ahead of need (fcgi-app/standby.h) ------------------------------
# standby_other PID: a waiting worker other than PID is there (its pid printed).
standby_other() {
	local p
	p=$(standby_pid)
	[ -n "$p" ] && [ "$p" != "$1" ] && echo "$p"
}
gone() { ! alive "$1"; }

SPARE=$(wait_for 10 standby_other 0 >/dev/null && standby_pid)
check "a creation worker waits ahead of need" test -n "$SPARE"
create acme widgets 20
assert_state "a session made by the waiting worker becomes running" widgets-20 running 10
check "the waiting worker made it (it ended once done)" wait_for 5 gone "${SPARE:-0}"
NEXT=$(wait_for 10 standby_other "${SPARE:-0}" >/dev/null && standby_pid)
check "agentd-api starts the next waiting worker" test -n "$NEXT"
# One that died waiting: the creation starts its own worker, and the keeper a new waiting one.
[ -n "$NEXT" ] && kill -KILL "$NEXT"
create acme widgets 21
assert_status "a creation after the waiting worker died: 201" 201
assert_state "its session becomes running all the same" widgets-21 running 10
LAST=$(wait_for 10 standby_other "${NEXT:-0}" >/dev/null && standby_pid)
check "and a new worker waits again" test -n "$LAST"
for id in widgets-20 widgets-21; do
	api DELETE "/sessions/$id"
	assert_status "DELETE $id: 200" 200
done
stop_stack
check "the waiting worker ends with agentd-api" wait_for 5 gone "${LAST:-0}"

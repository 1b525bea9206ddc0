#!/usr/bin/env bash
# The store layout ("cannot change B's branch or any ref or object B's work depends
# on"): with AGENTD_GIT_STORE_DIR, each repository has a store the daemon fetches and the agents
# only read, and each session a repository of its own whose alternates borrow the store's objects
# and whose origin is the real remote. Checked as the agents' user, as a pane's process runs: it
# commits, branches, logs the whole history and pushes in its own repository, and cannot update or
# delete any ref of the store (another session's kept branch included), write an object into it,
# or change its config or hooks. DELETE keeps every commit of the session in the store.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1
STORE_DIR=$T/state/git
STORE=$STORE_DIR/acme/widgets.git
REMOTE=$T/remotes/acme/widgets.git
# The daemons' umask as agentd-api.service sets it (UMask=0027): the store must still be
# readable by the agents, whose repositories borrow its objects.
umask 027
start_stack AGENTD_GIT_STORE_DIR="$STORE_DIR" || exit 1
umask 022

# start ISSUE: creates acme/widgets#ISSUE and waits until it runs.
start() {
	create acme widgets "$1"
	assert_status "create widgets-$1: 201" 201
	assert_state "widgets-$1 becomes running" "widgets-$1" running 30
}

# sgit ARGS...: git on the store as the agent. safe.directory is lifted so that a refusal is the
# file system's, not git's ownership check.
sgit() { as_agent git -c safe.directory='*' -C "$STORE" "$@"; }

start 1
start 2
WT1=$T/code/widgets-issue-1
WT2=$T/code/widgets-issue-2

# --- the layout -------------------------------------------------------------------------------
check "the store is a bare repository" test -f "$STORE/HEAD" -a -d "$STORE/objects"
if [ "$(id -u)" -eq 0 ]; then
	assert_eq "the store is the daemon's, not the agent's" "root" "$(stat -c %U "$STORE")"
	assert_eq "nothing in the store is the agent's" "" \
		"$(find "$STORE" -user "$AGENT_USER" 2>&1 | head -3)"
	assert_eq "the session repository is the agent's" "" \
		"$(find "$WT1" ! -user "$AGENT_USER" 2>&1 | head -3)"
fi
check "the session has a repository of its own (.git is a directory)" test -d "$WT1/.git"
assert_eq "its objects are borrowed from the store" "$STORE/objects" \
	"$(cat "$WT1/.git/objects/info/alternates" 2>&1)"
assert_eq "its origin is the real remote" "file://$REMOTE" \
	"$(as_agent git -C "$WT1" config remote.origin.url 2>&1)"
assert_eq "it is on feat/issue-1" "feat/issue-1" \
	"$(as_agent git -C "$WT1" symbolic-ref --short HEAD 2>&1)"
assert_eq "gc never prunes the store" "never" "$(git -C "$STORE" config gc.pruneExpire 2>&1)"

# --- what the agent can do --------------------------------------------------------------------
agent_sh "$WT1" 'echo one >one.txt && git add one.txt && git commit -q -m "one in A"' ||
	fail "commit in A"
C1=$(as_agent git -C "$WT1" rev-parse HEAD)
check "A committed: the commit is in A's own objects" test -n "$(find "$WT1/.git/objects" \
	-path "*/${C1:0:2}/${C1:2}")"
check "A creates a branch" agent_sh "$WT1" 'git branch topic-a'
assert_eq "A logs the whole history (2 from origin + its own)" 3 \
	"$(as_agent git -C "$WT1" log --oneline | wc -l)"
check "A logs origin/main" agent_sh "$WT1" 'git log -q --oneline origin/main >/dev/null'
check "A pushes its branch to its remote" agent_sh "$WT1" 'git push -q origin feat/issue-1'
assert_eq "the remote has A's commit" "$C1" "$(git -C "$REMOTE" rev-parse feat/issue-1 2>&1)"
check "A fetches from its remote" agent_sh "$WT1" 'git fetch -q origin'
check "A reads the store" sgit rev-parse -q --verify refs/remotes/origin/main

# --- B's work reaches the store on DELETE, then is out of A's reach ----------------------------
agent_sh "$WT2" 'echo two >two.txt && git add two.txt && git commit -q -m "two in B" &&
	git checkout -q -b side && echo s >s.txt && git add s.txt && git commit -q -m "side in B" &&
	git checkout -q feat/issue-2' || fail "commits in B"
B_TIP=$(as_agent git -C "$WT2" rev-parse feat/issue-2)
B_SIDE=$(as_agent git -C "$WT2" rev-parse side)
api DELETE /sessions/widgets-2
assert_status "DELETE B: 200" 200
assert_json "B's repository is removed" '.worktree' '"removed"'
check_not "B's directory is gone" test -e "$WT2"
assert_eq "B's branch is in the store" "$B_TIP" \
	"$(git -C "$STORE" rev-parse refs/heads/feat/issue-2 2>&1)"
assert_match "B's other branch is kept in the store" "refs/agentd/kept/widgets-2-[0-9]+-branches/side" \
	"$(git -C "$STORE" for-each-ref --format='%(refname)' --points-at "$B_SIDE" 2>&1)"
check "the store is whole (every kept commit's history is there)" \
	git -C "$STORE" fsck --connectivity-only --no-dangling

# --- what the agent cannot do to the store ----------------------------------------------------
check_not "A cannot move B's branch in the store" sgit update-ref refs/heads/feat/issue-2 "$C1" "$B_TIP"
check_not "A cannot delete B's branch in the store" sgit update-ref -d refs/heads/feat/issue-2
check_not "A cannot delete a kept ref" sgit update-ref -d \
	"$(git -C "$STORE" for-each-ref --format='%(refname)' 'refs/agentd/kept/' | head -1)"
check_not "A cannot move origin's refs in the store" sgit update-ref refs/remotes/origin/main "$C1"
check_not "A cannot make a ref in the store" sgit update-ref refs/heads/mine "$B_TIP"
check_not "A cannot pack-refs the store" sgit pack-refs --all
check_not "A cannot push into the store" agent_sh "$WT1" \
	"git -c safe.directory='*' push -q '$STORE' feat/issue-1:refs/heads/feat/issue-2"
check_not "A cannot write an object into the store" \
	as_agent bash -c "echo new-object | git -c safe.directory='*' -C '$STORE' hash-object -w --stdin"
check_not "A cannot add a pack to the store" \
	as_agent touch "$STORE/objects/pack/pack-0000000000000000000000000000000000000000.pack"
check_not "A cannot change the store's config" sgit config core.hooksPath /tmp
check_not "A cannot add a hook to the store" as_agent touch "$STORE/hooks/post-update"
check_not "A cannot give the store alternates" as_agent touch "$STORE/objects/info/alternates"
check_not "A cannot gc the store" sgit gc --prune=now --quiet
assert_eq "B's branch is unchanged" "$B_TIP" \
	"$(git -C "$STORE" rev-parse refs/heads/feat/issue-2 2>&1)"

# --- a commit on a detached HEAD is kept in the store too -------------------------------------
start 3
WT3=$T/code/widgets-issue-3
agent_sh "$WT3" 'git checkout -q --detach && echo d >d.txt && git add d.txt &&
	git commit -q -m "on a detached HEAD"' || fail "commit on a detached HEAD"
D_SHA=$(as_agent git -C "$WT3" rev-parse HEAD)
api DELETE /sessions/widgets-3
assert_jq "detached HEAD: removed, its commit kept under a ref" \
	'.worktree == "removed" and .keptCommits == 1 and
	 (.keptRef | test("^refs/agentd/kept/widgets-3-[0-9]+$"))'
assert_eq "the kept ref reaches the detached commit" "$D_SHA" \
	"$(git -C "$STORE" rev-parse "$(jq -r .keptRef <<<"$BODY")" 2>&1)"

# --- a dirty repository is kept; a recreated session continues its branch ----------------------
agent_sh "$WT1" 'echo wip >wip.txt' || fail "uncommitted file in A"
api DELETE /sessions/widgets-1
assert_json "A with an untracked file: kept, and why" '.' \
	'{"status":"stopped","worktree":"kept","reason":"uncommitted changes"}'
check "A's file is still there" test -f "$WT1/wip.txt"
api GET /worktrees
assert_jq "the kept repository is listed, with no session" \
	"map(select(.issue == 1)) == [{\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},\"issue\":1,\"path\":\"$WT1\",\"session\":null}]"
api DELETE /worktrees/widgets-issue-1
assert_status "DELETE /worktrees of the kept repository: 409" 409
assert_json "409 says kept and why" '[.code, .worktree, .reason]' \
	'["worktree_kept","kept","uncommitted changes"]'
api DELETE '/worktrees/widgets-issue-1?force=true'
assert_json "forced DELETE /worktrees removes it" '.worktree' '"removed"'
check_not "A's directory is gone" test -e "$WT1"
assert_eq "A's commit is the store's branch now" "$C1" \
	"$(git -C "$STORE" rev-parse refs/heads/feat/issue-1 2>&1)"
api GET /worktrees
assert_jq "the removed repository is no longer listed" 'map(select(.issue == 1)) == []'

start 2
assert_eq "B again starts from its kept branch" "$B_TIP" \
	"$(as_agent git -C "$WT2" rev-parse HEAD 2>&1)"

# --- the store's branches: listed, and deleted only when no commit is lost ---------------------
# Recreating B fetched the store: origin's feat/issue-1 is A's pushed commit, issue 3's branch is
# still origin's default tip, B's has a commit only B made.
KEPT=$(git -C "$STORE" for-each-ref --format='%(refname) %(objectname)' refs/agentd/kept/)
api GET /branches
assert_status "GET /branches: 200" 200
assert_json "the store's branches are listed with their state against origin" \
	'[.[] | [.repo.owner, .repo.name, .issue, .name, .sync, .ahead, .behind, .layout]]' \
	'[["acme","widgets",1,"feat/issue-1","synced",0,0,"store"],["acme","widgets",2,"feat/issue-2","local-only",0,0,"store"],["acme","widgets",3,"feat/issue-3","local-only",0,0,"store"]]'
assert_json "each says which session has it checked out in its own repository" \
	'[.[] | [.issue, .session, .checkedOut]]' "[[1,null,null],[2,\"widgets-2\",\"$WT2\"],[3,null,null]]"
api DELETE /branches/acme/widgets/feat/issue-2
assert_status "DELETE of a branch a session has checked out: 409" 409
assert_json "409 branch_checked_out names the repository" '[.code, (.error | contains("'"$WT2"'"))]' \
	'["branch_checked_out",true]'
assert_eq "the refused branch is unchanged" "$B_TIP" \
	"$(git -C "$STORE" rev-parse refs/heads/feat/issue-2 2>&1)"
api DELETE /branches/acme/widgets/feat/issue-1
assert_status "DELETE of a branch origin has: 200" 200
assert_json "200 says deleted" '.' \
	'{"repo":{"owner":"acme","name":"widgets"},"name":"feat/issue-1","deleted":true}'
check_not "the store's feat/issue-1 is gone" git -C "$STORE" rev-parse -q --verify refs/heads/feat/issue-1
api DELETE /branches/acme/widgets/feat/issue-3
assert_status "DELETE of a branch the default branch has: 200" 200
api DELETE /branches/acme/widgets/feat/issue-1
assert_status "DELETE of a branch the store no longer has: 404" 404
assert_json "404 not_found" '.code' '"not_found"'
api DELETE /branches/acme/widgets/main
assert_status "DELETE of a branch that is not feat/issue-<N>: 400" 400
assert_json "400 invalid_branch" '.code' '"invalid_branch"'
api DELETE /branches/acme/gadgets/feat/issue-1
assert_status "DELETE in a repository that is not managed: 404" 404
check_not "nothing is made for it in the store" test -e "$STORE_DIR/acme/gadgets.git.lock"

api DELETE '/sessions/widgets-2?force=true'
assert_json "B without new work: removed" '.worktree' '"removed"'

api DELETE /branches/acme/widgets/feat/issue-2
assert_status "DELETE of a branch with a commit origin lacks: 409" 409
assert_json "409 branch_not_merged counts the commit" '[.code, (.error | contains("1 commit "))]' \
	'["branch_not_merged",true]'
assert_eq "the refused branch is unchanged" "$B_TIP" \
	"$(git -C "$STORE" rev-parse refs/heads/feat/issue-2 2>&1)"
assert_eq "the kept refs are untouched" "$KEPT" \
	"$(git -C "$STORE" for-each-ref --format='%(refname) %(objectname)' refs/agentd/kept/)"
api GET /branches
assert_json "only B's branch is left, no session has it" '[.[] | [.issue, .session]]' '[[2,null]]'

# The store's view of origin is only as fresh as its last fetch, and an agent's push goes from its
# own repository: a refused DELETE fetches the store once before it answers.
git -C "$REMOTE" fetch -q "$STORE" feat/issue-2:feat/issue-2 || fail "B's branch reaches the remote"
api DELETE /branches/acme/widgets/feat/issue-2
assert_status "DELETE of a branch pushed since the store's last fetch: 200" 200
check_not "the store's feat/issue-2 is gone" git -C "$STORE" rev-parse -q --verify refs/heads/feat/issue-2
assert_eq "the kept refs are still untouched" "$KEPT" \
	"$(git -C "$STORE" for-each-ref --format='%(refname) %(objectname)' refs/agentd/kept/)"

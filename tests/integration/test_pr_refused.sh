#!/usr/bin/env bash
# POST /sessions/<id>/pr against a git server that refuses the push (docs/API.md, "Pull
# requests"): origin is a real git server over smart HTTP (tests/fakes/git_http.py: Debian git's
# `git http-backend`, anonymous fetches, pushes with a token), beside the fake GitHub REST API.
# A token without push rights (the server's 403) and one it does not know (401 again after the
# credentials) are 403 push_denied; a push the repository's pre-receive hook declines (branch
# protection, as GitHub's GH006) is 409 push_rejected with what the server said. After each
# refusal nothing changed: no branch on the server, no `pr` in the record, GitHub not asked for
# a pull request, the worktree and its commits kept. Then a token with rights opens it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$REPO/tests/fakes/lib_fakes.sh"
source "$REPO/tests/fakes/lib_github.sh"

GIT_PID=
stop_fake_git() { [ -n "$GIT_PID" ] && kill "$GIT_PID" 2>/dev/null && wait "$GIT_PID" 2>/dev/null; }
trap 'rc=$?; stop_fake_github; stop_fake_git; (exit $rc); cleanup' EXIT

TOKEN_RO=ghp_read-only-token
TOKEN_UNKNOWN=ghp_unknown-to-git
# GitHub takes all three (a token may read a repository and still not push to it).
start_fake_github "$TOKEN_RO" "$TOKEN_UNKNOWN" || exit 1
make_remote acme widgets || exit 1
BARE=$T/remotes/acme/widgets.git
printf '{"%s": "write", "%s": "read"}\n' "$GH_TOKEN_GOOD" "$TOKEN_RO" >"$T/git-tokens.json"
fake_start GIT_PID GIT_PORT "the git server" "$T/logs/git-http.log" "$T/git.port" \
	"$REPO/tests/fakes/git_http.py" --root "$T/remotes" --tokens "$T/git-tokens.json" \
	--log "$T/git-requests.jsonl" || exit 1

SECRETS=$T/secrets
mkdir -p "$SECRETS" && chmod 700 "$SECRETS"
start_stack "AGENTD_GITHUB_API=$GH_URL" "AGENTD_SECRETS_DIR=$SECRETS" \
	"AGENTD_REPO_URL=http://127.0.0.1:$GIT_PORT/{owner}/{name}.git" GH_TOKEN= GITHUB_TOKEN= || exit 1

create acme widgets 3
assert_status "create widgets-3 from the git server: 201" 201
assert_state "widgets-3 runs" widgets-3 running 60
check "the clone came over HTTP" grep -q '"path": "/acme/widgets.git/info/refs?service=git-upload-pack"' \
	"$T/git-requests.jsonl"
WT=$T/code/widgets-issue-3
agent_sh "$WT" 'printf "int widget(void) { return 3; }\n" >widget.c && git add widget.c &&
	git commit -q -m "Add the widget"' || fail "commit in the worktree"
HEAD_SHA=$(agent_sh "$WT" 'git rev-parse HEAD')

# unchanged WHAT: after a refusal, nothing moved.
unchanged() {
	check_not "$1: no branch on the server" git --git-dir="$BARE" rev-parse --verify -q refs/heads/feat/issue-3
	get_session widgets-3
	assert_jq "$1: no pull request recorded" '.pr == null and .state == "running"'
	assert_eq "$1: GitHub was not asked to open one" 0 "$(gh_count '.method == "POST"')"
	assert_eq "$1: the worktree's commit is kept" "$HEAD_SHA" "$(agent_sh "$WT" 'git rev-parse HEAD')"
}

rm -f "$SECRETS/GH_TOKEN"
api POST /sessions/widgets-3/pr
assert_status "no GH_TOKEN at all: 409" 409
assert_json "... no_token" .code '"no_token"'
assert_eq "... the git server was not asked to take a push" 0 \
	"$(grep -c 'git-receive-pack' "$T/git-requests.jsonl")"
unchanged "no GH_TOKEN"

printf '%s\n' "$TOKEN_RO" >"$SECRETS/GH_TOKEN"
api POST /sessions/widgets-3/pr
assert_status "a token without push rights: 403" 403
assert_json "... push_denied" .code '"push_denied"'
log "read-only: $BODY"
assert_match "... saying what the server said" '403.*no right to push' "$BODY"
check "the server did refuse it (403 to the token)" grep -q '"status": 403' "$T/git-requests.jsonl"
unchanged "read-only token"

printf '%s\n' "$TOKEN_UNKNOWN" >"$SECRETS/GH_TOKEN"
api POST /sessions/widgets-3/pr
assert_status "a token the server does not know: 403" 403
assert_json "... push_denied" .code '"push_denied"'
assert_match "... the credentials were refused" 'refused the credentials' "$BODY"
unchanged "unknown token"

# Branch protection: the repository's pre-receive hook declines the session's branch.
cat >"$BARE/hooks/pre-receive" <<'EOF'
#!/bin/sh
while read -r old new ref; do
	if [ "$ref" = refs/heads/feat/issue-3 ]; then
		echo "error: GH006: Protected branch update failed for $ref." >&2
		exit 1
	fi
done
EOF
chmod +x "$BARE/hooks/pre-receive"
printf '%s\n' "$GH_TOKEN_GOOD" >"$SECRETS/GH_TOKEN"
api POST /sessions/widgets-3/pr
assert_status "a protected branch: 409" 409
assert_json "... push_rejected" .code '"push_rejected"'
log "protected: $BODY"
assert_match "... with what the server said of the branch" 'feat/issue-3: pre-receive hook declined' "$BODY"
assert_match "... and what its hook printed" 'GH006: Protected branch update failed' "$BODY"
unchanged "protected branch"

rm -f "$BARE/hooks/pre-receive"
api POST /sessions/widgets-3/pr
assert_status "with push rights and no protection: 201" 201
assert_jq "the pull request is recorded" '.pr.number > 0 and .pr.state == "open"'
assert_eq "the server has the branch at the worktree's HEAD" "$HEAD_SHA" \
	"$(git --git-dir="$BARE" rev-parse refs/heads/feat/issue-3 2>&1)"

#!/usr/bin/env bash
# What a session changed: GET /sessions/<id>/diff against the merge base with the
# default branch (a commit, an uncommitted change, an untracked file, an ignored one, a binary
# file, a 50 MB generated file that must not stall the API), ?base=HEAD, the unified text with
# Accept: text/x-diff, bad ?base, GET /sessions/<id>/commits, and a read-only token reading both.
# The work in the worktree is done as the agents' user, as an agent does it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

API_BIN=$BUILD_DIR/fcgi-app/agentd-api
make_remote acme widgets || exit 1
start_stack || exit 1
VIEWER=$("$API_BIN" token add viewer --read-only)

create acme widgets 1
assert_status "create widgets-1: 201" 201
assert_state "widgets-1 becomes running" widgets-1 running 60
WT=$T/code/widgets-issue-1

api GET /sessions/widgets-1/diff
assert_status "diff of an untouched worktree: 200" 200
assert_jq "untouched: no files, base is origin/main" \
	'.files == [] and .totals == {"files":0,"additions":0,"deletions":0} and
	 .base.ref == "origin/main" and (.base.commit | test("^[0-9a-f]{40}$")) and
	 .head == .base.commit and .diff == ""'

agent_sh "$WT" 'printf "one\ntwo\n" >feature.c && git add feature.c &&
	git commit -q -m "add feature.c" && printf "int x;\n" >>main.c &&
	printf "fresh\n" >notes.txt &&
	printf "x\n" >build.log && printf "\0\1\2binary\0" >logo.bin' ||
	fail "make changes in the worktree"
agent_sh "$WT" 'printf "build.log\n" >>"$(git rev-parse --git-path info/exclude)"' ||
	fail "ignore build.log"

api GET /sessions/widgets-1/diff
assert_status "diff: 200" 200
assert_json "committed, uncommitted and untracked files, not the ignored one" \
	'[.files[] | [.path, .status, .additions, .deletions, .binary]] | sort' \
	'[["feature.c","added",2,0,false],["logo.bin","added",0,0,true],["main.c","modified",1,0,false],["notes.txt","added",1,0,false]]'
assert_json "totals" '.totals' '{"files":4,"additions":4,"deletions":0}'
assert_json "nothing cut" '.truncated' '{"files":0,"diff":false,"uncounted":0}'
assert_jq "every file counted" '[.files[].counted] | all'
assert_jq "the JSON carries the unified diff" \
	'(.diff | contains("diff --git a/feature.c b/feature.c")) and
	 (.diff | contains("+int x;")) and (.diff | contains("+fresh")) and
	 (.diff | contains("build.log") | not)'

api GET /sessions/widgets-1/diff -H 'Accept: text/x-diff'
assert_status "diff as text/x-diff: 200" 200
assert_match "text/x-diff content type" '^text/x-diff' "$(header content-type)"
assert_match "the text is the unified diff" 'diff --git a/main.c b/main.c' "$BODY"
assert_eq "the text says nothing was cut" 'files=0; diff=false' "$(header x-agentd-diff-truncated)"
assert_eq "the text counts the files" 4 "$(header x-agentd-diff-files)"
api GET '/sessions/widgets-1/diff?base=HEAD'
assert_status "?base=HEAD: 200" 200
assert_json "?base=HEAD: only the uncommitted work" '[.base.ref, ([.files[].path] | sort)]' \
	'["HEAD",["logo.bin","main.c","notes.txt"]]'

for bad in head main 'HEAD~1' '' "$(printf 'x%.0s' $(seq 300))"; do
	api GET "/sessions/widgets-1/diff?base=$bad"
	assert_status "?base=${bad:0:20}: 400" 400
	assert_json "?base=${bad:0:20}: code" '.code' '"invalid_base"'
done

api GET '/sessions/widgets-1/diff?maxBytes=20'
assert_status "?maxBytes=20: 200" 200
assert_jq "?maxBytes=20: no patch fits, the summary is whole and says so" \
	'.diff == "" and .truncated.diff == true and .limits.diffBytes == 20 and .totals.files == 4'
for bad in 0 -1 012 1e3 4194305 99999999999 ''; do
	api GET "/sessions/widgets-1/diff?maxBytes=$bad"
	assert_status "?maxBytes=$bad: 400" 400
	assert_json "?maxBytes=$bad: code" '.code' '"invalid_max_bytes"'
done

api GET /sessions/widgets-9/diff
assert_status "diff of an unknown session: 404" 404
api GET /sessions/Bad%20id/diff
assert_status "diff of a malformed id: 400" 400

api GET /sessions/widgets-1/commits
assert_status "commits: 200" 200
assert_jq "commits: the one commit since the merge base" \
	'(.commits | length) == 1 and .commits[0].subject == "add feature.c" and
	 (.commits[0].id | test("^[0-9a-f]{40}$")) and .truncated == false and
	 (.commits[0].time | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T")) and
	 (.commits[0].author.name | length > 0) and .base.ref == "origin/main"'

# A read-only token reads both (and the door still refuses it a change).
code=$(curl -q -s -o "$T/ro.body" -w '%{http_code}' -H "Authorization: Bearer $VIEWER" \
	"$BASE_URL/sessions/widgets-1/diff")
assert_eq "a read-only token reads the diff" 200 "$code"
assert_jq "... the same summary" '.totals.files == 4' "$(cat "$T/ro.body")"
code=$(curl -q -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $VIEWER" \
	"$BASE_URL/sessions/widgets-1/commits")
assert_eq "a read-only token reads the commits" 200 "$code"

# A 50 MB generated file: listed, not read, and the answer comes at once.
agent_sh "$WT" 'head -c 52428800 /dev/zero | tr "\0" "a" | fold -w 99 >generated.txt' ||
	fail "write a 50 MB file"
start_ns=$(date +%s%N)
api GET /sessions/widgets-1/diff
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
assert_status "diff with a 50 MB file: 200" 200
assert_json "the 50 MB file: listed as too large, not diffed" \
	'.files[] | select(.path == "generated.txt") | [.status, .binary, .tooLarge, .additions]' \
	'["added",true,true,0]'
assert_jq "the answer stays small" '(.diff | length) < 10000'
check "the answer came in under 5 s (${elapsed_ms} ms)" test "$elapsed_ms" -lt 5000

# Over the cap of the text (4 MiB, patches of < 1 MiB): the summary stays whole, the text says so.
agent_sh "$WT" 'for i in 1 2 3 4 5; do head -c 1000000 /dev/zero | tr "\0" "b" |
	fold -w 49 >"part$i.txt"; done' || fail "write five 1 MB files"
api GET /sessions/widgets-1/diff
assert_status "diff over the text cap: 200" 200
assert_jq "over the cap: truncated.diff, a file out of the text, every file listed" \
	'.truncated.diff == true and ([.files[] | select(.inDiff == false)] | length) >= 1 and
	 .totals.files == 10 and (.diff | length) <= .limits.diffBytes'
api GET /sessions/widgets-1/diff -H 'Accept: text/x-diff'
assert_eq "over the cap: the text's header says so" 'files=0; diff=true' \
	"$(header x-agentd-diff-truncated)"

# A worktree that is gone: 409, not a 500.
agent_sh "$T/code" 'mv widgets-issue-1 moved-away' || fail "move the worktree away"
api GET /sessions/widgets-1/diff
assert_status "diff without a worktree: 409" 409
assert_json "without a worktree: code" '.code' '"no_worktree"'
agent_sh "$T/code" 'mv moved-away widgets-issue-1' || fail "move the worktree back"

#!/usr/bin/env bash
# agentd-telegram's /diff with the fake Bot API: without a session it says how to
# get one; for a session with nothing changed it says so and sends no file; with a commit, an
# uncommitted change, an untracked and a binary file it answers the summary (files with +/−,
# against origin/main) and sends the diff as a document (sendDocument, a multipart upload named
# <id>.diff); /diff <id> names another session; a bad or unknown id gets a usage or the API's word.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$(dirname "$0")/telegram/lib_telegram.sh"

make_remote acme widgets
start_fake_bot || exit 1
start_stack "${TG_STACK[@]}" || exit 1
check "deploy/up starts agentd-telegram, which polls the fake Bot API" wait_telegram 30
U=$TG_USER
WT=$T/code/widgets-issue-1

# tg_documents CHAT: every document sent to CHAT (a JSON array).
tg_documents() { curl -s -m 10 "$TG/test/documents?chat=$1"; }

tg_write "$U" "/help"
assert_tg "/help lists /diff" "$U" 'select(.text | test("/diff \\[<id>\\]: what the session changed"))'
tg_write "$U" "/diff"
assert_tg "/diff without a session says how to get one" "$U" 'select(.text | test("^This chat has no session"))'

tg_write "$U" "/new acme/widgets 1"
assert_tg "/new makes widgets-1 the chat's session" "$U" 'select(.text | test("^widgets-1 is starting"))'
assert_state "the session runs" widgets-1 running 60
tg_write "$U" "/diff"
assert_tg "/diff of an untouched worktree: nothing changed" "$U" \
	'select(.text | test("^widgets-1: 0 files changed, \\+0 \u22120 against origin/main \\([0-9a-f]{7}\\)$"))'

agent_sh "$WT" 'printf "one\ntwo\n" >feature.c && git add feature.c &&
	git commit -q -m "add feature.c" && printf "int x;\n" >>main.c &&
	printf "fresh\n" >notes.txt && printf "\0\1binary\0" >logo.bin' ||
	fail "make changes in the worktree"
tg_write "$U" "/diff widgets-1"
assert_tg "/diff answers the summary: totals, base, each file with +/−" "$U" \
	'select(.text | startswith("widgets-1: 4 files changed, +4 \u22120 against origin/main") and
	 contains("\nA feature.c +2 \u22120") and contains("\nM main.c +1 \u22120") and
	 contains("\nA notes.txt +1 \u22120") and contains("\nA logo.bin (binary)"))'
deadline=$((SECONDS + 30))
until [ "$(tg_documents "$U" | jq length)" -ge 1 ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
DOCS=$(tg_documents "$U")
assert_json "/diff sends one document, named <id>.diff, as text" \
	'[.[] | {filename, content_type, caption}]' \
	'[{"filename":"widgets-1.diff","content_type":"text/plain","caption":"widgets-1: the diff"}]' "$DOCS"
assert_jq "the document is the unified diff" \
	'.[0].text | contains("diff --git a/feature.c b/feature.c") and contains("+int x;") and
	 contains("+fresh") and contains("Binary files")' "$DOCS"
assert_eq "the untouched worktree's /diff sent no document" 1 "$(jq length <<<"$DOCS")"

tg_write "$U" "/diff not/an-id"
assert_tg "/diff with a bad id: usage" "$U" 'select(.text == "Usage: /diff [<id>]")'
tg_write "$U" "/diff widgets-9"
assert_tg "/diff of an unknown session: the API's word" "$U" \
	'select(.text | test("^widgets-9: no diff: no session widgets-9"))'
assert_eq "the fake Bot API refused nothing" '[]' "$(tg_stats | jq -c .violations)"

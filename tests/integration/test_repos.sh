#!/usr/bin/env bash
# GET /repos: the repositories this server already has (its bare clones, or the stores of the
# store layout), each with its default branch, when it was last fetched and its open sessions,
# most recent activity first; a read-only token may read it; it stays after its sessions go; the
# web UI's create form offers them as chips that fill owner and name (web/repos.js).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

API_BIN=$BUILD_DIR/fcgi-app/agentd-api
make_remote acme widgets
make_remote acme gadgets
start_stack || exit 1
VIEWER=$("$API_BIN" token add viewer --read-only)

api GET /repos
assert_status "GET /repos on a new server: 200" 200
assert_jq "no repository yet" '. == []'

create acme widgets 1
assert_state "widgets-1 is running" widgets-1 running 30
api GET /repos
assert_status "GET /repos: 200" 200
assert_jq "acme/widgets with its session" \
	'length == 1 and .[0].repo == {owner: "acme", name: "widgets"} and
	 .[0].defaultBranch == "main" and (.[0].lastFetched | type) == "string" and
	 (.[0].sessions | map(.id)) == ["widgets-1"] and .[0].sessions[0].issue == 1 and
	 .[0].sessions[0].state == "running" and (.[0].sessions[0].activity | type) == "string"'

# One second later, so the newer activity is newer by the second too.
sleep 1.1
create acme gadgets 2
assert_state "gadgets-2 is running" gadgets-2 running 30
# -q: without the harness's admin token (.curlrc), the viewer's alone.
STATUS=$(curl -q -s -o "$T/resp.body" -w '%{http_code}' -m 30 -H "Authorization: Bearer $VIEWER" \
	"$BASE_URL/repos")
BODY=$(cat "$T/resp.body")
assert_status "a read-only token may read /repos: 200" 200
assert_jq "both, the newest activity first" \
	'map(.repo.name) == ["gadgets", "widgets"] and (.[0].sessions | map(.id)) == ["gadgets-2"]'

# The web UI's create form offers them (web/repos.js, in Debian's chromium).
browser_ready && browser_run repos repos-ui 120

api DELETE /sessions/gadgets-2
assert_status "DELETE gadgets-2: 200" 200
wait_for 30 test ! -e "$T/state/sessions/gadgets-2.json"
api GET /repos
assert_jq "gadgets stays, without sessions" \
	'(map(select(.repo.name == "gadgets")) | .[0].sessions) == [] and
	 (map(select(.repo.name == "widgets")) | .[0].sessions | map(.id)) == ["widgets-1"]'

api POST /repos '{}'
assert_status "POST /repos: 405" 405

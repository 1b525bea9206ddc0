#!/usr/bin/env bash
# Smaller input defects, through nginx against both daemons:
# - a request that is refused or changes nothing creates nothing under the runtime dir (100
#   DELETEs and POST /mode of unknown ids, creates answered 429 and 400), and a session that was
#   created and deleted leaves no file behind;
# - every body is valid UTF-8 JSON, also when the path held an invalid byte (%ff);
# - Content-Type application/json with a charset other than utf-8 is 415, and a JSON body with a
#   key twice (also nested, also equal only after decoding escapes) is 400, on POST /sessions,
#   POST /mode, /prompt and /permissions.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1
start_stack AGENTD_MAX_SESSIONS=1 || exit 1

# listing: every path under the runtime dir except the fake agent's and tmux's own, sorted.
listing() {
	(cd "$T/run" && find . -mindepth 1 ! -name tmux.sock | sort)
}

# assert_same_listing DESC BEFORE: the runtime dir lists exactly as BEFORE.
assert_same_listing() {
	local now diff
	now=$(listing)
	if [ "$now" == "$2" ]; then
		pass "$1"
	else
		diff=$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$now") | head -n 20)
		fail "$1" "the runtime dir changed ($(printf '%s\n' "$now" | wc -l) entries, was $(printf '%s\n' "$2" | wc -l))" "$diff"
	fi
}

# assert_utf8_json DESC: $BODY is strict UTF-8, parses as JSON, and has the error shape.
assert_utf8_json() {
	local out
	if out=$(python3 -c '
import json, sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")  # strict: raises on an invalid byte
o = json.loads(text)
assert isinstance(o, dict) and isinstance(o.get("error"), str) and isinstance(o.get("code"), str), o
' "$T/resp.body" 2>&1) && jq -e . "$T/resp.body" >/dev/null 2>&1; then
		pass "$1"
	else
		fail "$1" "status $STATUS, body is not UTF-8 JSON with error and code" \
			"$out" "$(od -c "$T/resp.body" | head -n 5)"
	fi
}

# --- a created and deleted session leaves nothing ---------------------------------------------------
# A first session makes what every later one shares (store locks, sessions.json, tmux server).
create acme widgets 1
assert_status "warm-up session: 201" 201
assert_state "warm-up session becomes running" widgets-1 running 15
api DELETE /sessions/widgets-1
assert_status "warm-up session deleted" 200
BASE=$(listing)
create acme widgets 2
assert_status "second session: 201" 201
assert_state "second session becomes running" widgets-2 running 15
check "the running session has a lock file" test -e "$T/state/sessions/widgets-2.lock"
api DELETE /sessions/widgets-2
assert_status "second session deleted" 200
assert_same_listing "create + delete leaves no file in the runtime dir (no .lock, no .worker)" "$BASE"

# --- refused requests create nothing ------------------------------------------------------------------
create acme widgets 3
assert_status "the one allowed session (AGENTD_MAX_SESSIONS=1): 201" 201
assert_state "the one allowed session becomes running" widgets-3 running 15
BEFORE=$(listing)
n404=0
for i in $(seq 1 100); do
	api DELETE "/sessions/ghost-$i"
	[ "$STATUS" == 404 ] && n404=$((n404 + 1))
done
assert_eq "100 DELETEs of unknown ids: all 404" 100 "$n404"
assert_same_listing "100 DELETEs of unknown ids create no file" "$BEFORE"
for i in 1 2 3; do
	api POST "/sessions/ghost-$i/mode" '{"mode":"structured"}'
	assert_status "POST /mode of unknown id ghost-$i: 404" 404
done
api GET /sessions/ghost-1
assert_status "GET of an unknown id: 404" 404
assert_same_listing "POST /mode and GET of unknown ids create no file" "$BEFORE"
api POST /sessions/ghost-1/prompt '{"prompt":"hi"}'
assert_status "POST /prompt (bridge) of an unknown id: 404" 404
api POST /sessions/ghost-1/permissions/r1 '{"behavior":"allow"}'
assert_status "POST /permissions (bridge) of an unknown id: 404" 404
api GET /sessions/ghost-1/terminal -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
	-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='
assert_status "GET /terminal (bridge) of an unknown id: 404" 404
assert_same_listing "bridge requests for unknown ids create no file" "$BEFORE"
for i in 4 5 6; do
	create acme widgets "$i"
	assert_status "create beyond AGENTD_MAX_SESSIONS (widgets-$i): 429" 429
done
assert_same_listing "creates answered 429 create no file" "$BEFORE"
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":0}'
assert_status "create with issue 0: 400" 400
api POST /sessions '{"repo":{"owner":"acme","name":"widgets"},"issue":7,"issue":8}'
assert_status "create with issue twice: 400" 400
assert_same_listing "creates answered 400 create no file" "$BEFORE"

# --- every body is valid UTF-8 JSON ------------------------------------------------------------------
api GET /sessions/%ff-1
assert_utf8_json "GET /sessions/%ff-1 (API): UTF-8 JSON body"
api DELETE /sessions/%ff-1
assert_utf8_json "DELETE /sessions/%ff-1 (API): UTF-8 JSON body"
api POST /sessions/%ff-1/mode '{"mode":"terminal"}'
assert_utf8_json "POST /sessions/%ff-1/mode (API): UTF-8 JSON body"
api GET /sessions/%ff%fe-1/terminal -H 'Connection: Upgrade' -H 'Upgrade: websocket' \
	-H 'Sec-WebSocket-Version: 13' -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='
assert_utf8_json "GET /sessions/%ff%fe-1/terminal (bridge): UTF-8 JSON body"
api POST /sessions/%ff-1/prompt '{"prompt":"hi"}'
assert_utf8_json "POST /sessions/%ff-1/prompt (bridge): UTF-8 JSON body"
api GET /sessions/%ff-1/events
assert_utf8_json "GET /sessions/%ff-1/events (bridge): UTF-8 JSON body"
api POST /sessions/widgets-3/permissions/%ff '{"behavior":"allow"}'
assert_utf8_json "POST /permissions/%ff (bridge): UTF-8 JSON body"
assert_same_listing "requests with invalid bytes create no file" "$BEFORE"

# --- Content-Type charset -----------------------------------------------------------------------------
API_CT='application/json; charset=latin1' api POST /sessions "$(create_body acme widgets 3)"
assert_status "POST /sessions with charset=latin1: 415" 415
assert_error_body "415 has an error body"
API_CT='application/json; charset=ISO-8859-1' api POST /sessions/widgets-3/mode '{"mode":"terminal"}'
assert_status "POST /mode with charset=ISO-8859-1: 415" 415
API_CT='application/json; charset=latin1' api POST /sessions/widgets-3/prompt '{"prompt":"hi"}'
assert_status "POST /prompt (bridge) with charset=latin1: 415" 415
API_CT='application/json; charset=utf-16' api POST /sessions/widgets-3/permissions/r1 '{"behavior":"allow"}'
assert_status "POST /permissions (bridge) with charset=utf-16: 415" 415
API_CT='application/json; charset=UTF-8' api POST /sessions "$(create_body acme widgets 3)"
assert_status "POST /sessions with charset=UTF-8 is accepted (the same session again: 200)" 200
API_CT='application/json;charset=utf-8' api POST /sessions/widgets-3/mode '{"mode":"terminal"}'
assert_status "POST /mode with charset=utf-8 is accepted" 200

# --- duplicate keys -----------------------------------------------------------------------------------
api DELETE /sessions/widgets-3
assert_status "the one session deleted (a slot for the next creates)" 200
for body in '{"repo":{"owner":"acme","name":"widgets"},"issue":9,"issue":10}' \
	'{"repo":{"owner":"acme","name":"widgets","name":"other"},"issue":9}' \
	'{"repo":{"owner":"acme","name":"widgets"},"issue":9,"i\u0073sue":10}' \
	'{"repo":{"owner":"acme","name":"widgets"},"repo":{"owner":"acme","name":"widgets"},"issue":9}'; do
	api POST /sessions "$body"
	assert_status "POST /sessions with a key twice: 400 ($body)" 400
	assert_jq "the 400 names the repeated key" '.error | test("same key twice")'
done
check_not "no session was created from a body with a key twice" test -e "$T/state/sessions/widgets-9.json"
check_not "... nor the one of the last value" test -e "$T/state/sessions/widgets-10.json"
create acme widgets 11
assert_status "a session for /mode and the bridge: 201" 201
assert_state "it becomes running" widgets-11 running 15
api POST /sessions/widgets-11/mode '{"mode":"terminal","mode":"structured"}'
assert_status "POST /mode with mode twice: 400" 400
get_session widgets-11
assert_json "the mode did not change" .mode '"terminal"'
api POST /sessions/widgets-11/prompt '{"prompt":"a","prompt":"b"}'
assert_status "POST /prompt (bridge) with prompt twice: 400" 400
assert_error_body "the bridge's 400 has an error body"
api POST /sessions/widgets-11/permissions/r1 '{"behavior":"deny","behavior":"allow"}'
assert_status "POST /permissions (bridge) with behavior twice: 400" 400
api POST /sessions/widgets-11/permissions/r1 '{"behavior":"allow","updatedInput":{"a":1,"\u0061":2}}'
assert_status "POST /permissions (bridge) with a nested key twice (after decoding): 400" 400
api DELETE /sessions/widgets-11
assert_status "the session deleted" 200
assert_same_listing "after every session is deleted the runtime dir is as before them" "$BASE"

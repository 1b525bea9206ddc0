#!/usr/bin/env bash
# REST through nginx: every invalid input gets its status and an error body, and creates nothing
# (no record, no worktree, no clone, no tmux session); malformed and unknown ids; unsupported
# methods; the Origin rule and CORS preflight; the edges of what is valid.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

make_remote acme widgets || exit 1
ALLOWED=https://dash.example
start_stack AGENTD_ALLOWED_ORIGINS="$ALLOWED" || exit 1

# bad_post DESC STATUS BODY [curl args]: POST /sessions answers STATUS with an error body and
# leaves nothing behind.
bad_post() {
	local desc=$1 want=$2 body=$3
	shift 3
	api POST /sessions "$body" "$@"
	if [ "$STATUS" == "$want" ]; then
		if [ "$want" == 413 ] && [[ $(header Content-Type) != application/json* ]]; then
			pass "$desc: $want (from nginx)" # nginx refuses before the app sees it
		else
			assert_error_body "$desc: $want with {error,code}"
		fi
	else
		fail "$desc: $want" "expected status $want, got $STATUS" "body: ${BODY:0:300}"
	fi
	assert_nothing_created "$desc: creates nothing"
}

json_owner() { jq -cn --arg o "$1" '{repo: {owner: $o, name: "widgets"}, issue: 1}'; }
json_name() { jq -cn --arg n "$1" '{repo: {owner: "acme", name: $n}, issue: 1}'; }

# --- owner ---------------------------------------------------------------------------------------
for o in '../x' 'a;b' 'a"b' "a'b" '.' '..' '' '-abc' 'a_b' 'a b' 'a/b' 'ac me' \
	"$(printf 'a%.0s' $(seq 40))"; do
	bad_post "owner '${o:0:20}'" 400 "$(json_owner "$o")"
done
bad_post "owner with NUL (\\u0000)" 400 '{"repo":{"owner":"ac\u0000me","name":"widgets"},"issue":1}'
bad_post "owner not a string" 400 '{"repo":{"owner":123,"name":"widgets"},"issue":1}'
bad_post "owner null" 400 '{"repo":{"owner":null,"name":"widgets"},"issue":1}'
bad_post "owner with invalid UTF-8" 400 "$(printf '{"repo":{"owner":"a\xffb","name":"widgets"},"issue":1}')"

# --- name ----------------------------------------------------------------------------------------
for n in '../x' 'a;b' 'x"y' "x'y" '.' '..' 'x.git' '' 'a/b' 'a b' '$(id)' 'a:b' \
	"$(printf 'n%.0s' $(seq 101))"; do
	bad_post "name '${n:0:20}'" 400 "$(json_name "$n")"
done
bad_post "name with NUL (\\u0000)" 400 '{"repo":{"owner":"acme","name":"wid\u0000gets"},"issue":1}'
bad_post "name not a string" 400 '{"repo":{"owner":"acme","name":["w"]},"issue":1}'

# --- issue ---------------------------------------------------------------------------------------
for i in 0 -1 2147483648 99999999999999999999 '"7"' 1.5 null true '[7]' '{}'; do
	bad_post "issue $i" 400 "{\"repo\":{\"owner\":\"acme\",\"name\":\"widgets\"},\"issue\":$i}"
done

# --- shape of the body ---------------------------------------------------------------------------
bad_post "missing issue" 400 '{"repo":{"owner":"acme","name":"widgets"}}'
bad_post "missing repo" 400 '{"issue":1}'
bad_post "missing owner" 400 '{"repo":{"name":"widgets"},"issue":1}'
bad_post "missing name" 400 '{"repo":{"owner":"acme"},"issue":1}'
bad_post "repo not an object" 400 '{"repo":"acme/widgets","issue":1}'
bad_post "repo an array" 400 '{"repo":["acme","widgets"],"issue":1}'
bad_post "body is an array" 400 '[{"repo":{"owner":"acme","name":"widgets"},"issue":1}]'
bad_post "body is a string" 400 '"acme/widgets#1"'
bad_post "body is a number" 400 '42'
bad_post "body is null" 400 'null'
bad_post "malformed JSON" 400 '{"repo":{"owner":"acme","name":"widgets"},"issue":1'
bad_post "malformed JSON (bare brace)" 400 '{'
bad_post "trailing garbage after JSON" 400 '{"repo":{"owner":"acme","name":"widgets"},"issue":1} x'
bad_post "empty body" 400 ''
bad_post "deeply nested JSON" 400 "$(printf '[%.0s' $(seq 5000))"
bad_post "mode not terminal/structured" 400 \
	'{"repo":{"owner":"acme","name":"widgets"},"issue":1,"mode":"bogus"}'
bad_post "prompt not a string" 400 '{"repo":{"owner":"acme","name":"widgets"},"issue":1,"prompt":7}'

# --- media type and size -------------------------------------------------------------------------
GOOD=$(create_body acme widgets 1)
API_CT=text/plain bad_post "Content-Type text/plain" 415 "$GOOD"
API_CT=none bad_post "no Content-Type" 415 "$GOOD"
API_CT=application/x-www-form-urlencoded bad_post "form Content-Type" 415 "$GOOD"
API_CT=application/jsonp bad_post "Content-Type application/jsonp" 415 "$GOOD"

python3 -c 'import json, sys
print(json.dumps({"repo": {"owner": "acme", "name": "w" * 70000}, "issue": 1}))' >"$T/work/70k.json"
bad_post "body of 70 KB" 413 "@$T/work/70k.json"
python3 -c 'import json
print(json.dumps({"repo": {"owner": "acme", "name": "w" * 10000000}, "issue": 1}))' >"$T/work/10m.json"
bad_post "10 MB name" 413 "@$T/work/10m.json"
python3 -c 'import json
b = json.dumps({"repo": {"owner": "acme", "name": "w" * 200}, "issue": 1, "pad": ""})
print(b[:-2] + "x" * (65000 - len(b)) + "\"}", end="")' >"$T/work/65000.json"
bad_post "65000-byte body (under 64 KiB) is judged on content" 400 "@$T/work/65000.json"

# --- ids in the path -----------------------------------------------------------------------------
for p in '/sessions/..%2F' '/sessions/a;b' '/sessions/widgets' '/sessions/widgets-0' \
	'/sessions/widgets-2147483648' '/sessions/-7' '/sessions/x.git-7' '/sessions/.-7' \
	'/sessions/widgets-007' '/sessions/widgets-7x' '/sessions/wid%20gets-7'; do
	api GET "$p"
	assert_status "GET $p: 400" 400
done
api DELETE '/sessions/a;b'
assert_status "DELETE /sessions/a;b: 400" 400
assert_error_body "malformed id has an error body"
api GET /sessions/nope-1
assert_status "GET unknown well-formed id: 404" 404
assert_error_body "404 has an error body"
api DELETE /sessions/nope-1
assert_status "DELETE unknown well-formed id: 404" 404
api GET /sessions/socket.io-12
assert_status "GET unknown id with a dot: 404" 404

# --- methods -------------------------------------------------------------------------------------
api PUT /sessions "$GOOD"
assert_status "PUT /sessions: 405" 405
assert_error_body "405 has an error body"
api PATCH /sessions/widgets-1 '{}'
assert_status "PATCH /sessions/<id>: 405" 405
api DELETE /sessions
assert_status "DELETE /sessions (the collection): 405" 405
api POST /sessions/widgets-1 "$GOOD"
assert_status "POST /sessions/<id>: 405" 405
assert_nothing_created "wrong methods create nothing"

# --- Origin rule ---------------------------------------------------------------------------------
for o in http://evil.example null "http://127.0.0.1:$PORT.evil.example" "https://127.0.0.1:$PORT" \
	"http://127.0.0.1:$((PORT + 1))" "https://dash.example.evil"; do
	bad_post "POST with Origin $o" 403 "$GOOD" -H "Origin: $o"
done

api POST /sessions "$GOOD" -H "Origin: http://127.0.0.1:$PORT"
assert_status "same-origin POST: 201" 201
api POST /sessions "$(create_body acme widgets 2)" -H "Origin: $ALLOWED"
assert_status "POST from an allowed origin: 201" 201
assert_eq "allowed origin gets Access-Control-Allow-Origin" "$ALLOWED" \
	"$(header Access-Control-Allow-Origin)"
api POST /sessions "$(create_body acme widgets 3)"
assert_status "POST without Origin (curl): 201" 201
assert_state "session 1 becomes running" widgets-1 running 15

api DELETE /sessions/widgets-1 -H 'Origin: http://evil.example'
assert_status "cross-origin DELETE: 403" 403
get_session widgets-1
assert_status "cross-origin DELETE left the session" 200
check "cross-origin DELETE left the tmux session" tmux_has widgets-1

api GET /sessions -H 'Origin: http://evil.example'
assert_status "cross-origin GET is answered" 200
check_not "no Access-Control-Allow-Origin for a disallowed origin" has_header \
	Access-Control-Allow-Origin

api OPTIONS /sessions -H 'Origin: http://evil.example' -H 'Access-Control-Request-Method: POST'
assert_status "preflight from a disallowed origin: 204" 204
check_not "preflight from a disallowed origin has no Access-Control-Allow-Origin" has_header \
	Access-Control-Allow-Origin
check_not "preflight from a disallowed origin has no Allow-Private-Network" has_header \
	Access-Control-Allow-Private-Network
api OPTIONS /sessions/widgets-1 -H "Origin: $ALLOWED" -H 'Access-Control-Request-Method: DELETE' \
	-H 'Access-Control-Request-Headers: content-type' -H 'Access-Control-Request-Private-Network: true'
assert_status "preflight from an allowed origin: 204" 204
assert_eq "preflight echoes the allowed origin" "$ALLOWED" "$(header Access-Control-Allow-Origin)"
assert_match "preflight allows POST and DELETE" 'POST.*DELETE|DELETE.*POST' \
	"$(header Access-Control-Allow-Methods)"
assert_match "preflight allows Content-Type" '[Cc]ontent-[Tt]ype' \
	"$(header Access-Control-Allow-Headers)"
assert_eq "preflight allows the private network" true \
	"$(header Access-Control-Allow-Private-Network)"
check_not "no wildcard Access-Control-Allow-Origin anywhere" \
	grep -qi '^access-control-allow-origin: \*' <<<"$HEADERS"

api DELETE /sessions/widgets-1 -H "Origin: http://127.0.0.1:$PORT"
assert_status "same-origin DELETE: 200" 200
check_not "same-origin DELETE removed the tmux session" tmux_has widgets-1

# --- the edges of valid input --------------------------------------------------------------------
O39=$(printf 'o%.0s' $(seq 39))
N100=$(printf 'N%.0s' $(seq 98)).x
make_remote "$O39" "$N100" || fail "make remote for the longest names"
create "$O39" "$N100" 2147483647
assert_status "39-char owner, 100-char name, issue 2147483647: 201" 201
assert_json "longest id" '.id' "\"$N100-2147483647\""
assert_state "longest names become running" "$N100-2147483647" running 15

API_CT='application/json; charset=utf-8' api POST /sessions "$(create_body acme widgets 4)"
assert_status "Content-Type application/json; charset=utf-8: 201" 201

PROMPT='Fix it; now; $HOME * `id` "quoted" '"'single'"' ;'
api POST /sessions "$(jq -cn --arg p "$PROMPT" '{repo: {owner: "acme", name: "widgets"}, issue: 5,
	prompt: $p}')"
assert_status "custom prompt: 201" 201
assert_json "custom prompt is kept" '.prompt' "$(jq -cn --arg p "$PROMPT" '$p')"
assert_state "custom prompt session becomes running" widgets-5 running 15
REC=$(claude_record widgets-5 10)
assert_json "claude gets the custom prompt verbatim as its last argument" '.argv[-1]' \
	"$(jq -cn --arg p "$PROMPT" '$p')" "$REC"
assert_json "claude gets --session-id, --settings, -- and the prompt" '.argv[1:] | length' 3 "$REC"
assert_json "the prompt follows --, which ends claude's options" '.argv[2]' '"--"' "$REC"

api GET /healthz
assert_json "healthz still ok after all of it" '[.status, .tmux]' '["ok",true]'

#!/usr/bin/env bash
# Structured mode through nginx with the stream-json fake claude: a text turn as SSE, tool
# permissions (allow, deny, deny+interrupt, two at once, unknown and repeated answers), interrupts,
# one turn at a time, and the mode rules.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

make_remote acme widgets
start_stack || exit 1

# --- terminal mode: the relay refuses --------------------------------------------------------
create acme widgets 1
assert_state "session widgets-1 runs" widgets-1 running 60
api POST /sessions/widgets-1/prompt '{"prompt":"hi"}'
assert_status "prompt in terminal mode: 409" 409
assert_error_body "prompt in terminal mode: error body"
assert_match "prompt in terminal mode: the error hints at the mode switch" '/mode' "$BODY"
api GET /sessions/widgets-1/events
assert_status "events in terminal mode: 409" 409
api POST /sessions/nosuch-9/prompt '{"prompt":"hi"}'
assert_status "prompt for an unknown session: 404" 404
assert_error_body "unknown session: error body"

api POST /sessions/widgets-1/mode '{"mode":"structured"}'
assert_status "switch to structured: 200" 200
SID=widgets-1

# --- a text turn -----------------------------------------------------------------------------
sse_run t1 POST /sessions/$SID/prompt '{"prompt":"say hello"}'
assert_eq "text turn: 200" 200 "$(sse_status t1)"
assert_eq "text turn: the stream ends by itself" eof "$(sse_end t1)"
assert_eq "text turn: init, the prompt replayed, assistant, result" "system user assistant result" \
	"$(sse_names t1)"
assert_jq "text turn: the user event is claude's replay of the prompt (isReplay)" \
	'.[1].data | fromjson | .isReplay == true and .message == {"role": "user", "content": "say hello"}' \
	"$(sse_events t1 | jq -s -c .)"
assert_jq "text turn: data is claude's line (assistant says Hello!)" \
	'[.[] | select(.event == "assistant") | .data | fromjson | .message.content[0].text] == ["Hello!"]' \
	"$(sse_events t1 | jq -s -c .)"
assert_jq "text turn: each event's name is its line's type" \
	'all(.[]; (.data | fromjson | .type) == .event)' "$(sse_events t1 | jq -s -c .)"
assert_ids_contiguous "text turn: ids increase by one" t1

WT=$T/code/widgets-issue-1

# answer NAME RID BODY: POST /permissions/RID
answer() { api POST "/sessions/$SID/permissions/$1" "$2"; }

# --- allow -----------------------------------------------------------------------------------
sse_start a1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch allowed-file"}'
assert_sse_event "allow: a permission event arrives" a1 '.event == "permission"' 20
RID=$(sse_permission_ids a1 | head -n 1)
assert_jq "allow: the permission event has the API.md fields" \
	'.data | fromjson | (.requestId | length > 0) and .toolName == "Bash" and
	 .input.command == "touch allowed-file" and .toolUseId == "toolu_01" and
	 has("description") and has("suggestions") and has("blockedPath")' \
	"$(sse_events a1 | jq -c 'select(.event == "permission")')"
check_not "allow: nothing ran before the answer" test -e "$WT/allowed-file"
answer "$RID" '{"behavior":"allow"}'
assert_status "allow: POST /permissions answers 200" 200
assert_json "allow: the answer is {\"status\":\"ok\"}" . '{"status":"ok"}'
sse_wait_end a1 20
assert_eq "allow: the stream ends after the result" eof "$(sse_end a1)"
assert_eq "allow: the events of the turn" \
	"system user assistant permission permission_resolved user assistant result" "$(sse_names a1)"
check "allow: the tool ran in the worktree" test -e "$WT/allowed-file"
assert_jq "allow: the result is a success" '.event == "result" and (.data | fromjson | .subtype) == "success"' \
	"$(sse_events a1 | tail -n 1)"
assert_ids_contiguous "allow: ids increase by one" a1
answer "$RID" '{"behavior":"allow"}'
assert_status "an answer given twice: 409" 409
assert_error_body "answered twice: error body"
answer "no-such-request" '{"behavior":"allow"}'
assert_status "an answer for an unknown request id: 404" 404
assert_error_body "unknown request id: error body"

# --- deny ------------------------------------------------------------------------------------
sse_start d1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch denied-file"}'
assert_sse_event "deny: a permission event arrives" d1 '.event == "permission"' 20
answer "$(sse_permission_ids d1 | head -n 1)" '{"behavior":"deny","message":"not today"}'
assert_status "deny: 200" 200
sse_wait_end d1 20
assert_eq "deny: the turn goes on without the tool" \
	"system user assistant permission permission_resolved user assistant result" "$(sse_names d1)"
assert_jq "deny: claude got the message as the tool's error" \
	'.data | fromjson | .message.content[0] | .is_error == true and .content == "not today"' \
	"$(sse_events d1 | jq -c 'select(.event == "user" and (.data | fromjson | .isReplay | not))')"
assert_jq "deny: the result lists the denial" \
	'.data | fromjson | .subtype == "success" and (.permission_denials | length) == 1' \
	"$(sse_events d1 | tail -n 1)"
check_not "deny: the tool did not run" test -e "$WT/denied-file"

# --- deny + interrupt ------------------------------------------------------------------------
sse_start di POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch interrupted-file"}'
assert_sse_event "deny+interrupt: a permission event arrives" di '.event == "permission"' 20
answer "$(sse_permission_ids di | head -n 1)" '{"behavior":"deny","message":"stop","interrupt":true}'
assert_status "deny+interrupt: 200" 200
sse_wait_end di 20
assert_eq "deny+interrupt: no assistant frame after the denial" \
	"system user assistant permission permission_resolved user result" "$(sse_names di)"
assert_jq "deny+interrupt: the turn ends as an error" \
	'.data | fromjson | .subtype == "error_during_execution" and .is_error == true' \
	"$(sse_events di | tail -n 1)"
check_not "deny+interrupt: the tool did not run" test -e "$WT/interrupted-file"

# --- interrupt mid-turn; a prompt sent while a turn runs is queued by claude, and runs next -------
sse_start evq GET /events
sse_start s1 POST /sessions/$SID/prompt '{"prompt":"SLOW"}'
assert_sse_event "slow turn: it starts" s1 '.event == "system"' 20
sse_start q1 POST /sessions/$SID/prompt '{"prompt":"another"}'
assert_sse_event "a prompt while a turn runs: accepted and queued (position 1)" q1 \
	'.event == "queued" and (.data | fromjson | .position == 1 and .prompt == "another")' 10
sse_start q2 POST /sessions/$SID/prompt '{"prompt":"and a third"}'
assert_sse_event "a second one: queued behind it (position 2)" q2 \
	'.event == "queued" and (.data | fromjson | .position == 2)' 10
# The queue is bounded: HOST_QUEUED_MAX (16) prompts wait, the next is refused with the time the
# running turn started.
for i in $(seq 3 16); do sse_start qq$i POST /sessions/$SID/prompt "{\"prompt\":\"queued $i\"}"; done
for i in $(seq 3 16); do sse_wait_event qq$i '.event == "queued"' 10; done
api POST /sessions/$SID/prompt '{"prompt":"one too many"}'
assert_status "a prompt past the queue's bound: 409" 409
assert_jq "... turn_running, saying when the running turn started" \
	'.code == "turn_running" and (.error | test("started at [0-9-]+T[0-9:.]+Z"))'
assert_sse_event "/events: every queued prompt" evq '.event == "queued"' 10 16
assert_jq "/events: each queued prompt, in order, with its session" \
	"[.[] | select(.event == \"queued\") | .data | fromjson | select(.session == \"$SID\") | .position] |
	 .[0:16] == [range(1; 17)]" "$(sse_events evq | jq -s -c .)"
START=$SECONDS
api POST /sessions/$SID/interrupt
assert_status "interrupt: 200" 200
assert_json "interrupt: the answer is {\"status\":\"ok\"}" . '{"status":"ok"}'
sse_wait_end s1 15
assert_eq "interrupt: the stream ends with the result" eof "$(sse_end s1)"
assert_jq "interrupt: the result is error_during_execution" \
	'.event == "result" and (.data | fromjson | .subtype) == "error_during_execution"' \
	"$(sse_events s1 | tail -n 1)"
assert_match "interrupt: the turn ended well before its 30 s" '^[0-9]$' "$((SECONDS - START))"
assert_jq "interrupt: claude acknowledged it first (control_response)" \
	'[.[].event] | index("control_response") != null' "$(sse_events s1 | jq -s -c .)"
sse_wait_end q1 20
assert_eq "the queued prompt ran next: its stream has its own turn only" \
	"queued system user assistant result" "$(sse_names q1)"
assert_jq "... its turn's replay is its prompt" \
	'[.[] | select(.event == "user") | .data | fromjson | .message.content] == ["another"]' \
	"$(sse_events q1 | jq -s -c .)"
assert_jq "... the interrupted turn's result counted the 16 waiting" \
	'.data | fromjson | .queued_turn_count == 16' "$(sse_events s1 | tail -n 1)"
assert_jq "... the queued turn's result, one less" \
	'.data | fromjson | .queued_turn_count == 15' "$(sse_events q1 | tail -n 1)"
sse_wait_end q2 20
assert_eq "the second queued prompt ran after it" "queued system user assistant result" \
	"$(sse_names q2)"
for i in $(seq 3 16); do sse_wait_end qq$i 30; done
assert_eq "every queued prompt ran, in order" "$(seq 3 16 | tr '\n' ' ')" \
	"$(for i in $(seq 3 16); do sse_events qq$i | jq -r 'select(.event == "user") | .data | fromjson | .message.content' | sed 's/^queued //'; done | tr '\n' ' ')"
sse_run s2 POST /sessions/$SID/prompt '{"prompt":"hello again"}'
assert_eq "after an interrupt the next prompt runs" "system user assistant result" "$(sse_names s2)"

# --- interrupt while a permission is pending: claude withdraws it --------------------------
sse_start w1 POST /sessions/$SID/prompt '{"prompt":"RUNBASH touch withdrawn-file"}'
assert_sse_event "withdrawn: a permission event arrives" w1 '.event == "permission"' 20
WRID=$(sse_permission_ids w1 | head -n 1)
api POST /sessions/$SID/interrupt
assert_status "withdrawn: interrupt 200" 200
sse_wait_end w1 15
assert_jq "withdrawn: claude sent control_cancel_request for it" \
	"[.[] | select(.event == \"control_cancel_request\") | (.data | fromjson | .request_id)] |
	 index(\"$WRID\") != null" "$(sse_events w1 | jq -s -c .)"
answer "$WRID" '{"behavior":"allow"}'
assert_status "withdrawn: answering it afterwards is 409" 409
check_not "withdrawn: the tool did not run" test -e "$WT/withdrawn-file"

# --- two pending permissions at once ---------------------------------------------------------
sse_start two POST /sessions/$SID/prompt '{"prompt":"TWOTOOLS"}'
assert_sse_event "two tools: two permission events" two '.event == "permission"' 20 2
LAST=$(sse_events two | tail -n 1 | jq .id)
sse_start pend GET "/sessions/$SID/events?after=$LAST" - --stop-after 2
sse_wait_end pend 10
assert_eq "two tools: /events after the last id replays both pending requests" \
	"permission permission" "$(sse_names pend)"
R1=$(sse_permission_ids two | sed -n 1p)
R2=$(sse_permission_ids two | sed -n 2p)
answer "$R2" '{"behavior":"allow"}'
assert_status "two tools: the second answered first: 200" 200
check_not "two tools: the turn waits for the other answer" sse_wait_end two 1
answer "$R1" '{"behavior":"deny","message":"only two"}'
assert_status "two tools: the first answered: 200" 200
sse_wait_end two 20
assert_jq "two tools: one ran, one was denied" \
	'.data | fromjson | .subtype == "success" and (.permission_denials | map(.tool_use_id)) == ["toolu_01"]' \
	"$(sse_events two | tail -n 1)"
check "two tools: the allowed one ran" test -e "$WT/two"
check_not "two tools: the denied one did not" test -e "$WT/one"

# --- malformed requests ----------------------------------------------------------------------
bad() {
	local desc=$1 want=$2
	shift 2
	api "$@"
	assert_status "$desc: $want" "$want"
	assert_error_body "$desc: error body"
}
bad "prompt: not JSON" 400 POST /sessions/$SID/prompt 'prompt please'
bad "prompt: an array" 400 POST /sessions/$SID/prompt '["hi"]'
bad "prompt: trailing garbage" 400 POST /sessions/$SID/prompt '{"prompt":"hi"} x'
bad "prompt: empty prompt" 400 POST /sessions/$SID/prompt '{"prompt":""}'
bad "prompt: prompt not a string" 400 POST /sessions/$SID/prompt '{"prompt":5}'
bad "prompt: no body" 400 POST /sessions/$SID/prompt
bad "prompt: empty body" 400 POST /sessions/$SID/prompt ''
API_CT=text/plain bad "prompt: not application/json" 415 POST /sessions/$SID/prompt '{"prompt":"hi"}'
API_CT=none bad "prompt: no Content-Type" 415 POST /sessions/$SID/prompt '{"prompt":"hi"}'
head -c 70000 /dev/zero | tr '\0' 'a' | jq -R -c '{prompt: .}' >"$T/big.json"
bad "prompt: body over 64 KiB" 413 POST /sessions/$SID/prompt "@$T/big.json"
bad "prompt: GET" 405 GET /sessions/$SID/prompt
bad "permission: behavior maybe" 400 POST /sessions/$SID/permissions/abc '{"behavior":"maybe"}'
bad "permission: message not a string" 400 POST /sessions/$SID/permissions/abc '{"behavior":"deny","message":1}'
bad "permission: updatedInput not an object" 400 POST /sessions/$SID/permissions/abc '{"behavior":"allow","updatedInput":"x"}'
bad "permission: not JSON" 400 POST /sessions/$SID/permissions/abc '{"behavior":'
bad "permission: a request id with odd characters" 404 POST "/sessions/$SID/permissions/a%20b" '{"behavior":"allow"}'
bad "events: a malformed Last-Event-ID" 400 GET /sessions/$SID/events -H 'Last-Event-ID: 12x'
bad "events: a malformed ?after=" 400 GET "/sessions/$SID/events?after=-1"
bad "events: an id beyond 64 bits" 400 GET "/sessions/$SID/events?after=99999999999999999999"
bad "a malformed session id" 400 POST /sessions/Bad_Id!-1/prompt '{"prompt":"hi"}'
bad "interrupt of an unknown session" 404 POST /sessions/nosuch-9/interrupt

# --- the Origin rule -------------------------------------------------------------------------
bad "prompt from a foreign Origin" 403 POST /sessions/$SID/prompt '{"prompt":"hi"}' -H 'Origin: http://evil.example'
bad "permission from a foreign Origin" 403 POST /sessions/$SID/permissions/abc '{"behavior":"allow"}' -H 'Origin: http://evil.example'
bad "interrupt from a foreign Origin" 403 POST /sessions/$SID/interrupt -H 'Origin: http://evil.example'
sse_run same POST /sessions/$SID/prompt '{"prompt":"hi"}' --header "Origin: http://127.0.0.1:$PORT"
assert_eq "prompt from the same Origin: 200" 200 "$(sse_status same)"
assert_eq "prompt from the same Origin: a whole turn" "system user assistant result" "$(sse_names same)"

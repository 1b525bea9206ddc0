#!/usr/bin/env bash
# Structured mode over GET /sessions/<id>/stream (WebSocket through nginx): events as JSON text
# frames, prompt / permission / interrupt frames answered by frames, bad frames refused without
# closing, replay from Last-Event-ID, 1 MB frames, refusals before the upgrade, and close 1001
# when the bridge stops.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"

if ! command -v node >/dev/null || [ ! -d "$REPO/tests/node_modules/ws" ]; then
	fail "node and the npm package ws are installed (tests/run runs npm ci in tests/)"
	exit 1
fi

make_remote acme widgets
make_remote acme gadgets
start_stack || exit 1
SID=$(structured_session acme widgets 1) || exit 1
WT=$T/code/widgets-issue-1

ws_start w1 /sessions/$SID/stream
assert_ws_line "stream: the upgrade succeeds" w1 '^open$' 10

# --- a text turn -------------------------------------------------------------------------------
ws_send w1 '{"type":"prompt","prompt":"hello"}'
assert_ws_frame "prompt frame: answered with accepted" w1 '.type == "accepted" and .request == "prompt"' 10
assert_ws_frame "prompt frame: the turn's events arrive" w1 '.event == "result"' 20
assert_jq "events are {id, event, data} with data claude's object" \
	'map(select(has("event"))) | length == 4 and
	 (map(.event) == ["system", "user", "assistant", "result"]) and
	 all(.[]; (.id | type) == "number" and .data.type == .event)' \
	"$(ws_frames w1 | jq -s -c 'map(select(has("event")))')"

# --- a permission answered over the socket ----------------------------------------------------
: >"$T/w1.frames"
ws_send w1 '{"type":"prompt","prompt":"RUNBASH touch ws-allowed"}'
assert_ws_frame "permission: the request arrives as a frame" w1 '.event == "permission"' 20
RID=$(ws_frames w1 | jq -r 'select(.event == "permission") | .data.requestId' | head -n 1)
ws_send w1 "{\"type\":\"permission\",\"requestId\":\"$RID\",\"behavior\":\"allow\"}"
assert_ws_frame "permission: answered with ok" w1 \
	".type == \"ok\" and .request == \"permission\" and .requestId == \"$RID\"" 10
assert_ws_frame "permission: the turn completes" w1 '.event == "result" and .data.subtype == "success"' 20
check "permission: the tool ran" test -e "$WT/ws-allowed"
ws_send w1 "{\"type\":\"permission\",\"requestId\":\"$RID\",\"behavior\":\"allow\"}"
assert_ws_frame "permission answered twice: an error frame with 409" w1 \
	'.type == "error" and .status == 409 and .request == "permission"' 10
ws_send w1 '{"type":"permission","requestId":"nope","behavior":"allow"}'
assert_ws_frame "permission for an unknown id: an error frame with 404" w1 \
	'.type == "error" and .status == 404 and .requestId == "nope"' 10

# --- interrupt, and one turn at a time ----------------------------------------------------------
: >"$T/w1.frames"
ws_send w1 '{"type":"prompt","prompt":"SLOW"}'
assert_ws_frame "slow turn starts" w1 '.event == "system"' 20
ws_send w1 '{"type":"prompt","prompt":"again"}'
assert_ws_frame "a prompt while a turn runs: accepted, queued behind it" w1 \
	'.type == "accepted" and .request == "prompt" and .queued == 1' 10
assert_ws_frame "... and its queued event" w1 \
	'.event == "queued" and .data.position == 1 and .data.prompt == "again"' 10
ws_send w1 '{"type":"interrupt"}'
assert_ws_frame "interrupt: answered with ok" w1 '.type == "ok" and .request == "interrupt"' 10
assert_ws_frame "interrupt: the turn ends" w1 '.event == "result" and .data.subtype == "error_during_execution"' 10
assert_ws_frame "the queued prompt runs next" w1 \
	'.event == "user" and .data.isReplay == true and .data.message.content == "again"' 10
assert_ws_frame "... to its result" w1 '.event == "result" and .data.subtype == "success"' 10

# --- bad frames are answered, the socket stays open --------------------------------------------
: >"$T/w1.frames"
ws_send w1 'not json'
ws_send w1 '{"type":"shout"}'
ws_send w1 '{"type":"prompt","prompt":""}'
ws_send w1 '{"type":"permission","requestId":"a b","behavior":"allow"}'
ws_send w1 '{"type":"permission","requestId":"x","behavior":"perhaps"}'
assert_ws_frame "bad frames: five 400 error frames" w1 '.type == "error" and .status == 400' 10 5
ws_cmd w1 'bytes 7b7d'
ws_send w1 '{"type":"prompt","prompt":"still there?"}'
assert_ws_frame "bad frames: the socket still works" w1 '.event == "result"' 20

# --- 1 MB lines ---------------------------------------------------------------------------------
: >"$T/w1.frames"
ws_send w1 '{"type":"prompt","prompt":"BIGLINE"}'
assert_ws_frame "1 MB line: the turn streams" w1 '.event == "result"' 30
assert_jq "1 MB line: the frame arrives whole" \
	'map(select(.event == "assistant")) | .[0].data.message.content[0].text | length == 1048576' \
	"$(ws_frames w1 | jq -s -c .)"

# --- replay from Last-Event-ID, and a second client sees the same live events ---------------
LAST=$(ws_frames w1 | jq -r 'select(has("id")) | .id' | tail -n 1)
ws_start w2 /sessions/$SID/stream --header "Last-Event-ID: $((LAST - 2))"
assert_ws_frame "replay: Last-Event-ID gives the events after it" w2 ".id == $LAST" 10
assert_eq "replay: exactly the two after it" "$((LAST - 1)) $LAST" \
	"$(ws_frames w2 | jq -r .id | tr '\n' ' ' | sed 's/ $//')"
ws_send w1 '{"type":"prompt","prompt":"for both"}'
assert_ws_frame "two clients: the second sees the first's turn live" w2 ".event == \"result\" and .id > $LAST" 20
ws_stop w2
assert_ws_line "a client closes with 1000" w2 '^closed 1000' 5

# --- refusals before the upgrade -----------------------------------------------------------------
ws_start o1 /sessions/$SID/stream --origin http://evil.example
assert_ws_line "a foreign Origin: 403" o1 '^status 403' 10
ws_start o2 /sessions/$SID/stream --origin "http://127.0.0.1:$PORT"
assert_ws_line "the same Origin: open" o2 '^open$' 10
ws_stop o2
ws_start n1 /sessions/nosuch-3/stream
assert_ws_line "an unknown session: 404" n1 '^status 404' 10
create acme gadgets 2
assert_state "terminal session runs" gadgets-2 running 60
ws_start m1 /sessions/gadgets-2/stream
assert_ws_line "a session in terminal mode: 409" m1 '^status 409' 10
api GET /sessions/$SID/stream
assert_status "a plain GET (no upgrade): 400" 400
assert_error_body "a plain GET: error body"
ws_start l1 /sessions/$SID/stream --header 'Last-Event-ID: x'
assert_ws_line "a malformed Last-Event-ID: 400" l1 '^status 400' 10

# --- the bridge stops: close 1001 ----------------------------------------------------------------
OLD=$(bridge_pid)
kill -TERM "$OLD"
assert_ws_line "bridge stop: the stream closes with 1001" w1 '^closed 1001' 10

#!/usr/bin/env bash
# Web Push (docs/API.md, "Push"; DESIGN "Notifications (Web Push)") with the real stack and the
# fake push service of tests/fakes/push_service.py, which decrypts every message with the
# subscription's private keys and verifies its VAPID JWT: GET /push/key gives the key made at
# first start (0600); bad subscription bodies get 400 and change nothing, another origin 403;
# subscriptions are per identity (listed, revoked, capped); a session that starts waiting pushes
# exactly one message with the tool and command to each subscribed identity; the approver's own
# answer pushes nothing to the approver (the others' phones hear who answered); the finished turn
# goes to whoever asked for it; an agent that exits or a session that fails pushes to everyone; a
# 410 or a 404 from the push service removes the subscription.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/structured/lib_structured.sh"
source "$REPO/tests/fakes/lib_fakes.sh"

PUSH_PID=
stop_fake_push() { [ -n "$PUSH_PID" ] && kill "$PUSH_PID" 2>/dev/null && wait "$PUSH_PID" 2>/dev/null; }
trap 'rc=$?; kill_sse_clients; stop_fake_push; (exit $rc); cleanup' EXIT

fake_start PUSH_PID PP "the fake push service" "$T/logs/push_service.log" "$T/push.port" \
	"$REPO/tests/fakes/push_service.py" || exit 1
FAKE=http://127.0.0.1:$PP
SUBS=$T/state/push-subscriptions.json

make_remote acme widgets
start_stack AGENTD_PUSH_ALLOW_HTTP_ORIGIN="$FAKE" || exit 1

# new_sub NAME: the PushSubscription JSON of a new (fake) browser NAME, with a name for the page.
new_sub() { curl -q -s "$FAKE/new/$1" | jq -c --arg n "$1" '. + {name: $n}'; }
# pushes NAME [jq filter]: the pushes the fake received for subscription NAME.
pushes() { curl -q -s "$FAKE/log" | jq -c --arg n "$1" "[.[] | select(.name == \$n) | ${2:-.}]"; }
# wait_pushes NAME N [filter]: until NAME has at least N pushes matching filter (10 s).
wait_pushes() {
	for _ in $(seq 100); do
		[ "$(pushes "$1" "select(${3:-true})" | jq length)" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# no_subs AS: GET /push/subscriptions as AS (api or as_bob) until it lists none (5 s); BODY the last.
no_subs() {
	for _ in $(seq 50); do
		"$1" GET /push/subscriptions
		[ "$(jq '.subscriptions | length' <<<"$BODY")" == 0 ] && return 0
		sleep 0.1
	done
}
# as_bob METHOD PATH [BODY]: api as the identity bob (its own token, not the harness's).
as_bob() {
	local args=(-q -s -X "$1" -o "$T/bob.body" -w '%{http_code}' -H "Authorization: Bearer $BOB")
	[ $# -gt 2 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	STATUS=$(curl "${args[@]}" "$BASE_URL$2")
	BODY=$(cat "$T/bob.body")
}

# --- the key ------------------------------------------------------------------------------------
api GET /push/key
assert_status "GET /push/key" 200
KEY=$(jq -r .publicKey <<<"$BODY")
assert_match "the VAPID public key: 87 base64url characters (65 bytes, uncompressed)" \
	'^B[A-Za-z0-9_-]{86}$' "$KEY"
assert_eq "the key file is the owner's alone" 600 "$(stat -c %a "$T/state/push-vapid.pem")"
api GET /push/key
assert_eq "the same key again" "$KEY" "$(jq -r .publicKey <<<"$BODY")"

# The same door as every path: another Host is 421 (DNS rebinding), no credentials a JSON 401.
STATUS=$(curl -q -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "$BASE_URL/push/key")
assert_eq "another Host: 421" 421 "$STATUS"
STATUS=$(curl -q -s -o "$T/anon.json" -w '%{http_code}' "$BASE_URL/push/subscriptions")
assert_eq "no credentials: 401 (an API path, not the login page's redirect)" 401 "$STATUS"
assert_jq "... as JSON" '.code == "unauthenticated"' "$(cat "$T/anon.json")"

# --- bad subscriptions: 400, nothing stored ------------------------------------------------------
GOOD=$(new_sub phone)
P256=$(jq -r .keys.p256dh <<<"$GOOD")
AUTH=$(jq -r .keys.auth <<<"$GOOD")
EP=$(jq -r .endpoint <<<"$GOOD")
OFFCURVE=$(printf '\x04%064d' 0 | head -c 65 | basenc --base64url | tr -d '=\n')
bad() {
	api POST /push/subscriptions "$2"
	assert_status "400 for $1" 400
	assert_json "$1: invalid_subscription" .code '"invalid_subscription"'
}
bad "an http endpoint of another origin" "$(jq -c '.endpoint = "http://127.0.0.1:1/push/x"' <<<"$GOOD")"
bad "an ftp endpoint" "$(jq -c '.endpoint = "ftp://push.example/x"' <<<"$GOOD")"
bad "an endpoint with userinfo" "$(jq -c '.endpoint = "https://a@push.example/x"' <<<"$GOOD")"
bad "an endpoint without a path" "$(jq -c '.endpoint = "https://push.example"' <<<"$GOOD")"
bad "an endpoint over 1024 bytes" "$(jq -c --arg p "$(head -c 1100 /dev/zero | tr '\0' a)" '.endpoint = "https://push.example/" + $p' <<<"$GOOD")"
bad "p256dh of 64 bytes" "$(jq -c --arg k "${P256:0:85}" '.keys.p256dh = $k' <<<"$GOOD")"
bad "p256dh not on the curve" "$(jq -c --arg k "$OFFCURVE" '.keys.p256dh = $k' <<<"$GOOD")"
bad "p256dh not base64url" "$(jq -c --arg k "${P256:0:80}+/+/+/+" '.keys.p256dh = $k' <<<"$GOOD")"
bad "auth of 15 bytes" "$(jq -c '.keys.auth = "AAAAAAAAAAAAAAAAAAAA"' <<<"$GOOD")"
bad "auth of 17 bytes" "$(jq -c '.keys.auth = "AAAAAAAAAAAAAAAAAAAAAAA"' <<<"$GOOD")"
bad "no keys" "$(jq -c 'del(.keys)' <<<"$GOOD")"
bad "a third key" "$(jq -c '.keys.x = "y"' <<<"$GOOD")"
bad "an unknown member" "$(jq -c '.owner = "alice"' <<<"$GOOD")"
bad "a name of 65 bytes" "$(jq -c --arg n "$(printf 'n%.0s' $(seq 65))" '.name = $n' <<<"$GOOD")"
bad "a name with a control character" "$(jq -c '.name = "a\u0001b"' <<<"$GOOD")"
bad "an array" '["x"]'
check_not "no subscription store was written" test -e "$SUBS"
api GET /push/subscriptions
assert_json "none listed" '.subscriptions | length' 0

check "deploy/up started agentd-push" grep -q 'started agentd-push' "$T/logs/up.log"
check_not "with nobody subscribed agentd-push made no token (and follows nothing)" \
	test -e "$T/state/push-token"

# --- subscribe, list, other identities -------------------------------------------------------------
api POST /push/subscriptions "$GOOD" -H "Origin: http://evil.example"
assert_status "another origin may not subscribe (CSRF)" 403
check_not "still no store" test -e "$SUBS"
api POST /push/subscriptions "$GOOD"
assert_status "a browser's PushSubscription JSON subscribes" 201
PHONE=$(jq -r .id <<<"$BODY")
assert_match "its id" '^[0-9a-f]{16}$' "$PHONE"
assert_jq "it names the device and the push service, never the keys" \
	".name == \"phone\" and .service == \"$FAKE\" and (has(\"keys\") | not)"
assert_eq "the store is the owner's alone" 600 "$(stat -c %a "$SUBS")"
api POST /push/subscriptions "$GOOD"
assert_status "the same endpoint again replaces it" 200
api GET /push/subscriptions
assert_json "one device listed" '[.subscriptions[].id]' "[\"$PHONE\"]"

BOB=$("$BUILD_DIR/fcgi-app/agentd-api" token add bob 2>>"$T/logs/up.log")
as_bob GET /push/subscriptions
assert_status "bob lists his own" 200
assert_json "bob sees none of itest's devices" '.subscriptions | length' 0
as_bob DELETE "/push/subscriptions/$PHONE"
assert_status "bob cannot revoke itest's device" 404
as_bob POST /push/subscriptions "$GOOD"
assert_status "bob cannot take itest's endpoint" 409
BOBSUB=$(new_sub bobphone)
as_bob POST /push/subscriptions "$BOBSUB"
assert_status "bob subscribes his own device" 201
BOBPHONE=$(jq -r .id <<<"$BODY")

for i in $(seq 2 16); do
	api POST /push/subscriptions "$(new_sub "cap$i")"
	[ "$STATUS" == 201 ] || break
done
assert_status "an identity may have 16 devices" 201
BEFORE=$(cat "$SUBS")
api POST /push/subscriptions "$(new_sub cap17)"
assert_status "a 17th is refused" 409
assert_json "too_many_subscriptions" .code '"too_many_subscriptions"'
assert_eq "the store is unchanged" "$BEFORE" "$(cat "$SUBS")"
for i in $(seq 2 16); do
	api DELETE "/push/subscriptions/$(jq -r --arg e "$FAKE/push/cap$i" '.subscriptions[] | select(.endpoint == $e) | .id' "$SUBS")"
	[ "$STATUS" == 200 ] || break
done
assert_status "DELETE revokes a device" 200
api GET /push/subscriptions
assert_json "itest's phone is left" '[.subscriptions[].id]' "[\"$PHONE\"]"

# --- a session waits: one push with the tool and the command ---------------------------------------
for _ in $(seq 100); do [ -s "$T/state/push-token" ] && break; sleep 0.1; done
check "agentd-push made its own token (read-only, not the admin's)" \
	bash -c "'$BUILD_DIR/fcgi-app/agentd-api' token list | grep -qE '^push +read-only'"
SID=$(structured_session acme widgets 1) || exit 1
sse_start p1 POST "/sessions/$SID/prompt" '{"prompt":"RUNBASH touch pushed-ok"}'
check "itest's phone gets a push when the session waits" wait_pushes phone 1 '.message.kind == "waiting"'
check "bob's phone too" wait_pushes bobphone 1 '.message.kind == "waiting"'
sleep 1
assert_jq "exactly one, decrypted, VAPID-signed with the server's key, with the tool and command" \
	"length == 1 and (.[0] | .ok and .vapidKey == \"$KEY\" and .status == 201 and
	 .message.session == \"$SID\" and (.message.title | test(\"waits: Bash\")) and
	 (.message.body | test(\"Bash: touch pushed-ok\")) and .urgency == \"high\" and
	 (.ttl | tonumber) > 0 and (.topic | test(\"^[A-Za-z0-9_-]{1,32}$\")))" \
	"$(pushes phone 'select(.message.kind == "waiting")')"
assert_jq "every push decrypted and verified" 'all(.[]; .ok)' "$(curl -q -s "$FAKE/log")"

# --- the approver hears nothing of their own approval ----------------------------------------------------
api GET "/sessions/$SID"
RID=$(jq -r '.pending[0].requestId' <<<"$BODY")
api POST "/sessions/$SID/permissions/$RID" '{"behavior":"allow"}'
assert_status "itest allows it" 200
sse_wait_event p1 '.event == "result"' 30
check "bob's phone hears who answered" wait_pushes bobphone 1 '.message.kind == "answered"'
check "itest's phone hears that the turn it asked for is done" wait_pushes phone 1 '.message.kind == "done"'
sleep 1
assert_jq "itest's own approval pushed nothing to itest" 'length == 0' \
	"$(pushes phone 'select(.message.kind == "answered")')"
assert_jq "bob's answered message names itest" \
	'length == 1 and (.[0].message.title | test("allowed by itest"))' \
	"$(pushes bobphone 'select(.message.kind == "answered")')"
assert_jq "the turn's end goes only to whoever asked for it" 'length == 0' \
	"$(pushes bobphone 'select(.message.kind == "done")')"
sse_wait_end p1 20

# --- 410: the subscription is gone --------------------------------------------------------------------------
curl -q -s -X POST "$FAKE/answer/phone/410" >/dev/null
sse_start p2 POST "/sessions/$SID/prompt" '{"prompt":"RUNBASH touch second"}'
check "the next wait is pushed (and answered 410)" wait_pushes phone 1 '.status == 410'
no_subs api
assert_json "a 410 removed the subscription" '.subscriptions | length' 0
as_bob GET /push/subscriptions
assert_json "bob's stays" '[.subscriptions[].id]' "[\"$BOBPHONE\"]"
api GET "/sessions/$SID"
RID=$(jq -r '.pending[0].requestId' <<<"$BODY")
api POST "/sessions/$SID/permissions/$RID" '{"behavior":"deny"}'
sse_wait_end p2 30

# --- a session that fails: one push to every subscribed identity -------------------------------------
create acme missing 5
wait_state missing-5 failed 60 || fail "missing-5 fails (no such remote)" "$STATUS ${BODY:0:300}"
check "bob's phone hears that the session failed" wait_pushes bobphone 1 \
	'.message.kind == "failed" and .message.session == "missing-5"'
sleep 1
assert_jq "once, with what failed, at normal urgency" \
	'length == 1 and .[0].ok and (.[0].message.title == "missing-5 failed") and
	 (.[0].message.body | length > 0) and .[0].urgency == "normal" and (.[0].ttl | tonumber) >= 3600' \
	"$(pushes bobphone 'select(.message.session == "missing-5")')"

# --- an agent that exits: one push to every subscribed identity ---------------------------------------
create acme widgets 2
assert_state "widgets-2 runs" widgets-2 running 30
PANE=$(pane_pid widgets-2)
kill -TERM "$PANE"
wait_state widgets-2 exited 30 || fail "widgets-2 exits once its agent is killed" "$BODY"
check "bob's phone hears that the agent exited" wait_pushes bobphone 1 \
	'.message.kind == "exited" and .message.session == "widgets-2"'
sleep 1
assert_jq "once, tagged with the session, saying how it ended" \
	'length == 1 and .[0].ok and .[0].message.title == "widgets-2 exited" and
	 (.[0].message.body | length > 0) and .[0].urgency == "normal" and
	 (.[0].topic | test("^[A-Za-z0-9_-]{1,32}$"))' \
	"$(pushes bobphone 'select(.message.session == "widgets-2")')"

# --- 404: the push service does not know the subscription: removed as for 410 -----------------------
curl -q -s -X POST "$FAKE/answer/bobphone/404" >/dev/null
create acme missing 6
wait_state missing-6 failed 60 || fail "missing-6 fails (no such remote)" "$STATUS ${BODY:0:300}"
check "the next push to bob's phone is answered 404" wait_pushes bobphone 1 '.status == 404'
no_subs as_bob
assert_json "a 404 removed bob's subscription" '.subscriptions | length' 0
check_not "nor is it in the store" grep -q bobphone "$SUBS"

#!/usr/bin/env bash
# Pairing a phone (docs/API.md, "Pairing"): an admin's POST /pairings makes a one-time link (and
# its QR code) that signs a browser in with a new token of its own, device-<name> (never the
# admin's); the link works once and not after 5 minutes; another origin or a viewer cannot make
# one; the device token works, is listed in GET /devices and revoked by DELETE /devices/<name>,
# after which it opens nothing.
source "$(dirname "$0")/lib.sh"

start_stack || exit 1
API_BIN=$BUILD_DIR/fcgi-app/agentd-api

# open_link URL: the phone's browser opens URL (no credentials): $STATUS and $LOC of the answer.
open_link() {
	local path=${1#http://*/}
	STATUS=$(curl -q -s -o /dev/null -D "$T/link.headers" -w '%{http_code}' -H 'Sec-Fetch-Site: none' "$BASE_URL/$path")
	LOC=$(tr -d '\r' <"$T/link.headers" | sed -n 's/^[Ll]ocation: //p')
}

# --- making a link ------------------------------------------------------------------------------
api POST /pairings '{"name":"pixel"}' -H "Origin: http://evil.example"
assert_status "another origin cannot make a pairing link (CSRF)" 403
VIEWER=$("$API_BIN" token add viewer --read-only 2>/dev/null)
STATUS=$(curl -q -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $VIEWER" \
	-H 'Content-Type: application/json' --data '{"name":"x"}' "$BASE_URL/pairings")
assert_eq "a viewer cannot make one" 403 "$STATUS"
api POST /pairings '{"name":"../x"}'
assert_status "a bad name: 400" 400
api POST /pairings '{"name":"pixel","role":"admin"}'
assert_status "nothing but a name: 400" 400
api POST /pairings '{"name":"pixel"}'
assert_status "an admin makes a pairing link" 201
URL=$(jq -r .url <<<"$BODY")
assert_match "the link is this origin's, with a one-time code" \
	"^http://127\\.0\\.0\\.1:$PORT/\\?pair=[A-Za-z0-9_-]{43}\$" "$URL"
assert_jq "with a QR code of it (square, of dark and light modules)" \
	'.qr.size as $s | $s >= 21 and (.qr.rows | length) == $s and all(.qr.rows[]; length == $s and test("^[01]+$"))'
assert_jq "valid 5 minutes" \
	"(.expiresAt | fromdateiso8601) - now | . > 280 and . <= 301"
check_not "the pairing store keeps no code, only its hash" grep -q "${URL#*pair=}" "$T/state/pairings.json"
assert_eq "the pairing store is the owner's alone" 600 "$(stat -c %a "$T/state/pairings.json")"

# --- the phone opens it: a token of its own ---------------------------------------------------------
open_link "$URL"
assert_eq "the link answers 303" 303 "$STATUS"
assert_match "to the token exchange, with a new token" '^/\?token=agentd_[A-Za-z0-9_-]{43}$' "$LOC"
DEV=${LOC#/?token=}
assert_ne "not the admin's token" "$AGENTD_TEST_TOKEN" "$DEV"
open_link "http://x/${LOC#/}"
assert_eq "which signs the phone in (303 to /)" "303 /" "$STATUS $LOC"
check "the cookie is set" grep -qi '^set-cookie: agentd_token=agentd_' "$T/link.headers"
STATUS=$(curl -q -s -o "$T/who.json" -w '%{http_code}' -H "Authorization: Bearer $DEV" "$BASE_URL/whoami")
assert_eq "the device token works" 200 "$STATUS"
assert_jq "as its own identity, an admin" '.identity == "device-pixel" and .role == "admin"' "$(cat "$T/who.json")"
"$API_BIN" token list >"$T/list.txt"
check "the token store has device-pixel" grep -qE '^device-pixel +admin' "$T/list.txt"

open_link "$URL"
assert_eq "the link works once: a second use goes to the login page" \
	"303 /login?error=invalid_pairing" "$STATUS $LOC"
open_link "http://x/?pair=$(head -c 43 /dev/zero | tr '\0' A)"
assert_eq "an unknown code too" "303 /login?error=invalid_pairing" "$STATUS $LOC"

# --- expiry -----------------------------------------------------------------------------------------------
api POST /pairings '{"name":"late"}'
LATE=$(jq -r .url <<<"$BODY")
jq -c '.pairings[].expires -= 301' "$T/state/pairings.json" >"$T/p.json" &&
	cat "$T/p.json" >"$T/state/pairings.json"
open_link "$LATE"
assert_eq "a link older than 5 minutes opens nothing" "303 /login?error=invalid_pairing" "$STATUS $LOC"
"$API_BIN" token list >"$T/list.txt"
check_not "and made no token" grep -q '^device-late' "$T/list.txt"

# --- listed and revoked -------------------------------------------------------------------------------------
api POST /pairings '{"name":"pixel"}'
open_link "$(jq -r .url <<<"$BODY")"
assert_match "a second device of the same name gets its own token" '^/\?token=agentd_' "$LOC"
STATUS=$(curl -q -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $VIEWER" "$BASE_URL/devices")
assert_eq "a viewer does not see the paired devices" 403 "$STATUS"
api GET /devices
assert_status "GET /devices" 200
assert_json "lists the paired devices only" '[.devices[].name]' '["device-pixel","device-pixel-2"]'
api DELETE /devices/itest
assert_status "an operator's token is not a device" 404
api DELETE /devices/device-pixel -H "Origin: http://evil.example"
assert_status "another origin cannot revoke" 403
api DELETE /devices/device-pixel
assert_status "DELETE /devices/<name> revokes it" 200
STATUS=$(curl -q -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $DEV" \
	-H 'Content-Type: application/json' --data '{"name":"x"}' "$BASE_URL/pairings")
assert_eq "the revoked device token opens nothing" 401 "$STATUS"
api GET /devices
assert_json "the other device is left" '[.devices[].name]' '["device-pixel-2"]'

# --- in chromium: the laptop's QR code, the phone at 390x844, the panels' revokes ---------------------
browser_ready || exit 1
mkdir -p "$BUILD_DIR/web-pair"
browser_run pair pair-web 180 SHOTS="$BUILD_DIR/web-pair"

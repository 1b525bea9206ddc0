#!/usr/bin/env bash
# deploy/up's ready line as a QR code (AGENTD_READY_QR=1: stderr is no terminal here), and the
# installable web app: the manifest, its icons, the favicon and the service worker are
# served without credentials (a browser fetches a manifest without the cookie) while the rest of
# the UI and the API still need them; in Debian's chromium (web/app.js) the manifest parses, the
# app is installable, the worker controls the page, and with the stack stopped the page opens
# from the worker's copy and says it is offline.
source "$(dirname "$0")/lib.sh"

browser_ready || exit 1

start_stack AGENTD_READY_QR=1 || exit 1

# deploy/up's ready line is followed by a QR code of the page's URL, without the first start's
# admin token (a phone signs in with its own token).
# (It follows the ready line, which start_stack waits for.)
wait_for 10 grep -aq '^scan to open ' "$T/logs/up.log"
want_qr=$(qrencode -t UTF8 -m 2 -- "$BASE_URL/")
got_qr=$(awk -v n="$(wc -l <<<"$want_qr")" 'found && n-- > 0; /^scan to open http:\/\/127\.0\.0\.1:[0-9]+\/ on a phone:$/ { found = 1 }' "$T/logs/up.log")
assert_eq "deploy/up prints the URL as a QR code after its ready line" "$want_qr" "$got_qr"
check_not "the QR code is not the URL with a token" grep -qF -- "$(qrencode -t UTF8 -m 2 -- "$BASE_URL/?token=$AGENTD_TEST_TOKEN")" "$T/logs/up.log"

# Without credentials (curl -q: not the harness's .curlrc): the public files answer, with their types; the rest does not.
pub() { curl -q -s -o /dev/null -w '%{http_code} %{content_type}' "$BASE_URL$1"; }
assert_eq "GET /manifest.webmanifest without credentials" "200 application/manifest+json" "$(pub /manifest.webmanifest)"
assert_eq "GET /sw.js without credentials" "200 application/javascript" "$(pub /sw.js)"
assert_eq "GET /favicon.ico without credentials" "200 image/x-icon" "$(pub /favicon.ico)"
assert_eq "GET /assets/icons/icon-192.png without credentials" "200 image/png" "$(pub /assets/icons/icon-192.png)"
assert_eq "GET /assets/js/app.js still needs credentials" "401" "$(curl -q -s -o /dev/null -w '%{http_code}' "$BASE_URL/assets/js/app.js")"
assert_eq "GET /whoami still needs credentials" "401" "$(curl -q -s -o /dev/null -w '%{http_code}' "$BASE_URL/whoami")"
assert_eq "GET /assets/icons/../js/app.js does not leave the public folder" "401" \
	"$(curl -q -s --path-as-is -o /dev/null -w '%{http_code}' "$BASE_URL/assets/icons/../js/app.js")"
sw_headers=$(curl -q -s -D - -o /dev/null "$BASE_URL/sw.js")
check "the worker keeps the page's Content-Security-Policy" grep -qi "^content-security-policy: default-src 'none'" <<<"$sw_headers"

PROFILE=$T/chromium-profile
run_browser() {
	BROWSER_WHAT="the $1 browser run" browser_run app "app-$1" 180 PROFILE="$PROFILE" PHASE="$1"
}
log "browser, online"
run_browser online
stop_stack
log "browser, the stack stopped"
run_browser offline

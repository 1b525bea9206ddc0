#!/usr/bin/env bash
# agentd-api config, the one reader of the configuration for operators, deploy/up and the units:
# - --check exits 0 for a valid configuration and 1 naming the key for a wrong one, a key of the
#   file's own rules (AGENTD_MAX_SESSIONS) as well as one nginx is rendered from
#   (AGENTD_ALLOWED_HOSTS, AGENTD_LISTEN), from the file or the environment;
# - --print lists every key of the table once, with where its value came from (default, file,
#   environment), and shows a credential only as set;
# - --get prints values alone, one a line, and refuses a key that does not exist;
# - bad usage exits 2.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

API=$BUILD_DIR/fcgi-app/agentd-api
CONF=$T/config-cli.conf

# cfg ARGS...: agentd-api config ARGS with $CONF and only the harness's state dir of AGENTD_*;
# sets OUT (stdout), ERR (stderr) and RC.
cfg() {
	local -a unset=()
	local v
	for v in $(compgen -e | grep '^AGENTD_'); do unset+=(-u "$v"); done
	env "${unset[@]}" AGENTD_CONFIG="$CONF" ${CFG_ENV:+"$CFG_ENV"} "$API" config "$@" \
		>"$T/cfg.out" 2>"$T/cfg.err"
	RC=$?
	OUT=$(cat "$T/cfg.out")
	ERR=$(cat "$T/cfg.err")
}

printf 'AGENTD_LISTEN=127.0.0.1:9123\nAGENTD_TOKEN="s3cret-token"\nAGENTD_ALLOWED_HOSTS=box.example\n' >"$CONF"
CFG_ENV=AGENTD_MAX_SESSIONS=7
cfg --check
assert_eq "--check: a valid configuration exits 0" 0 "$RC"
cfg --print
assert_eq "--print exits 0" 0 "$RC"
assert_match "--print names the file" "^# file: $CONF" "$OUT"
assert_match "--print: a value from the file says so" $'AGENTD_LISTEN=127.0.0.1:9123\t# file' "$OUT"
assert_match "--print: a value from the environment says so" \
	$'AGENTD_MAX_SESSIONS=7\t# environment' "$OUT"
assert_match "--print: a default says so" $'AGENTD_BASE_DIR=/code\t# default' "$OUT"
assert_match "--print: a credential is shown as set" $'AGENTD_TOKEN=\\(set, hidden\\)\t# file' "$OUT"
check_not "--print never shows a credential's value" grep -q s3cret "$T/cfg.out"
assert_eq "--print lists each key once" \
	"$(grep -c '^AGENTD_' "$T/cfg.out")" "$(grep '^AGENTD_' "$T/cfg.out" | cut -d= -f1 | sort -u | wc -l)"
assert_match "--print lists the newest keys too" '^AGENTD_PORT_SPAN=10' "$(grep PORT_SPAN <<<"$OUT")"
cfg --get AGENTD_LISTEN AGENTD_MAX_SESSIONS AGENTD_SESSION_MEMORY_MAX AGENTD_TOKEN
assert_eq "--get prints the values alone, one a line" \
	$'127.0.0.1:9123\n7\n4G\ns3cret-token' "$OUT"
cfg --get AGENTD_NOPE
assert_eq "--get of an unknown key exits 1" 1 "$RC"
assert_match "... naming it" "unknown configuration key AGENTD_NOPE" "$ERR"

# --check WANT: exits 1 and says WANT.
check_fails() {
	cfg --check
	if [ "$RC" == 1 ] && [[ $ERR == *"$1"* ]]; then
		pass "--check refuses: $1"
	else
		fail "--check refuses: $1" "rc $RC, stderr: $ERR"
	fi
}
CFG_ENV=AGENTD_MAX_SESSIONS=0
check_fails "AGENTD_MAX_SESSIONS must be an integer in 1..10000, not '0'"
CFG_ENV=AGENTD_ALLOWED_HOSTS='evil.example";'
check_fails "AGENTD_ALLOWED_HOSTS: 'evil.example\";' is not host[:port]"
CFG_ENV=
printf 'AGENTD_LISTEN=127.0.0.1:99999\n' >"$CONF"
check_fails "AGENTD_LISTEN='127.0.0.1:99999': bad port"
printf 'AGENTD_ALLOWED_ORIGINS=https://box.example/\n' >"$CONF"
check_fails "AGENTD_ALLOWED_ORIGINS: 'https://box.example/' is not an origin"
printf 'AGENTD_LISTEN_TYPO=1\n' >"$CONF"
check_fails "unknown configuration key AGENTD_LISTEN_TYPO"

: >"$CONF"
for bad in "" "--bogus" "--check extra" "--get" "--render-nginx"; do
	# shellcheck disable=SC2086 # the words are the arguments
	cfg $bad
	assert_eq "agentd-api config $bad: usage, exit 2" 2 "$RC"
done
cfg --help
assert_match "--help says every form" '--check.*--print.*--get.*--render-nginx' "$(tr '\n' ' ' <<<"$OUT")"

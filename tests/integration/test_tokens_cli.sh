#!/usr/bin/env bash
# agentd-api token add|list|revoke on the token store ($AGENTD_STATE_DIR/tokens.json): a token is
# printed once and only its SHA-256 is kept, the store is private, names are unique and checked,
# a revoked token is gone, and a corrupt store is refused rather than rewritten.
source "$(dirname "$0")/lib.sh"

API=$BUILD_DIR/fcgi-app/agentd-api
export AGENTD_STATE_DIR=$T/state
STORE=$AGENTD_STATE_DIR/tokens.json

TOK=$("$API" token add admin 2>"$T/err")
assert_eq "token add: exit 0" 0 $?
assert_match "token add prints one agentd_ token" '^agentd_[A-Za-z0-9_-]{43}$' "$TOK"
RO=$("$API" token add viewer --read-only)
assert_match "a second token" '^agentd_[A-Za-z0-9_-]{43}$' "$RO"
assert_ne "two tokens differ" "$TOK" "$RO"
assert_eq "the store is private (0600)" 600 "$(stat -c %a "$STORE")"
check_not "the store holds no token text" grep -q -- "${TOK#agentd_}" "$STORE"
assert_eq "the store holds the token's SHA-256" \
	"$(printf '%s' "$TOK" | sha256sum | cut -d' ' -f1)" \
	"$(jq -r '.tokens[] | select(.name == "admin") | .sha256' "$STORE")"
assert_jq "the viewer is read-only" '.tokens[] | select(.name == "viewer") | .readOnly == true' \
	"$(cat "$STORE")"

"$API" token add admin >/dev/null 2>"$T/err"
assert_eq "a taken name: exit 1" 1 $?
assert_match "a taken name: says so" 'exists' "$(cat "$T/err")"
"$API" token add 'bad name' >/dev/null 2>"$T/err"
assert_eq "a bad name: exit 1" 1 $?
"$API" token frobnicate >/dev/null 2>&1
assert_eq "bad usage: exit 2" 2 $?

LIST=$("$API" token list)
assert_match "list: admin, admin rights" 'admin +admin ' "$LIST"
assert_match "list: viewer, read-only" 'viewer +read-only ' "$LIST"
check_not "list shows no token" grep -q -- "${TOK#agentd_}" <<<"$LIST"

"$API" token revoke viewer 2>/dev/null
assert_eq "revoke: exit 0" 0 $?
assert_jq "revoked: gone from the store" '[.tokens[].name] == ["admin"]' "$(cat "$STORE")"
"$API" token revoke viewer 2>/dev/null
assert_eq "revoke again: exit 1" 1 $?

printf '{"tokens":[{"name":"x"}]}' >"$STORE"
"$API" token add other >/dev/null 2>"$T/err"
assert_eq "a corrupt store: add refuses" 1 $?
assert_eq "a corrupt store is left as it was" '{"tokens":[{"name":"x"}]}' "$(cat "$STORE")"

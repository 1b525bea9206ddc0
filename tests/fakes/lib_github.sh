# The fake GitHub REST API (github_api.py) for an integration test: sourced after lib.sh and
# lib_fakes.sh. start_fake_github [TOKEN...] starts it (GH_PORT, GH_URL), with GH_TOKEN_GOOD (and
# the TOKENs) the tokens it takes, its request log GH_LOG and its control file GH_CONTROL; the
# caller's EXIT trap calls stop_fake_github.
# shellcheck shell=bash

GH_PID=
GH_PORT=
GH_URL=
GH_LOG=$T/github-requests.jsonl
GH_CONTROL=$T/github-control.json
GH_TOKEN_GOOD=ghp_good-token-for-tests

start_fake_github() {
	local more=() t
	for t in "$@"; do more+=(--token "$t"); done
	echo '{}' >"$GH_CONTROL"
	: >"$GH_LOG"
	fake_start GH_PID GH_PORT "the fake GitHub API" "$T/logs/fake-github.log" "$T/github.port" \
		"$REPO/tests/fakes/github_api.py" --token "$GH_TOKEN_GOOD" "${more[@]}" --log "$GH_LOG" \
		--control "$GH_CONTROL" || return 1
	GH_URL=http://127.0.0.1:$GH_PORT
}

stop_fake_github() {
	[ -n "$GH_PID" ] && kill "$GH_PID" 2>/dev/null && wait "$GH_PID" 2>/dev/null
	GH_PID=
}

# gh_control JSON: what the fake GitHub does from now on (github_api.py), replaced whole.
gh_control() { printf '%s\n' "$1" >"$GH_CONTROL.tmp" && mv "$GH_CONTROL.tmp" "$GH_CONTROL"; }

# gh_count JQ_FILTER: how many logged requests match.
gh_count() { jq -s "[.[] | select($1)] | length" "$GH_LOG" 2>/dev/null || echo 0; }

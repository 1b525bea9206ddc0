#!/usr/bin/env bash
# Tests that pass wherever the checkout lives: a checkout under a directory only root may enter
# (a clone under `mktemp -d` is 0700, and so is root's HOME), in /tmp (which a cage gives its
# agent a fresh one of), still gives the agents, other users, the fakes and agentd-host to run.
# This checkout is bound, in a mount namespace of the check's own, under $T/hidden (0700), and
# tests/integration/anywhere/probe.sh runs from there: uncaged (a terminal and a structured
# session), then caged when the machine can cage (root, bwrap).
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	pass "not root: the agents are the tests' own user, who may enter the checkout"
	exit 0
fi

HIDDEN=$T/hidden
mkdir -p "$HIDDEN/src" "$HIDDEN/build" && chmod 0700 "$HIDDEN"
check_not "others may not enter $HIDDEN" \
	setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$HIDDEN/src"
# The build dir the probe uses: the same place relative to the hidden checkout, or bound beside it.
REPO_REAL=$(realpath "$REPO")
BUILD_REAL=$(realpath "$BUILD_DIR")
case $BUILD_REAL in
"$REPO_REAL"/*) HIDDEN_BUILD=$HIDDEN/src/${BUILD_REAL#"$REPO_REAL"/} ;;
*) HIDDEN_BUILD=$HIDDEN/build ;;
esac

# probe NAME [ARG]: probe.sh ARG from the hidden checkout; each of its checks is one of this test
# (its log is printed at the end when one failed).
probe() {
	local log=$T/logs/probe-$1.log rc line
	# The binds live in the namespace only: nothing of them is left for the removal of $T.
	# shellcheck disable=SC2016 # expanded by the inner bash
	(cd "$T" && env -u AGENTD_STATE_DIR -u CURL_HOME -u AGENTD_TEST_TOKEN \
		-u AGENTD_AGENT_HOME -u AGENTD_CGROUP_PARENT \
		AGENTD_TEST_BUILD_DIR="$HIDDEN_BUILD" unshare --mount --propagation private -- bash -c '
		mount --bind "$1" "$2/src" && mount --bind "$3" "$2/build" || exit 1
		exec bash "$2/src/tests/integration/anywhere/probe.sh" "$4"
	' probe "$REPO_REAL" "$HIDDEN" "$BUILD_REAL" "${2:-}") >"$log" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok - "*) pass "from a hidden checkout: ${line#ok - }" ;;
		"not ok - "*) fail "from a hidden checkout: ${line#not ok - }" ;;
		esac
	done <"$log"
	assert_eq "the $1 probe from a hidden checkout ends with status 0" 0 "$rc"
	check "the $1 probe got as far as its last check" grep -q "^ok - $3" "$log"
}

probe uncaged "" "the structured session runs"
if command -v bwrap >/dev/null; then
	probe caged caged "caged: the session still runs"
else
	log "no caged probe: bwrap is not installed (sessions are not caged)"
fi

# Shared part of the REST benchmarks (tests/bench/rest_create, tests/bench/rest_list).
# Builds the release tree build-bench/ (unless AGENTD_TEST_BUILD_DIR names one), then takes the
# integration harness (tests/integration/lib.sh: private $T, deploy/up on a free loopback port,
# private tmux server, cleanup trap that stops everything and removes $T). Each target is a check,
# so a missed target makes the script exit 1; the figures are printed either way.
# shellcheck shell=bash disable=SC2034

BENCH_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$(dirname "${BASH_SOURCE[0]}")/build.sh"

# shellcheck source=../integration/lib.sh
source "$BENCH_REPO/tests/integration/lib.sh"

# need_command COMMAND PACKAGE: installs the Debian PACKAGE when COMMAND is missing (as root; the
# package lists are updated only when an install from the current ones fails).
need_command() {
	command -v "$1" >/dev/null && return 0
	[ "$(id -u)" -eq 0 ] || {
		fail "$1 is installed (run as root to install the package $2)"
		return 1
	}
	log "installing $2"
	local apt=(apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "$2")
	DEBIAN_FRONTEND=noninteractive "${apt[@]}" >"$T/logs/apt.log" 2>&1 ||
		{ apt-get update -q >>"$T/logs/apt.log" 2>&1 &&
			DEBIAN_FRONTEND=noninteractive "${apt[@]}" >>"$T/logs/apt.log" 2>&1; }
	command -v "$1" >/dev/null || {
		fail "$1 is installed (apt-get install $2)" "$(tail -n 20 "$T/logs/apt.log")"
		return 1
	}
}

MEASURE_PY=$BENCH_REPO/tests/bench/rest_measure.py
# Until tests/fakes/claude exists, a stand-in that only sleeps.
if [ ! -x "$FAKE_CLAUDE" ]; then
	FAKE_CLAUDE=$T/work/fake-claude
	printf '#!/bin/sh\nexec sleep 100000\n' >"$FAKE_CLAUDE"
	chmod +x "$FAKE_CLAUDE"
	log "tests/fakes/claude is missing: using a stand-in that sleeps"
fi

# Processes the bench starts besides the stack (wrk, strace, perf): stopped before the harness's
# own cleanup runs.
BENCH_PIDS=()
bench_cleanup() {
	local rc=$? p
	for p in "${BENCH_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	(exit "$rc")
	cleanup
}
trap bench_cleanup EXIT

# make_big_remote OWNER NAME FILES DIRS: a bare remote $T/remotes/OWNER/NAME.git whose main holds
# FILES small text files spread over DIRS directories (plus a README), in three commits.
make_big_remote() {
	local owner=$1 name=$2 files=$3 dirs=$4 bare=$T/remotes/$1/$2.git work=$T/work/seed-$1-$2
	local i d
	mkdir -p "$(dirname "$bare")"
	git init -q --bare -b main "$bare" || return 1
	git init -q -b main "$work" || return 1
	printf '# %s/%s\n' "$owner" "$name" >"$work/README.md"
	for ((d = 0; d < dirs; d++)); do mkdir -p "$work/src/mod$d"; done
	for ((i = 0; i < files; i++)); do
		d=$((i % dirs))
		printf '/* file %d of module %d */\nint f%d(int x)\n{\n\treturn x * %d + %d;\n}\n' \
			"$i" "$d" "$i" "$i" "$d" >"$work/src/mod$d/f$i.c"
	done
	(
		cd "$work" &&
			git add README.md && git commit -q -m "initial commit" &&
			git add src/mod0 && git commit -q -m "module 0" &&
			git add . && git commit -q -m "the other modules" &&
			git push -q "$bare" main
	) || return 1
	rm -rf "$work"
}

# tracked_files DIR: number of files git tracks in the worktree DIR.
tracked_files() { git -C "$1" ls-files | wc -l; }

# ratio A B [DIGITS]: A / B.
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { if (b == 0) print "inf"; else printf "%.*f", d, a / b }'; }

# at_least X LIMIT / at_most X LIMIT: exit status of the comparison (floats).
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# The machine may be shared: the 1-minute load average before the bench started (and at its
# end, which includes the bench itself) says how far the figures can be trusted.
BENCH_LOAD0=$(cut -d' ' -f1 /proc/loadavg)
bench_header() {
	printf '\n%s (%s, %s cores, load %s before / %s after, build %s)\n' "$1" \
		"$(date -u +%FT%TZ)" "$(nproc)" "$BENCH_LOAD0" "$(cut -d' ' -f1 /proc/loadavg)" \
		"$(basename "$AGENTD_TEST_BUILD_DIR")"
}

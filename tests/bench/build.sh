# Sourced by every benchmark: builds the release tree build-bench/ (tests off) unless
# AGENTD_TEST_BUILD_DIR names a build already, and exports AGENTD_TEST_BUILD_DIR for the
# integration harness (tests/integration/lib.sh), which the benchmark sources next.
# shellcheck shell=bash

if [ -z "${AGENTD_TEST_BUILD_DIR:-}" ]; then
	AGENTD_TEST_BUILD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build-bench
	if [ ! -f "$AGENTD_TEST_BUILD_DIR/build.ninja" ]; then
		meson setup "$AGENTD_TEST_BUILD_DIR" "$(dirname "${BASH_SOURCE[0]}")/../.." \
			--buildtype=release -Dtests=disabled || exit 1
	fi
	ninja -C "$AGENTD_TEST_BUILD_DIR" >/dev/null || exit 1
fi
export AGENTD_TEST_BUILD_DIR

#!/usr/bin/env bash
# The house's rules that the build and the tree can check: libgit2 is agentd-api's alone — not
# only absent from the other binaries (the linker's as-needed rule would drop an unused library)
# but absent from their link lines, as core/meson.build declares it (core_api_dep).
source "$(dirname "$0")/lib.sh"

link_line() { ninja -C "$BUILD_DIR" -t commands "$1" 2>/dev/null | tail -n 1; }

for prog in ptybridge/agentd-bridge host/agentd-host agent-hook/agentd-hook \
	telegram/agentd-telegram agentctl/agentctl; do
	line=$(link_line "$prog")
	check "$prog: its link line is known" test -n "$line"
	check_not "$prog is not linked with libgit2" grep -qE -- '(-lgit2|libgit2\.(so|a))' <<<"$line"
	check_not "$prog does not load libgit2" grep -q 'libgit2' <<<"$(ldd "$BUILD_DIR/$prog")"
done
check "agentd-api is linked with libgit2" grep -qE -- '(-lgit2|libgit2\.(so|a))' <<<"$(link_line fcgi-app/agentd-api)"

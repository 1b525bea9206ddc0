#!/usr/bin/env bash
# The house's rules that the build and the tree can check: libgit2 is agentd-api's alone — not
# only absent from the other binaries (the linker's as-needed rule would drop an unused library)
# but absent from their link lines, as core/meson.build declares it (core_api_dep); the names of
# the events are one table (core/eventnames.h) that the web UI's events.js repeats exactly; the
# bridge's services depend downward only (relay -> attention -> events); no C file of the
# programs is longer than a reader can hold (900 lines).
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

# One table of event names: every EV_X "name" of core/eventnames.h is X: "name" in events.js.
c_names=$(sed -n 's/^#define EV_\([A-Z_]*\) "\([a-z_]*\)".*/\1=\2/p' "$REPO/core/eventnames.h" | sort)
js_names=$(sed -n 's/^ *\([A-Z_]*\): "\([a-z_]*\)",$/\1=\2/p' "$REPO/nginx/html/assets/js/events.js" | sort)
check "core/eventnames.h names events" test "$(wc -l <<<"$c_names")" -ge 8
assert_eq "the web UI's events.js has the names of core/eventnames.h" "$c_names" "$js_names"
check_not "no C file sends or compares an /events name as a literal" \
	grep -nE '(att_publish|events_publish|host_emit_json)\([^,]*, "|strcmp\([a-z>.-]*name, "(session|snapshot|permission|permission_resolved|prompt|queued|error|exit|raw|pr)"' \
	"$REPO"/ptybridge/*.c "$REPO"/host/*.c "$REPO"/telegram/*.c "$REPO"/agentctl/*.c "$REPO"/push/*.c

# The bridge's services depend downward: events knows neither the hub nor the relay, the hub
# not the relay (what a lower one tells a higher one is a callback server.c wires).
check_not "ptybridge/events.c includes neither attention.h nor relay.h" \
	grep -qE '^#include "(attention|relay|relay_int)\.h"' "$REPO/ptybridge/events.c"
check_not "ptybridge/attention.c does not include relay.h" \
	grep -qE '^#include "(relay|relay_int)\.h"' "$REPO/ptybridge/attention.c"

# No C file of the programs over 900 lines (tests, fuzz harnesses and build trees aside).
long=$(find "$REPO" -name '*.c' -not -path "$REPO/tests/*" -not -path "$REPO/build*" \
	-not -path '*/node_modules/*' -exec awk 'END { if (NR > 900) print FILENAME ": " NR " lines" }' {} \;)
assert_eq "no C file of the programs is over 900 lines" "" "$long"

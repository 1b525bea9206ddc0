# Starting a fake service of tests/fakes from an integration test: sourced (after lib.sh, whose
# alive and fail it uses) by telegram/lib_telegram.sh and real_claude/lib_real_claude.sh.
# shellcheck shell=bash

# fake_start PID_VAR PORT_VAR WHAT LOG PORT_FILE SCRIPT [ARG...]
# Runs `python3 SCRIPT ARG... --port 0 --port-file PORT_FILE` in the background (its output
# appended to LOG) and sets PID_VAR to its pid at once, so a test that fails still stops it; then
# waits up to 20 s for the port the fake writes (fakehttp.py) and sets PORT_VAR to it. Returns 1
# after `fail "WHAT starts"` when it dies or the time runs out.
fake_start() {
	local pid_var=$1 port_var=$2 what=$3 log=$4 port_file=$5 deadline=$((SECONDS + 20)) pid
	shift 5
	python3 "$@" --port 0 --port-file "$port_file" >>"$log" 2>&1 &
	pid=$!
	printf -v "$pid_var" '%s' "$pid"
	while [ ! -s "$port_file" ]; do
		if ! alive "$pid" || [ $SECONDS -ge $deadline ]; then
			fail "$what starts" "$(cat "$log")"
			return 1
		fi
		sleep 0.1
	done
	printf -v "$port_var" '%s' "$(cat "$port_file")"
}

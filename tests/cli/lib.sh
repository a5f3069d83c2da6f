# tests/cli/lib.sh: what the shell suites of tests/cli share, sourced by them
# (bash, set -u). Before sourcing, set WORK_NAME (the temporary directory's
# name) and, for what a failed case shows, BAD_SHOWS: "cli" (the last
# command's $rc, $work/out and $work/err), "http" ($status and $work/body) or
# nothing. Sets here, root, CLI ($SBX_CLI or build/sandboxio), PY, work (removed
# at exit unless the suite sets a trap of its own, which must remove it), the
# init (SANDBOXIO_INIT, build/sbx-init unless given) and the counters.
#   ok TEXT              a case passed
#   bad TEXT [LINE...]   a case failed: its lines, then what BAD_SHOWS names
#   daemon_up ARGS...    starts "$CLI" ARGS (a daemon's command line) with the
#                        init ($INIT when set), sets daemon_pid, waits for its
#                        ready line; returns 1 saying why when it did not start
# A suite ends with: echo "$passed passed, $failed failed"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CLI=${SBX_CLI:-$root/build/sandboxio}
if [ -z "${SANDBOXIO_INIT:-}" ] && [ -x "$root/build/sbx-init" ]; then
	export SANDBOXIO_INIT=$root/build/sbx-init
fi
# A suite that tests the operator config names its own file.
unset SANDBOXIO_CONFIG
PY=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/$WORK_NAME.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
ok() {
	passed=$((passed + 1))
	echo "ok   $1"
}
bad() {
	local line
	failed=$((failed + 1))
	echo "FAIL $1"
	shift
	for line in "$@"; do
		echo "     $line"
	done
	case ${BAD_SHOWS:-} in
	cli)
		echo "     rc=${rc:-} stdout: $(head -c 600 "$work/out" 2>/dev/null | tr '\n' '|')"
		echo "     stderr: $(head -c 400 "$work/err" 2>/dev/null | tr '\n' '|')"
		;;
	http)
		echo "     status=${status:-} body: $(head -c 600 "$work/body" 2>/dev/null | tr '\n' '|')"
		;;
	esac
}

daemon_up() {
	SANDBOXIO_INIT=${INIT:-${SANDBOXIO_INIT:-}} "$CLI" "$@" >"$work/dout" 2>"$work/derr" &
	daemon_pid=$!
	for _ in $(seq 600); do # a hang guard, not a timing
		grep -qx ready "$work/dout" 2>/dev/null && return 0
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "FAIL the daemon did not start: $(cat "$work/derr")"
	return 1
}

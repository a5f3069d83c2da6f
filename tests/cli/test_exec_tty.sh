#!/bin/bash
# tests/cli/test_exec_tty.sh: `sandboxio exec -i` and `exec -t` against the
# real dockerd, in one sandbox of this suite's own tenant.
#
# The terminal cases run in tests/cli/test_exec_tty.py (a real terminal on
# the host through python3's pty module); here: -t refused without a
# terminal, -i streaming stdin, --stdin with -i refused. Needs dockerd,
# python3 and the image sandboxio/python:3.11. The last line is
# "N passed, N failed"; the exit status is non-zero when anything failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CLI=${SBX_CLI:-$root/build/sandboxio}
if [ -z "${SANDBOXIO_INIT:-}" ] && [ -x "$root/build/sbx-init" ]; then
	export SANDBOXIO_INIT=$root/build/sbx-init
fi
unset SANDBOXIO_CONFIG
T=ttytest-$$
pass=0
fail=0
cleanup() {
	docker ps -aq --filter "label=io.sandboxio.tenant=$T" | xargs -r docker rm -f >/dev/null
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1"; }

id=$("$CLI" create --tenant "$T" --timeout 600) || { echo "FAIL create"; echo "0 passed, 1 failed"; exit 1; }

out=$("$CLI" exec -t "$id" -- true </dev/null 2>&1)
rc=$?
if [ $rc -eq 125 ] && [[ $out == *"-t needs a terminal, and standard input is not one"* ]]; then
	ok "-t without a terminal is refused, saying why"
else
	ko "-t without a terminal: rc $rc, '$out'"
fi

out=$(printf 'one\ntwo\n' | "$CLI" exec -i "$id" -- sh -c 'cat; echo end')
if [ "$out" = $'one\ntwo\nend' ]; then ok "-i streams stdin to its end"; else ko "-i: '$out'"; fi

out=$(echo x | "$CLI" exec -i --stdin - "$id" -- cat 2>&1)
rc=$?
if [ $rc -eq 125 ] && [[ $out == *"give one"* ]]; then ok "-i with --stdin is refused"; else ko "-i --stdin: rc $rc '$out'"; fi

py=$(python3 "$here/test_exec_tty.py" "$CLI" "$id" "$T")
rc=$?
echo "$py" | sed '$d'
last=$(echo "$py" | tail -1)
pass=$((pass + $(echo "$last" | awk '{print $1}')))
fail=$((fail + $(echo "$last" | awk '{print $3}')))
[ $rc -eq 0 ] || [ "$(echo "$last" | awk '{print $3}')" != 0 ] || { fail=$((fail + 1)); echo "FAIL the terminal cases exited $rc"; }

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

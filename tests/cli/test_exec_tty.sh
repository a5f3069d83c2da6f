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

T=ttytest-$$
WORK_NAME=sbx-tty-test
. "$(dirname "$0")/lib.sh"
cleanup() {
	docker ps -aq --filter "label=io.sandboxio.tenant=$T" | xargs -r docker rm -f >/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

id=$("$CLI" create --tenant "$T" --timeout 600) || { echo "FAIL create"; echo "0 passed, 1 failed"; exit 1; }

out=$("$CLI" exec -t "$id" -- true </dev/null 2>&1)
rc=$?
if [ $rc -eq 125 ] && [[ $out == *"-t needs a terminal, and standard input is not one"* ]]; then
	ok "-t without a terminal is refused, saying why"
else
	bad "-t without a terminal: rc $rc, '$out'"
fi

out=$(printf 'one\ntwo\n' | "$CLI" exec -i "$id" -- sh -c 'cat; echo end')
if [ "$out" = $'one\ntwo\nend' ]; then ok "-i streams stdin to its end"; else bad "-i: '$out'"; fi

out=$(echo x | "$CLI" exec -i --stdin - "$id" -- cat 2>&1)
rc=$?
if [ $rc -eq 125 ] && [[ $out == *"give one"* ]]; then ok "-i with --stdin is refused"; else bad "-i --stdin: rc $rc '$out'"; fi

py=$(python3 "$here/test_exec_tty.py" "$CLI" "$id" "$T")
rc=$?
echo "$py" | sed '$d'
last=$(echo "$py" | tail -1)
passed=$((passed + $(echo "$last" | awk '{print $1}')))
failed=$((failed + $(echo "$last" | awk '{print $3}')))
[ $rc -eq 0 ] || [ "$(echo "$last" | awk '{print $3}')" != 0 ] || { failed=$((failed + 1)); echo "FAIL the terminal cases exited $rc"; }

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

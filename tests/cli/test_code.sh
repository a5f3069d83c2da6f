#!/bin/bash
# tests/cli/test_code.sh: `sandboxio code` against the real dockerd.
#
# A sandbox made by create holds code contexts that outlive each command:
# state persists from one `sandboxio code` to the next, a figure comes back
# as a PNG in --json, a bash context keeps its variables and cwd, --list and
# --close work on the live contexts, a cell past --timeout exits 124 and the
# context goes on, and bad input exits 125 naming the problem. Every sandbox
# is made under the tenant cli-code-$$ and none may be left at the end.
#
# Needs dockerd and the default image (SBX_TEST_INTERP_IMAGE names another
# of the same recipe). The last line is "N passed, N failed".
set -u

T=cli-code-$$
WORK_NAME=sbx-code-test
BAD_SHOWS=cli
. "$(dirname "$0")/lib.sh"

# cli ARGS...: runs the command; rc, output in $work/out and $work/err.
cli() {
	"$CLI" "$@" >"$work/out" 2>"$work/err" </dev/null
	rc=$?
}

image=()
[ -n "${SBX_TEST_INTERP_IMAGE:-}" ] && image=(--image "$SBX_TEST_INTERP_IMAGE")
cli create --tenant "$T" --timeout 10m "${image[@]}"
id=$(cat "$work/out")
[ "$rc" = 0 ] && [ -n "$id" ] && ok "create" || bad "create"

cli code "$id" -- 'x = 41'
[ "$rc" = 0 ] && [ ! -s "$work/out" ] && ok "a statement prints nothing" || bad "statement"
cli code "$id" -- 'print("hi"); x + 1'
[ "$rc" = 0 ] && [ "$(cat "$work/out")" = "$(printf 'hi\n42')" ] &&
	ok "state persists to the next command: 42" || bad "state"
"$CLI" code "$id" - <<<'x * 2' >"$work/out" 2>"$work/err"
rc=$?
[ "$rc" = 0 ] && [ "$(cat "$work/out")" = 82 ] && ok "a cell from stdin" || bad "stdin"

cli code "$id" --json -- 'import matplotlib.pyplot as plt; plt.plot([1, 4]); None'
if [ "$rc" = 0 ] && python3 -c '
import json, sys, base64
j = json.load(open(sys.argv[1]))
png = [i for i in j["items"] if i["mime"] == "image/png"]
assert j["status"] == "ok" and j["context"] == "default", j
assert base64.b64decode(png[0]["data"])[:8] == b"\x89PNG\r\n\x1a\n"
' "$work/out"; then ok "--json: a figure as a PNG"; else bad "--json png"; fi

cli code "$id" -- '1 / 0'
[ "$rc" = 1 ] && grep -q ZeroDivisionError "$work/err" && ok "an exception exits 1 with its traceback" ||
	bad "exception"

cli code "$id" --context sh --lang bash -- 'cd /tmp && V=3'
[ "$rc" = 0 ] && ok "a bash context" || bad "bash context"
cli code "$id" --context sh -- 'echo "$V"; pwd'
[ "$rc" = 0 ] && [ "$(cat "$work/out")" = "$(printf '3\n/tmp')" ] &&
	ok "bash keeps variables and cwd" || bad "bash state"
cli code "$id" --context sh --lang python -- '1'
[ "$rc" = 125 ] && grep -q "is bash, not python" "$work/err" && ok "--lang of a live context must match" ||
	bad "lang mismatch"

cli code "$id" --list
[ "$rc" = 0 ] && [ "$(cat "$work/out")" = "$(printf 'default\tpython\nsh\tbash')" ] &&
	ok "--list" || bad "--list"

cli code "$id" --timeout 6 -- 'while True: pass'
[ "$rc" = 124 ] && grep -q KeyboardInterrupt "$work/err" && ok "past --timeout: 124, interrupted" ||
	bad "timeout"
cli code "$id" -- 'x'
[ "$rc" = 0 ] && [ "$(cat "$work/out")" = 41 ] && ok "the context lives after the timeout" ||
	bad "after timeout"

cli code "$id" --close
[ "$rc" = 0 ] && ok "--close" || bad "--close"
cli code "$id" --list --json
[ "$rc" = 0 ] && [ "$(cat "$work/out")" = '{"contexts":[{"name":"sh","language":"bash"}]}' ] &&
	ok "--list --json: the closed context is gone" || bad "--list after --close"
cli code "$id" --close --context nosuch
[ "$rc" = 125 ] && grep -q "no live context nosuch" "$work/err" && ok "--close of no context: 125" ||
	bad "close nosuch"

cli code "$id" --context r --lang ruby -- '1'
[ "$rc" = 125 ] && grep -q ruby "$work/err" && ok "--lang ruby: 125 naming it" || bad "ruby"
cli code "$id" --context 'a/b' -- '1'
[ "$rc" = 125 ] && grep -q "a/b" "$work/err" && ok "a bad context name: 125 naming it" || bad "bad name"
cli code "$id" --frob -- '1'
[ "$rc" = 125 ] && grep -q "unknown option --frob" "$work/err" && ok "an unknown option: 125" ||
	bad "unknown option"
cli code
[ "$rc" = 125 ] && grep -q "give a sandbox ID" "$work/err" && ok "no id: 125" || bad "no id"

cli rm "$id"
[ "$rc" = 0 ] && ok "rm" || bad "rm"
left=$(docker ps -aq --filter "label=io.sandboxio.tenant=$T" | wc -l)
rc=$left
[ "$left" = 0 ] && ok "nothing of $T is left" || bad "left: $left"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

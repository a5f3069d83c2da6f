#!/bin/bash
# test_pause.sh: `sandboxio pause` and `resume` through the local daemon,
# which holds the handles of the sandboxes it created: a paused sandbox's
# exec fails at once saying so, a file and the lifetime survive, resume
# makes it run again; without the daemon a pause is refused (no handle of
# the creator) and nothing is frozen; pause --max above the operator's
# ceilings.pause is refused, at it accepted, and so is serve --pause-max
# above it; rm removes a paused sandbox.
#
# Needs dockerd and the built command; starts its own daemon on a socket in
# a temporary directory. Waits are for events (the ready line), each under
# a hang guard. Exits non-zero when a check failed.
set -u

T=pause-$$
WORK_NAME=sbx-pause-test
. "$(dirname "$0")/lib.sh"
INIT=${SANDBOXIO_INIT:-$root/build/sbx-init}
unset SANDBOXIO_INIT SANDBOXIO_DAEMON SANDBOXIO_HOSTS_FILE DOCKER_HOST
unset SANDBOXIO_BACKEND
sock=$work/run/d.sock
daemon_pid=
cleanup() {
	if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
		kill -TERM "$daemon_pid"
		wait "$daemon_pid" 2>/dev/null
	fi
	for id in $(SANDBOXIO_INIT=$INIT "$CLI" --no-daemon ls --tenant "$T" --json 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(" ".join(r["id"] for r in json.load(sys.stdin)))'); do
		SANDBOXIO_INIT=$INIT "$CLI" --no-daemon rm "$id" >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT

D() { SANDBOXIO_DAEMON=$sock "$CLI" "$@"; }
N() { SANDBOXIO_INIT=$INIT "$CLI" --no-daemon "$@"; }
state() { docker inspect -f '{{.State.Status}}' "$1" 2>/dev/null; }

daemon_up daemon --socket "$sock" || exit 1

id=$(D create --tenant "$T" --lifetime 3600)
[ -n "$id" ] && ok "create through the daemon" || bad "create"
D exec "$id" -- sh -c 'echo kept > /workspace/f' && ok "a file written" || bad "write"

N pause "$id" 2>"$work/err"
[ $? -eq 125 ] && grep -q "run channel" "$work/err" && [ "$(state "$id")" = running ] &&
	ok "pause without the daemon: refused, naming why, nothing frozen" || bad "direct pause" "$(cat "$work/err")"

D pause "$id" && [ "$(state "$id")" = paused ] && ok "pause through the daemon: paused" ||
	bad "pause" "$(state "$id")"
D pause "$id" 2>"$work/err"
[ $? -eq 125 ] && grep -q "already paused" "$work/err" && ok "a second pause: already paused" ||
	bad "second pause" "$(cat "$work/err")"
D exec "$id" -- true 2>"$work/err"
[ $? -eq 125 ] && grep -q "paused" "$work/err" && ok "exec on a paused sandbox fails at once, saying so" ||
	bad "exec paused" "$(cat "$work/err")"
N exec "$id" -- true 2>"$work/err"
[ $? -eq 125 ] && grep -q "paused" "$work/err" && ok "a direct exec too" ||
	bad "direct exec paused" "$(cat "$work/err")"

D resume "$id" && [ "$(state "$id")" = running ] && ok "resume: running" || bad "resume"
[ "$(D exec "$id" -- cat /workspace/f)" = kept ] && ok "the file survived" || bad "file"
D resume "$id" 2>"$work/err"
[ $? -eq 125 ] && grep -q "not paused" "$work/err" && ok "resume of a running sandbox: refused" ||
	bad "resume running" "$(cat "$work/err")"

# The operator's ceilings.pause (built-in: an hour) bounds --max.
D pause --max 2h "$id" 2>"$work/err"
[ $? -eq 125 ] && grep -q "ceilings.pause (3600 s)" "$work/err" && [ "$(state "$id")" = running ] &&
	ok "pause --max above the ceiling: refused, naming it, nothing frozen" ||
	bad "pause --max above the ceiling" "$(cat "$work/err")"
D pause --max soon "$id" 2>"$work/err"
[ $? -eq 125 ] && grep -q -- "--max 'soon'" "$work/err" && [ "$(state "$id")" = running ] &&
	ok "pause --max that is no duration: refused, naming it" ||
	bad "pause --max soon" "$(cat "$work/err")"
D pause --max 1h "$id" && [ "$(state "$id")" = paused ] && ok "pause --max at the ceiling: paused" ||
	bad "pause --max 1h" "$(state "$id")"
D resume "$id" && [ "$(state "$id")" = running ] || bad "resume after pause --max"

# serve --pause-max above the ceiling is refused at start, before it serves.
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$work/key" --pause-max 2h \
	>"$work/out" 2>"$work/err"
[ $? -eq 125 ] && grep -q -- "--pause-max '2h' is above ceilings.pause (3600 s)" "$work/err" &&
	grep -q "(built-in)" "$work/err" && [ ! -s "$work/out" ] &&
	ok "serve --pause-max above the built-in ceiling: refused at start" ||
	bad "serve --pause-max 2h" "$(cat "$work/err")"
printf '{"ceilings": {"pause": 60}}\n' >"$work/narrow.json"
chmod 600 "$work/narrow.json"
"$CLI" --config "$work/narrow.json" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$work/key" \
	--pause-max 2m >"$work/out" 2>"$work/err"
[ $? -eq 125 ] && grep -q "ceilings.pause (60 s) in config $work/narrow.json" "$work/err" &&
	[ ! -s "$work/out" ] && ok "serve --pause-max above a config's lower ceiling: refused, naming the file" ||
	bad "serve --pause-max 2m under a config" "$(cat "$work/err")"

D pause "$id" && D rm "$id" && [ -z "$(state "$id")" ] && ok "rm removes a paused sandbox" ||
	bad "rm paused"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

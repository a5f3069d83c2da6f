#!/bin/bash
# tests/cli/test_serve_load.sh: `sandboxio serve --api e2b` under hostile load.
#
# Starts $SBX_CLI (default build/sandboxio) serve on 127.0.0.1:0 and runs
# tests/cli/test_serve_load.py against it: 1,000 idle unauthenticated
# connections (from 127.0.1.x, within the per-client bound) and a flood of
# unauthenticated requests (from 127.0.2.x) while an authenticated client
# creates sandboxes and runs a command in each. Its median latency must stay
# within 2x of the quiet median measured in the same run, and afterwards the
# server's threads, descriptors and RSS come back near their baseline and no
# container is left. Only loopback is used; the sandboxes have no network.
#
# Needs dockerd, python3 and the image sandboxio/python:3.11. The last line
# is "N passed, N failed"; the exit status is non-zero when anything failed.
set -u

T=e2bload-$$
WORK_NAME=sbx-serve-load
. "$(dirname "$0")/lib.sh"
server_pid=
cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	docker ps -aq --filter "label=io.sandboxio.tenant=$T" | xargs -r docker rm -f >/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# 1,000 connections need as many descriptors on both ends, and more.
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 4096 ]; then
	echo "FAIL the hard limit of open files ($hard) is below 4096"
	echo "0 passed, 1 failed"
	exit 1
fi
ulimit -n 4096

# --auth-timeout 60: the idle connections outlast the loaded measurement
# (the client closes them after it).
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$work/key" --max-connections 2048 \
	--max-client-connections 64 --auth-timeout 60 >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
for _ in $(seq 1 1200); do
	grep -q '^ready ' "$work/server.out" && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.1
done
URL=$(sed -n 's/^ready //p' "$work/server.out")
if [ -z "$URL" ]; then
	echo "FAIL the server did not start: $(cat "$work/server.err")"
	echo "0 passed, 1 failed"
	exit 1
fi

# A sanitizer build keeps freed memory (its RSS is not compared); its
# LeakSanitizer reports leaks at exit, which the exit status shows.
if grep -q __asan_init "$CLI" 2>/dev/null; then
	export LOAD_SANITIZED=1
fi
/usr/bin/python3 "$here/test_serve_load.py" "$URL" "$(cat "$work/key")" "$server_pid" "$T" |
	tee "$work/log"
kill -TERM "$server_pid"
wait "$server_pid"
rc=$?
server_pid=
if [ $rc -eq 0 ]; then
	echo "ok   SIGTERM: the server exits 0 (no leak reported by a sanitizer build)" >>"$work/log"
else
	echo "FAIL SIGTERM: the server exits $rc: $(tail -c 2000 "$work/server.err")" >>"$work/log"
fi
tail -1 "$work/log"
passed=$(grep -c '^ok ' "$work/log")
failed=$(grep -c '^FAIL ' "$work/log")
grep -q '^passed$' "$work/log" || failed=$((failed + 1))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/bin/bash
# tests/cli/test_cli.sh: the sandboxio command against the real dockerd.
#
# Runs $SBX_CLI (default build/sandboxio) end to end: exit statuses, output,
# --json, option errors, the create/exec/ls/rm round trip, output caps and
# teardown on a signal. Every sandbox is made under the tenant cli-test-$$,
# and at the end none of that tenant may be left. The docker CLI is used only
# to look (docker ps), never to change anything.
#
# Needs dockerd and the image sandboxio/python:3.11. The last line is
# "N passed, N failed"; the exit status is non-zero when anything failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CLI=${SBX_CLI:-$root/build/sandboxio}
if [ -z "${SANDBOXIO_INIT:-}" ] && [ -x "$root/build/sbx-init" ]; then
	export SANDBOXIO_INIT=$root/build/sbx-init
fi
T=cli-test-$$
PY=/usr/bin/python3
work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-cli-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

passed=0
failed=0

ok() {
	passed=$((passed + 1))
	echo "ok   $1"
}

bad() {
	failed=$((failed + 1))
	echo "FAIL $1"
	shift
	for line in "$@"; do
		echo "     $line"
	done
	echo "     rc=$rc stdout: $(head -c 400 "$work/out" | tr '\n' '|')"
	echo "     stderr: $(head -c 400 "$work/err" | tr '\n' '|')"
}

# cli ARGS...: runs the command; sets rc and secs, output in $work/out and $work/err.
cli() {
	local t0 t1
	t0=$(date +%s%N)
	"$CLI" "$@" >"$work/out" 2>"$work/err" </dev/null
	rc=$?
	t1=$(date +%s%N)
	secs=$(((t1 - t0) / 1000000000))
}

# cli_in INPUT ARGS...: the same, with INPUT on standard input.
cli_in() {
	local input=$1
	shift
	"$CLI" "$@" >"$work/out" 2>"$work/err" <<<"$input"
	rc=$?
}

# json EXPR: evaluates a Python expression over the JSON on stdout (as d).
json() {
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
		"$work/out" "$1" 2>>"$work/err"
}

stdout_is() { [ "$(cat "$work/out")" = "$1" ]; }
stderr_has() { grep -qi -- "$1" "$work/err"; }

# Containers of a tenant, or with an id, as docker sees them.
tenant_containers() {
	docker ps -aq --no-trunc --filter "label=io.sandboxio.tenant=$1"
}

# --- one-shot runs ---

cli run --tenant "$T" -- echo hello
[ $rc -eq 0 ] && stdout_is hello && ok "run echo hello" || bad "run echo hello"

cli run --tenant "$T" -- sh -c 'exit 3'
[ $rc -eq 3 ] && ok "run exits with the program's status" || bad "run exit 3"

cli --json run --tenant "$T" -- python3 -c 'print(1)'
[ $rc -eq 0 ] && json 'd["status"]=="exited" and d["exit_code"]==0 and d["stdout"]=="1\n" and d["sandbox_id"] and d["backend"]=="docker" and d["tier"]=="container" and d["stdout_truncated"] is False and d["stdout_bytes"]==2' &&
	ok "--json run parses, status exited" || bad "--json run"

cli run --tenant "$T" --timeout 1 -- sleep 30
[ $rc -eq 124 ] && [ $secs -lt 15 ] && ok "run --timeout 1 sleep 30: 124 in ${secs}s" ||
	bad "run --timeout 1" "took ${secs}s"

cli run --tenant "$T" --timeout=1.5 -- sh -c 'sleep 0.2; echo done'
[ $rc -eq 0 ] && stdout_is done && ok "--opt=value form" || bad "--timeout=1.5"

cli run --tenant "$T" -- nosuchprog
[ $rc -eq 127 ] && ok "run nosuchprog: 127" || bad "run nosuchprog"

cli run --tenant "$T" -- /etc/passwd
[ $rc -eq 126 ] && ok "run a non-executable: 126" || bad "run /etc/passwd"

cli --json run --tenant "$T" -- python3 -c 'import sys; sys.stdout.buffer.write(b"a\xffb\x00c")'
[ $rc -eq 0 ] && json 'd["stdout"]=="a\ufffdb\x00c" and d["stdout_encoding"]=="lossy-utf8" and "stderr_encoding" not in d' &&
	ok "--json replaces invalid UTF-8 and says so" || bad "lossy utf-8"

cli run --tenant "$T" --memory 32m -- python3 -c 'x = bytearray(256 << 20)'
[ $rc -eq 137 ] && stderr_has "killed: out of memory (memory cap 33554432 bytes)" &&
	ok "out of memory: 137 with a message" || bad "oom"

cli run --tenant "$T" --env GREETING=hi --workdir /work --cpus 0.5 --pids 64 --nofile 256 \
	--disk 64m -- sh -c 'echo "$GREETING $(pwd)"'
[ $rc -eq 0 ] && stdout_is "hi /work" && ok "run with every limit option" || bad "limits"

out=$(printf 'abc\n' | "$CLI" run --tenant "$T" --stdin - -- tr a-z A-Z 2>"$work/err")
rc=$?
[ $rc -eq 0 ] && [ "$out" = "ABC" ] && ok "run --stdin -" || bad "run --stdin -"

# --- option and engine errors: 125 with the library's message ---

cli run --tenant "$T" --memory 0 -- true
[ $rc -eq 125 ] && stderr_has memory && ok "--memory 0: 125 mentioning memory" || bad "--memory 0"

cli run --bogus -- true
[ $rc -eq 125 ] && stderr_has -- "--bogus" && ok "--bogus: 125 naming it" || bad "--bogus"

cli run --tenant "$T" --memory 12q -- true
[ $rc -eq 125 ] && stderr_has "12q" && ok "--memory 12q: 125" || bad "--memory 12q"

cli run --tenant "$T" --image 'bad image!' -- true
[ $rc -eq 125 ] && stderr_has image && ok "--image 'bad image!': 125" || bad "bad image"

cli run --tenant "$T" --image nosuch/image:1 -- true
[ $rc -eq 125 ] && stderr_has "nosuch/image:1" && ok "missing image: 125 naming it" ||
	bad "missing image"

cli --socket /nonexistent.sock run --tenant "$T" -- true
[ $rc -eq 125 ] && stderr_has socket && stderr_has /nonexistent.sock &&
	ok "bad --socket: 125 naming the socket" || bad "--socket"

cli run --tenant "$T" --timeout 0 -- true
[ $rc -eq 125 ] && ok "--timeout 0: 125" || bad "--timeout 0"

cli run --tenant "$T" --memory
[ $rc -eq 125 ] && stderr_has "needs a value" && ok "missing value: 125" || bad "missing value"

cli --json run --tenant "$T" --memory 0 -- true
[ $rc -eq 125 ] && json 'd["status"]=="error" and "memory" in d["error"] and d["code"]==-2' &&
	ok "--json failure object" || bad "--json error"

cli run
[ $rc -eq 125 ] && ok "run without COMMAND: 125" || bad "run without COMMAND"

cli nosuchcommand
[ $rc -eq 125 ] && ok "unknown command: 125" || bad "unknown command"

# --- run-code ---

cli_in 'import sys
print("py", 6 * 7)
sys.exit(4)' run-code --tenant "$T" --lang python -
[ $rc -eq 4 ] && stdout_is "py 42" && ok "run-code python from stdin" || bad "run-code python"

printf 'echo "$((6*7))"\n' >"$work/code.sh"
cli --json run-code --tenant "$T" --lang=bash "$work/code.sh"
[ $rc -eq 0 ] && json 'd["stdout"]=="42\n" and d["status"]=="exited"' &&
	ok "run-code bash from a file, --json" || bad "run-code bash"

cli run-code --tenant "$T" --lang ruby -
[ $rc -eq 125 ] && ok "run-code --lang ruby: 125" || bad "run-code ruby"

# --- output caps ---

cli run --tenant "$T" --max-output 1m -- sh -c 'yes | head -c 50000000'
size=$(wc -c <"$work/out")
[ $rc -eq 0 ] && [ "$size" -eq 1048576 ] &&
	stderr_has "stdout truncated: 1048576 of 50000000 bytes kept" &&
	ok "output flood with --max-output 1m: truncated, exit 0" ||
	bad "flood" "stdout size $size"

cli --json run --tenant "$T" --max-output 1m -- sh -c 'yes | head -c 50000000'
[ $rc -eq 0 ] && json 'd["stdout_truncated"] is True and d["stdout_bytes"]==50000000 and len(d["stdout"])==1048576' &&
	ok "--json flood: stdout_truncated" || bad "--json flood"

# --- create / exec / ls / rm ---

cli create --tenant "$T" --timeout 120
id=$(cat "$work/out")
if [ $rc -eq 0 ] && [ -n "$id" ]; then
	ok "create prints an id"
else
	bad "create"
fi

cli exec "$id" -- sh -c 'echo one > /workspace/f; cat /workspace/f'
[ $rc -eq 0 ] && stdout_is one && ok "exec runs in the sandbox" || bad "exec"

cli exec "$id" cat /workspace/f
[ $rc -eq 0 ] && stdout_is one && ok "exec sees the earlier run's file" || bad "exec state"

cli exec --json "$id" --timeout 1 -- sleep 10
[ $rc -eq 124 ] && json "d['status']=='timeout' and d['exit_code']==124 and d['sandbox_id']=='$id'" &&
	ok "exec --timeout: 124" || bad "exec --timeout"

cli exec "$id" -- sh -c 'exit 5'
[ $rc -eq 5 ] && ok "exec passes the exit status" || bad "exec exit 5"

cli ls --tenant "$T"
[ $rc -eq 0 ] && grep -q "^${id:0:12} .*$T .*running" "$work/out" && ok "ls shows the sandbox" ||
	bad "ls"

cli ls --tenant "$T" --json
[ $rc -eq 0 ] && json "len(d)==1 and d[0]['id']=='$id' and d[0]['tenant']=='$T' and d[0]['state']=='running' and d[0]['deadline']>d[0]['created']" &&
	ok "ls --json" || bad "ls --json"

cli rm "$id"
[ $rc -eq 0 ] && ok "rm" || bad "rm"
left=$(docker ps -aq --no-trunc --filter label=io.sandboxio.managed-by=sandboxio | grep -c "^$id" || true)
[ "$left" -eq 0 ] && ok "after rm, docker has no such container" || bad "rm left $id"

cli exec "$id" -- true
[ $rc -eq 125 ] && ok "exec on a removed sandbox: 125" || bad "exec removed"

cli rm nosuch-sandbox
[ $rc -eq 125 ] && stderr_has nosuch-sandbox && ok "rm of an unknown id: 125" || bad "rm unknown"

cli create --tenant "$T" --timeout 60
id2=$(cat "$work/out")
cli rm nosuch-sandbox "$id2"
left=$(tenant_containers "$T" | grep -c "^$id2" || true)
[ $rc -eq 125 ] && [ -n "$id2" ] && [ "$left" -eq 0 ] &&
	ok "rm goes on past an unknown id" || bad "rm partial"

# --- teardown on signals ---

for sig in INT TERM; do
	"$CLI" run --tenant "$T" -- sleep 60 >"$work/out" 2>"$work/err" &
	pid=$!
	for _ in $(seq 1 100); do
		[ -n "$(tenant_containers "$T")" ] && break
		sleep 0.1
	done
	seen=$(tenant_containers "$T")
	sleep 0.3
	t0=$(date +%s)
	kill -$sig $pid
	wait $pid
	rc=$?
	secs=$(($(date +%s) - t0))
	want=$([ $sig = INT ] && echo 130 || echo 143)
	[ -n "$seen" ] && [ $rc -eq "$want" ] && [ $secs -lt 10 ] && [ -z "$(tenant_containers "$T")" ] &&
		ok "SIG$sig during a silent run: $want, sandbox removed" ||
		bad "SIG$sig" "seen=$seen secs=$secs"
done

# --- misc ---

cli --version
[ $rc -eq 0 ] && grep -q "^sandboxio [0-9]" "$work/out" && ok "--version" || bad "--version"

cli run --help
[ $rc -eq 0 ] && grep -q "usage: sandboxio run" "$work/out" && ok "run --help" || bad "run --help"

cli help
[ $rc -eq 0 ] && grep -q "usage: sandboxio" "$work/out" && ok "help" || bad "help"

# --- nothing of this tenant is left ---

leftover=$(tenant_containers "$T")
if [ -z "$leftover" ]; then
	ok "no container of tenant $T is left"
else
	bad "containers left: $leftover"
	# Clean up through the product, never the docker CLI.
	for c in $leftover; do "$CLI" rm "$c" >/dev/null 2>&1; done
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

#!/bin/bash
# tests/cli/test_cli.sh: the sandboxio command against the real dockerd.
#
# Runs $SBX_CLI (default build/sandboxio) end to end: exit statuses, output,
# --json, option errors, the create/exec/ls/rm round trip, output caps,
# lifetimes, reap, and teardown on a signal or after kill -9. Every sandbox is
# made under a tenant cli-test-$$ or cli-test-$$-NAME, and at the end none of
# those may be left. The docker CLI is used only to look (docker ps, docker
# top) and, if a test failed, to remove what is left of this run's tenants.
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
tenants=$T
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

# new_tenant NAME: sets tenant to a tenant of this run's own, which is checked
# for leftovers at the end.
new_tenant() {
	tenant=$T-$1
	tenants="$tenants $tenant"
}

# wait_running TENANT [PATTERN]: polls (up to 20 s) until a container of the
# tenant runs and, with PATTERN, until one of its processes matches it; sets cid.
wait_running() {
	cid=
	for _ in $(seq 1 200); do
		cid=$(docker ps -q --no-trunc --filter "label=io.sandboxio.tenant=$1" \
			--filter status=running | head -n1)
		if [ -n "$cid" ] && { [ -z "${2:-}" ] || docker top "$cid" 2>/dev/null | grep -q -- "$2"; }; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# kill9 PID: kill -9 of a background job, without the shell's "Killed" notice.
kill9() {
	exec 3>&2 2>/dev/null
	kill -9 "$1"
	wait "$1"
	exec 2>&3 3>&-
}

# gone_within TENANT SECS: polls until docker has no container of the tenant
# at all (docker ps -a: not even a stopped one); sets secs to the time taken.
gone_within() {
	local t0 now
	t0=$(date +%s%N)
	while :; do
		now=$(date +%s%N)
		secs=$(((now - t0) / 1000000000))
		[ -z "$(tenant_containers "$1")" ] && return 0
		[ $secs -ge "$2" ] && return 1
		sleep 0.2
	done
}

# lifetime_of TENANT: the deadline minus the creation time of its one sandbox,
# from ls --json.
lifetime_of() {
	"$CLI" ls --json --tenant "$1" 2>/dev/null |
		"$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d[0]["deadline"]-d[0]["created"] if len(d)==1 else -1)'
}

# keep NAME, restore NAME: set aside the last command's rc and output.
keep() {
	echo $rc >"$work/$1.rc"
	cp "$work/out" "$work/$1.out"
	cp "$work/err" "$work/$1.err"
}
restore() {
	rc=$(cat "$work/$1.rc")
	cp "$work/$1.out" "$work/out"
	cp "$work/$1.err" "$work/err"
}

# reap_out_has OUTCOME ID REASON: reap printed that line for that sandbox.
reap_out_has() {
	grep -q "^$1 *  ${2:0:12}  .*  $3\$" "$work/out"
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

cli run --tenant "$T" --env GREETING=hi --workdir /tmp --cpus 0.5 --pids 64 --nofile 256 \
	--disk 64m -- sh -c 'echo "$GREETING $(pwd)"'
[ $rc -eq 0 ] && stdout_is "hi /tmp" && ok "run with every limit option" || bad "limits"

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

# --- lifetimes ---

cli run --tenant "$T" --timeout 10 --lifetime 5 -- true
[ $rc -eq 125 ] && stderr_has -- "--lifetime 5 is shorter than the run deadline of 10 s" &&
	ok "run --lifetime shorter than --timeout: 125" || bad "--lifetime < --timeout"

cli run --tenant "$T" --lifetime 60 -- true
[ $rc -eq 125 ] && stderr_has -- "--lifetime 60 is shorter than the run deadline of 300 s" &&
	ok "run --lifetime shorter than the default run deadline: 125" || bad "--lifetime < default"

cli run-code --tenant "$T" --lang bash --timeout 10 --lifetime 5 -
[ $rc -eq 125 ] && stderr_has -- "--lifetime" && ok "run-code --lifetime shorter: 125" ||
	bad "run-code --lifetime"

cli run --tenant "$T" --timeout 2 --lifetime 2 -- echo same
[ $rc -eq 0 ] && stdout_is same && ok "run --lifetime equal to --timeout" || bad "--lifetime = --timeout"

cli run --tenant "$T" --lifetime 0 -- true
[ $rc -eq 125 ] && ok "--lifetime 0: 125" || bad "--lifetime 0"

new_tenant life
TL=$tenant
cli create --tenant "$TL" --lifetime 90
id=$(cat "$work/out")
life=$(lifetime_of "$TL")
[ $rc -eq 0 ] && [ "$life" -ge 89 ] && [ "$life" -le 91 ] && ok "create --lifetime 90: deadline 90 s after creation" ||
	bad "create --lifetime" "lifetime $life"
cli exec --json "$id" -- sh -c 'echo ok'
[ $rc -eq 0 ] && json 'd["stdout"]=="ok\n"' && ok "exec in a sandbox made with --lifetime" ||
	bad "exec --lifetime sandbox"
cli rm "$id"

# (a) kill -9 mid-run: the init ends the sandbox at its lifetime, nobody else.
new_tenant kill9-short
TA=$tenant
"$CLI" run --tenant "$TA" --timeout 2 --lifetime 4 -- sleep 100 >"$work/out" 2>"$work/err" &
pid=$!
wait_running "$TA" "sleep 100"
seen=$cid
kill9 $pid
left=$(tenant_containers "$TA")
gone_within "$TA" 24
gone=$?
[ -n "$seen" ] && [ -n "$left" ] && [ $gone -eq 0 ] &&
	ok "kill -9 of run --lifetime 4: sandbox gone ${secs}s after the kill" ||
	bad "kill -9 --lifetime 4" "seen=$seen left-after-kill=$left gone=$gone after ${secs}s"

# (b) kill -9 mid-run with a far lifetime: the sandbox stays until reap.
# Opening a backend reaps the host's orphans, so another sandboxio process
# (a concurrent test run) may remove this one first: an attempt in which our
# own reap did not remove it is made again, and the last one is judged.
new_tenant kill9-far
TB=$tenant
for attempt in 1 2 3; do
	"$CLI" run --tenant "$TB" --lifetime 600 -- sleep 500 >"$work/out" 2>"$work/err" &
	pid=$!
	wait_running "$TB" "sleep 500"
	seen=$cid
	life=$(lifetime_of "$TB")
	kill9 $pid
	left=$(tenant_containers "$TB")
	cli reap --tenant "$TB" --dry-run
	keep dry
	after_dry=$(tenant_containers "$TB")
	cli --json reap --tenant "$TB" --dry-run
	keep dryjson
	after_json=$(tenant_containers "$TB")
	cli reap --tenant "$TB"
	keep reap
	after_reap=$(tenant_containers "$TB")
	reap_out_has removed "$seen" owner-gone && break
	echo "     (attempt $attempt: the sandbox was not reaped by us; again)"
	for c in $after_reap; do docker rm -f "$c" >/dev/null 2>&1; done
done
[ -n "$seen" ] && [ "$left" = "$seen" ] && [ "$life" -ge 599 ] && [ "$life" -le 601 ] &&
	ok "kill -9 of run --lifetime 600: the sandbox is still there" ||
	bad "kill -9 --lifetime 600" "seen=$seen left=$left lifetime=$life"

restore dry
[ $rc -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 1 ] && reap_out_has "would remove" "$seen" owner-gone &&
	stderr_has "would reap 1 sandbox" && [ "$after_dry" = "$seen" ] &&
	ok "reap --dry-run lists it (would remove, owner-gone) and leaves it" || bad "reap --dry-run"

restore dryjson
[ $rc -eq 0 ] && json "len(d)==1 and d[0]=={'id':'$seen','tenant':'$TB','reason':'owner-gone','removed':False,'detail':''}" &&
	[ "$after_json" = "$seen" ] && ok "reap --dry-run --json" || bad "reap --dry-run --json"

restore reap
[ $rc -eq 0 ] && reap_out_has removed "$seen" owner-gone && stderr_has "reaped 1 sandbox" &&
	[ -z "$after_reap" ] && ok "reap removes it: docker ps -a shows nothing" || bad "reap"

cli reap --tenant "$TB"
[ $rc -eq 0 ] && [ ! -s "$work/out" ] && stderr_has "reaped 0 sandboxes" &&
	ok "reap again: nothing to do" || bad "reap again"

# (c) a detached sandbox has no owner: reap leaves it until its deadline.
new_tenant detached
TC=$tenant
cli create --tenant "$TC" --timeout 120
id=$(cat "$work/out")
cli reap --tenant "$TC"
[ $rc -eq 0 ] && [ ! -s "$work/out" ] && [ -n "$id" ] && [ "$(tenant_containers "$TC")" = "$id" ] &&
	ok "reap leaves a sandbox made by create" || bad "reap detached"
cli rm "$id"
[ $rc -eq 0 ] && [ -z "$(tenant_containers "$TC")" ] && ok "rm after reap" || bad "rm detached"

# (e) the daemon is down.
cli --socket /nonexistent.sock reap
[ $rc -eq 125 ] && stderr_has /nonexistent.sock && ok "reap with the daemon down: 125 naming the socket" ||
	bad "reap --socket"

cli --json --socket /nonexistent.sock reap --dry-run
[ $rc -eq 125 ] && json 'd["status"]=="error" and "/nonexistent.sock" in d["error"]' &&
	ok "reap --json with the daemon down: error object" || bad "reap --json --socket"

cli reap --tenant 'no such tenant'
[ $rc -eq 125 ] && stderr_has tenant && ok "reap --tenant with a bad name: 125" || bad "reap bad tenant"

cli reap extra
[ $rc -eq 125 ] && ok "reap with an argument: 125" || bad "reap extra"

# --- (d) SIGINT at any moment leaves nothing ---

# As from a terminal: a background job of a script would start with SIGINT
# ignored. create is done in about 0.25 s, so its signal comes sooner; the
# earliest ones land before the sandbox exists, the others while it is made.
new_tenant sigint-early
TD=$tenant
create_delays=(0.03 0.06 0.09 0.12 0.15)
run_delays=(0.1 0.15 0.2 0.25 0.3)
for k in 0 1 2 3 4; do
	for what in create run; do
		if [ $what = create ]; then
			delay=${create_delays[$k]}
			env --default-signal=INT "$CLI" create --tenant "$TD" >"$work/out" 2>"$work/err" &
		else
			delay=${run_delays[$k]}
			env --default-signal=INT "$CLI" run --tenant "$TD" -- sleep 100 >"$work/out" 2>"$work/err" &
		fi
		pid=$!
		sleep "$delay"
		kill -INT $pid
		wait $pid
		rc=$?
		gone_within "$TD" 10
		gone=$?
		[ $rc -eq 130 ] && [ $gone -eq 0 ] &&
			ok "SIGINT ${delay}s into $what: 130, nothing left" ||
			bad "SIGINT ${delay}s into $what" "gone=$gone"
		for c in $(tenant_containers "$TD"); do docker rm -f "$c" >/dev/null 2>&1; done
	done
done

new_tenant sigint-silent
TQ=$tenant
env --default-signal=INT "$CLI" run --tenant "$TQ" -- sleep 100 >"$work/out" 2>"$work/err" &
pid=$!
wait_running "$TQ" "sleep 100"
seen=$cid
life=$(lifetime_of "$TQ")
kill -INT $pid
wait $pid
rc=$?
gone_within "$TQ" 10
gone=$?
[ -n "$seen" ] && [ $rc -eq 130 ] && [ $gone -eq 0 ] && stderr_has "interrupted by signal 2" &&
	ok "SIGINT during a silent run (SIGINT not ignored): 130, nothing left after ${secs}s" ||
	bad "SIGINT silent run" "seen=$seen gone=$gone"
[ "$life" -ge 329 ] && [ "$life" -le 331 ] &&
	ok "run without --lifetime: the sandbox lives the run's 300 s plus 30 s" ||
	bad "default lifetime" "lifetime $life"

new_tenant sigint-stream
TS=$tenant
rm -f "$work/fifo" "$work/stream"
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/stream" &
reader=$!
env --default-signal=INT "$CLI" run --tenant "$TS" -- sh -c 'while :; do echo x; done' \
	>"$work/fifo" 2>"$work/err" &
pid=$!
for _ in $(seq 1 200); do
	[ -s "$work/stream" ] && break
	sleep 0.1
done
streamed=$(wc -c <"$work/stream")
kill -INT $pid
wait $pid
rc=$?
wait $reader
gone_within "$TS" 10
gone=$?
[ "$streamed" -gt 0 ] && [ $rc -eq 130 ] && [ $gone -eq 0 ] &&
	ok "SIGINT while output streams to a pipe: 130, nothing left" ||
	bad "SIGINT streaming" "streamed=$streamed gone=$gone"

# --- misc ---

cli --version
[ $rc -eq 0 ] && grep -q "^sandboxio [0-9]" "$work/out" && ok "--version" || bad "--version"

cli run --help
[ $rc -eq 0 ] && grep -q "usage: sandboxio run" "$work/out" && ok "run --help" || bad "run --help"

cli help
[ $rc -eq 0 ] && grep -q "usage: sandboxio" "$work/out" && ok "help" || bad "help"

cli help reap
[ $rc -eq 0 ] && grep -q "usage: sandboxio reap" "$work/out" && ok "help reap" || bad "help reap"

cli run --help
[ $rc -eq 0 ] && grep -q -- "--lifetime S" "$work/out" && grep -q "plus 30 s" "$work/out" &&
	ok "run --help documents --lifetime and the margin" || bad "run --help --lifetime"

# --- nothing of this run's tenants is left ---

for t in $tenants; do
	leftover=$(tenant_containers "$t")
	if [ -z "$leftover" ]; then
		ok "no container of tenant $t is left"
	else
		bad "containers of $t left: $leftover"
		docker rm -f $leftover >/dev/null 2>&1
	fi
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]

#!/usr/bin/env bash
# tests/cli/test_backends.sh: the sandboxio command on a remote backend,
# with every option that backend can honour, and the refusals of those it
# cannot. tests/contract/run-remote.sh runs it with the provider's
# environment pointed at the local E2B-compatible server or the Modal double.
#
# usage: test_backends.sh e2b|modal   (SBX_CLI: the sandboxio binary)
# Prints one line per check and "N passed, N failed"; exits 1 on a failure.
set -u

B=${1:?usage: test_backends.sh e2b|modal}
CLI=${SBX_CLI:?SBX_CLI must name the sandboxio binary}
T="cli-$B-$$"
pass=0 fail=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

ok() { pass=$((pass + 1)); echo "ok   $B: $1"; }
bad() {
	fail=$((fail + 1))
	echo "FAIL $B: $1"
	echo "     rc=$rc stdout: $(head -c 300 "$out")"
	echo "     stderr: $(head -c 300 "$err")"
}
sx() { "$CLI" --backend "$B" "$@" >"$out" 2>"$err"; rc=$?; }

sx run --tenant "$T" -- sh -c 'echo hi; echo err >&2; exit 3'
[ $rc = 3 ] && [ "$(cat "$out")" = hi ] && grep -q '^err$' "$err" &&
	ok "run: stdout, stderr and the exit code" || bad "run exit 3"

sx --json run --tenant "$T" -- echo x
[ $rc = 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["backend"]==sys.argv[2] and d["status"]=="exited" and d["stdout"]=="x\n"))' "$out" "$B" &&
	ok "--json names the backend" || bad "json"

sx run --tenant "$T" --timeout 2 -- sleep 30
[ $rc = 124 ] && ok "--timeout 2 on sleep 30: exit 124" || bad "timeout"

sx run --tenant "$T" --env GREETING=hello --workdir /tmp -- sh -c 'echo "$GREETING $(pwd)"'
[ $rc = 0 ] && [ "$(cat "$out")" = "hello /tmp" ] && ok "--env and --workdir" || bad "env workdir"

sx run --tenant "$T" --nofile 200 -- sh -c 'ulimit -n'
[ $rc = 0 ] && [ "$(cat "$out")" = 200 ] && ok "--nofile 200 applies" || bad "nofile"

SBX_TEST_SECRET=s3cret-value-$$ sx run --tenant "$T" --secret SBX_TEST_SECRET -- sh -c 'echo "[$SBX_TEST_SECRET]"'
[ $rc = 0 ] && [ "$(cat "$out")" = "[<redacted>]" ] && ok "--secret reaches the run, redacted" || bad "secret"

printf 'print(6 * 7)\n' >"$out.py"
sx run-code --tenant "$T" --lang python "$out.py"
rm -f "$out.py"
[ $rc = 0 ] && [ "$(cat "$out")" = 42 ] && ok "run-code --lang python" || bad "run-code"

printf 'from stdin\n' | { "$CLI" --backend "$B" run --tenant "$T" --stdin - -- cat >"$out" 2>"$err"; }
rc=$?
[ $rc = 0 ] && [ "$(cat "$out")" = "from stdin" ] && ok "--stdin -" || bad "stdin"

sx run --tenant "$T" --allow-host c0.canary.test -- true
[ $rc = 125 ] && grep -q allow_cidr "$err" && ok "--allow-host is refused, pointing at --allow-cidr" ||
	bad "allow-host"

sx run --tenant "$T" --allow-cidr 198.51.100.0/24:443 -- true
[ $rc = 125 ] && grep -q port "$err" && ok "--allow-cidr with a port is refused" || bad "cidr port"

sx run --tenant "$T" --tier microvm -- true
[ $rc = 125 ] && ok "--tier microvm on a container-backed server is refused" || bad "tier"

case $B in
e2b)
	sx run --tenant "$T" --memory 128m -- true
	[ $rc = 125 ] && grep -q memory "$err" && ok "--memory below the template's is refused, naming it" ||
		bad "memory"
	;;
modal)
	sx run --tenant "$T" --disk 2g -- true
	[ $rc = 125 ] && grep -qi disk "$err" && ok "--disk is refused (Modal has no disk control)" || bad "disk"
	sx run --tenant "$T" --cpus 0.5 --memory 256m -- true
	[ $rc = 0 ] && ok "--cpus and --memory" || bad "cpus memory"
	;;
esac

sx --json create --tenant "$T"
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox_id"])' "$out" 2>/dev/null)
[ $rc = 0 ] && [ -n "$id" ] && ok "create prints the id" || bad "create"
sx exec "$id" -- sh -c 'echo in-$((6*7))'
[ $rc = 0 ] && [ "$(cat "$out")" = in-42 ] && ok "exec runs in it" || bad "exec"
sx --json ls --tenant "$T"
grep -q "$id" "$out" && ok "ls lists it under its tenant" || bad "ls"
sx rm "$id"
[ $rc = 0 ] && ok "rm removes it" || bad "rm"
sx --json ls --tenant "$T"
[ $rc = 0 ] && ! grep -q "$id" "$out" && ok "ls no longer lists it" || bad "ls after rm"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

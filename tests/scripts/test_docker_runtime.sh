#!/bin/sh
# tests/scripts/test_docker_runtime.sh: scripts/docker-runtime.py, which
# setup.sh uses to register runsc in /etc/docker/daemon.json, on scratch
# files: it adds the runtime beside the operator's settings, changes nothing
# the second time, leaves an operator's own runtime of the same name alone,
# and refuses (rc 1, file untouched) what is not a JSON object.
set -u
cd "$(dirname "$0")/../.."
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
reg() { python3 scripts/docker-runtime.py "$1" runsc /usr/bin/runsc --network=none 2>"$t/err"; }
has() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }

printf '{"log-level": "warn", "runtimes": {"crun": {"path": "/usr/bin/crun"}}}\n' >"$t/a.json"
chmod 0600 "$t/a.json"
[ "$(reg "$t/a.json")" = changed ] &&
	has "$t/a.json" 'd["log-level"]=="warn" and d["runtimes"]["crun"]=={"path":"/usr/bin/crun"} and d["runtimes"]["runsc"]=={"path":"/usr/bin/runsc","runtimeArgs":["--network=none"]}' &&
	[ "$(stat -c %a "$t/a.json")" = 600 ] &&
	ok "added beside the operator's settings, mode kept" || bad "add"
cp "$t/a.json" "$t/a.before"
[ "$(reg "$t/a.json")" = unchanged ] && cmp -s "$t/a.json" "$t/a.before" &&
	ok "the second time: unchanged, not rewritten" || bad "idempotent"

printf '{"runtimes": {"runsc": {"path": "/opt/runsc", "runtimeArgs": ["--platform=kvm"]}}}\n' >"$t/b.json"
cp "$t/b.json" "$t/b.before"
[ "$(reg "$t/b.json")" = unchanged ] && cmp -s "$t/b.json" "$t/b.before" &&
	grep -q "left as it is" "$t/err" && ok "an operator's own runsc is left alone, and said so" ||
	bad "operator's runsc"

for body in '{bad' '[1, 2]' '{"runtimes": []}'; do
	printf '%s\n' "$body" >"$t/c.json"
	cp "$t/c.json" "$t/c.before"
	out=$(reg "$t/c.json")
	rc=$?
	[ $rc -eq 1 ] && [ -z "$out" ] && cmp -s "$t/c.json" "$t/c.before" && grep -q "not changed" "$t/err" &&
		ok "refused, untouched: $body" || bad "refuse $body (rc $rc, out '$out')"
done

[ "$(reg "$t/new/daemon.json")" = changed ] && [ "$(stat -c %a "$t/new/daemon.json")" = 644 ] &&
	has "$t/new/daemon.json" 'list(d)==["runtimes"]' && ok "a missing file is made, 0644" || bad "new file"

[ $fails -eq 0 ] && echo "test_docker_runtime: all passed" && exit 0
echo "test_docker_runtime: $fails failed"
exit 1

#!/bin/sh
# run-no-engine.sh BUILD_DIR: the contract binaries whose fixture creates a
# sandbox, run where no engine answers. Their setup must fail and say so,
# and a group teardown must then not crash on the fixture that the group
# setup never made (a test run on a host whose engine refuses
# every create showed a segmentation fault there, hiding the real error).
#
# No engine is contacted: each binary runs in a private mount namespace in
# which /run/docker.sock is /dev/null, so connecting to it is refused. Needs
# root (unshare -m and a bind mount).
set -eu
b=${1:?usage: run-no-engine.sh BUILD_DIR}
[ "$(id -u)" -eq 0 ] || { echo "run-no-engine.sh: needs root (unshare -m)" >&2; exit 2; }
sock=/run/docker.sock
[ -e "$sock" ] || sock=/var/run/docker.sock
fails=0
n=0
for t in test_controls test_docker_audit test_docker_channel test_docker_defaults \
	test_docker_pool test_docker_runs test_docker_secrets; do
	bin=$b/tests/contract/$t
	[ -x "$bin" ] || { echo "run-no-engine.sh: $bin is not built" >&2; exit 2; }
	# Where no socket exists, nothing answers anyway; a missing one is not
	# made (it would be left in the host's /run).
	# shellcheck disable=SC2016 # expanded by the inner shell
	out=$(unshare -m sh -c \
		'[ ! -e "$1" ] || mount --bind /dev/null "$1" && shift && exec "$@"' \
		sh "$sock" "$bin" 2>&1) && rc=0 || rc=$?
	n=$((n + 1))
	if [ "$rc" -eq 0 ]; then
		echo "FAIL $t: passed with no engine"
		fails=$((fails + 1))
	elif printf '%s\n' "$out" | grep -q 'exception\|Segmentation'; then
		echo "FAIL $t: crashed with no engine:"
		printf '%s\n' "$out" | grep 'exception\|Segmentation\|GROUP'
		fails=$((fails + 1))
	elif ! printf '%s\n' "$out" | grep -q 'FAILED  \] GROUP SETUP\|Test setup failed'; then
		echo "FAIL $t: no group setup failure reported"
		fails=$((fails + 1))
	else
		echo "ok $t"
	fi
done
echo "$((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]

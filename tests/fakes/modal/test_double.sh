#!/bin/bash
# tests/fakes/modal/test_double.sh: checks of the Modal double itself.
#
# Runs check_double.py (a plain gRPC client on the double's own protos) with
# /usr/bin/python3 against tests/fakes/modal/run-double: bad credentials and
# expired tokens, bad requests, a missing image, the router's bearer JWT,
# exec output, exit codes, timeouts, stdin, variables and idempotency,
# tags, lists, terminate, lifetimes and entrypoints; then that SIGTERM leaves
# no sandbox of its tenant. Needs dockerd and the image sandboxio/python:3.11.
# Takes SBX_CLI and SANDBOXIO_INIT from the environment (default: this
# tree's build/). The last line is "N passed, N failed".
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
export SBX_CLI=${SBX_CLI:-$root/build/sandboxio}
if [ -z "${SANDBOXIO_INIT:-}" ] && [ -x "$root/build/sbx-init" ]; then
	export SANDBOXIO_INIT=$root/build/sbx-init
fi
tenant=modal-double-test-$$
/usr/bin/python3 "$here/check_double.py" --cli "$SBX_CLI" --tenant "$tenant"
rc=$?
left=$("$SBX_CLI" ls --json --tenant "$tenant")
if [ "$left" != "[]" ]; then
	echo "FAIL sandboxes of tenant $tenant are left: $left"
	"$SBX_CLI" ls --json --tenant "$tenant" | /usr/bin/python3 -c \
		'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)))' | xargs -r "$SBX_CLI" rm >/dev/null
	rc=1
fi
exit $rc

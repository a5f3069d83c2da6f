#!/bin/bash
# tests/sdk/run-modal.sh: the Modal double proven with Modal's official JS SDK.
#
# Starts tests/fakes/modal/run-double on 127.0.0.1 (free ports) with a token
# pair drawn for this run and a tenant of its own, waits for its "ready" line,
# runs tests/sdk/modal.mjs against it (node, SDK pinned in package.json), stops
# the double with SIGTERM, and checks that it exited 0, logged no traceback,
# and left no sandbox of its tenant (sandboxio ls --json). Needs dockerd, the
# image sandboxio/python:3.11, node and `npm install --no-save` in tests/sdk. Takes SBX_CLI
# and SANDBOXIO_INIT from the environment (default: this tree's build/).
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "${root:-.}/tests/sdk/node-env.sh"
export SBX_CLI=${SBX_CLI:-$root/build/sandboxio}
if [ -z "${SANDBOXIO_INIT:-}" ] && [ -x "$root/build/sbx-init" ]; then
	export SANDBOXIO_INIT=$root/build/sbx-init
fi
if [ ! -d "$here/node_modules/modal" ]; then
	echo "run-modal.sh: $here/node_modules/modal is missing: run 'npm install --no-save' in tests/sdk (scripts/setup.sh does)" >&2
	exit 1
fi
tenant=modal-sdk-$$
work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-modal-sdk.XXXXXX")
pid=
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		wait "$pid"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

token() { od -An -tx1 -N16 /dev/urandom | tr -d ' \n'; }
id=ak-$(token)
secret=as-$(token)
mkfifo "$work/ready"
MODAL_TOKEN_ID=$id MODAL_TOKEN_SECRET=$secret "$root/tests/fakes/modal/run-double" \
	--listen 127.0.0.1:0 --tenant "$tenant" --cli "$SBX_CLI" >"$work/ready" 2>"$work/double.err" &
pid=$!
exec 3<"$work/ready"
if ! read -r word url <&3 || [ "$word" != ready ]; then
	echo "run-modal.sh: the double did not become ready:" >&2
	cat "$work/double.err" >&2
	exit 1
fi
echo "== double at $url (tenant $tenant)"

rc=0
MODAL_SERVER_URL=$url MODAL_TOKEN_ID=$id MODAL_TOKEN_SECRET=$secret node "$here/modal.mjs" || rc=1

kill -TERM "$pid"
wait "$pid"
drc=$?
pid=
exec 3<&-
if [ "$drc" -ne 0 ]; then
	echo "not ok - the double exited $drc after SIGTERM" >&2
	rc=1
fi
if grep -q Traceback "$work/double.err"; then
	echo "not ok - the double logged an exception:" >&2
	rc=1
fi
[ -s "$work/double.err" ] && sed 's/^/double: /' "$work/double.err" >&2
left=$("$SBX_CLI" ls --json --tenant "$tenant")
if [ "$left" != "[]" ]; then
	echo "not ok - sandboxes of tenant $tenant left after the double stopped: $left"
	rc=1
else
	echo "ok - no sandbox of tenant $tenant is left"
fi
exit $rc

#!/bin/bash
# tests/sdk/run-mcp.sh: the official MCP SDK proof (tests/sdk/mcp.mjs): the
# SDK's client starts `$SBX_CLI mcp` (default build/sandboxio) with its stdio
# transport, and after the client has closed, `$SBX_CLI ls --json` must show
# no sandbox of this run's tenant. Needs dockerd, node and
# tests/sdk/node_modules (`npm install --no-save` in tests/sdk when it is
# missing). Exits non-zero when anything failed.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "${root:-.}/tests/sdk/node-env.sh"
CLI=${SBX_CLI:-$root/build/sandboxio}
if [ -z "${SANDBOXIO_INIT:-}" ] && [ -x "$root/build/sbx-init" ]; then
	export SANDBOXIO_INIT=$root/build/sbx-init
fi
unset SANDBOXIO_CONFIG
tenant=mcp-sdk-$$
work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-mcp-sdk.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]; then
	(cd "$here" && npm install --no-audit --no-fund --no-save) || {
		echo "FAIL npm install in $here"
		exit 1
	}
fi

(cd "$here" && SBX_CLI="$CLI" SBX_MCP_TENANT="$tenant" node mcp.mjs)
node_rc=$?
rc=0
if [ "$node_rc" -ne 0 ]; then
	echo "FAIL the SDK proof (exit $node_rc)"
	rc=1
fi
if ! "$CLI" ls --json --tenant "$tenant" >"$work/ls.json" 2>"$work/ls.err"; then
	echo "FAIL sandboxio ls: $(cat "$work/ls.err")"
	rc=1
elif [ "$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/ls.json")" != 0 ]; then
	echo "FAIL sandboxes of tenant $tenant are left: $(cat "$work/ls.json")"
	rc=1
else
	echo "ok   no sandbox of tenant $tenant is left after the client closed"
fi
[ "$rc" -eq 0 ] && echo "== MCP SDK proof passed" || echo "== MCP SDK proof FAILED"
exit "$rc"

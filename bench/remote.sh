#!/bin/sh
# bench/remote.sh: sections (h) and (i) of bench/run.sh, the remote backends
# against the official SDKs, each pair against the same server on this
# machine's engine, so the server's own cost is common to both:
#   (h) e2b: `sandboxio --backend e2b run -- true` against the official E2B
#       JavaScript SDK (bench/e2b-sdk.mjs: Sandbox.create, commands.run
#       'true', kill), both through `sandboxio serve --api e2b`
#   (i) modal: `sandboxio --backend modal run -- true` against the official
#       Modal JavaScript SDK (bench/modal-sdk.mjs: app, image, create, exec
#       true, terminate), both through tests/fakes/modal/run-double
#   (l) the code interpreter: a cell in a warm context through the official
#       @e2b/code-interpreter SDK against commands.run of a fresh python3 -c
#       through the official E2B SDK, one sandbox of `sandboxio serve --api
#       e2b` (bench/e2b-ci-sdk.mjs: a trivial cell, and one using pandas)
# Whole-process timings (hyperfine), $RUNS each; prints medians and the ratio
# sandboxio / SDK. Needs root (the servers' default network), node and
# tests/sdk/node_modules (npm install --no-save in tests/sdk).
set -eu
cd "$(dirname "$0")/.."
. "${root:-.}/tests/sdk/node-env.sh"
RUNS=${RUNS:-10}
out=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill -TERM "$p" 2>/dev/null; done; sleep 1; rm -rf "$out"' EXIT
export SBX_CLI="${SBX_CLI:-$PWD/build/sandboxio}"
export SANDBOXIO_INIT="${SANDBOXIO_INIT:-$PWD/build/sbx-init}"

# waits for "ready URL" in file $1; prints URL
ready() {
	i=0
	while [ $i -lt 300 ]; do
		u=$(awk '/^ready /{print $2; exit}' "$1" 2>/dev/null)
		[ -n "$u" ] && { echo "$u"; return 0; }
		sleep 0.1
		i=$((i + 1))
	done
	echo "bench: no ready line in $1" >&2
	return 1
}

report() { # json label-ours label-peer section
	/usr/bin/python3 - "$@" <<'PYEOF'
import json, statistics, sys
d = {r["command"]: statistics.median(r["times"]) * 1000 for r in json.load(open(sys.argv[1]))["results"]}
o, p = d[sys.argv[2]], d[sys.argv[3]]
print("(%s) sandboxio %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (sys.argv[4], o, sys.argv[3], p, o / p))
PYEOF
}

echo "== (h) e2b: create + run true + kill through sandboxio serve --api e2b, $RUNS runs each"
"$SBX_CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$out/key" >"$out/e2b.out" 2>"$out/e2b.err" &
pids="$pids $!"
url=$(ready "$out/e2b.out")
E2B_API_KEY=$(cat "$out/key") E2B_API_URL=$url E2B_SANDBOX_URL=$url \
	hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$out/h.json" \
	-n sandboxio "$SBX_CLI --backend e2b run -- true" \
	-n e2b-sdk "node bench/e2b-sdk.mjs" >/dev/null
report "$out/h.json" sandboxio e2b-sdk h

echo "== (l) code interpreter: a warm cell against a fresh python3 -c, one sandbox, $RUNS calls each"
E2B_API_KEY=$(cat "$out/key") E2B_API_URL=$url E2B_SANDBOX_URL=$url RUNS=$RUNS node bench/e2b-ci-sdk.mjs

echo "== (i) modal: create + exec true + terminate through the Modal double, $RUNS runs each"
export MODAL_TOKEN_ID="ak-bench$$" MODAL_TOKEN_SECRET="as-bench$$"
tests/fakes/modal/run-double --listen 127.0.0.1:0 --cli "$SBX_CLI" >"$out/modal.out" 2>"$out/modal.err" &
pids="$pids $!"
MODAL_SERVER_URL=$(ready "$out/modal.out")
export MODAL_SERVER_URL
hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$out/i.json" \
	-n sandboxio "$SBX_CLI --backend modal run -- true" \
	-n modal-sdk "node bench/modal-sdk.mjs" >/dev/null
report "$out/i.json" sandboxio modal-sdk i

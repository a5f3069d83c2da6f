#!/usr/bin/env bash
# tests/contract/run-remote.sh: the contract suite of the six controls
# (tests/contract/test_controls.c), and the sandboxio command's checks
# (tests/cli/test_backends.sh), on the remote backends, each through a
# compatible server on this machine's engine:
#   e2b    `sandboxio serve --api e2b` (E2B's REST API and envd)
#   modal  tests/fakes/modal/run-double (Modal's gRPC API)
# so that the canary hosts prove deny and allow there as on docker.
# With E2B_API_KEY (or MODAL_TOKEN_ID and MODAL_TOKEN_SECRET) set in the
# environment, the suite also runs against the real provider, without the
# canary cases; otherwise it says that it skipped them.
#
# usage: run-remote.sh BUILD_DIR   (BUILD_DIR holds sandboxio and tests/)
set -euo pipefail

B=${1:?usage: run-remote.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLI=${SBX_CLI:-$ROOT/$B/sandboxio}
SUITE=$ROOT/$B/tests/contract/test_controls
TMP=$(mktemp -d)
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

# Starts a server in the background and waits for its `ready URL` line.
# Sets URL. $1: a name for messages; the rest: the command.
start_server() {
	local name=$1 out=$TMP/$1.out
	shift
	"$@" >"$out" 2>"$TMP/$name.err" &
	PIDS+=($!)
	for _ in $(seq 1 1200); do
		if grep -q '^ready ' "$out" 2>/dev/null; then
			URL=$(awk '/^ready /{print $2; exit}' "$out")
			return 0
		fi
		if ! kill -0 "${PIDS[-1]}" 2>/dev/null; then
			echo "run-remote: $name exited before it was ready:" >&2
			cat "$TMP/$name.err" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "run-remote: $name did not print ready" >&2
	return 1
}

# The real providers, only when the caller gave credentials.
real_e2b=${E2B_API_KEY:-}
real_modal_id=${MODAL_TOKEN_ID:-}
real_modal_secret=${MODAL_TOKEN_SECRET:-}

echo "== controls on e2b (sandboxio serve --api e2b)"
start_server e2b env -u E2B_API_KEY "$CLI" serve --api e2b --listen 127.0.0.1:0 \
	--api-key-file "$TMP/e2b-key"
E2B_API_KEY=$(cat "$TMP/e2b-key") E2B_API_URL=$URL E2B_SANDBOX_URL=$URL \
	SBX_TEST_BACKEND=e2b "$SUITE"
echo "== the sandboxio command on e2b"
E2B_API_KEY=$(cat "$TMP/e2b-key") E2B_API_URL=$URL E2B_SANDBOX_URL=$URL SBX_CLI=$CLI \
	bash "$ROOT/tests/cli/test_backends.sh" e2b

echo "== controls on modal (tests/fakes/modal/run-double)"
tid="ak-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
tsecret="as-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
MODAL_TOKEN_ID=$tid MODAL_TOKEN_SECRET=$tsecret SBX_CLI=$CLI \
	start_server modal "$ROOT/tests/fakes/modal/run-double" --listen 127.0.0.1:0 --cli "$CLI"
MODAL_TOKEN_ID=$tid MODAL_TOKEN_SECRET=$tsecret MODAL_SERVER_URL=$URL \
	SBX_TEST_BACKEND=modal "$SUITE"
echo "== the sandboxio command on modal"
MODAL_TOKEN_ID=$tid MODAL_TOKEN_SECRET=$tsecret MODAL_SERVER_URL=$URL SBX_CLI=$CLI \
	bash "$ROOT/tests/cli/test_backends.sh" modal

if [ -n "$real_e2b" ]; then
	echo "== controls on the real E2B (no canary cases)"
	env -u E2B_API_URL -u E2B_SANDBOX_URL E2B_API_KEY="$real_e2b" \
		SBX_TEST_BACKEND=e2b SBX_TEST_REAL=1 "$SUITE"
else
	echo "== controls on the real E2B: skipped (E2B_API_KEY is not set)"
fi
if [ -n "$real_modal_id" ] && [ -n "$real_modal_secret" ]; then
	echo "== controls on the real Modal (no canary cases)"
	env -u MODAL_SERVER_URL MODAL_TOKEN_ID="$real_modal_id" \
		MODAL_TOKEN_SECRET="$real_modal_secret" \
		SBX_TEST_BACKEND=modal SBX_TEST_REAL=1 "$SUITE"
else
	echo "== controls on the real Modal: skipped (MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are not set)"
fi

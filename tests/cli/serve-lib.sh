# tests/cli/serve-lib.sh: what the shell tests of `sandboxio serve --api e2b`
# share, sourced by them (bash). Before sourcing, set T (the tests' tenant
# prefix) and WORK_NAME (the temporary directory's name). Sets CLI, PY, H
# (tests/cli/e2b_wire.py), work, and the counters behind ok/bad; stops the
# server ($server_pid) and removes $work at exit. The functions:
#   ok TEXT / bad TEXT      count a case (bad shows $status and $work/body)
#   json EXPR               a Python expression over the last body (as d)
#   api METHOD PATH [BODY]  a REST call with $KEY: $status, $work/body, $work/hdr
#   unary ID TOK METHOD JSON [OUT]   a unary Process call: $status, $work/OUT
#   ready_url OUT PID       the server's URL once its "ready" line is out
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CLI=${SBX_CLI:-$root/build/sandboxio}
if [ -z "${SANDBOXIO_INIT:-}" ] && [ -x "$root/build/sbx-init" ]; then
	export SANDBOXIO_INIT=$root/build/sbx-init
fi
unset SANDBOXIO_CONFIG
PY=/usr/bin/python3
H=$here/e2b_wire.py
work=$(mktemp -d "${TMPDIR:-/tmp}/$WORK_NAME.XXXXXX")
server_pid=
cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT

passed=0
failed=0
status=
ok() {
	passed=$((passed + 1))
	echo "ok   $1"
}
bad() {
	failed=$((failed + 1))
	echo "FAIL $1"
	echo "     status=$status body: $(head -c 600 "$work/body" 2>/dev/null | tr '\n' '|')"
}

json() { "$PY" "$H" json "$work/body" "$1" 2>/dev/null; }

api() {
	local data=()
	[ $# -ge 3 ] && data=(-H 'Content-Type: application/json' --data-binary "$3")
	status=$(curl -s -o "$work/body" -D "$work/hdr" -w '%{http_code}' -X "$1" \
		-H "X-API-Key: $KEY" "${data[@]}" "$URL$2")
}

unary() {
	status=$(curl -s -o "$work/${5:-body}" -w '%{http_code}' -H "E2b-Sandbox-Id: $1" \
		-H "X-Access-Token: $2" -H 'Content-Type: application/json' \
		--data-binary "$4" "$URL/process.Process/$3")
}

# The bound is only a hang guard.
ready_url() {
	for _ in $(seq 1 1200); do
		grep -q '^ready ' "$1" && break
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	sed -n 's/^ready //p' "$1"
}

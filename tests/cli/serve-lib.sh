# tests/cli/serve-lib.sh: what the shell tests of `sandboxio serve --api e2b`
# share, on top of tests/cli/lib.sh, sourced by them (bash). Before sourcing,
# set T (the tests' tenant prefix) and WORK_NAME. Adds H (tests/cli/e2b_wire.py);
# stops the server ($server_pid) and removes $work at exit; a failed case
# shows $status and $work/body. The functions:
#   json EXPR               a Python expression over the last body (as d)
#   api METHOD PATH [BODY]  a REST call with $KEY: $status, $work/body, $work/hdr
#   unary ID TOK METHOD JSON [OUT]   a unary Process call: $status, $work/OUT
#   ready_url OUT PID       the server's URL once its "ready" line is out
BAD_SHOWS=http
. "$(dirname "$0")/lib.sh"
H=$here/e2b_wire.py
server_pid=
cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT

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

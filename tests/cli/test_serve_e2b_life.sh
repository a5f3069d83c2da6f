#!/bin/bash
# tests/cli/test_serve_e2b_life.sh: the E2B-compatible server of `sandboxio
# serve --api e2b` over a sandbox's life, at the wire, with curl: streamed
# stdin behind a process that does not read (one deadline per SendInput,
# its wait included), gzip uploads inflated only in the busy slot, signed
# /files URLs that name no path, Process.Connect to a running process, and
# a sandbox's metrics in E2B's shape.
#
# Runs $SBX_CLI (default build/sandboxio) serve on 127.0.0.1:0 with a key
# file and --transfer-timeout 8 in a temporary directory; every sandbox is
# of tenant e2bl-$$-NAME, every listing scoped to it. Synchronises on events
# (a file made in the sandbox with docker exec, a process seen in its
# /proc), never on a guess of the machine's speed; each poll has a generous
# bound only as a hang guard. Needs dockerd and the default image. The last
# line is "N passed, N failed"; the exit status is non-zero when anything
# failed.
set -u

T=e2bl-$$
WORK_NAME=sbx-serve-life
. "$(dirname "$0")/serve-lib.sh"

# create NAME: a sandbox of tenant $T-NAME; sets ID and TOK.
create() {
	api POST /v2/sandboxes "{\"templateID\":\"base\",\"timeout\":600,\"metadata\":{\"io.sandboxio.tenant\":\"$T-$1\"}}"
	ID=$("$PY" "$H" get "$work/body" sandboxID 2>/dev/null)
	TOK=$("$PY" "$H" get "$work/body" envdAccessToken 2>/dev/null)
}

# bg_start ID TOK JSON OUT: Process.Start in the background (its pid in $!).
bg_start() {
	"$PY" "$H" enc "$3" >"$work/req-$4.bin"
	curl -s -o "$work/$4" -H "E2b-Sandbox-Id: $1" -H "X-Access-Token: $2" \
		-H 'Content-Type: application/connect+json' --data-binary @"$work/req-$4.bin" \
		"$URL/process.Process/Start" &
}

container() { docker ps -q --filter "label=io.sandboxio.tenant=$T-$1"; }

# in_box NAME CMD...: CMD in the sandbox's container (docker exec, its user).
in_box() {
	local c=$1
	shift
	docker exec "$(container "$c")" "$@"
}

# until_box NAME CMD...: polls until CMD succeeds in the sandbox (120 s guard).
until_box() {
	for _ in $(seq 1 600); do
		in_box "$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

KEYFILE=$work/key
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$KEYFILE" --transfer-timeout 8 \
	>"$work/server.out" 2>"$work/server.err" &
server_pid=$!
URL=$(ready_url "$work/server.out" "$server_pid")
if [ -z "$URL" ]; then
	echo "FAIL the server did not start: $(cat "$work/server.err")"
	echo "0 passed, 1 failed"
	exit 1
fi
KEY=$(cat "$KEYFILE")

# ===== Signed /files URLs that name no path =====
create sig
SIG_ID=$ID SIG_TOK=$TOK
if [ "$status" != 201 ] || [ -z "$SIG_ID" ]; then
	bad "create"
	echo "$passed passed, $failed failed"
	exit 1
fi
s=$("$PY" "$H" sig "" write "" "$SIG_TOK")
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "Host: 49983-$SIG_ID.e2b.test" \
	-F 'file=@/dev/null;filename=/home/user/anywhere.txt' "$URL/files?signature=$s")
[ "$status" = 401 ] && json '"must name its file" in d["message"]' &&
	! in_box sig test -e /workspace/anywhere.txt &&
	ok "an upload URL signed over no path (the form would name the file): 401, nothing written" ||
	bad "unsigned-path upload"
s=$("$PY" "$H" sig "" read "" "$SIG_TOK")
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "Host: 49983-$SIG_ID.e2b.test" "$URL/files?signature=$s")
[ "$status" = 401 ] && json '"must name its file" in d["message"]' &&
	ok "a download URL signed over no path: 401" || bad "unsigned-path download"

# ===== A gzip upload waits for the busy slot before it is inflated =====
# A command holds the slot until the test lets it go; an upload then waits
# its turn with its body compressed, and meets the transfer's deadline (8 s)
# before its gzip is read: 503, not the inflation's 400.
bg_start "$SIG_ID" "$SIG_TOK" '{"process":{"cmd":"/bin/sh","args":["-c","touch /tmp/held; while [ ! -e /tmp/go ]; do sleep 0.1; done"]}}' hold.out
hold=$!
until_box sig test -e /tmp/held || echo "     (the holding command did not start)"
printf 'this is not gzip' >"$work/notgz"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $SIG_ID" -H "X-Access-Token: $SIG_TOK" \
	-H 'Content-Encoding: gzip' -H 'Content-Type: application/octet-stream' \
	--data-binary @"$work/notgz" "$URL/files?path=/home/user/gz.txt")
[ "$status" = 503 ] && json '"busy" in d["message"]' &&
	ok "a gzip upload to a busy sandbox waits for the slot before inflating (503 at the deadline, not 400)" ||
	bad "gzip before the slot"
in_box sig touch /tmp/go
wait "$hold"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $SIG_ID" -H "X-Access-Token: $SIG_TOK" \
	-H 'Content-Encoding: gzip' -H 'Content-Type: application/octet-stream' \
	--data-binary @"$work/notgz" "$URL/files?path=/home/user/gz.txt")
[ "$status" = 400 ] && json '"gzip" in d["message"]' &&
	ok "the same upload to the idle sandbox: 400, the gzip body is malformed" || bad "gzip idle"

# ===== Process.Connect =====
# A process that prints "before" and waits for a line; a Connect stream
# follows it. A follower that goes away stops nothing: the process still
# takes its input and ends with its own code on its Start stream.
bg_start "$SIG_ID" "$SIG_TOK" '{"process":{"cmd":"/bin/sh","args":["-c","echo before; read x; echo after $x; exit 3"]},"stdin":true,"tag":"led"}' led.out
led=$!
until_box sig sh -c 'ls /tmp/.sbx-in-*.cmd >/dev/null 2>&1' || echo "     (the led process did not start)"
"$PY" "$H" enc '{"process":{"tag":"led"}}' >"$work/conn.bin"
curl -s -N -o "$work/conn.out" -H "E2b-Sandbox-Id: $SIG_ID" -H "X-Access-Token: $SIG_TOK" \
	-H 'Content-Type: application/connect+json' --data-binary @"$work/conn.bin" \
	"$URL/process.Process/Connect" &
conn=$!
for _ in $(seq 1 600); do
	[ -s "$work/conn.out" ] && break
	sleep 0.1
done
"$PY" - "$work/conn.out" <<'EOF2' && ok "Connect by tag: the stream opens with the process's start event" || { status=-; bad "connect start"; }
import json, struct, sys
d = open(sys.argv[1], "rb").read()
n = struct.unpack(">I", d[1:5])[0]
j = json.loads(d[5:5 + n])
sys.exit(0 if d[0] == 0 and "pid" in j["event"]["start"] else 1)
EOF2
kill "$conn" 2>/dev/null
wait "$conn" 2>/dev/null
unary "$SIG_ID" "$SIG_TOK" SendInput '{"process":{"tag":"led"},"input":{"stdin":"Z28K"}}'
s1=$status
unary "$SIG_ID" "$SIG_TOK" CloseStdin '{"process":{"tag":"led"}}'
wait "$led"
"$PY" - "$work/led.out" <<'EOF2' && [ "$s1" = 200 ] && ok "a Connect stream that goes away stops nothing: the process takes its input and exits 3" || { status=$s1; bad "connect gone"; }
import base64, json, struct, sys
d = open(sys.argv[1], "rb").read()
i, out, code = 0, b"", None
while i + 5 <= len(d):
    n = struct.unpack(">I", d[i + 1:i + 5])[0]
    j = json.loads(d[i + 5:i + 5 + n])
    i += 5 + n
    ev = j.get("event", {})
    out += base64.b64decode(ev.get("data", {}).get("stdout", ""))
    if "end" in ev:
        code = ev["end"].get("exitCode")
sys.exit(0 if out == b"before\nafter go\n" and code == 3 else 1)
EOF2
"$PY" "$H" enc '{"process":{"pid":4242}}' >"$work/conn.bin"
curl -s -o "$work/body" -H "E2b-Sandbox-Id: $SIG_ID" -H "X-Access-Token: $SIG_TOK" \
	-H 'Content-Type: application/connect+json' --data-binary @"$work/conn.bin" \
	"$URL/process.Process/Connect"
grep -q '"not_found"' "$work/body" && grep -q 'pid 4242 not found' "$work/body" &&
	ok "Connect to an unknown pid: the stream ends with not_found" || { status=-; bad "connect unknown"; }

# ===== Metrics =====
api GET "/sandboxes/$SIG_ID/metrics"
[ "$status" = 200 ] && json 'len(d) == 1 and set(d[0]) == {"timestamp", "timestampUnix", "cpuCount", "cpuUsedPct", "memUsed", "memTotal", "diskUsed", "diskTotal"} and d[0]["memTotal"] == 512 << 20 and 0 < d[0]["memUsed"] < d[0]["memTotal"] and d[0]["cpuCount"] >= 1' &&
	ok "GET /sandboxes/{id}/metrics: one sample in E2B's shape, memUsed within memTotal (the cap)" ||
	bad "metrics"
api GET "/sandboxes/$SIG_ID/metrics?start=yesterday"
[ "$status" = 400 ] && json '"unix seconds" in d["message"]' && ok "metrics with a start that is not unix seconds: 400" ||
	bad "metrics start"
api POST "/sandboxes/$SIG_ID/metrics"
[ "$status" = 405 ] && ok "POST on metrics: 405" || bad "metrics POST"
api GET /sandboxes/abcdefghij0123456789/metrics
[ "$status" = 404 ] && json 'd["code"] == 404' && ok "metrics of an unknown sandbox: 404" || bad "metrics 404"

# ===== SendInput: one deadline for the wait and the write =====
# A process that never reads its stdin; a first SendInput of 4 MiB fills the
# pipes and blocks (seen as a cat writing to the input FIFO in the sandbox's
# /proc); three more sent then wait behind it. Each SendInput is bounded by
# the transfer's deadline from its arrival: the waiters give up while the
# first still writes and say so, instead of each writing in turn after it.
bg_start "$SIG_ID" "$SIG_TOK" '{"process":{"cmd":"/bin/sh","args":["-c","exec sleep 100000"]},"stdin":true,"tag":"deaf"}' deaf.out
deaf=$!
for _ in $(seq 1 600); do
	unary "$SIG_ID" "$SIG_TOK" List '{}'
	grep -q '"tag":"deaf"' "$work/body" && break
	sleep 0.2
done
until_box sig sh -c 'ls /tmp/.sbx-in-*.cmd >/dev/null 2>&1' ||
	echo "     (the deaf process did not start)"
"$PY" -c 'import base64,json; print(json.dumps({"process":{"tag":"deaf"},"input":{"stdin":base64.b64encode(b"x" * (4 << 20)).decode()}}))' >"$work/big-in.json"
curl -s -o "$work/in-a" -w '%{http_code}' -H "E2b-Sandbox-Id: $SIG_ID" -H "X-Access-Token: $SIG_TOK" \
	-H 'Content-Type: application/json' --data-binary @"$work/big-in.json" \
	"$URL/process.Process/SendInput" >"$work/in-a.status" &
in_a=$!
# the first write is under way: a cat in the sandbox with the input FIFO as its stdout
until_box sig "$PY" -c '
import os, sys
for p in os.listdir("/proc"):
    try:
        t = os.readlink("/proc/%s/fd/1" % p)
    except OSError:
        continue
    if t.startswith("/tmp/.sbx-in-") and "." not in t[len("/tmp/.sbx-in-"):]:
        sys.exit(0)
sys.exit(1)' || echo "     (the first write was not seen)"
pids=()
for k in 1 2 3; do
	curl -s -o "$work/in-$k" -w '%{http_code}' -H "E2b-Sandbox-Id: $SIG_ID" -H "X-Access-Token: $SIG_TOK" \
		-H 'Content-Type: application/json' --data-binary '{"process":{"tag":"deaf"},"input":{"stdin":"eA=="}}' \
		"$URL/process.Process/SendInput" >"$work/in-$k.status" &
	pids+=($!)
done
wait "${pids[@]}" "$in_a"
"$PY" - "$work" <<'EOF' && ok "SendInputs behind a write that blocks: each ends by its own deadline, the waiters saying an earlier input was still being written" || { status=-; cat "$work"/in-a "$work"/in-? >"$work/body"; bad "stdin wait deadline"; }
import json, sys
w = sys.argv[1]
a = json.load(open(w + "/in-a"))
ok = open(w + "/in-a.status").read() == "503" and "did not read its input" in a["message"]
earlier = 0
for k in "123":
    d = json.load(open(w + "/in-" + k))
    ok = ok and open(w + "/in-%s.status" % k).read() == "503" and d["code"] == "unavailable"
    earlier += "earlier input" in d["message"]
sys.exit(0 if ok and earlier >= 2 else 1)
EOF
kill "$deaf" 2>/dev/null
wait "$deaf" 2>/dev/null

# The deaf process's client went away: its command, and on this backend
# its sandbox, end (Docker cannot kill one exec).
for _ in $(seq 1 600); do
	api GET "/sandboxes/$SIG_ID"
	[ "$status" = 404 ] && break
	sleep 0.2
done
[ "$status" = 404 ] && ok "the client of the deaf process gone: its sandbox ends" || bad "client gone"

kill -TERM "$server_pid"
wait "$server_pid"
rc=$?
server_pid=
[ "$rc" = 0 ] && ok "the server stops on SIGTERM" || { status=$rc; bad "server stop"; }
[ -z "$(docker ps -aq --filter "label=io.sandboxio.tenant=$T-sig")" ] &&
	ok "no container of this suite is left" || { status=-; bad "containers left"; }

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

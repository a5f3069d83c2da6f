#!/bin/bash
# tests/cli/test_serve_e2b.sh: `sandboxio serve --api e2b` at the HTTP level.
#
# Starts $SBX_CLI (default build/sandboxio) serve on 127.0.0.1:0 with a key
# file that does not exist yet, and checks with curl: the generated key file,
# the 401/404/413/502 bodies, the strict NewSandbox (timeouts, fields it
# cannot honour, egress), the container a create makes (NetworkMode none; no
# link without an allowlist, the open allowlist without a deny control, and
# what a UDP connect() inside sees), envd's access token, Process.Start's
# Connect frames (output, end events, deadline, keepalive, stdin, strict
# protojson), a terminal (pty), one run at a time, SendSignal, a client that goes away, files,
# envd's filesystem calls from the hostile side (.., symlinks out, floods),
# WatchDir's bounds (watches, a client that does not read), gzip uploads (a bomb), signed /files URLs (forgeries), timeouts and expiry, listing and pagination; then the refusals of serve
# itself (a non-loopback --listen, a key file others may read) and that
# SIGTERM leaves no sandbox behind. Every sandbox carries the tenant
# e2bt-$$-NAME through metadata io.sandboxio.tenant. Only loopback is used;
# the only traffic a sandbox sends is none (a UDP connect() sends no packet).
#
# Needs dockerd, curl, python3 and the image sandboxio/python:3.11. The last
# line is "N passed, N failed"; the exit status is non-zero when anything
# failed.
set -u

T=e2bt-$$
WORK_NAME=sbx-serve-test
. "$(dirname "$0")/serve-lib.sh"

body_is() { [ "$(cat "$work/body")" = "$1" ]; }
header_is() { grep -qi "^$1: $2"$'\r'"\?$" "$work/hdr"; }

# create NAME JSON-FIELDS: creates a sandbox of tenant $T-NAME; sets ID and TOK.
create() {
	api POST /v2/sandboxes "{\"metadata\":{\"io.sandboxio.tenant\":\"$T-$1\",\"name\":\"$1\"}${2:+,$2}}"
	ID=$("$PY" "$H" get "$work/body" sandboxID 2>/dev/null)
	TOK=$("$PY" "$H" get "$work/body" envdAccessToken 2>/dev/null)
}

# start ID TOK JSON [CURL ARGS...]: Process.Start; frames decoded into $work/frames.
start() {
	local id=$1 tok=$2 req=$3
	shift 3
	"$PY" "$H" enc "$req" >"$work/req.bin"
	# --no-buffer: each frame reaches the file as it arrives, for the
	# cases that watch a stream while it runs.
	status=$(curl -s --no-buffer -o "$work/stream" -w '%{http_code}' -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $tok" -H 'Content-Type: application/connect+json' \
		-H 'Connect-Protocol-Version: 1' "$@" --data-binary @"$work/req.bin" \
		"$URL/process.Process/Start")
	"$PY" "$H" dec "$work/stream" >"$work/frames" 2>&1
	cp "$work/frames" "$work/body"
}
bash_cmd() { printf '{"process":{"cmd":"/bin/bash","args":["-l","-c",%s]}}' "$1"; }
frame() { grep -qxF -- "$1" "$work/frames"; }
# stdout_is TEXT: the stdout of the last stream, joined over its frames, is TEXT.
stdout_is() { [ "$("$PY" "$H" out "$work/stream" stdout; echo .)" = "$1." ]; }

containers() { docker ps -aq --filter "label=io.sandboxio.tenant=$1"; }

# wait_gone ID NAME: polls until the sandbox is gone (404) and so is the
# container of tenant $T-NAME (closing follows the 404); 120 s guard a hang.
wait_gone() {
	for _ in $(seq 1 600); do
		api GET "/sandboxes/$1"
		[ "$status" = 404 ] && [ -z "$(containers "$T-$2")" ] && return 0
		sleep 0.2
	done
	return 1
}

# ===== Refusals of serve itself (nothing is served) =====

"$CLI" serve --api e2b --listen 0.0.0.0:0 --api-key-file "$work/nokey" >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q "not a loopback address" "$work/err" && grep -q -- "--allow-non-loopback" "$work/err" &&
	[ ! -e "$work/nokey" ] && [ ! -s "$work/out" ] &&
	ok "a non-loopback --listen is refused (125) before a key file is made" ||
	{ status=$rc; cp "$work/err" "$work/body"; bad "non-loopback refusal"; }

printf 'e2b_0123456789abcdef0123456789abcdef01234567\n' >"$work/key644"
chmod 644 "$work/key644"
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$work/key644" >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q "$work/key644" "$work/err" && grep -q "mode 0644" "$work/err" &&
	[ ! -s "$work/out" ] && ok "a 0644 key file is refused (125), naming the file and its mode" ||
	{ status=$rc; cp "$work/err" "$work/body"; bad "0644 key file"; }

ln -s "$work/key644" "$work/keylink"
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$work/keylink" >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q "symbolic link" "$work/err" && ok "a key file that is a symlink is refused" ||
	{ status=$rc; cp "$work/err" "$work/body"; bad "symlink key file"; }

"$CLI" serve --listen 127.0.0.1:0 >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q -- "--api e2b" "$work/err" && ok "serve without --api is refused" ||
	{ status=$rc; cp "$work/err" "$work/body"; bad "serve without --api"; }

"$CLI" serve --api e2b --listen nosuchhost:1 >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q "expected ADDR:PORT" "$work/err" && ok "a --listen name other than localhost is refused" ||
	{ status=$rc; cp "$work/err" "$work/body"; bad "--listen name"; }

# --e2b-image names an image of the engine, never built or pulled by serve.
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$work/key" \
	--e2b-image sandboxio/no-such-e2b:1 >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q "sandboxio/no-such-e2b:1 is not an image" "$work/err" &&
	grep -q "image build --recipe e2b --ref sandboxio/no-such-e2b:1" "$work/err" && [ ! -s "$work/out" ] &&
	ok "a missing --e2b-image is refused (125), naming the command that builds it" ||
	{ status=$rc; cp "$work/err" "$work/body"; bad "--e2b-image missing"; }
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$work/nokey" --e2b-image 'Not A Ref' \
	>"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q -- "--e2b-image 'Not A Ref'" "$work/err" && [ ! -s "$work/out" ] &&
	[ ! -e "$work/nokey" ] &&
	ok "an --e2b-image that is not an image reference is refused (125) before a key file is made" ||
	{ status=$rc; cp "$work/err" "$work/body"; bad "--e2b-image bad ref"; }

"$CLI" help serve >"$work/out" 2>&1 && grep -q -- "--api-key-file PATH" "$work/out" &&
	"$CLI" --help | grep -q "serve --api e2b" && ok "help serve and the command list describe serve" ||
	{ status=-; cp "$work/out" "$work/body"; bad "help serve"; }

# ===== The server =====

KEYFILE=$work/cfg/e2b-api-key
mkdir -p "$work/cfg"
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$KEYFILE" >"$work/server.out" \
	2>"$work/server.err" &
server_pid=$!
URL=$(ready_url "$work/server.out" "$server_pid")
if [ -z "$URL" ]; then
	echo "FAIL the server did not start: $(cat "$work/server.err")"
	echo "0 passed, 1 failed"
	exit 1
fi
KEY=$(cat "$KEYFILE")
[ "$(wc -l <"$work/server.out")" -eq 1 ] && [[ $URL =~ ^http://127\.0\.0\.1:[0-9]+$ ]] &&
	ok "one ready line on stdout: $URL" || { status=-; bad "ready line"; }
[ "$(stat -c %a "$KEYFILE")" = 600 ] && [[ $KEY =~ ^e2b_[0-9a-f]{40}$ ]] &&
	! grep -qF "$KEY" "$work/server.out" "$work/server.err" &&
	ok "the generated key file is 0600, holds e2b_ and 40 hex digits, and the key is not printed" ||
	{ status=-; bad "generated key file"; }

# --- Authentication and errors ---
status=$(curl -s -o "$work/body" -w '%{http_code}' "$URL/v2/sandboxes")
[ "$status" = 401 ] && json 'd["code"] == 401 and d["message"].startswith("Invalid API key") and len(d) == 2' &&
	ok "no X-API-Key: 401 with E2B's error body" || bad "missing key"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H 'X-API-Key: e2b_wrong' "$URL/v2/sandboxes")
[ "$status" = 401 ] && body_is '{"code":401,"message":"Invalid API key"}' &&
	ok "a wrong X-API-Key: 401 {\"code\":401,\"message\":\"Invalid API key\"}" || bad "wrong key"
api GET /sandboxes/abcdefghij0123456789
[ "$status" = 404 ] &&
	body_is '{"code":404,"message":"Sandbox \"abcdefghij0123456789\" doesn'"'"'t exist or you don'"'"'t have access to it"}' &&
	ok "an unknown sandbox: 404 with E2B's message" || bad "unknown sandbox GET"
api DELETE /sandboxes/abcdefghij0123456789
[ "$status" = 404 ] && json 'd["code"] == 404' && ok "DELETE of an unknown sandbox: 404" || bad "unknown DELETE"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H 'E2b-Sandbox-Id: abcdefghij0123456789' "$URL/health")
[ "$status" = 502 ] &&
	body_is '{"sandboxId":"abcdefghij0123456789","message":"The sandbox was not found","code":502}' &&
	ok "envd for an unknown sandbox: 502 with the proxy's body" || bad "envd 502"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H 'Host: 49983-abcdefghij0123456789.e2b.test' "$URL/health")
[ "$status" = 502 ] && json 'd["sandboxId"] == "abcdefghij0123456789"' &&
	ok "envd addressed by the host 49983-<id>.<domain>: 502 too" || bad "envd host form"

"$PY" -c 'import json; print(json.dumps({"templateID": "base", "metadata": {"pad": "x" * 71680}}))' >"$work/big.json"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
	--data-binary @"$work/big.json" "$URL/v2/sandboxes")
[ "$status" = 413 ] && json 'd["code"] == 413 and "65536" in d["message"]' &&
	ok "a 70 KiB create body: 413 with E2B's error body" || bad "413"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
	-H 'Transfer-Encoding: chunked' --data-binary @"$work/big.json" "$URL/v2/sandboxes")
[ "$status" = 413 ] && json 'd["code"] == 413' && ok "the same body chunked (as the SDK sends): 413" || bad "413 chunked"

api POST /v2/sandboxes '{"templateID":"base","timeout":0}'
[ "$status" = 400 ] && json 'd["code"] == 400 and "greater than 0" in d["message"]' &&
	ok "timeout 0: 400" || bad "timeout 0"
api POST /v2/sandboxes '{"templateID":"base","timeout":3601}'
[ "$status" = 400 ] && json 'd["message"] == "Timeout cannot be greater than 1 hours"' &&
	ok "timeout above --max-timeout (3600): 400 with E2B's wording" || bad "timeout max"
api POST /v2/sandboxes '{"templateID":"base","timeout":"60"}'
[ "$status" = 400 ] && json '"timeout" in d["message"]' && ok "a timeout that is not an integer: 400" || bad "timeout type"
api POST /v2/sandboxes '{"templateID":"base","autoPause":"yes","autoPauseMemory":false,"mcp":{"x":{}},"volumeMounts":[{"name":"v","path":"/v"}]}'
[ "$status" = 400 ] && json '"autoPause (not a boolean)" in d["message"] and "autoPauseMemory" in d["message"] and "mcp" in d["message"] and "volumeMounts" in d["message"]' &&
	ok "autoPause not a boolean, autoPauseMemory, mcp and volumeMounts: 400 naming each" || bad "unsupported fields"
api POST /v2/sandboxes '{"templateID":"base","network":{"rules":{"a.test":[]},"egressProxy":{"address":"x:1"}}}'
[ "$status" = 400 ] && json '"network.rules" in d["message"] and "network.egressProxy" in d["message"]' &&
	ok "network.rules and network.egressProxy: 400 naming them" || bad "network fields"
api POST /v2/sandboxes '{"templateID":"base","frobnicate":1}'
[ "$status" = 400 ] && json '"frobnicate" in d["message"]' && ok "an unknown field: 400 naming it" || bad "unknown field"
api POST /v2/sandboxes '{"templateID":"base","network":{"allowOut":["api.canary.test"]}}'
[ "$status" = 400 ] && json '"you must include '"'"'ALL_TRAFFIC'"'"' in deny out" in d["message"]' &&
	ok "a domain in allowOut without denyOut 0.0.0.0/0: 400 with E2B's message" || bad "domain without deny"
api POST /v2/sandboxes '{"templateID":"base","network":{"denyOut":["198.51.100.0/24"]}}'
[ "$status" = 400 ] && json '"cannot be honoured" in d["message"]' &&
	ok "a partial denyOut on an open network: 400 (not expressible, not ignored)" || bad "partial deny"
# Parsed and refused only, never contacted: E2B's always-denied private ranges.
api POST /v2/sandboxes '{"templateID":"base","allow_internet_access":false,"network":{"allowOut":["10.0.0.0/8"]}}'
[ "$status" = 400 ] && json '"10.0.0.0/8" in d["message"] and "always" in d["message"]' &&
	ok "an allowOut entry in E2B's always-denied ranges: 400 (refused, not dropped)" || bad "private allowOut"
# Parsed and refused only, never contacted: the same never-reachable table as the docker backend.
api POST /v2/sandboxes '{"templateID":"base","allow_internet_access":false,"network":{"allowOut":["fd00:ec2::254/128"]}}'
[ "$status" = 400 ] && json '"fd00:ec2::" in d["message"] and "no sandbox ever reaches" in d["message"]' &&
	ok "an IPv6 allowOut entry inside cloud metadata (fd00:ec2::254): 400" || bad "IPv6 metadata allowOut"
api POST /v2/sandboxes '{"templateID":"base","allow_internet_access":false,"network":{"allowOut":["100.100.100.200"]}}'
[ "$status" = 400 ] && json '"100.100.100.200" in d["message"] and "no sandbox ever reaches" in d["message"]' &&
	ok "an IPv4 allowOut entry at a metadata address outside E2B's ranges: 400" || bad "IPv4 metadata allowOut"
api POST /v2/sandboxes '{"templateID":"base","network":{"allowOut":["*.canary.test"],"denyOut":["0.0.0.0/0"]}}'
[ "$status" = 400 ] && json '"wildcard" in d["message"]' && ok "a wildcard domain: 400" || bad "wildcard"
api POST /v2/sandboxes '{"templateID":"nosuch/image:none"}'
[ "$status" = 400 ] && json '"nosuch/image:none" in d["message"]' && ok "an unknown templateID: 400 naming it" ||
	bad "unknown template"
api POST /v2/sandboxes '{"templateID":"../../containers/json"}'
[ "$status" = 400 ] && json '"templateID" in d["message"] and "containers" not in d["message"]' &&
	ok "a templateID with ../ is refused before the Engine API (400 naming the field, no Engine path)" ||
	bad "templateID ../"
api POST /v2/sandboxes '{"templateID":"UPPER/Case"}'
[ "$status" = 400 ] && json '"templateID is not a valid image reference" in d["message"]' &&
	ok "a templateID outside the image reference grammar: 400" || bad "templateID grammar"
api POST /v2/sandboxes '{"templateID":"base","secure":false}'
[ "$status" = 400 ] && json '"secure false" in d["message"]' &&
	ok "secure false: 400 naming it (every sandbox's envd needs its token)" || bad "secure false"
status=$(curl -s -o "$work/body" -w '%{http_code}' --max-time 60 -H "X-API-Key: $KEY" \
	-H 'Transfer-Encoding: gzip' --data-binary '{}' "$URL/v2/sandboxes")
[ "$status" = 501 ] && json '"Transfer-Encoding" in d["message"]' &&
	ok "a Transfer-Encoding other than chunked: 501 at once" || bad "Transfer-Encoding gzip"
api POST /v2/sandboxes '{"templateID":"base","metadata":{"io.sandboxio.tenant":"no spaces allowed"}}'
[ "$status" = 400 ] && json '"io.sandboxio.tenant" in d["message"]' && ok "an invalid tenant in metadata: 400" ||
	bad "invalid tenant"

# --- A closed network: allow_internet_access false ---
create closed '"timeout":3600,"allow_internet_access":false'
CLOSED_ID=$ID CLOSED_TOK=$TOK
[ "$status" = 201 ] && header_is Sandboxio-Tier container &&
	json '[d[k] for k in ("templateID","clientID","envdVersion")] == ["base","6532622b","0.5.7"] and len(d["sandboxID"]) == 20 and d["sandboxID"].isalnum() and d["sandboxID"].islower() and d["domain"] is None and len(d["envdAccessToken"]) == 64' &&
	ok "create: 201 Sandbox body, Sandboxio-Tier: container" || bad "create closed"
cid=$(containers "$T-closed")
[ -n "$cid" ] && [ "$(docker inspect -f '{{.HostConfig.NetworkMode}} {{.Config.NetworkDisabled}} {{index .Config.Labels "io.sandboxio.netpolicy"}}' "$cid")" = "none true " ] &&
	ok "allow_internet_access false: NetworkMode none, networking disabled, no egress link" ||
	{ status=$(docker inspect -f '{{.HostConfig.NetworkMode}} {{.Config.NetworkDisabled}}' "$cid" 2>&1); bad "closed container"; }
UDP='import socket,errno\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\ntry:\n s.connect((\"198.51.100.7\",9)); print(\"connected\")\nexcept OSError as e: print(errno.errorcode[e.errno])'
start "$CLOSED_ID" "$CLOSED_TOK" "{\"process\":{\"cmd\":\"python3\",\"args\":[\"-c\",\"$UDP\"]}}"
frame '0 {"event":{"data":{"stdout":"ENETUNREACH\n"}}}' &&
	ok "inside it, a UDP connect() to 198.51.100.7 fails with ENETUNREACH" || bad "closed UDP"

# --- E2B's open network: no deny control ---
create open '"timeout":1800'
OPEN_ID=$ID OPEN_TOK=$TOK
cid=$(containers "$T-open")
[ "$status" = 201 ] && [ -n "$cid" ] &&
	[ "$(docker inspect -f '{{.HostConfig.NetworkMode}} {{.Config.NetworkDisabled}} {{index .Config.Labels "io.sandboxio.netpolicy"}}' "$cid")" = "none false veth" ] &&
	ok "no deny control: the sandbox gets the open allowlist (an egress link)" || bad "open container"
start "$OPEN_ID" "$OPEN_TOK" "{\"process\":{\"cmd\":\"python3\",\"args\":[\"-c\",\"$UDP\"]}}"
frame '0 {"event":{"data":{"stdout":"connected\n"}}}' &&
	ok "inside it, a UDP connect() to 198.51.100.7 has a route (no packet sent)" || bad "open UDP"
# E2B always denies private ranges: the open network has no route into them.
# (Read from the sandbox's routing table; nothing is sent anywhere.)
ROUTES='import socket,struct\nr=[l.split() for l in open(\"/proc/net/route\").read().splitlines()[1:]]\nn=lambda h: int(h,16)\nfor a in (\"10.1.2.3\",\"172.16.0.1\",\"192.168.1.1\",\"100.64.0.1\",\"198.51.100.7\"):\n x=struct.unpack(\"<I\",socket.inet_aton(a))[0]\n print(a, any(x & n(f[7]) == n(f[1]) for f in r))'
start "$OPEN_ID" "$OPEN_TOK" "{\"process\":{\"cmd\":\"python3\",\"args\":[\"-c\",\"$ROUTES\"]}}"
frame '0 {"event":{"data":{"stdout":"10.1.2.3 False\n172.16.0.1 False\n192.168.1.1 False\n100.64.0.1 False\n198.51.100.7 True\n"}}}' &&
	ok "the open network routes public prefixes only, none of E2B's private ranges" || bad "open routes"
api GET "/sandboxes/$OPEN_ID"
[ "$status" = 200 ] &&
	json 'd["sandboxID"] == "'"$OPEN_ID"'" and d["state"] == "running" and d["cpuCount"] == 1 and d["memoryMB"] == 512 and d["diskSizeMB"] == 1024 and d["metadata"]["name"] == "open" and d["envdAccessToken"] == "'"$OPEN_TOK"'" and d["startedAt"].endswith("Z") and d["endAt"] > d["startedAt"] and d["allowInternetAccess"] is None' &&
	ok "GET /sandboxes/{id}: SandboxDetail (limits, metadata, token, times)" || bad "detail"

# --- envd: authentication ---
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H 'X-Access-Token: nope' "$URL/files?path=x")
[ "$status" = 401 ] && json 'd["code"] == 401 and d["message"].startswith("unauthorized access")' &&
	ok "envd with a wrong access token: 401 with envd's body" || bad "wrong access token"
start "$OPEN_ID" "" "$(bash_cmd '"echo x"')"
[ "$status" = 401 ] && ! grep -q '"x' "$work/stream" && ok "Process.Start without the access token: 401" || bad "Start no token"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" "$URL/health")
[ "$status" = 204 ] && ok "GET /health: 204 without a token" || bad "health"

# --- Process.Start ---
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"echo hi; echo err >&2; exit 3"')" -H 'Connect-Timeout-Ms: 60000'
[ "$status" = 200 ] && [ "$(head -1 "$work/frames")" = '0 {"event":{"start":{"pid":3}}}' ] &&
	stdout_is $'hi\n' && [ "$("$PY" "$H" out "$work/stream" stderr)" = err ] &&
	frame '0 {"event":{"end":{"error":"exit status 3","exitCode":3,"exited":true,"status":"exit status 3"}}}' &&
	[ "$(tail -1 "$work/frames")" = '2 {}' ] &&
	ok "Start: start (pid 3: the sandbox's third), stdout, stderr, end exit 3, end of stream {}" || bad "Start exit 3"
start "$OPEN_ID" "$OPEN_TOK" '{"process":{"cmd":"/bin/bash","args":["-c","echo $A $B; pwd"],"envs":{"A":"1","B":"two"},"cwd":"/home/user/sub/.."},"stdin":false}'
stdout_is $'1 two\n/workspace\n' &&
	frame '0 {"event":{"end":{"exited":true,"status":"exit status 0"}}}' &&
	ok "envs reach the run; cwd /home/user is /workspace; exit 0 omits exitCode" || bad "Start envs/cwd"
start "$OPEN_ID" "$OPEN_TOK" '{"process":{"cmd":"/bin/bash","args":["-c","echo x"]},"frobnicate":true}'
[ "$status" = 200 ] && [ "$(wc -l <"$work/frames")" = 1 ] &&
	json_line=$(cat "$work/frames") && [[ $json_line == '2 {"error":{"code":"invalid_argument","message":"unmarshal into process.StartRequest: unknown field \"frobnicate\""}}' ]] &&
	ok "an unknown field in StartRequest: 200 + end-of-stream invalid_argument, as connect-go" ||
	bad "Start unknown field"
start "$OPEN_ID" "$OPEN_TOK" '{"process":{"cmd":"/bin/bash","args":["-c","echo x"],"user":"root"}}'
grep -q 'unknown field \\"user\\"' "$work/frames" && ok "an unknown ProcessConfig field: invalid_argument" ||
	bad "ProcessConfig unknown field"
# envd's user "root" (Basic root:) runs only in the e2b flavour (serve --e2b-image).
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"id -u"')" -H 'Authorization: Basic cm9vdDo='
grep -aq 'permission_denied' "$work/stream" && grep -aq -- "started with --e2b-image" "$work/stream" &&
	ok "user root without --e2b-image: permission_denied naming the option" || bad "Start as root"
# A terminal (server/pty.c): its bytes come as "pty" data, never stdout.
start "$OPEN_ID" "$OPEN_TOK" '{"process":{"cmd":"/bin/sh","args":["-c","stty size; [ -t 0 ] && [ -t 2 ] && echo on-a-tty; exit 4"]},"pty":{"size":{"cols":81,"rows":25}}}'
[ "$("$PY" "$H" out "$work/stream" pty; echo .)" = $'25 81\r\non-a-tty\r\n.' ] && stdout_is '' &&
	frame '0 {"event":{"end":{"error":"exit status 4","exitCode":4,"exited":true,"status":"exit status 4"}}}' &&
	ok "a pty of 25 by 81: the program's stdio is the terminal, its bytes pty data, end exit 4" || bad "pty"
start "$OPEN_ID" "$OPEN_TOK" '{"process":{"cmd":"/bin/sh"},"pty":{"size":{"cols":5000,"rows":24}}}'
grep -q '^2 {"error":{"code":"invalid_argument","message":"pty.size of 24 rows and 5000 columns' "$work/frames" &&
	ok "a pty wider than 4096 columns: invalid_argument" || bad "pty too wide"
start "$OPEN_ID" "$OPEN_TOK" '{"process":{"cmd":"/bin/sh"},"pty":{"size":{"cols":80,"rows":24,"depth":8}}}'
grep -q 'unmarshal into process.PTY.Size: unknown field \\"depth\\"' "$work/frames" &&
	ok "an unknown field in PTY.Size: invalid_argument" || bad "pty unknown field"
unary "$OPEN_ID" "$OPEN_TOK" SendInput '{"process":{"pid":4242},"input":{"stdin":"eA==","pty":"eA=="}}'
[ "$status" = 400 ] && json 'd["code"] == "invalid_argument" and "exactly one of stdin and pty" in d["message"]' &&
	ok "SendInput holding both stdin and pty: invalid_argument" || bad "SendInput both"
unary "$OPEN_ID" "$OPEN_TOK" Update '{"process":{"pid":4242},"pty":{"size":{"cols":80,"rows":24}}}'
[ "$status" = 404 ] && json 'd["code"] == "not_found"' && ok "Update of an unknown pid: not_found" ||
	bad "Update unknown pid"
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"sleep 20"')" -H 'Connect-Timeout-Ms: 1500'
frame '0 {"event":{"end":{"error":"signal: killed","exitCode":-1,"status":"signal: killed"}}}' &&
	grep -q '^2 {"error":{"code":"deadline_exceeded"' "$work/frames" &&
	ok "Connect-Timeout-Ms passes: end signal: killed, then deadline_exceeded" || bad "deadline"
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"echo alive"')"
frame '0 {"event":{"data":{"stdout":"alive\n"}}}' && ok "the sandbox outlives a command's deadline" ||
	bad "alive after deadline"
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"sleep 2.5; echo late"')" -H 'Keepalive-Ping-Interval: 1'
grep -q '^0 {"event":{"keepalive":{}}}$' "$work/frames" && frame '0 {"event":{"data":{"stdout":"late\n"}}}' &&
	ok "Keepalive-Ping-Interval 1: keepalive events while the command is silent" || bad "keepalive"
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"head -c 100000 /dev/zero"')"
"$PY" - "$work/stream" <<'EOF' && ok "100000 bytes of output arrive in data frames of at most 32 KiB" || bad "chunks"
import base64, json, struct, sys
d = open(sys.argv[1], "rb").read()
i, total, sizes = 0, 0, []
while i < len(d):
    n = struct.unpack(">I", d[i + 1:i + 5])[0]
    j = json.loads(d[i + 5:i + 5 + n])
    i += 5 + n
    out = j.get("event", {}).get("data", {}).get("stdout")
    if out:
        b = base64.b64decode(out)
        sizes.append(len(b))
        total += len(b)
sys.exit(0 if total == 100000 and max(sizes) <= 32768 and len(sizes) >= 4 else 1)
EOF

# stdin: the run starts once CloseStdin arrives.
"$PY" "$H" enc '{"process":{"cmd":"cat"},"stdin":true,"tag":"cat1"}' >"$work/stdin.bin"
curl -s -o "$work/stdin.out" -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/connect+json' --data-binary @"$work/stdin.bin" "$URL/process.Process/Start" &
cpid=$!
for _ in $(seq 1 1200); do
	unary "$OPEN_ID" "$OPEN_TOK" List '{}'
	grep -q '"tag":"cat1"' "$work/body" && break
	sleep 0.1
done
json 'd["processes"][0]["config"]["cmd"] == "cat" and d["processes"][0]["tag"] == "cat1"' &&
	ok "List shows the waiting process with its config and tag" || bad "List"
spid=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["processes"][0]["pid"])' "$work/body" 2>/dev/null)
unary "$OPEN_ID" "$OPEN_TOK" SendInput "{\"process\":{\"pid\":$spid},\"input\":{\"stdin\":\"aGVsbG8K\"}}"
s1=$status
unary "$OPEN_ID" "$OPEN_TOK" SendInput '{"process":{"tag":"cat1"},"input":{"stdin":"d29ybGQK"}}'
s2=$status
unary "$OPEN_ID" "$OPEN_TOK" CloseStdin "{\"process\":{\"pid\":$spid}}"
s3=$status
wait $cpid
cp "$work/stdin.out" "$work/stream"
"$PY" "$H" dec "$work/stream" >"$work/frames"
[ "$s1$s2$s3" = 200200200 ] && stdout_is $'hello\nworld\n' &&
	frame '0 {"event":{"end":{"exited":true,"status":"exit status 0"}}}' &&
	ok "stdin true: SendInput (by pid and by tag), CloseStdin, then the run reads it all" ||
	{ status="$s1/$s2/$s3"; cp "$work/frames" "$work/body"; bad "stdin"; }
# A terminal waiting its turn: the size asked before it starts is the size
# it starts with, and its input sent before then waits for it. A command
# holds the sandbox until its stdin closes, so the terminal is seen waiting
# however slow the machine is.
"$PY" "$H" enc '{"process":{"cmd":"sh","args":["-c","echo up; exec cat >/dev/null"]},"stdin":true,"tag":"hold"}' >"$work/hold.bin"
curl -s --no-buffer -o "$work/hold.out" -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/connect+json' --data-binary @"$work/hold.bin" "$URL/process.Process/Start" &
hpid=$!
for _ in $(seq 1 1200); do
	[ "$("$PY" "$H" out "$work/hold.out" stdout 2>/dev/null)" = up ] && break
	sleep 0.1
done
"$PY" "$H" enc '{"process":{"cmd":"sh","args":["-c","read line; stty size; echo \"got $line\""]},"pty":{"size":{"cols":80,"rows":24}},"tag":"term"}' >"$work/term.bin"
curl -s --no-buffer -o "$work/term.out" -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/connect+json' --data-binary @"$work/term.bin" "$URL/process.Process/Start" &
tpid=$!
for _ in $(seq 1 1200); do
	unary "$OPEN_ID" "$OPEN_TOK" List '{}'
	grep -q '"tag":"term"' "$work/body" && break
	sleep 0.1
done
unary "$OPEN_ID" "$OPEN_TOK" Update '{"process":{"tag":"term"},"pty":{"size":{"cols":77,"rows":33}}}'
s1=$status
unary "$OPEN_ID" "$OPEN_TOK" SendInput '{"process":{"tag":"term"},"input":{"pty":"aGVsbG8K"}}'
s2=$status
unary "$OPEN_ID" "$OPEN_TOK" Update '{"process":{"tag":"term"},"pty":{"size":{"cols":0,"rows":33}}}'
s3=$status
unary "$OPEN_ID" "$OPEN_TOK" CloseStdin '{"process":{"tag":"hold"}}'
s4=$status
wait $hpid $tpid
cp "$work/term.out" "$work/stream"
"$PY" "$H" dec "$work/stream" >"$work/frames"
[ "$s1$s2$s3$s4" = 200200400200 ] &&
	[ "$("$PY" "$H" out "$work/stream" pty; echo .)" = $'hello\r\n33 77\r\ngot hello\r\n.' ] &&
	frame '0 {"event":{"end":{"exited":true,"status":"exit status 0"}}}' &&
	ok "a waiting terminal starts with the size asked meanwhile (33 by 77) and reads the input sent meanwhile; a size of 0 is refused" ||
	{ status="$s1/$s2/$s3/$s4"; cp "$work/frames" "$work/body"; bad "waiting terminal"; }
"$PY" -c 'import base64, sys; sys.stdout.write("{\"process\":{\"pid\":4242},\"input\":{\"pty\":\"%s\"}}" % base64.b64encode(b"x" * ((1 << 20) + 1)).decode())' >"$work/big-input.json"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/json' --data-binary @"$work/big-input.json" "$URL/process.Process/SendInput")
[ "$status" = 400 ] && json 'd["code"] == "invalid_argument" and "larger than 1048576 bytes" in d["message"]' &&
	ok "a terminal's input over 1 MiB in one SendInput: invalid_argument naming the bound" || bad "pty input bound"
unary "$OPEN_ID" "$OPEN_TOK" SendInput '{"process":{"pid":4242},"input":{"stdin":"eA=="}}'
[ "$status" = 404 ] && body_is '{"code":"not_found","message":"process with pid 4242 not found"}' &&
	ok "SendInput to an unknown pid: 404 not_found, as a unary Connect error" || bad "unknown pid"
unary "$OPEN_ID" "$OPEN_TOK" List '{"bogus":1}'
[ "$status" = 400 ] && json 'd["code"] == "invalid_argument"' && ok "an unknown field in a unary call: 400 invalid_argument" ||
	bad "unary unknown field"

# One run per sandbox: a second Start waits its turn. The first runs until
# the test lets it go (a file made beside the server's path, with docker
# exec), so the second is seen waiting however slow the machine is.
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"while [ ! -e /tmp/first-go ]; do sleep 0.1; done; echo first"')" >/dev/null &
fpid=$!
for _ in $(seq 1 2400); do
	unary "$OPEN_ID" "$OPEN_TOK" List '{}'
	grep -q '"pid"' "$work/body" && break
	sleep 0.05
done
"$PY" "$H" enc "$(bash_cmd '"echo second"')" >"$work/second.bin"
curl -s -o "$work/second.out" -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/connect+json' --data-binary @"$work/second.bin" "$URL/process.Process/Start" &
spid2=$!
n=0
for _ in $(seq 1 2400); do
	unary "$OPEN_ID" "$OPEN_TOK" List '{}'
	n=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1])).get("processes",[])))' "$work/body")
	[ "$n" = 2 ] && break
	sleep 0.05
done
docker exec "$cid" touch /tmp/first-go
wait $fpid $spid2
"$PY" "$H" dec "$work/second.out" >"$work/frames"
[ "$n" = 2 ] && frame '0 {"event":{"data":{"stdout":"second\n"}}}' &&
	ok "a second Start waits while the first runs, then runs" || { status=$n; bad "one run at a time"; }

# --- Files ---
printf 'line one\nline two\n' >"$work/up.txt"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-F "file=@$work/up.txt;filename=/home/user/docs/up.txt" "$URL/files?path=%2Fhome%2Fuser%2Fdocs%2Fup.txt")
[ "$status" = 200 ] && body_is '[{"path":"/workspace/docs/up.txt","name":"up.txt","type":"file"}]' &&
	ok "POST /files multipart: 200 [{path,name,type}], parents made" || bad "upload multipart"
status=$(curl -s -o "$work/down" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	"$URL/files?path=docs/up.txt")
[ "$status" = 200 ] && cmp -s "$work/down" "$work/up.txt" && ok "GET /files returns the same bytes" ||
	{ cp "$work/down" "$work/body"; bad "download"; }
head -c 3000 /dev/urandom >"$work/rand.bin"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/octet-stream' --data-binary @"$work/rand.bin" "$URL/files?path=/tmp/r.bin")
curl -s -o "$work/down" -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" "$URL/files?path=/tmp/r.bin"
[ "$status" = 200 ] && cmp -s "$work/down" "$work/rand.bin" && ok "an octet-stream upload of binary bytes round-trips" ||
	bad "octet-stream"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	"$URL/files?path=/workspace/missing.txt")
[ "$status" = 404 ] && body_is '{"message":"path '"'"'/workspace/missing.txt'"'"' does not exist","code":404}' &&
	ok "GET /files of a missing file: 404 with envd's body" || bad "download missing"
truncate -s $((64 * 1024 * 1024 + 1)) "$work/huge.bin"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/octet-stream' --data-binary @"$work/huge.bin" "$URL/files?path=/tmp/huge")
rm -f "$work/huge.bin"
[ "$status" = 413 ] && json 'd["code"] == 413' && ok "an upload over 64 MiB: 413" || bad "upload 413"
status=$(curl -s -o "$work/down" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	"$URL/files?path=docs/../docs/./up.txt")
[ "$status" = 200 ] && cmp -s "$work/down" "$work/up.txt" && ok "a path with . and .. segments is cleaned as envd does" ||
	{ cp "$work/down" "$work/body"; bad "dotdot"; }

cat >"$work/conn.py" <<'EOF2'
import socket, sys, time
host, port = sys.argv[2].rsplit("/", 1)[1].rsplit(":", 1)
port = int(port)
key = sys.argv[3].encode()
GUARD = 120  # a hang guard only: each step below waits on an event

def conn():
    return socket.create_connection((host, port), timeout=GUARD)

def request(s, auth):
    s.sendall(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\n" + (b"X-API-Key: " + key + b"\r\n" if auth else b"") + b"\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < n:
        rest += s.recv(4096)
    return int(head.split(b" ")[1])

def closed(s):
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

if sys.argv[1] == "per-client":
    # Four idle connections from 127.0.0.1 fill its bound; a fifth is closed
    # unanswered; another loopback address is not affected.
    idle = [conn() for _ in range(4)]
    for s in idle:
        s.sendall(b"G")  # accepted: each is in the server's hands
    fifth = conn()
    try:
        r = request(fifth, True)
    except (ConnectionResetError, BrokenPipeError):
        r = None
    other = socket.socket()
    other.bind(("127.0.0.2", 0))
    other.settimeout(GUARD)
    other.connect((host, port))
    r2 = request(other, True)
    sys.exit(0 if r is None and r2 == 200 else 1)
elif sys.argv[1] == "auth-timeout":
    # Opened together: the one that never authenticates is closed by the
    # server; the authenticated one still answers after that.
    a, b = conn(), conn()
    first = request(b, True)
    gone = closed(a)
    again = request(b, True)
    sys.exit(0 if first == 200 and gone and again == 200 else 1)
elif sys.argv[1] == "trickle":
    # A request whose headers come one byte at a time, each well within the
    # idle timeout, is still shut down once --auth-timeout has passed since
    # its accept (polled: at most GUARD seconds as a hang guard).
    s = conn()
    s.setblocking(False)
    line = b"GET /v2/sandboxes HTTP/1.1\r\nX-Pad: " + b"a" * 100000
    t_end = time.monotonic() + GUARD
    for b in line:
        if time.monotonic() > t_end:
            sys.exit(1)
        try:
            s.send(bytes([b]))
            if s.recv(1) == b"":
                sys.exit(0)
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            sys.exit(0)
        time.sleep(0.5)  # the trickle under test, not a synchronisation
    sys.exit(1)
elif sys.argv[1] == "discard":
    # A chunked upload past its bound (64 MiB), authenticated: closed after
    # a bounded discard, long before 512 MiB is read.
    s = conn()
    s.sendall(b"POST /files?path=/tmp/big HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: " + sys.argv[4].encode() +
              b"\r\nX-Access-Token: " + key + b"\r\nContent-Type: application/octet-stream\r\n" +
              b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"x" * 65536 + b"\r\n"
    sent = 0
    try:
        while sent < (512 << 20):
            s.sendall(chunk)
            sent += 65536
    except (BrokenPipeError, ConnectionResetError):
        pass
    print(sent >> 20)
    # At least the bound was read (the sandbox is there), far less than 512.
    sys.exit(0 if (64 << 20) <= sent < (128 << 20) else 1)
EOF2

# Special files are refused, and nothing is left holding the sandbox.
# dl PATH: GET /files into $work/down (and $work/body); status.
dl() {
	status=$(curl -s -o "$work/down" -w '%{http_code}' --max-time 300 -H "E2b-Sandbox-Id: $OPEN_ID" \
		-H "X-Access-Token: $OPEN_TOK" "$URL/files?path=$1")
	cp "$work/down" "$work/body"
}
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"mkfifo /workspace/fifo; ln -s /dev/zero /workspace/zlink; ln -s loop2 /workspace/loop1; ln -s loop1 /workspace/loop2; mkdir -p /workspace/dir; truncate -s 1T /workspace/sparse; echo made"')"
frame '0 {"event":{"data":{"stdout":"made\n"}}}' || bad "special files made"
for f in /dev/zero /dev/urandom /workspace/fifo /workspace/zlink; do
	dl "$f"
	[ "$status" = 400 ] && json '"not a regular file" in d["message"]' &&
		ok "GET /files?path=$f: 400 not a regular file" || bad "download $f"
done
start "$OPEN_ID" "$OPEN_TOK" "$(bash_cmd '"echo ok"')"
frame '0 {"event":{"data":{"stdout":"ok\n"}}}' && ok "after them the sandbox runs a command at once (the slot is free)" ||
	bad "slot after special files"
dl /workspace/sparse
[ "$status" = 413 ] && json '"larger than 64 MiB" in d["message"]' &&
	ok "a 1 TiB sparse file: 413, its read ended at the bound" || bad "sparse download"
dl /workspace/loop1
[ "$status" = 400 ] && json '"symbolic link" in d["message"]' && ok "a symlink loop: 400 in the server's words" ||
	bad "symlink loop"
dl /workspace/dir
[ "$status" = 400 ] && json '"is a directory" in d["message"]' && ok "a directory: 400" || bad "download dir"
dl docs/up.txt/x
[ "$status" = 404 ] && json 'd["message"] == "path \x27/workspace/docs/up.txt/x\x27 does not exist"' &&
	ok "a path through a file (not a directory): 404" || bad "not a directory"
dl "/tmp/$(printf 'n%.0s' $(seq 1 300))"
[ "$status" = 400 ] && json '"longer than 255" in d["message"]' && ok "a name over 255 bytes: 400" || bad "name too long"
dl /proc/self/mem
[ "$status" = 400 ] && json 'd["message"] == "path \x27/proc/self/mem\x27 could not be read as a file"' &&
	ok "/proc/self/mem: 400 with the server's message, no stderr of the sandbox" || bad "proc self mem"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/octet-stream' --data-binary x "$URL/files?path=/workspace/fifo")
[ "$status" = 400 ] && json '"not a regular file" in d["message"]' && ok "an upload onto a FIFO: 400" || bad "upload fifo"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: application/octet-stream' --data-binary x "$URL/files?path=/etc/passwd")
[ "$status" = 403 ] && json 'd["message"] == "path \x27/etc/passwd\x27 cannot be written by the sandbox user"' &&
	ok "an upload the sandbox user may not write: 403 in the server's words" || bad "upload denied"
# Content holding "--boundary" that does not start a line is content.
printf -- '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="m.txt"\r\n\r\nab--XyZ--cd\n--XyZ\r\nend\r\n--XyZ--\r\n' >"$work/mp.bin"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $OPEN_ID" -H "X-Access-Token: $OPEN_TOK" \
	-H 'Content-Type: multipart/form-data; boundary=XyZ' --data-binary @"$work/mp.bin" "$URL/files?path=/workspace/m.txt")
s1=$status
dl /workspace/m.txt
[ "$s1" = 200 ] && [ "$status" = 200 ] && [ "$(od -An -c "$work/down" | tr -d ' \n')" = 'ab--XyZ--cd\n--XyZ\r\nend' ] &&
	ok "multipart content holding --boundary not after CRLF is accepted as content" || { status="$s1/$status"; bad "multipart boundary in content"; }

mib=$("$PY" "$work/conn.py" discard "$URL" "$OPEN_TOK" "$OPEN_ID")
[ $? -eq 0 ] && ok "a chunked upload past 64 MiB: the connection closes after ${mib} MiB sent, not 4 times the bound" ||
	{ status="$mib MiB"; bad "bounded discard"; }

# --- Timeouts ---
api POST "/sandboxes/$OPEN_ID/timeout" '{"timeout":2400}'
[ "$status" = 400 ] && json '"fixed at create" in d["message"]' &&
	ok "POST timeout past the lifetime fixed at create: 400 saying so" || bad "timeout extend"
api POST "/sandboxes/$OPEN_ID/timeout" '{"timeout":90}'
s1=$status
api GET "/sandboxes/$OPEN_ID"
"$PY" - "$work/body" <<'EOF' && [ "$s1" = 204 ] && ok "POST timeout 90 (within the lifetime): 204, endAt moves" || bad "timeout shorten"
import json, sys
from datetime import datetime
d = json.load(open(sys.argv[1]))
p = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
sys.exit(0 if 0 < (p(d["endAt"]) - datetime.now(p(d["endAt"]).tzinfo)).total_seconds() <= 91 else 1)
EOF
api POST "/v2/sandboxes/$OPEN_ID/connect" '{}'
[ "$status" = 200 ] && json 'd["sandboxID"] == "'"$OPEN_ID"'" and d["envdAccessToken"] == "'"$OPEN_TOK"'"' &&
	ok "POST /v2/sandboxes/{id}/connect of a running sandbox: 200 Sandbox" || bad "connect"
api POST "/sandboxes/$OPEN_ID/pause" '{"memory":false}'
[ "$status" = 400 ] && json '"memory false" in d["message"]' &&
	ok "pause without memory: 400, refused rather than a pause that keeps it" || bad "pause memory false"
api POST "/sandboxes/nosuchsandbox0000000/pause" '{}'
[ "$status" = 404 ] && ok "pause of an unknown sandbox: 404" || bad "pause unknown"
api POST "/sandboxes/$OPEN_ID/resume" '{}'
[ "$status" = 409 ] && json '"already running" in d["message"]' &&
	ok "resume of a running sandbox: 409" || bad "resume running"

# --- Listing ---
api GET "/v2/sandboxes?metadata=$("$PY" -c 'import urllib.parse as u; print(u.quote(u.urlencode({u.quote("name"): u.quote("open")})))')"
[ "$status" = 200 ] && json '[s["sandboxID"] for s in d] == ["'"$OPEN_ID"'"] and d[0]["state"] == "running" and d[0]["metadata"]["name"] == "open" and "envdAccessToken" not in d[0]' &&
	ok "GET /v2/sandboxes?metadata= (SDK double encoding) finds exactly it" || bad "list metadata"
api GET "/v2/sandboxes?metadata=name%3Dopen%26io.sandboxio.tenant%3D$T-closed"
[ "$status" = 200 ] && body_is '[]' && ok "metadata filter pairs are ANDed" || bad "list AND"
api GET "/v2/sandboxes?limit=1&metadata=io.sandboxio.tenant%3D$T-closed"
[ "$status" = 200 ] && json 'len(d) == 1' && ! grep -qi '^x-next-token' "$work/hdr" &&
	ok "limit 1 with one match: no X-Next-Token" || bad "list one"
api GET "/v2/sandboxes?limit=1"
tok1=$(sed -n 's/^[Xx]-[Nn]ext-[Tt]oken: \([^\r]*\)\r\?$/\1/p' "$work/hdr")
first=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["sandboxID"])' "$work/body" 2>/dev/null)
api GET "/v2/sandboxes?limit=1&nextToken=$tok1"
second=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["sandboxID"])' "$work/body" 2>/dev/null)
[ -n "$tok1" ] && [ -n "$first" ] && [ -n "$second" ] && [ "$first" != "$second" ] &&
	ok "limit 1 pages with X-Next-Token / nextToken" || bad "pagination"
api GET "/v2/sandboxes?limit=0"
[ "$status" = 400 ] && ok "limit 0: 400" || bad "limit 0"
api GET "/v2/sandboxes?state=paused"
[ "$status" = 200 ] && body_is '[]' && ok "state=paused: [] (none is paused)" || bad "state paused"
api GET "/v2/sandboxes"
[ "$status" = 200 ] && json 'len(d) >= 2 and all(d[i]["startedAt"] >= d[i + 1]["startedAt"] for i in range(len(d) - 1)) and d[0]["startedAt"] > d[-1]["startedAt"]' &&
	ok "GET /v2/sandboxes: newest first" || bad "list newest first"
api GET "/v2/sandboxes?order=asc"
[ "$status" = 200 ] && json 'len(d) >= 2 and all(d[i]["startedAt"] <= d[i + 1]["startedAt"] for i in range(len(d) - 1))' &&
	ok "order=asc: oldest first" || bad "list asc"
api GET "/sandboxes/$OPEN_ID"
open_at=$("$PY" "$H" get "$work/body" startedAt)
api GET "/v2/sandboxes?startedAfter=$open_at&metadata=name%3Dopen"
[ "$status" = 200 ] && json '[s["sandboxID"] for s in d] == ["'"$OPEN_ID"'"]' &&
	ok "startedAfter of a sandbox's own startedAt ($open_at) includes it" || bad "startedAfter inclusive"
api GET /templates/aliases/base
[ "$status" = 200 ] && json 'd["templateID"] == "base"' && ok "GET /templates/aliases/base: 200 (Template.exists)" ||
	bad "alias base"
api GET "/templates/aliases/sandboxio%2Fpython:3.11"
[ "$status" = 200 ] && ok "an image the engine has is a template: 200" || bad "alias image"
api GET "/templates/aliases/sandboxio%2Fno-such-image:0"
[ "$status" = 404 ] && json '"not found" in d["message"]' && ok "an image the engine lacks: 404" || bad "alias missing"
api GET "/sandboxes?metadata=name%3Dclosed"
[ "$status" = 200 ] && json '[s["sandboxID"] for s in d] == ["'"$CLOSED_ID"'"]' &&
	ok "the deprecated GET /sandboxes filters too" || bad "list v1"

# --- Ending sandboxes ---
api DELETE "/sandboxes/$CLOSED_ID"
s1=$status
api GET "/sandboxes/$CLOSED_ID"
s2=$status
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $CLOSED_ID" -H "X-Access-Token: $CLOSED_TOK" "$URL/health")
[ "$s1$s2$status" = 204404502 ] && [ -z "$(containers "$T-closed")" ] &&
	ok "DELETE: 204; then REST 404, envd 502, and no container" || { status="$s1/$s2/$status"; bad "delete"; }

# A lifetime that ran out before the create was done proves nothing: again
# with twice as long.
for life in 2 4 8 16 32 64; do
	create expire "\"timeout\":$life,\"allow_internet_access\":false"
	[ -n "$ID" ] && break
	wait_gone none expire || true
done
EXP_ID=$ID
[ -n "$EXP_ID" ] && wait_gone "$EXP_ID" expire &&
	status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $EXP_ID" "$URL/health") &&
	[ "$status" = 502 ] && ok "a sandbox past its timeout is closed: REST 404, envd 502, no container" ||
	bad "expiry"

create signal '"timeout":3600'
SIG_ID=$ID SIG_TOK=$TOK
rm -f "$work/stream"
start "$SIG_ID" "$SIG_TOK" "$(bash_cmd '"echo started; sleep 60"')" >/dev/null &
bpid=$!
# Once "started" (base64) has streamed, the command is running.
for _ in $(seq 1 2400); do
	grep -q 'c3RhcnRlZAo=' "$work/stream" 2>/dev/null && break
	sleep 0.05
done
unary "$SIG_ID" "$SIG_TOK" SendSignal '{"process":{"pid":1},"signal":"SIGNAL_SIGKILL"}'
s1=$status
wait $bpid
"$PY" "$H" dec "$work/stream" >"$work/frames"
[ "$s1" = 200 ] && frame '0 {"event":{"end":{"error":"signal: killed","exitCode":-1,"status":"signal: killed"}}}' &&
	[ "$(tail -1 "$work/frames")" = '2 {}' ] && wait_gone "$SIG_ID" signal &&
	ok "SendSignal SIGKILL: end signal: killed; the whole sandbox ends (404, no container)" ||
	{ status="$s1/$status"; bad "SendSignal"; }

create gone '"timeout":3600'
GONE_ID=$ID GONE_TOK=$TOK
start "$GONE_ID" "$GONE_TOK" "$(bash_cmd '"sleep 60"')" --max-time 1
[ -n "$GONE_ID" ] && wait_gone "$GONE_ID" gone &&
	ok "a client that goes away (no deadline) cancels the run, which ends the sandbox" || bad "client gone"

# --- Connections: their number per client, time before authentication, refused bodies ---
# A second server with small bounds; no sandbox is made on it.
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$KEYFILE" --max-client-connections 4 \
	--auth-timeout 2 >"$work/server2.out" 2>"$work/server2.err" &
server2_pid=$!
URL2=$(ready_url "$work/server2.out" "$server2_pid")
if [ -n "$URL2" ]; then
	"$PY" "$work/conn.py" per-client "$URL2" "$KEY" &&
		ok "--max-client-connections 4: a fifth connection from one address is closed; another address is served" ||
		{ status=-; bad "per-client limit"; }
	"$PY" "$work/conn.py" auth-timeout "$URL2" "$KEY" &&
		ok "--auth-timeout 2: an unauthenticated idle connection is closed, an authenticated one stays" ||
		{ status=-; bad "auth timeout"; }
	"$PY" "$work/conn.py" trickle "$URL2" "$KEY" &&
		ok "--auth-timeout 2: headers trickled a byte at a time are cut off too" ||
		{ status=-; bad "trickled headers"; }
else
	status=-
	bad "second server: $(cat "$work/server2.err")"
fi
kill -TERM "$server2_pid" 2>/dev/null
wait "$server2_pid" 2>/dev/null

# --- A download never gives out a secret value of the server's own ---
# A third server holds a value of its own (an OTLP header, which the
# redactor hides; the collector address is loopback, where nothing listens).
# A file holding that value is refused whole, not sent with holes in it.
DLS=sbxdlsecret0123456789abcd
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9 OTEL_EXPORTER_OTLP_HEADERS="authorization=$DLS" \
	"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$KEYFILE" \
	>"$work/server3.out" 2>"$work/server3.err" &
server3_pid=$!
URL_MAIN=$URL
URL=$(ready_url "$work/server3.out" "$server3_pid")
if [ -n "$URL" ]; then
	create dlsecret '"timeout":3600'
	printf 'before %s after\n' "$DLS" >"$work/dls.txt"
	printf 'plain bytes\n' >"$work/dlplain.txt"
	for f in dls dlplain; do
		curl -s -o /dev/null -H "E2b-Sandbox-Id: $ID" -H "X-Access-Token: $TOK" \
			-F "file=@$work/$f.txt;filename=/home/user/$f.txt" "$URL/files?path=%2Fhome%2Fuser%2F$f.txt"
	done
	status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $ID" -H "X-Access-Token: $TOK" \
		"$URL/files?path=%2Fhome%2Fuser%2Fdls.txt")
	[ "$status" = 403 ] && grep -q "secret value" "$work/body" && ! grep -q "$DLS" "$work/body" &&
		ok "a download of a file holding the server's own secret: 403, nothing of it sent" ||
		bad "download holding a secret"
	status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $ID" -H "X-Access-Token: $TOK" \
		"$URL/files?path=%2Fhome%2Fuser%2Fdlplain.txt")
	[ "$status" = 200 ] && cmp -s "$work/body" "$work/dlplain.txt" &&
		ok "a download of a file without it, on the same server: 200, the bytes" || bad "plain download"
	api DELETE "/sandboxes/$ID"
else
	status=-
	bad "third server: $(cat "$work/server3.err")"
fi
URL=$URL_MAIN
kill -TERM "$server3_pid" 2>/dev/null
wait "$server3_pid" 2>/dev/null

# --- An operator's tier: --tier gvisor makes every sandbox under gVisor ---
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$KEYFILE" --tier gvisor \
	>"$work/server4.out" 2>"$work/server4.err" &
server4_pid=$!
URL=$(ready_url "$work/server4.out" "$server4_pid")
if [ -n "$URL" ]; then
	# E2B's default network is open, an allowlist: runsc's host network mode.
	create gvopen '"timeout":3600'
	[ "$status" = 201 ] && header_is Sandboxio-Tier gvisor &&
		[ "$(docker inspect -f '{{.HostConfig.Runtime}}' "$(containers "$T-gvopen")")" = runsc-hostinet ] &&
		ok "serve --tier gvisor: an open network gets runsc-hostinet" || bad "open network under --tier gvisor"
	api DELETE "/sandboxes/$ID"
	create gv '"timeout":3600,"allow_internet_access":false'
	[ "$status" = 201 ] && header_is Sandboxio-Tier gvisor &&
		[ "$(docker inspect -f '{{.HostConfig.Runtime}}' "$(containers "$T-gv")")" = runsc ] &&
		ok "serve --tier gvisor: 201, Sandboxio-Tier: gvisor, the container runs under runsc" ||
		bad "create under --tier gvisor"
	start "$ID" "$TOK" '{"process":{"cmd":"cat","args":["/proc/version"]}}'
	kernel=$("$PY" "$H" out "$work/stream" stdout)
	[ "$status" = 200 ] && [ -n "$kernel" ] && [ "$kernel" != "$(cat /proc/version)" ] &&
		ok "a command there sees gVisor's kernel, not the host's" ||
		{ status="$status: $kernel"; bad "kernel under --tier gvisor"; }
	api DELETE "/sandboxes/$ID"
	[ "$status" = 204 ] && wait_gone "$ID" gv && ok "and it is removed at kill" || bad "kill under --tier gvisor"
else
	status=-
	bad "--tier gvisor server: $(cat "$work/server4.err")"
fi
kill -TERM "$server4_pid" 2>/dev/null
wait "$server4_pid" 2>/dev/null
"$CLI" serve --api e2b --listen 127.0.0.1:0 --api-key-file "$KEYFILE" --tier vm >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 125 ] && grep -q -- "--tier 'vm'" "$work/err" && [ ! -s "$work/out" ] &&
	ok "serve --tier with an unknown tier: 125, naming it" || { status=$rc; bad "--tier vm"; }
URL=$URL_MAIN

# --- envd's filesystem service, from the hostile side (a sandbox of its own) ---
create fs '"timeout":1800'
FS_ID=$ID
FS_TOK=$TOK
# fsc METHOD JSON: a unary filesystem.Filesystem call on that sandbox.
fsc() {
	status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $FS_ID" \
		-H "X-Access-Token: $FS_TOK" -H 'Content-Type: application/json' \
		--data-binary "$2" "$URL/filesystem.Filesystem/$1")
}
fsc Stat '{"path":"/workspace/../../etc/./hostname"}'
[ "$status" = 200 ] && json 'd["entry"]["path"] == "/etc/hostname" and d["entry"]["type"] == "FILE_TYPE_FILE"' &&
	ok "Stat of a path with ..: cleaned to /etc/hostname inside the sandbox" || bad "fs dotdot stat"
fsc Remove '{"path":"/workspace/../.."}'
[ "$status" = 400 ] && json 'd["code"] == "invalid_argument" and "root directory" in d["message"]' &&
	ok "Remove of /workspace/../..: 400, the root is never removed" || bad "fs dotdot root"
fsc MakeDir '{"path":"../../etc/sbx-new"}'
[ "$status" = 403 ] && json 'd["code"] == "permission_denied" and "/etc/sbx-new" in d["message"]' &&
	ok "MakeDir of ../../etc/sbx-new: 403 permission_denied (the sandbox user's rules)" || bad "fs dotdot mkdir"
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"ln -s /etc /workspace/etcl && echo linked"')"
frame '0 {"event":{"data":{"stdout":"linked\n"}}}' || bad "fs symlink made"
fsc Remove '{"path":"/workspace/etcl/hostname"}'
s1=$status
cp "$work/body" "$work/body1"
fsc Move '{"source":"/workspace/etcl/hostname","destination":"/workspace/stolen"}'
s2=$status
fsc Stat '{"path":"/etc/hostname"}'
[ "$s1" = 403 ] && [ "$s2" = 403 ] && [ "$status" = 200 ] &&
	"$PY" "$H" json "$work/body1" 'd["code"] == "permission_denied" and "/workspace/etcl/hostname" in d["message"] and ("read-only" in d["message"] or "not permitted" in d["message"])' &&
	ok "Remove and Move through a symlink out of the writable places: 403, the target stays" ||
	{ status="$s1/$s2/$status"; bad "fs symlink out"; }
fsc Stat '{"path":"/workspace/etcl"}'
[ "$status" = 200 ] && json 'd["entry"]["type"] == "FILE_TYPE_SYMLINK" and d["entry"]["symlinkTarget"] == "/etc" and d["entry"]["permissions"] == "Lrwxrwxrwx"' &&
	ok "Stat of the symlink: type symlink, target /etc, Go's mode string" || bad "fs symlink stat"
fsc Remove '{"path":"/workspace/etcl"}'
s1=$status
fsc Stat '{"path":"/etc/hostname"}'
[ "$s1" = 200 ] && [ "$status" = 200 ] && ok "Remove of a symlink to a directory removes the link, not its target" ||
	{ status="$s1/$status"; bad "fs symlink remove"; }
fsc Stat '{"path":"/workspace/x","extra":1}'
[ "$status" = 400 ] && json 'd["code"] == "invalid_argument" and "unknown field \"extra\"" in d["message"]' &&
	ok "a filesystem request with an unknown field: 400 invalid_argument naming it" || bad "fs unknown field"
fsc ListDir '{"path":"/workspace","depth":100000}'
[ "$status" = 400 ] && json '"depth" in d["message"]' && ok "ListDir past the depth bound: 400 naming depth" ||
	bad "fs depth bound"
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"mkdir /tmp/flood && cd /tmp/flood && seq 1 10001 | xargs touch && echo flooded"')"
frame '0 {"event":{"data":{"stdout":"flooded\n"}}}' || bad "fs flood made"
fsc ListDir '{"path":"/tmp/flood"}'
[ "$status" = 429 ] && json 'd["code"] == "resource_exhausted" and "more than 10000 entries" in d["message"]' &&
	ok "ListDir of 10001 entries: 429 resource_exhausted naming the bound" || bad "fs list flood"
fsc Remove '{"path":"/tmp/flood"}'
[ "$status" = 200 ] && body_is '{}' && ok "Remove of the flooded directory: 200 {}" || bad "fs flood remove"
# --- WatchDir floods: at most 8 watches a sandbox; a client that does not
# read gets its stream ended past 4096 queued events, not the server's memory.
cat >"$work/watch.py" <<'EOF2'
import json, socket, struct, sys, urllib.parse
url, tok, sid = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
u = urllib.parse.urlsplit(url)

def watch(path):
    s = socket.create_connection((u.hostname, u.port))
    body = json.dumps({"path": path}).encode()
    env = b"\0" + struct.pack(">I", len(body)) + body
    s.sendall(b"POST /filesystem.Filesystem/WatchDir HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: " + sid +
              b"\r\nX-Access-Token: " + tok + b"\r\nContent-Type: application/connect+json\r\n" +
              b"Connect-Protocol-Version: 1\r\nContent-Length: " + str(len(env)).encode() + b"\r\n\r\n" + env)
    return s

def done(got, words):
    if b'"error"' in got:
        return b"}}" in got[got.index(b'"error"'):]
    return any(w in got for w in words)

def until(s, *words):
    # reads until one of words, or a whole error frame, is there (the
    # socket's timeout guards a hang)
    got = b""
    s.settimeout(300)
    while not done(got, words):
        b = s.recv(65536)
        if not b:
            break
        got += b
    return got

socks = [watch("/tmp/w%d" % i) for i in range(8)]
for s in socks:
    if b'{"start":{}}' not in until(s, b'{"start":{}}'):
        print("no start"); sys.exit(1)
ninth = until(watch("/tmp/w8"))
if b"resource_exhausted" not in ninth or b"8 watches" not in ninth:
    print("ninth: %r" % ninth[-300:]); sys.exit(1)
for s in socks[1:]:
    s.close()
# The seven clients are gone: their watches stop and give back their
# places. Polled (the program sees its stop file within a second); the
# bound is a hang guard only.
import time
guard = time.monotonic() + 120
again = []
for i in range(1, 8):
    while True:
        s = watch("/tmp/w%d" % i)
        got = until(s, b'{"start":{}}')
        if b'{"start":{}}' in got:
            again.append(s)
            break
        s.close()
        if b"8 watches" not in got or time.monotonic() > guard:
            print("not given back: %r" % got[-300:]); sys.exit(1)
        time.sleep(0.2)
for s in again:
    s.close()
print("ready", flush=True)
sys.stdin.readline()  # the flood has been made; only now is w0 read
rest = until(socks[0])
ok = b"resource_exhausted" in rest and (b"4096 events" in rest or b"inotify queue" in rest)
print("ended" if ok else "tail: %r" % rest[-300:])
sys.exit(0 if ok else 1)
EOF2
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"mkdir -p /tmp/w0 /tmp/w1 /tmp/w2 /tmp/w3 /tmp/w4 /tmp/w5 /tmp/w6 /tmp/w7 /tmp/w8 && echo dirs"')"
frame '0 {"event":{"data":{"stdout":"dirs\n"}}}' || bad "watch dirs made"
# The helper talks over two FIFOs: "ready" once its watches stand, then it
# waits for a line before it reads w0, and says how w0 ended.
mkfifo "$work/wq.in" "$work/wq.out"
"$PY" "$work/watch.py" "$URL" "$FS_TOK" "$FS_ID" <"$work/wq.in" >"$work/wq.out" 2>&1 &
wpid=$!
exec 7>"$work/wq.in" 8<"$work/wq.out"
line=
read -r line <&8
if [ "$line" = ready ]; then
	ok "8 watches run at once; a 9th: resource_exhausted naming the bound; a client that goes away gives its place back"
	start "$FS_ID" "$FS_TOK" "$(bash_cmd '"cd /tmp/w0 && seq 1 60000 | xargs touch && echo flooded"')"
	frame '0 {"event":{"data":{"stdout":"flooded\n"}}}' || bad "watch flood made"
	echo go >&7
	line=
	read -r line <&8
	[ "$line" = ended ] && ok "a watch whose client does not read, under 120000 events: ended with resource_exhausted" ||
		{ status="$line"; bad "watch flood"; }
else
	status="$line"
	bad "watch bound"
fi
exec 7>&- 8<&-
wait "$wpid" 2>/dev/null
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"rm -rf /tmp/w0; echo cleaned"')"
frame '0 {"event":{"data":{"stdout":"cleaned\n"}}}' && ok "the sandbox runs on after the watches" || bad "after watches"
# A client that does not read, under fewer events than the bound but long
# names (a recursive watch of a deep tree): the queue is bounded in bytes
# too, as a command's stream is, and the stream ends with resource_exhausted.
cat >"$work/watchb.py" <<'EOF2'
import json, socket, struct, sys, urllib.parse
url, tok, sid = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
u = urllib.parse.urlsplit(url)
s = socket.create_connection((u.hostname, u.port))
body = json.dumps({"path": "/tmp/wb", "recursive": True}).encode()
env = b"\0" + struct.pack(">I", len(body)) + body
s.sendall(b"POST /filesystem.Filesystem/WatchDir HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: " + sid +
          b"\r\nX-Access-Token: " + tok + b"\r\nContent-Type: application/connect+json\r\n" +
          b"Connect-Protocol-Version: 1\r\nContent-Length: " + str(len(env)).encode() + b"\r\n\r\n" + env)

def until(word):
    # reads until word or a whole error frame (the timeout guards a hang)
    got = b""
    s.settimeout(300)
    while True:
        if b'"error"' in got and b"}}" in got[got.index(b'"error"'):]:
            break
        if word in got:
            break
        b = s.recv(65536)
        if not b:
            break
        got += b
    return got

if b'{"start":{}}' not in until(b'{"start":{}}'):
    print("no start", flush=True); sys.exit(1)
print("ready", flush=True)
sys.stdin.readline()  # the files have been made; only now is the watch read
rest = until(b'/f1800"')
ok = b"resource_exhausted" in rest and b"1 MiB" in rest
print("ended" if ok else "tail: %r" % rest[-300:], flush=True)
sys.exit(0 if ok else 1)
EOF2
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"d=/tmp/wb; for i in $(seq 15); do d=$d/$(printf %0250d 0); done; mkdir -p $d && echo deep"')"
frame '0 {"event":{"data":{"stdout":"deep\n"}}}' || bad "watch deep tree made"
mkfifo "$work/wb.in" "$work/wb.out"
"$PY" "$work/watchb.py" "$URL" "$FS_TOK" "$FS_ID" <"$work/wb.in" >"$work/wb.out" 2>&1 &
wpid=$!
exec 7>"$work/wb.in" 8<"$work/wb.out"
line=
read -r line <&8
if [ "$line" = ready ]; then
	start "$FS_ID" "$FS_TOK" "$(bash_cmd '"d=/tmp/wb; for i in $(seq 15); do d=$d/$(printf %0250d 0); done; cd $d && seq -f f%g 1 1800 | xargs touch && echo flooded"')"
	frame '0 {"event":{"data":{"stdout":"flooded\n"}}}' || bad "watch long names made"
	echo go >&7
	line=
	read -r line <&8
fi
[ "$line" = ended ] &&
	ok "a watch whose client does not read, under 3600 events of 3.7 KiB names: ended past 1 MiB queued" ||
	{ status="$line"; bad "watch byte bound"; }
exec 7>&- 8<&-
wait "$wpid" 2>/dev/null
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"rm -rf /tmp/wb; echo cleaned"')"
frame '0 {"event":{"data":{"stdout":"cleaned\n"}}}' || bad "after the byte bound"
# A client that reads, under more events than the output cap of a run
# (16 MiB) holds: the stream ends with resource_exhausted naming the cap
# before it, rather than going silent with the watch left running. The
# files are made 100 at a time, each batch once the client has read the
# last, so that its queue stays under its own bound.
cat >"$work/watchc.py" <<'EOF2'
import json, socket, struct, sys, time, urllib.parse
url, tok, sid = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
u = urllib.parse.urlsplit(url)
s = socket.create_connection((u.hostname, u.port))
body = json.dumps({"path": "/tmp/wc", "recursive": True}).encode()
env = b"\0" + struct.pack(">I", len(body)) + body
s.sendall(b"POST /filesystem.Filesystem/WatchDir HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: " + sid +
          b"\r\nX-Access-Token: " + tok + b"\r\nContent-Type: application/connect+json\r\n" +
          b"Connect-Protocol-Version: 1\r\nContent-Length: " + str(len(env)).encode() + b"\r\n\r\n" + env)
s.settimeout(10)
tail = b""

def until(word):
    # reads until word or a whole error frame; keeps only a tail. A stream
    # gone silent still gets keepalives, so the hang guard is overall.
    global tail
    guard = time.monotonic() + 600
    while time.monotonic() < guard:
        e = tail.find(b'"error"')
        if e >= 0 and b"}}" in tail[e:]:
            return "error", tail[e:]
        if word in tail:
            tail = tail[tail.index(word) + len(word):]
            return "word", b""
        try:
            b = s.recv(65536)
        except socket.timeout:
            continue
        if not b:
            return "closed", tail
        tail = (tail + b)[-65536:]
    return "silent", tail[-200:]

if until(b'{"start":{}}')[0] != "word":
    print("no start", flush=True); sys.exit(1)
print("ready", flush=True)
for line in sys.stdin:
    n = int(line)
    how, rest = until(b'/f%d","type":"EVENT_TYPE_CHMOD"' % n)
    if how == "word":
        print("more", flush=True)
        continue
    ok = how == "error" and b"resource_exhausted" in rest and b"output cap" in rest
    print("ended" if ok else "%s: %r" % (how, rest[-300:]), flush=True)
    sys.exit(0 if ok else 1)
print("never ended", flush=True)
EOF2
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"d=/tmp/wc; for i in $(seq 15); do d=$d/$(printf %0250d 0); done; mkdir -p $d && echo deep"')"
frame '0 {"event":{"data":{"stdout":"deep\n"}}}' || bad "watch cap tree made"
rm -f "$work/wb.in" "$work/wb.out"
mkfifo "$work/wb.in" "$work/wb.out"
"$PY" "$work/watchc.py" "$URL" "$FS_TOK" "$FS_ID" <"$work/wb.in" >"$work/wb.out" 2>&1 &
wpid=$!
exec 7>"$work/wb.in" 8<"$work/wb.out"
line=
read -r line <&8
if [ "$line" = ready ]; then
	for b in $(seq 1 30); do
		start "$FS_ID" "$FS_TOK" "$(bash_cmd '"d=/tmp/wc; for i in $(seq 15); do d=$d/$(printf %0250d 0); done; cd $d && seq -f f%g '$((b * 100 - 99))' '$((b * 100))' | xargs touch && echo made"')"
		frame '0 {"event":{"data":{"stdout":"made\n"}}}' || { bad "watch cap files made"; break; }
		echo $((b * 100)) >&7
		line=
		read -r line <&8
		[ "$line" = more ] || break
	done
fi
[ "$line" = ended ] &&
	ok "a watch past the 16 MiB output cap of a run: ended with resource_exhausted naming it, not silent" ||
	{ status="$line"; bad "watch output cap"; }
exec 7>&- 8<&-
wait "$wpid" 2>/dev/null
start "$FS_ID" "$FS_TOK" "$(bash_cmd '"rm -rf /tmp/wc; echo cleaned"')"
frame '0 {"event":{"data":{"stdout":"cleaned\n"}}}' || bad "after the output cap"

# --- gzip uploads: inflated within the bound; a bomb gets 413 ---
"$PY" -c 'import gzip,sys; sys.stdout.buffer.write(gzip.compress(b"gzipped body\n"))' >"$work/small.gz"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $FS_ID" -H "X-Access-Token: $FS_TOK" \
	-H 'Content-Type: application/octet-stream' -H 'Content-Encoding: gzip' --data-binary @"$work/small.gz" \
	"$URL/files?path=/workspace/gz.txt")
s1=$status
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $FS_ID" -H "X-Access-Token: $FS_TOK" \
	"$URL/files?path=/workspace/gz.txt")
[ "$s1" = 200 ] && [ "$status" = 200 ] && body_is 'gzipped body' &&
	ok "a gzip upload (Content-Encoding: gzip): stored inflated" || { status="$s1/$status"; bad "gzip upload"; }
# 128 MiB of zeros in about 128 KiB: past the 64 MiB bound once inflated.
"$PY" -c '
import sys, zlib
c = zlib.compressobj(9, zlib.DEFLATED, 31)
out = sys.stdout.buffer
for _ in range(128):
    out.write(c.compress(bytes(1 << 20)))
out.write(c.flush())' >"$work/bomb.gz"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $FS_ID" -H "X-Access-Token: $FS_TOK" \
	-H 'Content-Type: application/octet-stream' -H 'Content-Encoding: gzip' --data-binary @"$work/bomb.gz" \
	"$URL/files?path=/workspace/bomb")
s1=$status
cp "$work/body" "$work/body1"
fsc Stat '{"path":"/workspace/bomb"}'
[ "$s1" = 413 ] && "$PY" "$H" json "$work/body1" '"once decompressed" in d["message"]' && [ "$status" = 404 ] &&
	ok "a gzip bomb ($(($(stat -c %s "$work/bomb.gz") >> 10)) KiB to 128 MiB): 413 once decompressed, nothing written" ||
	{ status="$s1/$status"; bad "gzip bomb"; }
head -c 100 "$work/small.gz" | head -c 20 >"$work/trunc.gz"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $FS_ID" -H "X-Access-Token: $FS_TOK" \
	-H 'Content-Type: application/octet-stream' -H 'Content-Encoding: gzip' --data-binary @"$work/trunc.gz" \
	"$URL/files?path=/workspace/trunc")
[ "$status" = 400 ] && json '"gzip" in d["message"]' && ok "a truncated gzip body: 400 naming gzip" || bad "gzip truncated"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H "E2b-Sandbox-Id: $FS_ID" -H "X-Access-Token: $FS_TOK" \
	-H 'Content-Type: application/octet-stream' -H 'Content-Encoding: br' --data-binary x "$URL/files?path=/workspace/br")
[ "$status" = 415 ] && json '"br" in d["message"]' && ok "Content-Encoding br: 415 naming it" || bad "encoding br"

# --- Signed /files URLs: the sandbox's own token signs; a forgery is refused ---
# sig PATH OP USER SECRET [EXP]: E2B's v1 signature, percent-encoded for a query.
sig() { "$PY" "$H" sig "$@"; }
# signed METHOD QUERY [CURL ARGS...]: /files with no token, routed by Host as a browser would.
signed() {
	local m=$1 q=$2
	shift 2
	status=$(curl -s -o "$work/body" -w '%{http_code}' -X "$m" -H "Host: 49983-$FS_ID.e2b.test" "$@" \
		"$URL/files?$q")
}
exp=$(($(date +%s) + 600))
signed GET "path=%2Fworkspace%2Fgz.txt&signature=$(sig /workspace/gz.txt read "" "$FS_TOK" "$exp")&signature_expiration=$exp"
[ "$status" = 200 ] && body_is 'gzipped body' && ok "a download URL signed with the sandbox's token: 200, no header needed" ||
	bad "signed download"
signed POST "path=%2Fworkspace%2Fsigned.txt&username=user&signature=$(sig /workspace/signed.txt write user "$FS_TOK")" \
	-H 'Content-Type: application/octet-stream' --data-binary 'signed up'
[ "$status" = 200 ] && ok "an upload URL signed for write (no expiry, username given): 200" || bad "signed upload"
signed GET "path=%2Fworkspace%2Fgz.txt&signature=$(sig /workspace/gz.txt read "" "$KEY" "$exp")&signature_expiration=$exp"
[ "$status" = 401 ] && json 'd["message"] == "invalid signature"' &&
	ok "a URL signed with the API key instead of the sandbox's token: 401 invalid signature" || bad "signed with key"
signed GET "path=%2Fworkspace%2Fsigned.txt&signature=$(sig /workspace/gz.txt read "" "$FS_TOK" "$exp")&signature_expiration=$exp"
[ "$status" = 401 ] && json 'd["message"] == "invalid signature"' &&
	ok "a signature for another path: 401 (the path is signed)" || bad "signed other path"
signed GET "path=%2Fworkspace%2Fgz.txt&signature=$(sig /workspace/gz.txt write "" "$FS_TOK" "$exp")&signature_expiration=$exp"
[ "$status" = 401 ] && ok "a write signature used to read: 401 (the operation is signed)" || bad "signed other op"
signed GET "path=%2Fworkspace%2Fgz.txt&signature=$(sig /workspace/gz.txt read "" "$FS_TOK" "$exp")&signature_expiration=$((exp + 1))"
[ "$status" = 401 ] && json 'd["message"] == "invalid signature"' &&
	ok "an altered expiration: 401 invalid signature" || bad "signed altered expiration"
old=$(($(date +%s) - 10))
signed GET "path=%2Fworkspace%2Fgz.txt&signature=$(sig /workspace/gz.txt read "" "$FS_TOK" "$old")&signature_expiration=$old"
[ "$status" = 401 ] && json '"expired" in d["message"]' && ok "an expired signature: 401 saying expired" || bad "signed expired"
signed GET "path=%2Fworkspace%2Fgz.txt&signature=v1_forged"
[ "$status" = 401 ] && ok "a forged signature: 401" || bad "signed forged"
signed GET "path=%2Fworkspace%2Fgz.txt"
[ "$status" = 401 ] && json '"access token" in d["message"]' && ok "neither token nor signature: 401" || bad "unsigned"

api DELETE "/sandboxes/$FS_ID"

# --- Shutdown ---
create last '"timeout":1800'
[ -n "$(containers "$T-last")" ] || bad "last create"
kill -TERM "$server_pid"
wait "$server_pid"
rc=$?
server_pid=
left=$(docker ps -a --filter "label=io.sandboxio.tenant" --format '{{.Label "io.sandboxio.tenant"}}' |
	grep -c "^$T-")
[ $rc -eq 0 ] && [ "$left" = 0 ] && ok "SIGTERM: exit 0, every sandbox closed" ||
	{ status="rc=$rc left=$left"; bad "shutdown"; }
grep -qF "$KEY" "$work/server.out" "$work/server.err" && { status=-; bad "the key was printed"; }

# Whatever a failed test left behind.
docker ps -a --filter "label=io.sandboxio.tenant" --format '{{.ID}} {{.Label "io.sandboxio.tenant"}}' |
	while read -r c t; do
		case $t in
		"$T"-*) docker rm -f "$c" >/dev/null ;;
		esac
	done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

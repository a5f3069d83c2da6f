#!/bin/sh
# bench/run.sh: sandboxio against named peers, in one run, on the local engine.
#   (a) one-shot: create, run `true`, destroy
#       peers: `docker run --rm` with the same hardening flags; the Docker SDK
#       for Python (containers.run with the same settings)
#   (b) 100 runs of `true` in one live sandbox, per run, over the init's run
#       channel (bench/loop.c fails if a run takes docker exec instead)
#       peers: `docker exec` (CLI); the Docker SDK's exec_run; and the same
#       runs through the Python package (bench/python.py) against C and SDK
#   (c) time to first command, $RUNS times each (bench/pool.c): a take from a
#       warm pool + run `true`, against a cold create + run `true`; closing
#       is not timed. peer: `docker run --rm` from (a), whose time includes
#       the removal
#   (d) as root only: the cost of an egress allowlist at create, ms added
#       over a deny sandbox (bench/allow.c; one CIDR, no traffic sent)
#   (e) pool acquire (bench/acquire.c): sbx_pool_take() alone from a warm
#       pool, $TAKES times; then $BURST threads take at once from a full pool
#       of $BURST and run `true`: successes, misses, failures
#   (f) memory (bench/mem.c): host-side bytes of $MEM_K idle sandboxes: the
#       memory cgroup, the init's RSS, the containerd shim's RSS, and
#       dockerd's and containerd's growth per sandbox
#   (g) as root only: crun against runc, `run` of one OCI bundle made from
#       the default image (bench/crun.sh; dockerd is not reconfigured)
#   (h), (i) as root only: the e2b and modal backends against the official
#       E2B and Modal JavaScript SDKs, through the same local servers
#       (bench/remote.sh); (l) there too: a warm cell of the code
#       interpreter's API against a fresh python3 -c, both official SDKs
#   (j) where runsc is registered: the gvisor tier against the container
#       tier (one-shot, and runs in a live sandbox over the channel), and
#       against docker's own `--runtime=runsc` run and exec; idle memory of
#       gvisor sandboxes as (f) measures it (root)
#   (k) `sandboxio exec ID -- true` from the command line through the local
#       daemon, against `docker exec` and the direct path (bench/daemon.sh)
#   (m) as root only: the name check of an allow_host entry per connection
#       and per byte, against a CIDR entry for the same canary address
#       (bench/egress.c; HTTPS to a canary, tests/canary/)
# Needs hyperfine, docker (CLI), python3-docker, dockerd and the default image.
# Prints medians and ratios (sandboxio / peer); lower is better for sandboxio.
set -eu
cd "$(dirname "$0")/.."
. "${root:-.}/tests/sdk/node-env.sh"
RUNS=${RUNS:-10}
N=${N:-100}
out=$(mktemp -d)
trap 'rm -rf "$out"; [ -n "${cid:-}" ] && docker rm -f "$cid" >/dev/null 2>&1 || true' EXIT
export SANDBOXIO_INIT="${SANDBOXIO_INIT:-$PWD/build/sbx-init}"
PY=/usr/bin/python3
# The library's own dependencies, as the Makefile names them.
pkgs=$(sed -n 's/^PKGS := //p' Makefile)
cc -O2 -Iinclude -o "$out/loop" bench/loop.c build/libsandboxio.a \
	$(pkg-config --libs $pkgs) -lpthread
cc -O2 -Iinclude -o "$out/pool" bench/pool.c build/libsandboxio.a \
	$(pkg-config --libs $pkgs) -lpthread
cc -O2 -Iinclude -o "$out/acquire" bench/acquire.c build/libsandboxio.a \
	$(pkg-config --libs $pkgs) -lpthread
cc -O2 -Iinclude -o "$out/mem" bench/mem.c build/libsandboxio.a \
	$(pkg-config --libs $pkgs) -lpthread

hard="--network none --cap-drop ALL --security-opt no-new-privileges:true --read-only
 --user 1000:1000 --memory 512m --memory-swap 512m --cpus 1 --pids-limit 256
 --ulimit nofile=1024:1024 --ulimit core=0:0 --ipc private
 --tmpfs /workspace:size=939524096,uid=1000,gid=1000,mode=0700
 --tmpfs /tmp:size=67108864,mode=1777"

echo "== (a) one-shot create + run true + destroy, $RUNS runs each"
hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$out/a.json" \
	-n sandboxio "build/sandboxio run -- true" \
	-n docker-run "docker run --rm $(echo $hard) sandboxio/python:3.11 true" \
	-n docker-sdk "$PY bench/sdk.py oneshot" >/dev/null

echo "== (b) $N runs of true in one live sandbox, over the run channel (per run, ms: median min max)"
ours=$("$out/loop" "$N")
cid=$(docker run -d $(echo $hard) --label io.sandboxio.bench=peer sandboxio/python:3.11 sleep 600)
hyperfine -N --style basic --warmup 3 --runs "$N" --export-json "$out/b.json" \
	-n docker-exec "docker exec -u 1000:1000 $cid true" >/dev/null
sdk=$("$PY" bench/sdk.py exec "$cid" "$N")
pyb=$(PYTHONPATH=bindings/python "$PY" bench/python.py "$N")

echo "== (c) time to first command: pooled take + run true, cold create + run true, $RUNS each"
pool=$("$out/pool" "$RUNS" | tr '\n' ' ')

"$PY" - "$out/a.json" "$out/b.json" "$ours" "$sdk" "$pool" "$pyb" <<'PYEOF'
import json, statistics, sys
a = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
b = json.load(open(sys.argv[2]))["results"][0]
med = lambda r: statistics.median(r["times"]) * 1e3
ours_a = med(a["sandboxio"])
for peer in ("docker-run", "docker-sdk"):
    print("(a) sandboxio %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (ours_a, peer, med(a[peer]), ours_a / med(a[peer])))
ours_b = float(sys.argv[3].split()[0])
sdk_b = float(sys.argv[4].split()[0])
print("(b) sandboxio %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (ours_b, "docker-exec", med(b), ours_b / med(b)))
print("(b) sandboxio %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (ours_b, "docker-sdk", sdk_b, ours_b / sdk_b))
py_b = float(sys.argv[6].split()[0])
print("(b) python   %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (py_b, "C", ours_b, py_b / ours_b))
print("(b) python   %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (py_b, "docker-sdk", sdk_b, py_b / sdk_b))
c = [float(x) for x in sys.argv[5].split()]
pooled, cold, run = c[0], c[3], med(a["docker-run"])
print("(c) pooled   %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (pooled, "cold", cold, pooled / cold))
print("(c) pooled   %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (pooled, "docker-run", run, pooled / run))
print("(c) cold     %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (cold, "docker-run", run, cold / run))
PYEOF

if [ "$(id -u)" = 0 ]; then
	echo "== (d) egress allowlist at create: ${ALLOW_N:-20} creates + closes each, deny vs one CIDR"
	cc -O2 -Iinclude -o "$out/allow" bench/allow.c build/libsandboxio.a \
		$(pkg-config --libs $pkgs) -lpthread
	"$out/allow" "${ALLOW_N:-20}"
else
	echo "== (d) egress allowlist at create: skipped (needs root)"
fi

if [ "$(id -u)" = 0 ]; then
	echo "== (m) egress name check: ${EGRESS_ROUNDS:-5} rounds of 50 HTTPS connections and 3 downloads of 32 MiB, name vs CIDR"
	cc -O2 -D_GNU_SOURCE -Iinclude -Itests -I. -o "$out/egress" bench/egress.c \
		tests/canary/canary.c tests/canary/tls.c build/libsandboxio.a \
		$(pkg-config --libs $pkgs openssl) -lpthread
	"$out/egress" "${EGRESS_ROUNDS:-5}"
else
	echo "== (m) egress name check: skipped (needs root)"
fi

echo "== (e) pool acquire: ${TAKES:-20} takes alone from a warm pool; ${BURST:-32} concurrent takes + run true"
"$out/acquire" "${TAKES:-20}" "${BURST:-32}" | tee "$out/e.txt"
"$PY" - "$out/e.txt" "$pool" <<'PYEOF'
import sys
take = float(open(sys.argv[1]).read().split("median ")[1].split()[0])
cold = float(sys.argv[2].split()[3])
print("(e) take     %7.3f ms  %-10s %7.1f ms  ratio %.4f" % (take, "target", 5.0, take / 5.0))
print("(e) take     %7.3f ms  %-10s %7.1f ms  ratio %.5f" % (take, "cold (c)", cold, take / cold))
PYEOF

if [ "$(id -u)" = 0 ]; then
	echo "== (f) memory of ${MEM_K:-8} idle default sandboxes, seen from the host"
	"$out/mem" "${MEM_K:-8}"
	echo "== (g) crun vs runc: run true from one OCI bundle of the default image, ${RUNS} each"
	RUNS=$RUNS bench/crun.sh
else
	echo "== (f) memory: skipped (needs root)"
	echo "== (g) crun vs runc: skipped (needs root)"
fi

if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
	echo "== (j) the gvisor tier against the container tier, and docker's own runsc: one-shot ($RUNS each), $N runs in a live sandbox"
	hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$out/j.json" \
		-n container "build/sandboxio run -- true" \
		-n gvisor "build/sandboxio run --tier gvisor -- true" \
		-n docker-runsc "docker run --rm --runtime=runsc $(echo $hard) sandboxio/python:3.11 true" >/dev/null
	gv=$(SBX_BENCH_TIER=gvisor "$out/loop" "$N")
	gcid=$(docker run -d --runtime=runsc $(echo $hard) --label io.sandboxio.bench=peer sandboxio/python:3.11 sleep 600)
	hyperfine -N --style basic --warmup 3 --runs "$N" --export-json "$out/jb.json" \
		-n docker-exec-runsc "docker exec -u 1000:1000 $gcid true" >/dev/null
	docker rm -f "$gcid" >/dev/null
	"$PY" - "$out/j.json" "$out/jb.json" "$ours" "$gv" <<'PYEOF'
import json, statistics, sys
j = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
jb = json.load(open(sys.argv[2]))["results"][0]
med = lambda r: statistics.median(r["times"]) * 1e3
g, c, d = med(j["gvisor"]), med(j["container"]), med(j["docker-runsc"])
print("(j) gvisor   %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (g, "container", c, g / c))
print("(j) gvisor   %7.1f ms  %-10s %7.1f ms  ratio %.2f" % (g, "docker-runsc", d, g / d))
gl, cl = float(sys.argv[4].split()[0]), float(sys.argv[3].split()[0])
print("(j) gvisor   %7.2f ms  %-10s %7.2f ms  ratio %.2f  (a run in a live sandbox)" % (gl, "container", cl, gl / cl))
print("(j) gvisor   %7.2f ms  %-10s %7.1f ms  ratio %.3f" % (gl, "exec-runsc", med(jb), gl / med(jb)))
PYEOF
	if [ "$(id -u)" = 0 ]; then
		echo "== (j) memory of ${MEM_K:-8} idle gvisor sandboxes (the cgroup holds the Sentry, the gofer and the init)"
		SBX_BENCH_TIER=gvisor "$out/mem" "${MEM_K:-8}" | sed -n '1,2p'
	fi
else
	echo "== (j) the gvisor tier: skipped (runsc is not registered with dockerd)"
fi

if [ "$(id -u)" = 0 ] && command -v node >/dev/null 2>&1 && [ -d tests/sdk/node_modules ]; then
	RUNS=$RUNS bench/remote.sh
else
	echo "== (h), (i) remote backends against the official SDKs: skipped (need root, node and tests/sdk/node_modules)"
fi

N=$N bench/daemon.sh

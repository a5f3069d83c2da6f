#!/bin/sh
# setup.sh: makes a Debian machine ready to build and test sandboxio.
# Installs the build and test packages (if any is missing), starts dockerd
# when no daemon answers on its socket, and builds the project. Idempotent.
set -eu
cd "$(dirname "$0")/.."

PKGS="build-essential pkg-config clang-format clang libclang-rt-14-dev libcurl4-openssl-dev libjansson-dev
libcmocka-dev libmicrohttpd-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
libnl-3-dev libnl-route-3-dev libnftables-dev libseccomp-dev libcap-dev
docker.io mmdebstrap iproute2 nftables python3 python3-docker curl
python3-grpcio python3-protobuf protobuf-compiler"

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

sock=/var/run/docker.sock
if ! curl -fsS --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; then
	echo "setup: starting dockerd"
	if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
		$SUDO systemctl start docker
	else
		$SUDO sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
	fi
	i=0
	until curl -fsS --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 60 ]; then
			echo "setup: dockerd did not answer on $sock within 60 s; see /var/log/dockerd.log" >&2
			exit 1
		fi
		sleep 1
	done
fi

make -j"$(nproc)" all

# The official SDKs the E2B and Modal doubles are proven with (tests/sdk),
# pinned by tests/sdk/package-lock.json; needs Node.js 20 or later.
if [ ! -d tests/sdk/node_modules/modal ] || [ ! -d tests/sdk/node_modules/e2b ]; then
	if ! command -v npm >/dev/null 2>&1; then
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm
	fi
	# npm install from the lock file, not npm ci: npm ci refuses this lock
	# file because it lists cbor-extract's optional per-platform packages
	# without their entries.
	(cd tests/sdk && npm install --no-audit --no-fund --no-save)
fi

#!/usr/bin/env bash
# tests/contract/run-podman.sh: the local engine on Podman (docs/backends.md,
# "Podman"), rootful and rootless, each `podman system service` started here
# on a socket under a temporary directory and pointed at with DOCKER_HOST.
#
# Rootful (as root, runtime runc: crun refuses this host's cgroup v1
# hierarchy): the default image and the E2B flavour's are loaded from
# dockerd (`docker save | podman load`) unless Podman has them, then the
# contract suite of the six controls (test_controls), the teardown suite,
# the pools' suite, root runs (test_docker_root), pause
# (test_docker_pause), programs that leave their stdin unread
# (test_docker_channel's case), the official E2B SDK's proofs through
# `sandboxio serve --api e2b` (tests/sdk/run-e2b.sh, its default server's
# scripts) and the
# daemon's suite (the fast run path over the init's channel, adoption after the
# daemon's death, the reaper: tests/cli/test_daemon.sh) run against it,
# and `sandboxio doctor` must name Podman.
#
# Rootless (as an unprivileged user made here, with subuid and subgid
# ranges of its own and an XDG_RUNTIME_DIR): doctor must say rootless, and
# every create that needs what rootless Podman cannot give is refused
# naming what is missing (an allowlist: the host's network namespace and
# nftables; on a cgroup v1 host: the caps; on cgroup v2: the sandbox's own
# host uid, outside the ids it maps), with no container left behind.
#
# usage: run-podman.sh BUILD_DIR   (BUILD_DIR holds sandboxio and tests/)
set -euo pipefail

B=${1:?usage: run-podman.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CLI=${SBX_CLI:-$ROOT/$B/sandboxio}
export SANDBOXIO_INIT=${SANDBOXIO_INIT:-$ROOT/build/sbx-init}
IMAGE=sandboxio/python:3.11
E2B_IMAGE=sandboxio/e2b-base:2 # the E2B server's flavour (scripts/test.sh builds it)
USER_RL=sbx-podman-rl
TMP=$(mktemp -d /tmp/sbx-podman.XXXXXX)
chmod 0755 "$TMP"
PIDS=()
pass=0
fail=0

cleanup() {
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	# The rootless service re-executes itself in its user namespace, so
	# the pid started is not the server's: it is found by its socket,
	# which is this run's own.
	pkill -TERM -f "system service --time=0 unix://$TMP/" 2>/dev/null || true
	# The rootless service leaves a pause process (catatonit) holding its
	# user namespace, named in its runtime directory.
	local pp
	pp=$(cat "$TMP/rl-run/libpod/tmp/pause.pid" 2>/dev/null || true)
	if [ -n "$pp" ] && [ "$(cat "/proc/$pp/comm" 2>/dev/null)" = catatonit ]; then
		kill "$pp" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

ok() {
	pass=$((pass + 1))
	echo "ok   $*"
}
bad() {
	fail=$((fail + 1))
	echo "FAIL $*"
}

if ! command -v podman >/dev/null; then
	echo "run-podman: podman is not installed (scripts/setup.sh installs it)" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "run-podman: needs root (a rootful service, a user for the rootless one)" >&2
	exit 1
fi

# Starts a service and waits until it answers /_ping. $1: socket; the rest:
# the command that serves it.
start_service() {
	local sock=$1
	shift
	# In a directory of its own: conmon marks an OOM-killed container with
	# a file "oom" in its working directory.
	(cd "$TMP" && exec "$@") >"$sock.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 1 600); do
		if curl -fsS --unix-socket "$sock" http://d/_ping >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "${PIDS[-1]}" 2>/dev/null; then
			echo "run-podman: the service on $sock exited:" >&2
			cat "$sock.log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "run-podman: the service on $sock never answered" >&2
	return 1
}

# Whether a container labelled as ours is listed on the engine at $1.
ours_left() {
	curl -fsS --unix-socket "$1" \
		'http://d/v1.41/containers/json?all=1&filters=%7B%22label%22%3A%5B%22io.sandboxio.managed-by%3Dsandboxio%22%5D%7D' |
		python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
}

# ===== Rootful =====
ROOTFUL=$TMP/rootful.sock
start_service "$ROOTFUL" podman --runtime runc system service --time=0 "unix://$ROOTFUL"
export DOCKER_HOST=unix://$ROOTFUL
# Rootful services share Podman's storage: what was there before is not ours.
before=$(ours_left "$ROOTFUL")
for img in "$IMAGE" "$E2B_IMAGE"; do
	if ! podman --url "$DOCKER_HOST" image exists "$img"; then
		# From dockerd, whatever DOCKER_HOST says (it names Podman here).
		DOCKER_HOST=unix:///var/run/docker.sock docker save "$img" |
			podman --url "$DOCKER_HOST" load >/dev/null
	fi
done
out=$("$CLI" doctor 2>&1 || true)
if grep -q 'Podman 4\?[0-9.]*.*rootful' <<<"$out"; then
	ok "rootful: doctor names Podman, rootful"
else
	bad "rootful: doctor does not name rootful Podman: $out"
fi
for t in test_controls test_docker_teardown test_docker_pool test_docker_root test_docker_pause; do
	echo "== $B/tests/contract/$t on rootful Podman"
	if SBX_CLI=$CLI "$ROOT/$B/tests/contract/$t"; then
		ok "rootful: $t"
	else
		bad "rootful: $t"
	fi
done
# Programs that end without reading their stdin, over docker exec: each
# gives its output and exit (Podman lost them when stdin was in flight at
# the exec's end). The rest of test_docker_channel reads dockerd's own
# records (its socket's path, ExecIDs, which Podman keeps after an exec).
echo "== $B/tests/contract/test_docker_channel (unread stdin) on rootful Podman"
if SBX_TEST_ONLY=test_engine_channel__unread_stdin SBX_CLI=$CLI \
	"$ROOT/$B/tests/contract/test_docker_channel"; then
	ok "rootful: unread stdin over docker exec"
else
	bad "rootful: unread stdin over docker exec"
fi
# The E2B-compatible server under the official SDK's proofs (the scripts
# read containers on the engine's socket, DOCKER_SOCKET).
echo "== tests/sdk/run-e2b.sh on rootful Podman"
if DOCKER_SOCKET=$ROOTFUL SBX_CLI=$CLI \
	SBX_E2B_SCRIPTS="e2b.mjs e2b-parity.mjs e2b-ci.mjs e2b-pause.mjs e2b-pty.mjs e2b-ports.mjs" \
	bash "$ROOT/tests/sdk/run-e2b.sh"; then
	ok "rootful: the E2B SDK's proofs through sandboxio serve"
else
	bad "rootful: the E2B SDK's proofs through sandboxio serve"
fi
# The daemon and its runs over the init's channel.
echo "== tests/cli/test_daemon.sh on rootful Podman"
if SBX_TEST_ENGINE=$ROOTFUL SBX_CLI=$CLI bash "$ROOT/tests/cli/test_daemon.sh"; then
	ok "rootful: the daemon's suite"
else
	bad "rootful: the daemon's suite"
fi
n=$(ours_left "$ROOTFUL")
[ "$n" = "$before" ] && ok "rootful: no sandbox left" ||
	bad "rootful: $((n - before)) sandboxes left"
left=$(find /run/sandboxio/seccomp -name 'sbx-*.json' 2>/dev/null | wc -l)
[ "$left" = "$before" ] && ok "rootful: no seccomp profile file left" ||
	bad "rootful: $((left - before)) seccomp profile files left"

# ===== Rootless =====
if ! id "$USER_RL" >/dev/null 2>&1; then
	useradd --system --create-home --shell /usr/sbin/nologin "$USER_RL"
fi
for f in /etc/subuid /etc/subgid; do
	if ! grep -q "^$USER_RL:" "$f" 2>/dev/null; then
		# 65536 ids above every range already handed out (and below the
		# sandboxes' own range, engine/docker-int.h).
		start=$(awk -F: 'BEGIN{m=200000} {e=$2+$3; if (e>m) m=e} END{print m}' "$f" 2>/dev/null || echo 200000)
		echo "$USER_RL:$start:65536" >>"$f"
	fi
done
# A home (Podman's storage and settings) and a runtime directory of this
# run's own: rootless Podman records its runtime directory in its storage
# at the first start, and a user of the same name may have another uid in
# another root file system that shares /run (make fresh-check).
RL_HOME=$TMP/rl-home
RL_RUN=$TMP/rl-run
install -d -m 0700 -o "$USER_RL" "$RL_HOME" "$RL_RUN"
ROOTLESS=$RL_RUN/podman.sock
start_service "$ROOTLESS" runuser -u "$USER_RL" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	HOME="$RL_HOME" XDG_RUNTIME_DIR="$RL_RUN" \
	podman system service --time=0 "unix://$ROOTLESS"
export DOCKER_HOST=unix://$ROOTLESS
out=$("$CLI" doctor 2>&1 || true)
if grep -q 'Podman.*rootless' <<<"$out"; then
	ok "rootless: doctor names rootless Podman"
else
	bad "rootless: doctor does not name rootless Podman: $out"
fi
# An image of another name than the default, which the command would
# build first: the refusal comes before any image is looked at.
RL_IMAGE=localhost/sbx-podman-refused:none
out=$("$CLI" run --image "$RL_IMAGE" --allow-cidr 198.18.8.2/32 -- true 2>&1) && rc=0 || rc=$?
if [ "$rc" != 0 ] && grep -q "network namespace and nftables" <<<"$out"; then
	ok "rootless: an allowlist is refused naming what is missing"
else
	bad "rootless: an allowlist was not refused as it should be (exit $rc): $out"
fi
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
	want="outside the ids rootless Podman maps"
else
	want="cannot set memory, CPU or pids caps"
fi
out=$("$CLI" run --image "$RL_IMAGE" -- true 2>&1) && rc=0 || rc=$?
if [ "$rc" != 0 ] && grep -q "$want" <<<"$out"; then
	ok "rootless: a create is refused naming what is missing ($want)"
else
	bad "rootless: a create was not refused as it should be (exit $rc): $out"
fi
n=$(ours_left "$ROOTLESS")
[ "$n" = 0 ] && ok "rootless: no sandbox left" || bad "rootless: $n sandboxes left"

echo "run-podman: $pass passed, $fail failed"
[ "$fail" = 0 ]

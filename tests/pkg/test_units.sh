#!/bin/sh
# test_units.sh: the systemd units that ship with sandboxio.
#
# - `systemd-analyze verify` accepts sandboxio-serve.service,
#   sandboxio-daemon.service, sandboxio-reap.service and sandboxio-reap.timer, with ExecStart pointing
#   at the built command and the man pages of Documentation= findable (no
#   daemon is needed; skipped, and said so, where systemd-analyze is absent);
# - the timer fires every five minutes and starts the reap service, and no
#   unit is enabled by a package script (the Debian rules say --no-enable);
# - the server's hardening is there: a user of its own, no capabilities,
#   NoNewPrivileges, ProtectSystem=strict, ProtectHome, PrivateTmp; and
#   `systemd-analyze security --offline` rates it 2.0 or less;
# - the daemon's unit runs `sandboxio daemon` as root with exactly
#   CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_PTRACE and CAP_CHOWN and
#   NoNewPrivileges, no mount namespace (its disk mounts must be the host's)
#   and no RuntimeDirectory= (systemd would chown and remove /run/sandboxio,
#   where live sandboxes' disks are mounted);
# - the egress drop-in adds exactly CAP_NET_ADMIN, CAP_SYS_ADMIN and
#   CAP_SYS_PTRACE;
# - neither unit hides /proc (ProtectProc=, ProcSubset=): the reaper judges
#   an owner alive by /proc/PID/stat, and a hidden one would condemn every
#   other user's live sandbox; the reaper has no mount namespace of its own
#   (its unmounts must reach the host's).
#
# Usage: tests/pkg/test_units.sh [SANDBOXIO]   (default build/sandboxio)
set -eu
cd "$(dirname "$0")/../.."
cli=$PWD/${1:-build/sandboxio}
work=$PWD/build/units-test
units=packaging/systemd
rm -rf "$work"
mkdir -p "$work/units" "$work/man/man1" "$work/man/man3" "$work/man/man5"
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
ok() { echo "ok: $*"; }
# key UNIT KEY: the values of KEY in UNIT, one a line
key() { sed -n "s/^$2=//p" "$1"; }

serve=$units/sandboxio-serve.service
daemon=$units/sandboxio-daemon.service
reap=$units/sandboxio-reap.service
timer=$units/sandboxio-reap.timer

# The timer and what it starts.
[ "$(key "$timer" OnUnitActiveSec)" = 5min ] && ok "the timer fires every 5 min" ||
	fail "sandboxio-reap.timer: OnUnitActiveSec is '$(key "$timer" OnUnitActiveSec)', not 5min"
[ "$(key "$reap" ExecStart)" = "/usr/bin/sandboxio reap" ] || fail "sandboxio-reap.service does not run 'sandboxio reap'"
[ "$(key "$reap" Type)" = oneshot ] || fail "sandboxio-reap.service is not Type=oneshot"
case $(key "$serve" ExecStart) in
"/usr/bin/sandboxio serve --api e2b --listen 127.0.0.1:"*) ok "the server listens on loopback" ;;
*) fail "sandboxio-serve.service: ExecStart is '$(key "$serve" ExecStart)'" ;;
esac

[ "$(key "$daemon" ExecStart)" = "/usr/bin/sandboxio daemon" ] &&
	ok "the daemon's unit runs 'sandboxio daemon' on its default socket" ||
	fail "sandboxio-daemon.service: ExecStart is '$(key "$daemon" ExecStart)'"
[ "$(key "$daemon" CapabilityBoundingSet)" = "CAP_SYS_ADMIN CAP_NET_ADMIN CAP_SYS_PTRACE CAP_CHOWN" ] &&
	grep -qx NoNewPrivileges=yes "$daemon" &&
	ok "the daemon: CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_CHOWN, NoNewPrivileges" ||
	fail "sandboxio-daemon.service: capabilities '$(key "$daemon" CapabilityBoundingSet)'"
grep -Eq '^(RuntimeDirectory|ProtectSystem|ProtectHome|PrivateTmp|PrivateDevices|ReadOnlyPaths|ReadWritePaths|InaccessiblePaths|TemporaryFileSystem|BindPaths|ProtectKernelModules|ProtectKernelTunables|ProtectKernelLogs|ProtectControlGroups|PrivateMounts|MountFlags|DynamicUser)=' "$daemon" &&
	fail "sandboxio-daemon.service has a mount namespace or a RuntimeDirectory of its own"

# The server's hardening.
for kv in DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
	PrivateDevices=yes CapabilityBoundingSet= AmbientCapabilities= SupplementaryGroups=docker; do
	grep -qx -- "$kv" "$serve" || fail "sandboxio-serve.service lacks $kv"
done
grep -q '^User=' "$serve" && fail "sandboxio-serve.service names a User= beside DynamicUser="
[ "$(key "$reap" CapabilityBoundingSet)" = "CAP_SYS_ADMIN CAP_NET_ADMIN" ] ||
	fail "sandboxio-reap.service: capabilities '$(key "$reap" CapabilityBoundingSet)'"
grep -qx NoNewPrivileges=yes "$reap" || fail "sandboxio-reap.service lacks NoNewPrivileges=yes"
for u in "$serve" "$daemon" "$reap" "$units/serve-egress.conf"; do
	grep -Eq '^(ProtectProc|ProcSubset)=' "$u" && fail "$u hides /proc from the owner check"
done
grep -Eq '^(ProtectSystem|ProtectHome|PrivateTmp|PrivateDevices|ReadOnlyPaths|ReadWritePaths|InaccessiblePaths|TemporaryFileSystem|BindPaths|ProtectKernelModules|ProtectKernelTunables|ProtectKernelLogs|ProtectControlGroups|PrivateMounts|MountFlags)=' "$reap" &&
	fail "sandboxio-reap.service has a mount namespace of its own"
grep -q '^\[Install\]' "$reap" && fail "sandboxio-reap.service is installable on its own (the timer starts it)"
[ "$(key "$units/serve-egress.conf" AmbientCapabilities)" = "CAP_NET_ADMIN CAP_SYS_ADMIN CAP_SYS_PTRACE" ] &&
	[ "$(key "$units/serve-egress.conf" CapabilityBoundingSet)" = "CAP_NET_ADMIN CAP_SYS_ADMIN CAP_SYS_PTRACE" ] &&
	ok "the egress drop-in grants CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_SYS_PTRACE and nothing else" ||
	fail "serve-egress.conf grants other capabilities"
grep -q -- '--no-enable' debian/rules 2>/dev/null && grep -q -- '--no-start' debian/rules ||
	fail "debian/rules does not install the units with --no-enable --no-start"

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "skip: systemd-analyze is not installed (package systemd); not verified"
else
	for u in "$serve" "$daemon" "$reap" "$timer"; do
		sed "s|/usr/bin/sandboxio|$cli|" "$u" >"$work/units/$(basename "$u")"
	done
	# Documentation=man:sandboxio(1) must resolve: the pages, where man looks.
	scripts/mkman.sh "$cli" 0 "$work/man" >/dev/null
	mv "$work/man/sandboxio.1" "$work/man/man1/"
	mv "$work/man/libsandboxio.3" "$work/man/man3/"
	mv "$work/man/sandboxio-config.5" "$work/man/man5/"
	if MANPATH=$work/man systemd-analyze verify "$work/units/"* >"$work/verify.out" 2>&1 &&
		! grep -q . "$work/verify.out"; then
		ok "systemd-analyze verify: the four units"
	else
		fail "systemd-analyze verify: $(cat "$work/verify.out")"
	fi
	score=$(systemd-analyze security --offline=true "$work/units/sandboxio-serve.service" 2>&1 |
		sed -n 's/.*Overall exposure level for sandboxio-serve.service: \([0-9.]*\).*/\1/p')
	if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
		ok "systemd-analyze security: sandboxio-serve.service exposure $score (at most 2.0)"
	else
		fail "systemd-analyze security: sandboxio-serve.service exposure '$score', above 2.0"
	fi
fi

if [ "$fails" -ne 0 ]; then
	echo "test_units: $fails failure(s)" >&2
	exit 1
fi
echo "test_units: all passed"

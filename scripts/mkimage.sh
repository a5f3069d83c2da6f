#!/bin/sh
# mkimage.sh OUT.tar: builds the root filesystem of the default sandbox image
# (sandboxio/python:3.11) from Debian packages with mmdebstrap, as a tarball that
# `sandboxio image build` imports through the Engine API. No registry is used:
# only the Debian mirror that the host's apt is configured for.
set -eu
out=${1:?usage: mkimage.sh OUT.tar}
suite=${SBX_IMAGE_SUITE:-bookworm}
command -v mmdebstrap >/dev/null 2>&1 || {
	echo "mkimage.sh: mmdebstrap is not installed (apt-get install mmdebstrap)" >&2
	exit 2
}
# python3-matplotlib and python3-pandas serve code contexts' rich results
# (docs/interp.md). python3-munkres is there so that python3-fonttools'
# "python3-scipy | python3-munkres" takes the small one: scipy would pull in
# pythran, and with it gcc, g++ and boost's headers (some 450 MB).
# The sandbox user is uid/gid 1000; /workspace and /.sbx are mount points that
# the engine fills at create time (a size-capped tmpfs and the read-only init).
mmdebstrap --quiet --variant=minbase --mode=root --format=tar \
	--include=python3,python3-numpy,python3-requests,python3-matplotlib,python3-pandas,python3-munkres,bash,coreutils,ca-certificates \
	--customize-hook='chroot "$1" groupadd -g 1000 sandbox' \
	--customize-hook='chroot "$1" useradd -u 1000 -g 1000 -d /workspace -M -s /bin/bash sandbox' \
	--customize-hook='mkdir -p "$1/workspace" "$1/.sbx" && chown 1000:1000 "$1/workspace"' \
	--customize-hook='rm -rf "$1/var/cache/apt/archives/"*.deb "$1/var/lib/apt/lists/"*' \
	"$suite" "$out"

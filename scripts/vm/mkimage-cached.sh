#!/bin/sh
# mkimage-cached.sh OUT.tar: the guest's stand-in for scripts/mkimage.sh
# (through SANDBOXIO_MKIMAGE). The guest has no network, so the image's root
# file system was built on the host by scripts/mkimage.sh itself and put on
# the job disk; this hands that tarball to `sandboxio image build`. Only the
# default image's recipe is cached: another (--recipe e2b) is refused.
set -eu
if [ "${1:-}" = --recipe ]; then
	echo "mkimage-cached.sh: only the default image's root file system is cached on the" \
		"job disk, not the $2 recipe's" >&2
	exit 2
fi
cp /job/image.tar "${1:?usage: mkimage-cached.sh OUT.tar}"

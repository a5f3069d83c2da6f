#!/bin/sh
# mkimage-cached.sh OUT.tar: the guest's stand-in for scripts/mkimage.sh
# (through SANDBOXIO_MKIMAGE). The guest has no network, so the image's root
# file system was built on the host by scripts/mkimage.sh itself and put on
# the job disk; this hands that tarball to `sandboxio image build`.
set -eu
cp /job/image.tar "${1:?usage: mkimage-cached.sh OUT.tar}"

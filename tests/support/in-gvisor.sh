#!/bin/sh
# tests/support/in-gvisor.sh: runs the tree's sbx-init under gVisor's kernel
# (`runsc do`, no network), so that the init's channel suite can run there
# as SANDBOXIO_INIT: `SBX_INIT_KERNEL=gvisor SANDBOXIO_INIT=tests/support/
# in-gvisor.sh build/tests/unit/init/test_init_chan`. The init is the one
# beside this file's tree (build/sbx-init); its arguments pass through.
root=$(cd "$(dirname "$0")/../.." && pwd)
exec runsc --network=none do "$root/build/sbx-init" "$@"

#!/bin/sh
# demo.sh: the main job on a fresh Debian machine: set up (packages,
# dockerd, build), then run a real program in a sandbox on the local engine.
# `sandboxio run` builds the default image first if it is missing.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/sandboxio run -- python3 -c '
import numpy, platform, socket
print("python", platform.python_version(), "numpy", numpy.__version__)
print("sum of 0..9:", int(numpy.arange(10).sum()))
print("interfaces:", [n for _, n in socket.if_nameindex()])
'

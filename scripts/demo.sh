#!/bin/sh
# demo.sh: the main job on a fresh Debian machine: set up (packages,
# dockerd, build), then run a real program in a sandbox on the local engine.
# `sandboxio run` builds the default image first if it is missing.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/sandboxio run -- python3 -c "$(cat scripts/demo.py)"

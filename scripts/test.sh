#!/bin/sh
# test.sh: the one command that runs every test on a fresh Debian machine.
# Installs what the tests need and starts dockerd (scripts/setup.sh), builds
# the default image and the e2b flavour's if they are missing, then runs
# `make check`: the -Werror
# build, unit tests, contract tests against the real dockerd, the same under
# ASan+UBSan, the header test, the format check and the ABI check.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
# The default image, built when it is missing or older than its recipe
# (scripts/mkimage.sh): code contexts need matplotlib and pandas in it.
if ! curl -fsS --unix-socket /var/run/docker.sock \
	http://localhost/v1.41/images/sandboxio%2Fpython:3.11/json >/dev/null 2>&1 ||
	! docker run --rm --network none --entrypoint python3 sandboxio/python:3.11 \
		-c 'import matplotlib, pandas' >/dev/null 2>&1; then
	SANDBOXIO_INIT="$PWD/build/sbx-init" build/sandboxio image build
fi
# The e2b flavour's image (tests/sdk/e2b-flavour.mjs runs against a server
# started with --e2b-image), built when it is missing: some 30 s.
if ! curl -fsS --unix-socket /var/run/docker.sock \
	http://localhost/v1.41/images/sandboxio%2Fe2b-base:2/json >/dev/null 2>&1; then
	SANDBOXIO_INIT="$PWD/build/sbx-init" build/sandboxio image build --recipe e2b
fi
# Each suite's "==" line gets the time it started, so that the log shows
# where the time goes; make's own exit status is the script's.
rcf=$(mktemp)
trap 'rm -f "$rcf"' EXIT
{
	rc=0
	make check || rc=$?
	echo "$rc" >"$rcf"
} 2>&1 | while IFS= read -r line; do
	case $line in
	"== "*) printf '%s %s\n' "$(date +%T)" "$line" ;;
	*) printf '%s\n' "$line" ;;
	esac
done
echo "test.sh: make check ended at $(date +%T)"
exit "$(cat "$rcf")"

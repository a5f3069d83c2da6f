#!/bin/sh
# mkdeb.sh: builds the Debian packages sandboxio, libsandboxio0 and
# libsandboxio-dev with debhelper (dpkg-buildpackage -us -uc -b), then runs
# lintian on them.
#
# The build happens in a copy of the tree (the files git tracks, and new ones
# not ignored) under build/deb/, so that nothing is written outside build/:
# the packages, the .changes and .buildinfo files and lintian's report are
# left in build/deb/. The version comes from its one source,
# include/sandboxio/common.h: this script writes the copy's
# debian/changelog with it (dated by the last commit, so that two builds of
# one commit are the same), and debian/libsandboxio0.symbols from
# docs/abi.txt (the exported functions, which `make abi-check` checks), so
# that dpkg-gensymbols fails the build when a symbol disappears.
#
# Usage: scripts/mkdeb.sh   Environment: DEB_BUILD_OPTIONS (default parallel=2)
set -eu
cd "$(dirname "$0")/.."
top=$PWD
version=$(sed -n 's/^#define SBX_VERSION_STRING "\(.*\)"/\1/p' include/sandboxio/common.h)
[ -n "$version" ] || {
	echo "mkdeb: no SBX_VERSION_STRING in include/sandboxio/common.h" >&2
	exit 1
}
for t in dpkg-buildpackage dh lintian; do
	command -v "$t" >/dev/null 2>&1 || {
		echo "mkdeb: needs $t (packages dpkg-dev, debhelper, lintian)" >&2
		exit 2
	}
done
out=$top/build/deb
src=$out/sandboxio-$version
maint=$(sed -n 's/^Maintainer: //p' debian/control)
date=$(git log -1 --format=%cD 2>/dev/null || date -R)

rm -rf "$out"
mkdir -p "$src"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$src"

cat >"$src/debian/changelog" <<EOF
sandboxio ($version) unstable; urgency=medium

  * Version $version, from include/sandboxio/common.h.

 -- $maint  $date
EOF
{
	echo "libsandboxio.so.0 libsandboxio0 #MINVER#"
	echo "* Build-Depends-Package: libsandboxio-dev"
	sed "s/.*/ &@Base $version/" docs/abi.txt
} >"$src/debian/libsandboxio0.symbols"

echo "mkdeb: building sandboxio $version in $src"
(cd "$src" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-parallel=2} dpkg-buildpackage -us -uc -b) \
	>"$out/build.log" 2>&1 || {
	tail -40 "$out/build.log" >&2
	echo "mkdeb: dpkg-buildpackage failed; the log is $out/build.log" >&2
	exit 1
}
ls "$out"/*.deb

# lintian: no error and no warning; each tag that remains is overridden in
# debian/*.lintian-overrides with the reason beside it.
changes=$(ls "$out"/sandboxio_"$version"_*.changes)
rc=0
lintian --fail-on error,warning --display-info "$changes" >"$out/lintian.txt" 2>&1 || rc=$?
cat "$out/lintian.txt"
if [ "$rc" -ne 0 ]; then
	echo "mkdeb: lintian found errors or warnings ($out/lintian.txt)" >&2
	exit 1
fi
echo "mkdeb: packages and lintian's report in $out"

#!/bin/sh
# test_pkgconfig.sh: the installed library as a C program uses it.
#
# Runs `make install` into a scratch prefix, then compiles the README's C
# example (taken from README.md itself, wrapped in a main()) with nothing
# but `pkg-config --cflags --libs sandboxio` against that prefix: once
# against the shared library, once with `--static` against libsandboxio.a.
# Checks the version pkg-config reports, the shared library's SONAME and its
# links, what each program needs at load time, and runs both with
# DOCKER_HOST pointing at a socket that does not exist, expecting the
# library's clear "cannot connect to the Docker daemon" error: nothing here
# talks to a daemon.
#
# Usage: tests/pkg/test_pkgconfig.sh [WORKDIR]  (default build/pkg-test)
set -eu
cd "$(dirname "$0")/../.."
top=$PWD
work=${1:-$top/build/pkg-test}
case $work in /*) ;; *) work=$top/$work ;; esac
prefix=$work/prefix
fails=0

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
ok() { echo "ok: $*"; }

rm -rf "$work"
mkdir -p "$work"
make -s install PREFIX="$prefix" >"$work/install.log" 2>&1 || {
	cat "$work/install.log" >&2
	echo "FAIL: make install PREFIX=$prefix" >&2
	exit 1
}

version=$(sed -n 's/^#define SBX_VERSION_STRING "\(.*\)"/\1/p' include/sandboxio/common.h)
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"

# 1. What is installed, and the version from its one source.
for f in lib/libsandboxio.a lib/libsandboxio.so lib/libsandboxio.so.0 "lib/libsandboxio.so.$version" \
	lib/pkgconfig/sandboxio.pc include/sandboxio.h include/sandboxio/sandbox.h bin/sandboxio \
	libexec/sandboxio/sbx-init libexec/sandboxio/sbx-resolv.conf libexec/sandboxio/sandboxio-full; do
	[ -e "$prefix/$f" ] || fail "not installed: $f"
done
[ "$(readlink "$prefix/lib/libsandboxio.so")" = libsandboxio.so.0 ] ||
	fail "libsandboxio.so does not link to libsandboxio.so.0"
[ "$(readlink "$prefix/lib/libsandboxio.so.0")" = "libsandboxio.so.$version" ] ||
	fail "libsandboxio.so.0 does not link to libsandboxio.so.$version"
soname=$(readelf -d "$prefix/lib/libsandboxio.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libsandboxio.so.0 ] && ok "SONAME $soname" || fail "SONAME is '$soname'"
got=$(pkg-config --modversion sandboxio) || fail "pkg-config does not find sandboxio"
[ "$got" = "$version" ] && ok "pkg-config --modversion $got" ||
	fail "pkg-config --modversion '$got', the header says '$version'"
"$prefix/bin/sandboxio" version | grep -qx "sandboxio $version" ||
	fail "the installed command does not print version $version"
# The command is a front of libc and jansson (cli/front/main.c) that runs
# sandboxio-full for what it does not serve itself, as `version`.
fneeded=$(readelf -d "$prefix/bin/sandboxio" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
case $fneeded in
*curl* | *nftables* | *libnl* | *protobuf* | *microhttpd* | *crypto*)
	fail "the installed command loads the engine's libraries: $fneeded" ;;
*libjansson*) ok "the installed command needs only $fneeded" ;;
*) fail "the installed command's libraries: $fneeded" ;;
esac

# 2. --static lists the private libraries.
static_libs=$(pkg-config --static --libs sandboxio)
for l in -lsandboxio -lcurl -ljansson -lnl-3 -lnl-route-3 -lnftables -lprotobuf-c -lpthread; do
	case " $static_libs " in
	*" $l "*) ;;
	*) fail "pkg-config --static --libs lacks $l: $static_libs" ;;
	esac
done
case " $(pkg-config --libs sandboxio) " in
*" -lcurl "*) fail "pkg-config --libs (shared) lists the private -lcurl" ;;
*) ok "pkg-config --libs: $(pkg-config --libs sandboxio)" ;;
esac

# 3. The README's example, as the README shows it, inside a main().
awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on { print }' README.md >"$work/snippet.c"
grep -q sbx_sandbox_create "$work/snippet.c" || fail "no C example found in README.md"
{
	grep '^#include' "$work/snippet.c"
	echo '#include <stdio.h>'
	echo 'int main(void)'
	echo '{'
	grep -v '^#include' "$work/snippet.c"
	echo 'return 0;'
	echo '}'
} >"$work/example.c"

# shellcheck disable=SC2046 # pkg-config's output is a list of words
cc -std=c11 -Wall -Wextra -Werror -o "$work/example" "$work/example.c" \
	$(pkg-config --cflags --libs sandboxio) || fail "the example does not build with pkg-config"
# --static: libsandboxio.a, and every private library pkg-config lists,
# linked as the system has them (Debian ships few of them as .a files).
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/example-static" "$work/example.c" \
	$(pkg-config --cflags --static --libs sandboxio | sed 's/-lsandboxio /-l:libsandboxio.a /') ||
	fail "the example does not build with pkg-config --static"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
if [ -x "$work/example" ]; then
	case " $(needed "$work/example")" in
	*" libsandboxio.so.0 "*) ok "example needs libsandboxio.so.0" ;;
	*) fail "example does not need libsandboxio.so.0: $(needed "$work/example")" ;;
	esac
	LD_LIBRARY_PATH=$prefix/lib ldd "$work/example" | grep -q "libsandboxio.so.0 => $prefix/lib/" ||
		fail "example does not load libsandboxio.so.0 from $prefix/lib"
fi
if [ -x "$work/example-static" ]; then
	case " $(needed "$work/example-static")" in
	*" libsandboxio.so"*) fail "example-static needs the shared libsandboxio" ;;
	*" libcurl"*) ok "example-static carries libsandboxio, needs libcurl" ;;
	*) fail "example-static does not need libcurl: $(needed "$work/example-static")" ;;
	esac
fi

# 4. They run, as far as a missing daemon lets them: the socket does not
# exist, so no daemon is ever reached.
missing=$work/no-such-dir/docker.sock
for exe in example example-static; do
	[ -x "$work/$exe" ] || continue
	rc=0
	env LD_LIBRARY_PATH="$prefix/lib" DOCKER_HOST="unix://$missing" \
		SANDBOXIO_INIT="$prefix/libexec/sandboxio/sbx-init" SANDBOXIO_CONFIG= \
		"$work/$exe" >"$work/$exe.out" 2>"$work/$exe.err" || rc=$?
	if grep -q "^sandboxio: cannot connect to the Docker daemon at unix://$missing" "$work/$exe.err"; then
		ok "$exe runs and reports the missing daemon (exit $rc)"
	else
		fail "$exe: expected the daemon-down error, got exit $rc: $(cat "$work/$exe.err" "$work/$exe.out")"
	fi
done

if [ "$fails" -ne 0 ]; then
	echo "test_pkgconfig: $fails failure(s)" >&2
	exit 1
fi
echo "test_pkgconfig: all passed"

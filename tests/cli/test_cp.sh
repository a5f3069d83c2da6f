#!/bin/bash
# tests/cli/test_cp.sh: `sandboxio cp`, both ways, through the daemon and
# direct (--no-daemon), against one sandbox made by create (and one with a
# small disk cap).
#
# Checks: a file and a directory tree in and out, contents and modes kept
# (set-id bits dropped), into an existing directory and to a new name, a tar
# stream (-) both ways; refusals with a clear message and exit 125 of paths
# that leave the writable places (/etc, "..", a symlink in the sandbox to
# a host path that exists only on this host, a symlink to /etc inside a
# directory name); the attacker's cases: a symlink /workspace/x to a host
# file (named by its host path) copies nothing of the host's file; a copied
# directory's inner symlink to that host file comes out as a symlink, never
# the file's bytes; a tar stream with ../ and absolute entries copied in
# writes nothing outside the target directory; a copy in past the disk cap
# fails naming ENOSPC and leaves nothing behind; a copy out larger than the
# output cap fails, saying so; contents copied out are not redacted (a
# value that is a secret of another run of the sandbox comes out as is);
# the front (build/sandboxio) serves nothing of cp itself: the same through
# sandboxio-full. Every sandbox carries a tenant cp-$$-*.
#
# Needs dockerd, python3 and the image sandboxio/python:3.11. No network
# traffic: the sandboxes have none. The last line is "N passed, N failed";
# the exit status is non-zero when anything failed.
set -u

T=cp-$$
WORK_NAME=sbx-cp-test
. "$(dirname "$0")/lib.sh"
INIT=${SANDBOXIO_INIT:-$root/build/sbx-init}
unset SANDBOXIO_INIT SANDBOXIO_DAEMON SANDBOXIO_HOSTS_FILE DOCKER_HOST
unset SANDBOXIO_BACKEND
sock=$work/run/d.sock
daemon_pid=

D() { SANDBOXIO_DAEMON=$sock "$CLI" "$@"; }
N() { SANDBOXIO_INIT=$INIT "$CLI" --no-daemon "$@"; }

cleanup() {
	[ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	for id in $(N --json ls 2>/dev/null | $PY -c "
import json,sys
for s in json.load(sys.stdin):
    if s['tenant'].startswith('$T-'): print(s['id'])" 2>/dev/null); do
		N rm "$id" >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT

daemon_up daemon --socket "$sock" || exit 1
id=$(D create --tenant "$T-a" --lifetime 900) || {
	echo "create failed"
	exit 1
}
small=$(D create --tenant "$T-s" --lifetime 900 --disk 16m --max-output 4m) || {
	echo "create failed"
	exit 1
}

# The local tree: a file 0640, a script 0750, a set-uid file, an empty dir.
src=$work/src
mkdir -p "$src/sub" "$src/empty"
printf 'hello\n' >"$src/a.txt"
chmod 0640 "$src/a.txt"
printf '#!/bin/sh\necho run\n' >"$src/sub/run.sh"
chmod 0750 "$src/sub/run.sh"
head -c 300000 /dev/urandom >"$src/sub/blob.bin"
printf 'x' >"$src/suid"
chmod 04755 "$src/suid"
# A host file that exists only here: the sandbox must never reach it.
hostfile=$work/host-secret
printf 'HOST-ONLY-%s\n' "$$" >"$hostfile"
chmod 0600 "$hostfile"

mode() { stat -c %a "$1"; }
smode() { "$@" 2>/dev/null | tr -d '\r\n'; }

for way in D N; do
	name=$([ $way = D ] && echo "through the daemon" || echo "direct")
	# in: a directory into an existing directory keeps its name.
	if $way cp "$src" "$id:/workspace/" 2>"$work/err" &&
		[ "$(smode $way exec "$id" -- cat /workspace/src/a.txt)" = hello ] &&
		[ "$(smode $way exec "$id" -- stat -c %a /workspace/src/a.txt)" = 640 ] &&
		[ "$(smode $way exec "$id" -- stat -c %a /workspace/src/sub/run.sh)" = 750 ] &&
		[ "$(smode $way exec "$id" -- stat -c %a /workspace/src/suid)" = 755 ] &&
		[ "$(smode $way exec "$id" -- sh -c 'test -d /workspace/src/empty && echo y')" = y ] &&
		[ "$(smode $way exec "$id" -- sh -c 'sha256sum < /workspace/src/sub/blob.bin')" = \
			"$(sha256sum <"$src/sub/blob.bin" | tr -d '\n')" ]; then
		ok "$name: a directory in, contents and modes kept, set-uid dropped"
	else
		bad "$name: a directory in" "$(cat "$work/err")"
	fi
	# in: a file to a new name, in /tmp.
	if $way cp "$src/a.txt" "$id:/tmp/renamed.txt" 2>"$work/err" &&
		[ "$(smode $way exec "$id" -- cat /tmp/renamed.txt)" = hello ]; then
		ok "$name: a file in, to a new name"
	else
		bad "$name: a file in, to a new name" "$(cat "$work/err")"
	fi
	# out: the tree back, to a new name, and a file into a directory.
	rm -rf "$work/out"
	mkdir -p "$work/outdir"
	if $way cp "$id:/workspace/src" "$work/out" 2>"$work/err" &&
		cmp -s "$work/out/a.txt" "$src/a.txt" && cmp -s "$work/out/sub/blob.bin" "$src/sub/blob.bin" &&
		[ "$(mode "$work/out/a.txt")" = 640 ] && [ "$(mode "$work/out/sub/run.sh")" = 750 ] &&
		[ "$(mode "$work/out/suid")" = 755 ] && [ -d "$work/out/empty" ] &&
		$way cp "$id:src/a.txt" "$work/outdir" 2>>"$work/err" && cmp -s "$work/outdir/a.txt" "$src/a.txt"; then
		ok "$name: a directory and a relative path out, contents and modes kept"
	else
		bad "$name: out" "$(cat "$work/err")"
	fi
	# a tar stream both ways.
	if $way cp "$id:/workspace/src/sub" - 2>"$work/err" >"$work/s.tar" &&
		tar -tf "$work/s.tar" | grep -qx 'sub/run.sh' &&
		$way exec "$id" -- mkdir -p /workspace/streamed &&
		$way cp - "$id:/workspace/streamed" <"$work/s.tar" 2>>"$work/err" &&
		[ "$(smode $way exec "$id" -- cat /workspace/streamed/sub/run.sh)" = "#!/bin/shecho run" ]; then
		ok "$name: a tar stream (-) out and in"
	else
		bad "$name: a tar stream (-)" "$(cat "$work/err")"
	fi
	# refusals: outside the writable places.
	for p in /etc/passwd /workspace/../etc/passwd "$hostfile"; do
		rc=0
		$way cp "$id:$p" "$work/refused" 2>"$work/err" || rc=$?
		if [ "$rc" = 125 ] && [ ! -e "$work/refused" ] &&
			grep -q "outside the sandbox's writable places\|no such file or directory in the sandbox" "$work/err"; then
			ok "$name: out of $p refused: $(cat "$work/err")"
		else
			bad "$name: out of $p (exit $rc)" "$(cat "$work/err")"
		fi
	done
	rc=0
	$way cp "$src/a.txt" "$id:/etc/a.txt" 2>"$work/err" || rc=$?
	[ "$rc" = 125 ] && grep -q "outside the sandbox's writable places" "$work/err" &&
		ok "$name: in to /etc refused, naming the rule" ||
		bad "$name: in to /etc (exit $rc)" "$(cat "$work/err")"
done

# The attacker's symlinks: the sandbox names the host file by its host path.
N exec "$id" -- sh -c "ln -sf '$hostfile' /workspace/x; mkdir -p /workspace/d; ln -sf '$hostfile' /workspace/d/link; ln -sfn /etc /workspace/etcdir; echo fine > /workspace/d/f"
for way in D N; do
	name=$([ $way = D ] && echo "through the daemon" || echo "direct")
	rc=0
	$way cp "$id:/workspace/x" "$work/x" 2>"$work/err" || rc=$?
	if [ "$rc" = 125 ] && [ ! -e "$work/x" ] && ! grep -q "HOST-ONLY" "$work/err"; then
		ok "$name: a symlink to a host path is resolved inside the sandbox: $(cat "$work/err")"
	else
		bad "$name: the symlink /workspace/x (exit $rc)" "$(cat "$work/err")"
	fi
	rm -rf "$work/d"
	if $way cp "$id:/workspace/d" "$work/d" 2>"$work/err" && [ -L "$work/d/link" ] &&
		[ "$(readlink "$work/d/link")" = "$hostfile" ] && ! grep -rq "HOST-ONLY" "$work/d" &&
		[ "$(cat "$work/d/f")" = fine ]; then
		ok "$name: an inner symlink comes out as a symlink, never the host file's bytes"
	else
		bad "$name: the inner symlink" "$(ls -la "$work/d" 2>&1; cat "$work/err")"
	fi
	rc=0
	$way cp "$src/a.txt" "$id:/workspace/etcdir/a.txt" 2>"$work/err" || rc=$?
	[ "$rc" = 125 ] && grep -q "resolves to /etc" "$work/err" &&
		ok "$name: in through a symlink to /etc refused" ||
		bad "$name: in through a symlink to /etc (exit $rc)" "$(cat "$work/err")"
done

# A tar stream with ../ and absolute entries copied in stays in its directory.
$PY - "$work/evil.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for n in ["../../escaped-up", "../escaped-one", "/tmp/escaped-abs", "inside.txt"]:
        i = tarfile.TarInfo(n)
        i.size = 3
        t.addfile(i, io.BytesIO(b"pwn"))
EOF
for way in D N; do
	name=$([ $way = D ] && echo "through the daemon" || echo "direct")
	$way exec "$id" -- mkdir -p /workspace/evil/in
	rc=0
	$way cp - "$id:/workspace/evil/in" <"$work/evil.tar" 2>"$work/err" || rc=$?
	left=$($way exec "$id" -- sh -c 'ls /escaped-up /workspace/escaped-up /workspace/evil/escaped-one /tmp/escaped-abs 2>/dev/null; cat /workspace/evil/in/inside.txt' 2>&1)
	if [ "$rc" = 125 ] && [ "$left" = pwn ] && grep -q "contains '..'" "$work/err"; then
		ok "$name: a tar stream's ../ entries are refused, its absolute ones kept inside"
	else
		bad "$name: the ../ stream (exit $rc): $left" "$(cat "$work/err")"
	fi
done

# The disk cap: a copy in that does not fit fails, naming ENOSPC; nothing kept.
head -c 24000000 /dev/zero >"$work/big.bin"
for way in D N; do
	name=$([ $way = D ] && echo "through the daemon" || echo "direct")
	rc=0
	$way cp "$work/big.bin" "$small:/workspace/big.bin" 2>"$work/err" || rc=$?
	left=$($way exec "$small" -- sh -c 'ls -A /workspace' 2>&1)
	if [ "$rc" = 125 ] && grep -q "ENOSPC" "$work/err" && [ -z "$left" ]; then
		ok "$name: past the disk cap: $(cat "$work/err")"
	else
		bad "$name: past the disk cap (exit $rc), left: $left" "$(cat "$work/err")"
	fi
done

# The output cap (4m) bounds a copy out.
N exec "$small" -- sh -c 'head -c 6000000 /dev/zero > /workspace/six'
for way in D N; do
	name=$([ $way = D ] && echo "through the daemon" || echo "direct")
	rc=0
	$way cp "$small:/workspace/six" "$work/six" 2>"$work/err" || rc=$?
	[ "$rc" = 125 ] && grep -q "output cap" "$work/err" &&
		ok "$name: a copy out past the output cap fails, saying so" ||
		bad "$name: past the output cap (exit $rc)" "$(cat "$work/err")"
	rm -rf "$work/six"
done

# Not redacted: a secret's value in a file comes out as it is.
secret="cp-secret-value-$$"
CP_SECRET=$secret N exec --secret CP_SECRET "$id" -- sh -c 'printf %s "$CP_SECRET" > /workspace/s.txt'
for way in D N; do
	name=$([ $way = D ] && echo "through the daemon" || echo "direct")
	rm -f "$work/s.txt"
	if $way cp "$id:/workspace/s.txt" "$work/s.txt" 2>"$work/err" && [ "$(cat "$work/s.txt")" = "$secret" ]; then
		ok "$name: contents copied out are not redacted"
	else
		bad "$name: not redacted" "$(cat "$work/s.txt" 2>&1; cat "$work/err")"
	fi
done

# Usage errors.
rc=0
"$CLI" cp "$src/a.txt" "$work/b" 2>"$work/err" || rc=$?
[ "$rc" = 125 ] && grep -q "neither names a sandbox" "$work/err" && ok "two local paths refused" ||
	bad "two local paths (exit $rc)" "$(cat "$work/err")"
"$CLI" cp --help | grep -q "NOT redacted" && ok "cp --help says copies out are not redacted" ||
	bad "cp --help"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

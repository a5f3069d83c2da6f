#!/bin/sh
# bench/daemon.sh: (k) the command line's exec in a live sandbox, through the
# local daemon, side by side with `docker exec` of the same container:
#   sandboxio exec ID -- true     through `sandboxio daemon` (the init's channel)
#   docker exec -u 1000:1000 ID true
#   sandboxio --no-daemon exec ID -- true   (the direct path: docker exec)
#   sandboxio-full exec ID -- true  (through the daemon, but the command
#                                 proper, which loads the engine's libraries,
#                                 instead of its front: cli/front/main.c)
#   sandboxio version             (the front, then sandboxio-full: the floor
#                                 of any command the front does not serve)
# $N runs each (hyperfine, 3 warm-ups), one sandbox made through the daemon
# on a socket of a private directory; every number is a whole process
# started by hyperfine, the command's own start included. Prints medians and
# the ratios daemon / docker-exec (target 0.1 or less), daemon / direct and
# daemon / full-daemon (what the front saves).
# Run alone (bench/daemon.sh) or from bench/run.sh.
set -eu
cd "$(dirname "$0")/.."
N=${N:-100}
out=$(mktemp -d)
init=${SANDBOXIO_INIT:-$PWD/build/sbx-init}
unset SANDBOXIO_INIT SANDBOXIO_DAEMON SANDBOXIO_CONFIG SANDBOXIO_HOSTS_FILE DOCKER_HOST
dpid=
id=
cleanup() {
	[ -n "$id" ] && build/sandboxio --no-daemon rm "$id" >/dev/null 2>&1 || true
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null && wait "$dpid" 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
sock=$out/run/d.sock
SANDBOXIO_INIT=$init build/sandboxio daemon --socket "$sock" >"$out/ready" 2>"$out/err" &
dpid=$!
while ! grep -qx ready "$out/ready"; do
	kill -0 "$dpid" 2>/dev/null || { cat "$out/err" >&2; exit 1; }
	sleep 0.1
done
export SANDBOXIO_DAEMON="$sock"
id=$(build/sandboxio create --tenant bench-daemon --lifetime 900)

echo "== (k) exec true in a live sandbox from the command line, $N runs each: daemon vs docker exec"
hyperfine -N --style basic --warmup 3 --runs "$N" --export-json "$out/j.json" \
	-n daemon "build/sandboxio exec $id -- true" \
	-n docker-exec "docker exec -u 1000:1000 $id true" \
	-n direct "build/sandboxio --no-daemon exec $id -- true" \
	-n full-daemon "build/sandboxio-full exec $id -- true" \
	-n start "build/sandboxio version" >/dev/null
/usr/bin/python3 - "$out/j.json" <<'PYEOF'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
med = lambda k: r[k]["median"] * 1e3
d, e, n, s = med("daemon"), med("docker-exec"), med("direct"), med("start")
f = med("full-daemon")
print("(k) daemon   %7.2f ms  %-11s %7.2f ms  ratio %.3f" % (d, "docker-exec", e, d / e))
print("(k) daemon   %7.2f ms  %-11s %7.2f ms  ratio %.3f" % (d, "direct", n, d / n))
print("(k) daemon   %7.2f ms  %-11s %7.2f ms  ratio %.3f" % (d, "full-daemon", f, d / f))
print("(k) direct   %7.2f ms  %-11s %7.2f ms  ratio %.3f" % (n, "docker-exec", e, n / e))
print("(k) start    %7.2f ms  (sandboxio version: the floor of any command)" % s)
PYEOF

#!/bin/bash
# tests/cli/test_daemon.sh: `sandboxio daemon` and the command through it.
#
# Starts $SBX_CLI (default build/sandboxio) daemon on a socket of a private
# directory, with an audit log, and checks: the socket's and directory's
# modes (root only without a group; --group), that a second daemon and a
# user outside the group are refused; create, exec, rm and ls the same both
# ways (through the daemon, and with --no-daemon: stdout, stderr and exit
# status compared, --json objects without their timings), refusals
# included; that runs through the daemon go over the init's channel (the
# run's supervisor is PID 1's child) while direct ones go through docker
# exec (its parent is outside the sandbox); the route rules (--no-daemon,
# SANDBOXIO_DAEMON=none, a named daemon that does not answer, an engine-side
# choice with a named daemon, the default socket absent: direct, silently);
# the client's pid and uid in the audit; 200 execs from 8 processes at once
# against one sandbox with no failure and no process left in it; hostile
# clients (garbage, a huge frame, bad JSON, a client that vanishes mid-run:
# the run ends); and the daemon killed with SIGKILL: its sandboxes live on,
# detached, with their deadline label; the reaper leaves them alone until
# then; a restarted daemon serves them (through docker exec); the init ends
# one at its lifetime, and the reaper removes one that was frozen (docker
# pause) so that its init could not. Every sandbox carries a tenant dmn-$$-*.
#
# Needs dockerd, python3, setpriv and the image sandboxio/python:3.11, or,
# with SBX_TEST_ENGINE=SOCKET, the engine serving that socket (make
# contract-podman runs the suite on rootful Podman). No network traffic: the
# sandboxes have none. The last line is "N passed, N
# failed"; the exit status is non-zero when anything failed.
set -u

T=dmn-$$
WORK_NAME=sbx-daemon-test
. "$(dirname "$0")/lib.sh"
INIT=${SANDBOXIO_INIT:-$root/build/sbx-init}
unset SANDBOXIO_INIT SANDBOXIO_DAEMON SANDBOXIO_HOSTS_FILE DOCKER_HOST
ENGINE=${SBX_TEST_ENGINE:-/var/run/docker.sock}
# Another engine is the daemons' and the direct runs' (DOCKER_HOST); a
# client of a daemon names none, the daemon having made that choice at its
# start: each such command runs under $CL, which takes it away.
[ -n "${SBX_TEST_ENGINE:-}" ] && export DOCKER_HOST=unix://$ENGINE
CL="env -u DOCKER_HOST"
unset SANDBOXIO_BACKEND
chmod 755 "$work" # the group's client below must reach its socket
sock=$work/run/d.sock
daemon_pid=
extra_pids=

# Through the daemon (no engine-side choice of ours); direct.
D() { $CL SANDBOXIO_DAEMON="$sock" "$CLI" "$@"; }
N() { SANDBOXIO_INIT=$INIT "$CLI" --no-daemon "$@"; }

start_daemon() { # ARGS...: waits for its ready line
	daemon_up --audit-log "$work/audit.log" daemon --socket "$sock" "$@"
}

# How a run of the command PREFIX... reached sandbox ID: "channel" (its
# supervisor is a child of PID 1) or "exec" (started by docker exec, from
# outside the sandbox's PID namespace: parent 0).
via() { # ID PREFIX...
	local id=$1
	shift
	case "$("$@" exec "$id" -- sh -c 'grep ^PPid: /proc/$PPID/status' 2>&1)" in
	*"	1") echo channel ;;
	*"	0") echo exec ;;
	*) echo none ;;
	esac
}
label() { # ID NAME
	curl -fsS --unix-socket "$ENGINE" "http://localhost/v1.41/containers/$1/json" |
		$PY -c 'import json,sys; print(json.load(sys.stdin)["Config"]["Labels"]["io.sandboxio." + sys.argv[1]])' "$2"
}
running() {
	curl -fsS --unix-socket "$ENGINE" "http://localhost/v1.41/containers/$1/json" 2>/dev/null |
		$PY -c 'import json,sys; print(json.load(sys.stdin)["State"]["Running"])' 2>/dev/null
}

cleanup() {
	for p in $extra_pids $daemon_pid; do
		kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	for id in $(N --json ls 2>/dev/null | $PY -c "
import json,sys
for s in json.load(sys.stdin):
    if s['tenant'].startswith('$T-'): print(s['id'])" 2>/dev/null); do
		N rm "$id" >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap cleanup EXIT

# A --json object without what differs from one run to the next.
cat >"$work/norm.py" <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
for k in ("duration_ms", "cpu_user_us", "cpu_system_us", "max_rss_kb"):
    if isinstance(o, dict):
        o.pop(k, None)
print(json.dumps(o, sort_keys=True))
EOF

# both NAME [--json-norm] ARGS...: the same outcome through the daemon and direct.
both() {
	local name=$1 norm=0
	shift
	if [ "$1" = --json-norm ]; then
		norm=1
		shift
	fi
	D "$@" <"$work/stdin" >"$work/d.out" 2>"$work/d.err"
	local drc=$?
	N "$@" <"$work/stdin" >"$work/n.out" 2>"$work/n.err"
	local nrc=$?
	if [ $norm = 1 ]; then
		$PY "$work/norm.py" "$work/d.out" >"$work/d.norm" 2>&1
		$PY "$work/norm.py" "$work/n.out" >"$work/n.norm" 2>&1
		cp "$work/d.norm" "$work/d.out"
		cp "$work/n.norm" "$work/n.out"
	fi
	if [ "$drc" = "$nrc" ] && cmp -s "$work/d.out" "$work/n.out" &&
		cmp -s "$work/d.err" "$work/n.err"; then
		ok "both ways: $name (exit $drc)"
	else
		bad "both ways: $name" "daemon: $drc $(head -c 300 "$work/d.out" | tr '\n' '|') / \
$(head -c 300 "$work/d.err" | tr '\n' '|'); direct: $nrc $(head -c 300 "$work/n.out" | tr '\n' '|') / \
$(head -c 300 "$work/n.err" | tr '\n' '|')"
	fi
}

echo "input line one" >"$work/stdin"
echo "a file's line" >"$work/file"

start_daemon || exit 1

# ===== The socket =====
[ "$(stat -c %a "$work/run")" = 700 ] && [ "$(stat -c %a "$sock")" = 600 ] &&
	[ "$(stat -c %U "$sock")" = root ] &&
	ok "without a sandboxio group: directory 0700, socket 0600 root" ||
	bad "modes" "$(stat -c '%a %U %G' "$work/run" "$sock" | tr '\n' ' ')"
SANDBOXIO_INIT=$INIT "$CLI" daemon --socket "$sock" >/dev/null 2>"$work/err"
rc=$?
[ $rc = 125 ] && grep -q "a daemon already answers at $sock" "$work/err" &&
	ok "a second daemon on the same socket is refused" || bad "second daemon" "$rc $(cat "$work/err")"
setpriv --reuid nobody --regid nogroup --clear-groups $CL SANDBOXIO_DAEMON="$sock" \
	"$CLI" ls >/dev/null 2>"$work/err"
rc=$?
[ $rc = 125 ] && grep -q "does not answer: Permission denied" "$work/err" &&
	ok "a user who is not root cannot reach a root-only socket" ||
	bad "root-only socket" "$rc $(cat "$work/err")"

# --group: 0750 / 0660 with that group, and its members get in.
gsock=$work/grun/g.sock
SANDBOXIO_INIT=$INIT "$CLI" daemon --socket "$gsock" --group nogroup >"$work/gout" 2>&1 &
gpid=$!
extra_pids=$gpid
for _ in $(seq 600); do
	grep -qx ready "$work/gout" 2>/dev/null && break
	kill -0 $gpid 2>/dev/null || break
	sleep 0.1
done
[ "$(stat -c '%a %G' "$work/grun")" = "750 nogroup" ] &&
	[ "$(stat -c '%a %G' "$gsock")" = "660 nogroup" ] &&
	ok "--group: directory 0750, socket 0660, group nogroup" ||
	bad "--group modes" "$(stat -c '%a %G' "$work/grun" "$gsock" | tr '\n' ' ') $(cat "$work/gout")"
setpriv --reuid nobody --regid nogroup --clear-groups $CL SANDBOXIO_DAEMON="$gsock" \
	"$CLI" --json ls --tenant "$T-none" >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 0 ] && [ "$(cat "$work/out")" = "[]" ] &&
	ok "a member of the group is served" || bad "group member" "$rc $(cat "$work/out" "$work/err")"
kill -TERM $gpid && wait $gpid
rc=$?
[ $rc = 0 ] && [ ! -e "$gsock" ] && ok "SIGTERM: the daemon exits 0 and removes its socket" ||
	bad "SIGTERM" "rc $rc"
extra_pids=
"$CLI" daemon --socket "$work/x.sock" --group no-such-group-$$ >/dev/null 2>"$work/err"
[ $? = 125 ] && grep -q "no such group" "$work/err" && ok "--group of no group is refused" ||
	bad "--group refusal" "$(cat "$work/err")"

# A socket's directory (or one above it) that someone else may write in is
# refused: they could put their own socket at the path once ours is bound,
# or a link before its chmod. (--background: a daemon that starts anyway
# must not hang the suite; it is stopped below.)
mkdir -p "$work/theirs" "$work/open/sub"
chown nobody "$work/theirs"
chmod 0777 "$work/open"
for d in theirs open/sub; do
	rm -f "$work/evil.pid"
	SANDBOXIO_INIT=$INIT "$CLI" daemon --socket "$work/$d/d.sock" --background \
		--pid-file "$work/evil.pid" >"$work/out" 2>"$work/err"
	rc=$?
	[ -s "$work/evil.pid" ] && kill -TERM "$(cat "$work/evil.pid")"
	[ $rc = 125 ] && grep -q "$work/${d%/sub}: not a directory of root's or ours that only its owner may write in" "$work/err" &&
		ok "a socket under a directory others may write in is refused ($d)" ||
		bad "unsafe socket directory $d" "rc $rc $(cat "$work/out" "$work/err")"
done

# ===== Both ways =====
M=$(D create --tenant "$T-main" --max-output 4k --lifetime 900 2>"$work/err")
[ -n "$M" ] && ok "create through the daemon" || bad "create" "$(cat "$work/err")"
[ "$(via "$M" D)" = channel ] && [ "$(via "$M" D)" = channel ] &&
	ok "runs through the daemon go over the init's channel" || bad "channel" "$(via "$M" D)"
[ "$(via "$M" N)" = exec ] &&
	ok "a direct run of the same sandbox goes through docker exec" || bad "direct exec" "$(via "$M" N)"
both "echo" exec "$M" -- echo hello
both "stdout, stderr, exit 3" exec "$M" -- sh -c 'echo out; echo err >&2; exit 3'
both "--stdin FILE" exec --stdin "$work/file" "$M" -- cat
both "--stdin -" exec --stdin - "$M" -- cat
both "--env, --workdir" exec --env A=1 --workdir /tmp "$M" -- sh -c 'echo $A; pwd'
both "--json, bytes that are not UTF-8" --json-norm --json exec "$M" -- sh -c 'printf "a\377b"; echo e >&2; exit 2'
both "output past the cap" exec "$M" -- head -c 10000 /dev/zero
both "--json output past the cap" --json-norm --json exec "$M" -- head -c 10000 /dev/zero
both "a deadline (124)" exec --timeout 1 "$M" -- sleep 60
both "a program that does not exist (127)" exec "$M" -- no-such-program
both "a killed program (137)" exec "$M" -- sh -c 'kill -9 $$'
both "a deadline above the sandbox's" exec --timeout 100000 "$M" -- true
both "an unknown sandbox" exec 0123456789ab0123456789ab -- true
both "--json an unknown sandbox" --json exec 0123456789ab0123456789ab -- true
both "--stdin of no file" exec --stdin "$work/none" "$M" -- cat
both "ls --json" --json ls --tenant "$T-main"
both "ls of no sandbox" ls --tenant "$T-none"
both "ls of a bad tenant" ls --tenant 'a b'
both "rm of an unknown sandbox" rm 0123456789ab0123456789ab
both "create above a ceiling" create --tenant "$T-x" --memory 1t
both "create with a bad option value" create --tenant "$T-x" --cpus abc
both "create with a lifetime below the runs' deadline" create --tenant "$T-x" --timeout 60 --lifetime 10
D --json create --tenant "$T-cr" --lifetime 600 >"$work/d.json" 2>"$work/d.err"
drc=$?
N --json create --tenant "$T-cr" --lifetime 600 >"$work/n.json" 2>"$work/n.err"
nrc=$?
$PY - "$work/d.json" "$work/n.json" <<'EOF' && [ $drc = 0 ] && [ $nrc = 0 ] &&
import json, sys
d, n = (json.load(open(p)) for p in sys.argv[1:3])
assert d["sandbox_id"] != n["sandbox_id"]
d.pop("sandbox_id"), n.pop("sandbox_id")
assert d == n, (d, n)
EOF
	ok "both ways: create --json" || bad "create --json" "$(cat "$work/d.json" "$work/n.json")"
c1=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox_id"])' "$work/d.json")
c2=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["sandbox_id"])' "$work/n.json")
D --json rm "$c1" >"$work/d.out" 2>&1 && N --json rm "$c2" >"$work/n.out" 2>&1 &&
	[ "$(sed "s/$c1/ID/" "$work/d.out")" = "$(sed "s/$c2/ID/" "$work/n.out")" ] &&
	[ -z "$(running "$c1")" ] && [ -z "$(running "$c2")" ] &&
	ok "both ways: rm --json removes the sandbox" || bad "rm" "$(cat "$work/d.out" "$work/n.out")"
D exec "$c1" -- true 2>"$work/err"
[ $? = 125 ] && [ -s "$work/err" ] && ok "exec of a sandbox removed through the daemon fails" ||
	bad "exec after rm" "$(cat "$work/err")"

# ===== Routes =====
$CL SANDBOXIO_INIT="$INIT" SANDBOXIO_DAEMON="$sock" "$CLI" exec "$M" -- true 2>"$work/err"
[ $? = 125 ] && grep -q "SANDBOXIO_INIT: the daemon makes this choice itself" "$work/err" &&
	ok "a named daemon with an engine-side choice of ours is refused, naming it" ||
	bad "engine-side choice" "$(cat "$work/err")"
$CL "$CLI" --daemon "$work/none.sock" exec "$M" -- true 2>"$work/err"
[ $? = 125 ] && grep -q "the daemon at $work/none.sock does not answer" "$work/err" &&
	ok "--daemon PATH that does not answer fails (125)" || bad "--daemon none" "$(cat "$work/err")"
[ "$(via "$M" env SANDBOXIO_DAEMON=none "$CLI")" = exec ] &&
	ok "SANDBOXIO_DAEMON=none: direct" || bad "SANDBOXIO_DAEMON=none"
[ "$(via "$M" env SANDBOXIO_DAEMON=$sock "$CLI" --no-daemon)" = exec ] &&
	ok "--no-daemon: direct, over SANDBOXIO_DAEMON" || bad "--no-daemon"
if [ ! -e /run/sandboxio/sandboxio.sock ]; then
	"$CLI" exec "$M" -- echo quiet >"$work/out" 2>"$work/err" &&
		[ "$(cat "$work/out")" = quiet ] && [ ! -s "$work/err" ] &&
		[ "$(via "$M" "$CLI")" = exec ] &&
		ok "no daemon at the default socket: direct, silently" || bad "default fallback" "$(cat "$work/err")"
fi
[ "$(via "$M" $CL "$CLI" --daemon "$sock")" = channel ] &&
	ok "--daemon PATH: through that daemon" || bad "--daemon PATH"

# Direct, to the engine this command names (DOCKER_HOST, which a run with
# secrets takes from its environment even with a daemon named).
out=$(S=secret-value-$$ SANDBOXIO_DAEMON=$sock "$CLI" exec --secret S "$M" -- \
	sh -c 'grep ^PPid: /proc/$PPID/status' 2>&1)
[ "$out" = "$(printf 'PPid:\t0')" ] && ok "an exec with --secret goes direct" || bad "--secret" "$out"

# ===== Audit: the client =====
$PY - "$work/audit.log" $$ <<'EOF' && ok "the audit records the client's pid, uid and gid" || bad "audit peer"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
runs = [e for e in ev if e.get("event") == "run.end" and "peer" in e]
assert runs, "no run.end with a peer"
p = runs[-1]["peer"]
assert p["uid"] == 0 and p["gid"] == 0 and p["pid"] > 0, p
creates = [e for e in ev if e.get("event") == "sandbox.create" and "peer" in e]
assert creates, "no create with a peer"
EOF

# ===== 200 execs from 8 processes at once =====
# Every process of the sandbox but the init's (PID 1, its supervisors) and
# this listing's own (LEAKCHECK in its command line).
others='for p in /proc/[0-9]*; do c=$(tr "\0" " " <$p/cmdline 2>/dev/null); case "$c" in
/.sbx/init*|*LEAKCHECK*|"") ;; *) echo "${p#/proc/}: $c" ;; esac; done # LEAKCHECK'
before=$(D exec "$M" -- sh -c "$others")
for p in 1 2 3 4 5 6 7 8; do
	(
		for k in $(seq 25); do
			out=$(D exec "$M" -- sh -c 'echo "$0-$1"' "$p" "$k" 2>&1)
			[ "$out" = "$p-$k" ] || echo "$p/$k: $out" >>"$work/conc-fail"
		done
	) &
	pids="${pids:-} $!"
done
wait $pids
after=$(D exec "$M" -- sh -c "$others")
[ ! -s "$work/conc-fail" ] && ok "200 execs from 8 processes at once: none failed" ||
	bad "concurrency" "$(head -5 "$work/conc-fail" | tr '\n' '|')"
[ -z "$before" ] && [ -z "$after" ] &&
	ok "no process left in the sandbox afterwards (only the init's)" ||
	bad "leaked processes" "before: $before after: $after"

# ===== Hostile clients =====
V=$(D create --tenant "$T-vanish" --lifetime 600)
$PY - "$sock" "$V" <<'EOF' >"$work/hostile" 2>&1
import json, socket, struct, sys
path, vid = sys.argv[1], sys.argv[2]

def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s

def frame(t, b):
    return bytes([t]) + struct.pack(">I", len(b)) + b

def read_frame(s):
    h = b""
    while len(h) < 5:
        c = s.recv(5 - len(h))
        if not c:
            return None, None
        h += c
    n = struct.unpack(">I", h[1:])[0]
    d = b""
    while len(d) < n:
        d += s.recv(n - len(d))
    return h[0], d

def error_of(raw):
    s = conn()
    s.sendall(raw)
    t, d = read_frame(s)
    assert t == 0x13, t
    j = json.loads(d)
    assert j["ok"] is False, j
    return j["error"]

assert "unknown frame type 0x7f" in error_of(b"\x7fgarbage that is not a frame")
assert "4294967295 bytes" in error_of(b"\x01\xff\xff\xff\xff")
assert "not a JSON object" in error_of(frame(1, b"{not json"))
assert "first frame must be a request" in error_of(frame(2, b"stdin first"))
assert "unknown or malformed" in error_of(frame(1, b'{"op":"list","x":1}'))
# a client that vanishes mid-run: the run is ended
s = conn()
s.sendall(frame(1, json.dumps({"op": "exec", "id": vid,
       "argv": ["sh", "-c", "echo started; exec sleep 1000"]}).encode()))
t, d = read_frame(s)
assert t == 0x11 and d == b"started\n", (t, d)
s.close()
print("hostile ok")
EOF
grep -q "hostile ok" "$work/hostile" && ok "garbage, a huge frame, bad JSON, a wrong first frame: each refused, naming it" ||
	bad "hostile" "$(cat "$work/hostile")"
for _ in $(seq 1200); do # a hang guard
	[ -z "$(running "$V")" ] && break
	sleep 0.1
done
[ -z "$(running "$V")" ] && ok "a client that vanishes mid-run ends the run (its sandbox is removed)" ||
	bad "vanished client" "still $(running "$V")"
kill -0 "$daemon_pid" && D --json ls --tenant "$T-main" | grep -q "$M" &&
	ok "the daemon still serves after the hostile clients" || bad "daemon after hostile"

# Standard input held for runs not yet started is bounded across clients,
# not only per client: two clients each hold 64 MiB (no STDIN_EOF), and a
# third's 64 MiB must be refused, naming the bound, not held on top.
$PY - "$sock" "$M" <<'EOF' >"$work/stdin-total" 2>&1
import json, socket, struct, sys
path, mid = sys.argv[1], sys.argv[2]
chunk = b"x" * 65536

def frame(t, b):
    return bytes([t]) + struct.pack(">I", len(b)) + b

def read_frame(s):
    h = b""
    while len(h) < 5:
        c = s.recv(5 - len(h))
        if not c:
            return None, None
        h += c
    n = struct.unpack(">I", h[1:])[0]
    d = b""
    while len(d) < n:
        d += s.recv(n - len(d))
    return h[0], d

def holder(eof):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    req = {"op": "exec", "id": mid, "argv": ["true"], "stdin": True}
    try:
        s.sendall(frame(1, json.dumps(req).encode()))
        for _ in range(1024):
            s.sendall(frame(2, chunk))
        if eof:
            s.sendall(frame(3, b""))
    except (BrokenPipeError, ConnectionResetError):
        pass
    return s

def refused(s):
    # A holder the daemon answered already was refused (its 64 MiB is not
    # held): stdin of an earlier case was still held when it came.
    s.setblocking(False)
    try:
        s.recv(1, socket.MSG_PEEK)  # an answer, or its end
        return True
    except BlockingIOError:
        return False
    finally:
        s.setblocking(True)

# The two holders must both be held when the third comes; one refused
# because an earlier case's stdin was not let go yet is tried again, as
# that release comes (a hang guard of 600 tries, no time assumed).
for attempt in range(600):
    held = [holder(False), holder(False)]
    if not any(refused(s) for s in held):
        break
    for s in held:
        s.close()
else:
    raise SystemExit("the daemon never held two clients' 64 MiB at once")
c = holder(True)
t, d = read_frame(c)
assert t == 0x13, (t, d)
j = json.loads(d)
assert j["ok"] is False and "across its clients" in j["error"], j
for s in held + [c]:
    s.close()
print("stdin total ok")
EOF
grep -q "stdin total ok" "$work/stdin-total" &&
	ok "stdin held for runs is bounded across clients (a third 64 MiB refused)" ||
	bad "stdin total" "$(tail -3 "$work/stdin-total" | tr '\n' '|')"
kill -0 "$daemon_pid" && D exec "$M" -- true &&
	ok "the daemon still serves after the stdin holders" || bad "daemon after stdin holders"

# ===== The boxes of sandboxes that are gone =====
# A sandbox removed behind the daemon's back (directly, or by the reaper)
# must not keep its channel's descriptors in the daemon forever: a daemon
# that lives long would run out of them and stop serving.
fds() { ls "/proc/$daemon_pid/fd" | wc -l; }
# Each count is taken with no client connected: the connections of the
# cases above (the stdin holders' tries among them) and of each create are
# closed by their threads as each sees its client gone, whenever that is.
# An accepted connection is listed in /proc/net/unix under the socket's
# path until the daemon closes it (the listening socket has flag 00010000).
conns() { awk -v p="$sock" '$8 == p && $4 != "00010000"' /proc/net/unix | wc -l; }
quiet_fds() {
	for _ in $(seq 300); do # a hang guard
		[ "$(conns)" -eq 0 ] && break
		sleep 0.1
	done
	fds
}
base=$(quiet_fds)
gone_ids=
for _ in 1 2 3; do
	gone_ids="$gone_ids $(D create --tenant "$T-swept" --lifetime 600)"
done
held=$(quiet_fds)
# shellcheck disable=SC2086
N rm $gone_ids >/dev/null
G=$(D create --tenant "$T-swept" --lifetime 600)
for _ in $(seq 300); do # a hang guard
	[ "$(quiet_fds)" -le $((base + (held - base) / 3 + 1)) ] && break
	sleep 0.1
done
now=$(quiet_fds)
[ "$now" -le $((base + (held - base) / 3 + 1)) ] && [ "$held" -gt "$base" ] &&
	ok "the daemon lets go of the sandboxes removed behind its back (fds $base, $held, $now)" ||
	bad "descriptors of removed sandboxes kept" "fds: before $base, with 3 $held, after rm + 1 create $now"
[ "$(via "$G" D)" = channel ] && ok "the sandbox made after the sweep keeps its channel" ||
	bad "channel after sweep" "$(via "$G" D)"

# ===== SIGINT during a silent run, both ways =====
I1=$(D create --tenant "$T-int" --lifetime 600)
I2=$(N create --tenant "$T-int" --lifetime 600)
for way in D N; do
	id=$I1
	[ $way = N ] && id=$I2
	rm -f "$work/int.out"
	# the command itself in the background (not a function's subshell), so
	# that the signal reaches it
	if [ $way = D ]; then
		$CL SANDBOXIO_DAEMON="$sock" "$CLI" exec "$id" -- sh -c 'echo started; exec sleep 1000' \
			>"$work/int.out" 2>"$work/int.$way" &
	else
		SANDBOXIO_INIT=$INIT "$CLI" --no-daemon exec "$id" -- sh -c 'echo started; exec sleep 1000' \
			>"$work/int.out" 2>"$work/int.$way" &
	fi
	cpid=$!
	for _ in $(seq 1200); do # a hang guard: until the run has started
		grep -q started "$work/int.out" 2>/dev/null && break
		sleep 0.1
	done
	kill -INT $cpid
	wait $cpid
	echo $? >"$work/int.rc.$way"
done
for _ in $(seq 1200); do # a hang guard: until both are removed
	[ -z "$(running "$I1")" ] && [ -z "$(running "$I2")" ] && break
	sleep 0.1
done
[ "$(cat "$work/int.rc.D")" = 130 ] && [ "$(cat "$work/int.rc.N")" = 130 ] &&
	cmp -s "$work/int.D" "$work/int.N" && [ -z "$(running "$I1")" ] && [ -z "$(running "$I2")" ] &&
	ok "both ways: SIGINT during a silent run: 130, the same message, the sandbox removed" ||
	bad "SIGINT" "$(cat "$work/int.rc.D" "$work/int.D" "$work/int.rc.N" "$work/int.N") $(running "$I1") $(running "$I2")"

# ===== The daemon killed outright =====
# K: served again after the restart, then ended by its init at its lifetime.
# F: frozen (docker pause) so that its init cannot end it: the reaper must.
F=$(D create --tenant "$T-frozen" --lifetime 30 2>"$work/err")
curl -fsS -X POST --unix-socket "$ENGINE" "http://localhost/v1.41/containers/$F/pause" ||
	bad "pause F"
K=$(D create --tenant "$T-kill" --lifetime 25 2>>"$work/err")
[ -n "$K" ] && [ -n "$F" ] && [ "$(via "$K" D)" = channel ] || bad "create K, F" "$(cat "$work/err")"
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null
daemon_pid=
[ "$(running "$K")" = True ] && [ -n "$(running "$F")" ] &&
	ok "SIGKILL of the daemon: its sandboxes live on" || bad "K after SIGKILL"
[ "$(label "$K" owner-pid)" = 0 ] &&
	[ "$(label "$K" deadline)" = $(($(label "$K" created) + 25)) ] &&
	ok "they carry the reaper's labels: no owner process (detached), the deadline" ||
	bad "labels" "owner $(label "$K" owner-pid) deadline $(label "$K" deadline) created $(label "$K" created)"
N reap --dry-run --tenant "$T-kill" >"$work/out" 2>"$work/err"
[ ! -s "$work/out" ] && grep -q "would reap 0 sandboxes" "$work/err" &&
	ok "the reaper leaves them alone before their deadline" || bad "reap before deadline" "$(cat "$work/out" "$work/err")"
start_daemon || exit 1 # the socket the killed daemon left is replaced
[ "$(D exec "$K" -- echo adopted 2>&1)" = adopted ] && [ "$(via "$K" D)" = exec ] &&
	ok "a restarted daemon serves them again (adopted: through docker exec)" ||
	bad "adopt" "$(via "$K" D)"
for _ in $(seq 1200); do # a hang guard: the lifetime is 25 s
	[ "$(running "$K")" = True ] || break
	sleep 0.2
done
[ "$(running "$K")" != True ] && ok "the init ends a sandbox at its lifetime (the dead-man deadline)" ||
	bad "dead-man" "running=$(running "$K")"
fdl=$(label "$F" deadline)
while [ "$(date +%s)" -le "$fdl" ]; do sleep 0.5; done # until F's deadline has passed
# Frozen, its init cannot end it: only a reaper can. Any reaper on this
# host may come first once the deadline has passed (every backend open
# reaps), so this one either removes it or finds it gone.
before=$(running "$F")
N reap --tenant "$T-frozen" >"$work/out" 2>&1
{ grep -q "^removed .*$T-frozen  deadline-passed" "$work/out" || [ -z "$before" ]; } &&
	[ -z "$(running "$F")" ] &&
	ok "a reaper removes one its init could not end, once its deadline passed" ||
	bad "reap after deadline" "$(cat "$work/out")"

# ===== --background =====
bsock=$work/bg/b.sock
SANDBOXIO_INIT=$INIT "$CLI" daemon --socket "$bsock" --background --pid-file "$work/bg.pid" \
	>"$work/out" 2>"$work/err"
rc=$?
bpid=$(cat "$work/bg.pid" 2>/dev/null)
[ $rc = 0 ] && [ "$(cat "$work/out")" = ready ] && [ -n "$bpid" ] && kill -0 "$bpid" &&
	$CL SANDBOXIO_DAEMON="$bsock" "$CLI" --json ls --tenant "$T-none" >/dev/null &&
	ok "--background: ready, exit 0, a pid file of the live daemon, which serves" ||
	bad "--background" "rc $rc $(cat "$work/out" "$work/err")"
if [ -n "$bpid" ]; then
	kill -TERM "$bpid"
	for _ in $(seq 600); do # a hang guard
		kill -0 "$bpid" 2>/dev/null || break
		sleep 0.1
	done
	[ ! -e "$bsock" ] && [ ! -e "$work/bg.pid" ] &&
		ok "--background: SIGTERM removes the socket and the pid file" || bad "--background stop"
fi
SANDBOXIO_INIT=$INIT "$CLI" daemon --socket "$work/bg/$(printf 'x%.0s' $(seq 120)).sock" \
	--background >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 125 ] && [ ! -s "$work/out" ] && grep -q "expected an absolute path of at most" "$work/err" &&
	grep -q "it did not start" "$work/err" &&
	ok "--background: a daemon that cannot start makes the command fail (125), saying why" ||
	bad "--background failure" "rc $rc $(cat "$work/out" "$work/err")"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

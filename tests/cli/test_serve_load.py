#!/usr/bin/python3
"""tests/cli/test_serve_load.py: the client side of tests/cli/test_serve_load.sh.

Against a running `sandboxio serve --api e2b` (URL, KEY, server PID, tenant):
  1. quiet: ROUNDS authenticated operations (create a sandbox, run `echo ok`
     in it through Process.Start, delete it), each timed; the median;
  2. load: IDLE idle connections (spread over loopback source addresses
     127.0.1.x, within the per-client bound) and FLOODERS processes sending
     unauthenticated requests in a loop from 127.0.2.x, while the same
     operations run again; the median;
  3. the ratio loaded/quiet must be at most 2: measured in pairs, the same
     operation without and then with the flood (the idle connections held
     throughout), and the median of the pairs' ratios, so that the machine's
     speed and whatever else it does cancel out; the flooders run at nice
     19, so that their own CPU is not what is measured;
  4. after the load, the server's threads and descriptors come back near
     what they were before it (polled, with a hang guard), its RSS too, and
     no sandbox of the tenant is left.
Traffic goes to loopback only. Prints one line per check ("ok ..." or
"FAIL ...") and numbers; exits non-zero on a failure.
"""
import base64
import http.client
import json
import multiprocessing
import os
import socket
import statistics
import struct
import subprocess
import sys
import time

URL, KEY, PID, TENANT = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
IDLE = int(os.environ.get("LOAD_IDLE", "1000"))
FLOODERS = int(os.environ.get("LOAD_FLOODERS", "1"))
ROUNDS = int(os.environ.get("LOAD_ROUNDS", "7"))
# Requests a second from each flooder: a steady flood, paced so that what is
# measured is the server turning it away, not a 2-core machine out of CPU.
RATE = float(os.environ.get("LOAD_FLOOD_RATE", "250"))
PER_ADDR = 20  # idle connections per source address (below the server's per-client bound)
GUARD = 300  # seconds: a hang guard for waits on events, never a measure

host, port = URL.rsplit("/", 1)[1].rsplit(":", 1)
port = int(port)
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failed += 1


def rest(method, path, body=None):
    c = http.client.HTTPConnection(host, port, timeout=GUARD)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"X-API-Key": KEY, "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, (json.loads(data) if data else None)


def start(sid, tok, cmd, deadline_ms=None):
    msg = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}}).encode()
    c = http.client.HTTPConnection(host, port, timeout=GUARD)
    headers = {"E2b-Sandbox-Id": sid, "X-Access-Token": tok,
               "Content-Type": "application/connect+json"}
    if deadline_ms:
        headers["Connect-Timeout-Ms"] = str(deadline_ms)
    c.request("POST", "/process.Process/Start", body=b"\0" + struct.pack(">I", len(msg)) + msg,
              headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    out, i = b"", 0
    while i + 5 <= len(data):
        n = struct.unpack(">I", data[i + 1:i + 5])[0]
        j = json.loads(data[i + 5:i + 5 + n])
        i += 5 + n
        v = j.get("event", {}).get("data", {}).get("stdout")
        if v:
            out += base64.b64decode(v)
    return r.status, out


def operation():
    """create, run, delete: seconds, or None when a step failed."""
    t0 = time.monotonic()
    st, sb = rest("POST", "/v2/sandboxes",
                  {"timeout": 120, "allow_internet_access": False,
                   "metadata": {"io.sandboxio.tenant": TENANT}})
    if st != 201:
        print("     create:", st, sb, flush=True)
        return None
    st2, out = start(sb["sandboxID"], sb["envdAccessToken"], "echo ok")
    st3, _ = rest("DELETE", "/sandboxes/" + sb["sandboxID"])
    if st2 != 200 or out != b"ok\n" or st3 != 204:
        print("     run/delete:", st2, out, st3, flush=True)
        return None
    return time.monotonic() - t0


def measure(label):
    times = [operation() for _ in range(ROUNDS)]
    ok = all(t is not None for t in times)
    check(ok, "%s: %d create/run/delete operations succeed" % (label, ROUNDS))
    return statistics.median(times) if ok else None


def slow_reader():
    """A client that starts a chatty command and never reads its output
    holds the sandbox's busy slot no longer than the command's deadline:
    the next command of the sandbox runs after it, and the server's
    memory stays bounded (checked with the rest below)."""
    st, sb = rest("POST", "/v2/sandboxes",
                  {"timeout": 3600, "allow_internet_access": False,
                   "metadata": {"io.sandboxio.tenant": TENANT}})
    if st != 201:
        check(False, "slow reader: create (%s %s)" % (st, sb))
        return
    sid, tok = sb["sandboxID"], sb["envdAccessToken"]
    msg = json.dumps({"process": {"cmd": "/bin/sh",
                                  "args": ["-c", "yes sandboxio | head -c 268435456"]}}).encode()
    body = b"\0" + struct.pack(">I", len(msg)) + msg
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(GUARD)
    s.connect((host, port))
    s.sendall(("POST /process.Process/Start HTTP/1.1\r\nHost: %s:%d\r\nE2b-Sandbox-Id: %s\r\n"
               "X-Access-Token: %s\r\nContent-Type: application/connect+json\r\n"
               "Connect-Timeout-Ms: 3000\r\nContent-Length: %d\r\n\r\n"
               % (host, port, sid, tok, len(body))).encode() + body)
    # Never read. The second command's deadline is a hang guard: without a
    # bound on the first one's output wait it would wait for the sandbox's
    # end (3600 s) and fail at this deadline instead.
    st2, out = start(sid, tok, "echo ok", deadline_ms=GUARD * 1000 // 2)
    check(st2 == 200 and out == b"ok\n",
          "a command runs after one whose client never read its output (%s %r)" % (st2, out[:80]))
    s.close()
    st3, _ = rest("DELETE", "/sandboxes/" + sid)
    check(st3 == 204, "slow reader: the sandbox is deleted (%s)" % st3)


def server_stats():
    with open("/proc/%d/status" % PID) as f:
        st = dict(l.split(":", 1) for l in f if ":" in l)
    return {"threads": int(st["Threads"]), "rss_kib": int(st["VmRSS"].split()[0]),
            "fds": len(os.listdir("/proc/%d/fd" % PID))}


def flood(n, stop, go):
    """Unauthenticated requests in a loop, from 127.0.2.<n+1>, one per connection.

    At the lowest CPU priority: on a machine of few cores, what is measured
    is then the server's cost of turning the flood away (the server runs at
    its normal priority), not the flooder's own use of a core the measured
    client and dockerd would otherwise have."""
    os.nice(19)
    done = 0
    due = time.monotonic()
    while not stop.is_set():
        if not go.wait(0.05):
            continue
        due = max(due + 1.0 / RATE, time.monotonic() - 1.0)
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
        try:
            s = socket.socket()
            s.bind(("127.0.2.%d" % (n + 1), 0))
            s.settimeout(GUARD)
            s.connect((host, port))
            s.sendall(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\n\r\n")
            while s.recv(4096):
                pass
            s.close()
            done += 1
        except OSError:
            pass
    print("     flooder %d sent %d unauthenticated requests" % (n, done), flush=True)


def main():
    base = server_stats()
    quiet = measure("quiet")
    idle = []
    for k in range(IDLE):
        s = socket.socket()
        s.bind(("127.0.1.%d" % (k // PER_ADDR + 1), 0))
        s.settimeout(GUARD)
        s.connect((host, port))
        s.sendall(b"GET /v2/sandboxes HTTP/1.1\r\n")  # never finished
        idle.append(s)
    # The server holds them all: one thread each (polled: accepts are async).
    t_end = time.monotonic() + GUARD
    while server_stats()["threads"] < base["threads"] + IDLE and time.monotonic() < t_end:
        time.sleep(0.2)
    held = server_stats()
    check(held["threads"] >= base["threads"] + IDLE,
          "%d idle connections are held by the server (threads %d -> %d)" %
          (IDLE, base["threads"], held["threads"]))
    # Pairs, the flood off then on, so that whatever else the machine does
    # weighs on both sides of each pair alike; the ratio is the median of
    # the pairs' ratios.
    stop, go = multiprocessing.Event(), multiprocessing.Event()
    flooders = [multiprocessing.Process(target=flood, args=(n, stop, go)) for n in range(FLOODERS)]
    for p in flooders:
        p.start()
    pairs = []
    for _ in range(ROUNDS):
        go.clear()
        q = operation()
        go.set()
        l = operation()
        pairs.append((q, l))
    go.clear()
    ok = all(q is not None and l is not None for q, l in pairs)
    check(ok, "loaded: %d create/run/delete operations succeed, each beside one without the flood"
          % ROUNDS)
    loaded = statistics.median(l / q for q, l in pairs) * quiet if ok and quiet else None
    peak = server_stats()
    stop.set()
    for p in flooders:
        p.join(GUARD)
    for s in idle:
        s.close()
    if quiet and loaded:
        ratio = loaded / quiet
        print("     quiet median %.3f s; pairs (without, with the flood): %s; median ratio %.2f"
              % (quiet, ", ".join("%.2f/%.2f" % p for p in pairs), ratio))
        check(ratio <= 2.0, "under %d idle connections and %d flooders the median operation takes "
              "at most 2x the quiet one (%.2fx)" % (IDLE, FLOODERS, ratio))
    slow_reader()
    # Nothing leaks: threads and descriptors come back (polled until they do).
    t_end = time.monotonic() + GUARD
    while time.monotonic() < t_end:
        now = server_stats()
        if now["threads"] <= base["threads"] + 2 and now["fds"] <= base["fds"] + 2:
            break
        time.sleep(0.2)
    now = server_stats()
    print("     server before %s, under load %s, after %s" % (base, peak, now))
    check(now["threads"] <= base["threads"] + 2 and now["fds"] <= base["fds"] + 2,
          "threads and descriptors come back to the baseline")
    if os.environ.get("LOAD_SANITIZED"):
        # AddressSanitizer keeps freed memory in quarantine; LeakSanitizer
        # checks for leaks when the server exits (test_serve_load.sh).
        print("     RSS not compared: a sanitizer build (%d -> %d KiB)" % (base["rss_kib"], now["rss_kib"]))
    else:
        check(now["rss_kib"] <= base["rss_kib"] + 32 * 1024,
              "RSS comes back near the baseline (%d -> %d KiB)" % (base["rss_kib"], now["rss_kib"]))
    left = subprocess.run(["docker", "ps", "-aq", "--filter", "label=io.sandboxio.tenant=" + TENANT],
                          capture_output=True, text=True).stdout.split()
    check(not left, "no container of the tenant is left")
    print("%s" % ("failed" if failed else "passed"))
    sys.exit(1 if failed else 0)


main()

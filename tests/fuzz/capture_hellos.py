#!/usr/bin/python3
"""tests/fuzz/capture_hellos.py: records real TLS ClientHellos for the sni
corpus (tests/fuzz/corpus/sni/) and the unit test's fixtures.

A relay on 127.0.0.1 sits in front of a local `openssl s_server`; each
client below connects to the relay, which writes the client's first bytes
(every record until the ClientHello is whole) to OUTDIR/<label>.bin and
forwards the whole connection, so the handshake completes. Loopback only.

    python3 tests/fuzz/capture_hellos.py OUTDIR
"""
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
tmp = tempfile.mkdtemp()
key, crt = os.path.join(tmp, "k.pem"), os.path.join(tmp, "c.pem")
subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                "-out", crt, "-days", "1", "-subj", "/CN=pkg.canary.test"], check=True,
               capture_output=True)

# s_server on a port it picks: give it a free one from the kernel.
probe = socket.socket()
probe.bind(("127.0.0.1", 0))
srv_port = probe.getsockname()[1]
probe.close()
server = subprocess.Popen(["openssl", "s_server", "-accept", "127.0.0.1:%d" % srv_port, "-key",
                           key, "-cert", crt, "-www", "-quiet"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
# Wait until it accepts (its listening socket exists): connect in a loop.
while True:
    try:
        socket.create_connection(("127.0.0.1", srv_port)).close()
        break
    except OSError:
        if server.poll() is not None:
            sys.exit("s_server exited: " + server.stderr.read().decode())

relay = socket.socket()
relay.bind(("127.0.0.1", 0))
relay.listen(8)
relay_port = relay.getsockname()[1]


def hello_bytes(c):
    """Reads records until the ClientHello they carry is whole."""
    data = b""
    while True:
        off, hs = 0, b""
        while off + 5 <= len(data):
            rl = int.from_bytes(data[off + 3:off + 5], "big")
            if off + 5 + rl > len(data):
                break
            hs += data[off + 5:off + 5 + rl]
            off += 5 + rl
        if len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big"):
            return data[:off]
        got = c.recv(65536)
        if not got:
            return data
        data += got


def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve_one(label):
    c, _ = relay.accept()
    first = hello_bytes(c)
    with open(os.path.join(OUT, label + ".bin"), "wb") as f:
        f.write(first)
    up = socket.create_connection(("127.0.0.1", srv_port))
    up.sendall(first)
    t = threading.Thread(target=pump, args=(up, c))
    t.start()
    pump(c, up)
    t.join()
    c.close()
    up.close()


def run(label, argv, stdin=b"Q\n"):
    t = threading.Thread(target=serve_one, args=(label,))
    t.start()
    subprocess.run(argv, input=stdin, capture_output=True)
    t.join()


addr = "127.0.0.1:%d" % relay_port
run("openssl-tls13", ["openssl", "s_client", "-servername", "pkg.canary.test", "-connect", addr])
run("openssl-tls12", ["openssl", "s_client", "-tls1_2", "-servername", "pkg.canary.test",
                      "-connect", addr])
run("openssl-nosni", ["openssl", "s_client", "-noservername", "-connect", addr])
run("curl", ["curl", "-sk", "--resolve", "pkg.canary.test:%d:127.0.0.1" % relay_port,
             "https://pkg.canary.test:%d/" % relay_port])


def py_client():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", relay_port)) as s:
        with ctx.wrap_socket(s, server_hostname="files.pythonhosted.canary.test") as t:
            t.sendall(b"GET / HTTP/1.0\r\n\r\n")
            while t.recv(65536):
                pass


t = threading.Thread(target=serve_one, args=("python-ssl",))
t.start()
py_client()
t.join()
server.terminate()
server.wait()

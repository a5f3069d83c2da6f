#!/usr/bin/env python3
"""tests/support/engine-hold.py: a pass-through proxy for the Engine's unix
socket that holds chosen requests until the test says go.

Tests that send a signal "during create" must know that the command is in
the middle of creating, on a fast machine and on a loaded one alike. A sleep
cannot know that; this proxy can: the command under test is pointed at the
proxy's socket (--socket), and each request whose "METHOD PATH" matches a
--hold pattern is held before it reaches the Engine. The proxy prints
"held METHOD PATH" on stdout and forwards the request only when a line
"release" arrives on stdin (or stdin closes). Everything else, the held
request afterwards included, goes through unchanged, upgrades (attach, exec
start) included.

  engine-hold.py --listen SOCK [--engine /var/run/docker.sock]
                 [--hold 'POST /containers/create'] ... [--log]

PATH is matched without the API version prefix and without the query, as a
Python regular expression that must match the whole "METHOD PATH". Each
--hold is used once, in the order the requests come. "ready" is printed once
the socket listens. --log prints every request line on stderr.

HTTP is parsed only as far as needed to find where each request starts:
the header block, then a body by Content-Length or chunked encoding; after
a request that asks for an upgrade the connection is copied as it is.
"""
import argparse
import os
import re
import socket
import sys
import threading

out_lock = threading.Lock()
release = threading.Semaphore(0)
holds_lock = threading.Lock()


def say(line):
    with out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def read_stdin():
    for line in sys.stdin:
        if line.strip() == "release":
            release.release()
    # stdin closed: nothing may stay held forever.
    for _ in range(1000):
        release.release()


class Conn:
    def __init__(self, client, engine_path, holds, log):
        self.client = client
        self.engine = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.engine.connect(engine_path)
        self.holds = holds
        self.log = log
        self.buf = b""

    def recv_more(self):
        data = self.client.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def take(self, n):
        while len(self.buf) < n:
            self.recv_more()
        chunk, self.buf = self.buf[:n], self.buf[n:]
        return chunk

    def take_line(self):
        while b"\r\n" not in self.buf:
            self.recv_more()
        i = self.buf.index(b"\r\n") + 2
        chunk, self.buf = self.buf[:i], self.buf[i:]
        return chunk

    def held(self, what):
        with holds_lock:
            for i, pat in enumerate(self.holds):
                if pat.fullmatch(what):
                    del self.holds[i]
                    break
            else:
                return
        say("held " + what)
        release.acquire()

    def client_to_engine(self):
        try:
            while True:
                while b"\r\n\r\n" not in self.buf:
                    self.recv_more()
                end = self.buf.index(b"\r\n\r\n") + 4
                head, self.buf = self.buf[:end], self.buf[end:]
                lines = head.decode("latin-1").split("\r\n")
                method, target = lines[0].split(" ")[:2]
                path = re.sub(r"^/v[0-9.]+(?=/)", "", target.split("?", 1)[0])
                what = method + " " + path
                if self.log:
                    sys.stderr.write("engine-hold: " + what + "\n")
                self.held(what)
                self.engine.sendall(head)
                hdr = {}
                for h in lines[1:]:
                    if ":" in h:
                        k, v = h.split(":", 1)
                        hdr[k.strip().lower()] = v.strip()
                if "upgrade" in hdr:
                    self.engine.sendall(self.buf)
                    self.buf = b""
                    while True:
                        data = self.client.recv(65536)
                        if not data:
                            break
                        self.engine.sendall(data)
                    break
                if hdr.get("transfer-encoding", "").lower() == "chunked":
                    while True:
                        size_line = self.take_line()
                        self.engine.sendall(size_line)
                        size = int(size_line.split(b";")[0].strip(), 16)
                        self.engine.sendall(self.take(size + 2))
                        if size == 0:
                            break
                else:
                    self.engine.sendall(self.take(int(hdr.get("content-length", "0"))))
        except (EOFError, OSError, ValueError, IndexError):
            pass
        try:
            self.engine.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def engine_to_client(self):
        try:
            while True:
                data = self.engine.recv(65536)
                if not data:
                    break
                self.client.sendall(data)
        except OSError:
            pass
        try:
            self.client.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def serve(self):
        back = threading.Thread(target=self.engine_to_client, daemon=True)
        back.start()
        self.client_to_engine()
        back.join()
        self.client.close()
        self.engine.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--engine", default="/var/run/docker.sock")
    ap.add_argument("--hold", action="append", default=[])
    ap.add_argument("--log", action="store_true")
    a = ap.parse_args()
    holds = [re.compile(h) for h in a.hold]

    try:
        os.unlink(a.listen)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(a.listen)
    srv.listen(64)
    threading.Thread(target=read_stdin, daemon=True).start()
    say("ready")
    while True:
        client, _ = srv.accept()
        try:
            conn = Conn(client, a.engine, holds, a.log)
        except OSError as e:
            sys.stderr.write("engine-hold: cannot reach the Engine: %s\n" % e)
            client.close()
            continue
        threading.Thread(target=conn.serve, daemon=True).start()


if __name__ == "__main__":
    main()

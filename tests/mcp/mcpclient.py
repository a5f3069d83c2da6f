"""A minimal MCP client over stdio for the tests: starts `sandboxio mcp`,
writes one JSON-RPC message per line, reads replies line by line. Each read
waits for the server's reply with a generous bound that is only a guard
against a hang (the server answers every request)."""

import json
import os
import select
import signal
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CLI = os.environ.get("SBX_CLI") or os.path.join(ROOT, "build", "sandboxio")
HANG_GUARD_S = 600


class Server:
    def __init__(self, *args, global_args=(), env=None):
        e = dict(os.environ)
        e.pop("SANDBOXIO_CONFIG", None)
        if env:
            e.update(env)
        init = os.path.join(ROOT, "build", "sbx-init")
        if "SANDBOXIO_INIT" not in e and os.path.exists(init):
            e["SANDBOXIO_INIT"] = init
        self.p = subprocess.Popen([CLI, *global_args, "mcp", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        self.next_id = 1

    def send_raw(self, line):
        if isinstance(line, str):
            line = line.encode()
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg))

    def read(self):
        r, _, _ = select.select([self.p.stdout], [], [], HANG_GUARD_S)
        assert r, "the server did not answer"
        line = self.p.stdout.readline()
        assert line.endswith(b"\n"), "a reply is one line: %r" % line
        return json.loads(line)

    def request(self, method, params=None):
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.next_id += 1
        self.send(msg)
        reply = self.read()
        assert reply["id"] == msg["id"]
        return reply

    def initialize(self, version="2025-06-18"):
        r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def call(self, name, arguments):
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def close(self):
        """Ends the session (EOF on stdin); returns (exit status, stderr)."""
        if not self.p.stdin.closed:
            self.p.stdin.close()
        rest = self.p.stdout.read()
        err = self.p.stderr.read().decode("utf-8", "replace")
        rc = self.p.wait()
        assert rest == b"", "nothing after the last reply: %r" % rest
        return rc, err

    def terminate(self):
        self.p.send_signal(signal.SIGTERM)
        err = self.p.stderr.read().decode("utf-8", "replace")
        return self.p.wait(), err

"""`sandboxio mcp` against the local Docker Engine (dockerd and the image
sandboxio/python:3.11): tool calls, files, and the session's sandbox
removed at EOF and on SIGTERM."""

import json
import re
import signal
import subprocess
import uuid

import pytest

import sandboxio
from mcpclient import CLI, Server

pytestmark = pytest.mark.engine


def tenant():
    return "mcp-test-" + uuid.uuid4().hex[:8]


def ids_of(t):
    return [s["id"] for s in sandboxio.list_sandboxes(tenant=t)]


def test_run_code_prints_42_and_the_session_end_removes_the_sandbox():
    t = tenant()
    s = Server("--tenant", t)
    s.initialize()
    r = s.call("run_code", {"code": "print(6*7)"})["result"]
    assert r["isError"] is False
    assert r["structuredContent"]["stdout"] == "42\n"
    assert r["structuredContent"]["exit_code"] == 0
    assert any("42" in c["text"] for c in r["content"])
    assert len(ids_of(t)) == 1
    rc, err = s.close()
    assert rc == 0
    assert re.search(r"sandbox \S+ created", err)
    assert ids_of(t) == []


def test_files_and_commands_share_one_sandbox():
    t = tenant()
    s = Server("--tenant", t)
    s.initialize("2024-11-05")
    r = s.call("write_file", {"path": "/workspace/hello.txt", "content": "hello\n"})["result"]
    assert r["isError"] is False
    r = s.call("read_file", {"path": "/workspace/hello.txt"})["result"]
    assert r["content"][0]["text"] == "hello\n"
    r = s.call("list_files", {})["result"]
    assert "hello.txt" in r["structuredContent"]["stdout"]
    r = s.call("run_command", {"command": "wc -c < /workspace/hello.txt"})["result"]
    assert r["structuredContent"]["stdout"].strip() == "6"
    r = s.call("run_command", {"argv": ["sh", "-c", "exit 3"]})["result"]
    assert r["isError"] is True and r["structuredContent"]["exit_code"] == 3
    r = s.call("read_file", {"path": "/workspace/none"})["result"]
    assert r["isError"] is True
    assert len(ids_of(t)) == 1
    assert s.close()[0] == 0
    assert ids_of(t) == []


def test_the_sandbox_has_no_network_whatever_the_call():
    """A UDP connect() sends no packet: it only asks the kernel for a route,
    and the default sandbox has none (198.51.100.7 is TEST-NET-2)."""
    t = tenant()
    s = Server("--tenant", t)
    s.initialize()
    code = ("import socket, errno\n"
            "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            "try:\n    u.connect(('198.51.100.7', 53)); print('connected')\n"
            "except OSError as e:\n    print(errno.errorcode[e.errno])\n")
    r = s.call("run_code", {"code": code})["result"]
    assert r["structuredContent"]["stdout"].strip() == "ENETUNREACH"
    assert s.close()[0] == 0


def test_a_run_timeout_can_only_narrow_the_servers():
    t = tenant()
    s = Server("--tenant", t, "--timeout", "20")
    s.initialize()
    r = s.call("run_code", {"code": "print(1)", "timeout": 3000})["result"]
    assert r["isError"] is True
    r = s.call("run_command", {"argv": ["sleep", "3000"], "timeout": 1})["result"]
    assert r["structuredContent"]["status"] == "timeout"
    assert s.close()[0] == 0


def test_sigterm_during_a_run_removes_the_sandbox():
    t = tenant()
    s = Server("--tenant", t)
    s.initialize()
    s.call("run_command", {"argv": ["true"]})  # the sandbox exists from here
    [sid] = ids_of(t)
    s.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
            "params": {"name": "run_command",
                       "arguments": {"command": "touch /workspace/started; exec sleep 3000"}}})
    # wait until the run has started: its file exists (hang guard only)
    for _ in range(6000):
        p = subprocess.run([CLI, "exec", sid, "--", "test", "-e", "/workspace/started"])
        if p.returncode == 0:
            break
    else:
        pytest.fail("the run never started")
    rc, err = s.terminate()
    assert rc == 0
    assert ids_of(t) == []


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_sigterm_during_a_blocked_file_call_removes_the_sandbox(tool):
    """A file moves through a run of cat, which a FIFO holds until the run
    deadline (here 3000 s): SIGTERM must kill the sandbox during a file call
    too, so that the server answers and ends at once, not at the deadline."""
    import select
    t = tenant()
    s = Server("--tenant", t, "--timeout", "3000")
    s.initialize()
    r = s.call("run_command", {"argv": ["mkfifo", "/workspace/fifo"]})["result"]
    assert r["isError"] is False
    [sid] = ids_of(t)
    args = {"path": "/workspace/fifo"}
    if tool == "write_file":
        args["content"] = "x"
    s.send({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
            "params": {"name": tool, "arguments": args}})
    # wait until the file call's cat is in the sandbox, blocked opening the
    # FIFO (the bracket keeps this grep's own command line from matching);
    # the bound is a hang guard only
    for _ in range(6000):
        p = subprocess.run([CLI, "exec", sid, "--", "sh", "-c",
                            "grep -qsa '/workspace/fif[o]' /proc/[0-9]*/cmdline"])
        if p.returncode == 0:
            break
    else:
        pytest.fail("the file call never started")
    s.p.send_signal(signal.SIGTERM)
    # the answer comes when the sandbox is killed, long before the deadline
    r, _, _ = select.select([s.p.stdout], [], [], 600)
    assert r, "SIGTERM did not end the file call"
    reply = json.loads(s.p.stdout.readline())
    assert reply["id"] == 99 and reply["result"]["isError"] is True
    rc, err = s.terminate()
    assert rc == 0
    assert ids_of(t) == []


def test_without_lifetime_the_sandbox_outlives_one_run():
    t = tenant()
    s = Server("--tenant", t, "--timeout", "900")
    s.initialize()
    s.call("run_command", {"argv": ["true"]})
    [info] = sandboxio.list_sandboxes(tenant=t)
    assert info["deadline"] - info["created"] >= 899  # whole seconds, rounded either way
    assert s.close()[0] == 0


def test_an_image_a_run_wrote_comes_back_as_image_content():
    import base64
    t = tenant()
    s = Server("--tenant", t)
    s.initialize()
    code = ("import base64\n"
            "png = base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
            "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==')\n"
            "open('/workspace/plot.png', 'wb').write(png)\n")
    assert s.call("run_code", {"code": code})["result"]["isError"] is False
    r = s.call("read_file", {"path": "/workspace/plot.png"})["result"]
    item = r["content"][0]
    assert item["type"] == "image" and item["mimeType"] == "image/png"
    assert base64.b64decode(item["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert s.close()[0] == 0


def test_a_secret_reaches_the_runs_and_never_the_client():
    t = tenant()
    value = "mcp-secret-" + uuid.uuid4().hex
    s = Server("--tenant", t, "--secret", "API_TOKEN", env={"API_TOKEN": value})
    s.initialize()
    # the run has the value (its length, and its hash, match), the client
    # sees it redacted
    import hashlib
    r = s.call("run_command", {"command": "echo ${#API_TOKEN}; printf %s \"$API_TOKEN\" | "
                               "sha256sum; echo $API_TOKEN"})["result"]
    out = r["structuredContent"]["stdout"].splitlines()
    assert out[0] == str(len(value))
    assert out[1].split()[0] == hashlib.sha256(value.encode()).hexdigest()
    assert out[2] == "<redacted>"
    assert value not in r["structuredContent"]["stdout"]
    s.call("run_command", {"command": "echo $API_TOKEN > /workspace/t"})
    r = s.call("read_file", {"path": "/workspace/t"})["result"]
    assert value not in r["content"][0]["text"]
    rc, err = s.close()
    assert rc == 0 and value not in err

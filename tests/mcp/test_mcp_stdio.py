"""`sandboxio mcp` over stdio, with no engine: the server is given a
socket path that does not exist, which it only reaches on a tool call."""


import pytest

from mcpclient import CLI, Server

NOSOCK = "/nonexistent/sandboxio-test/docker.sock"


@pytest.fixture
def srv():
    s = Server(global_args=("--socket", NOSOCK))
    yield s
    if s.p.poll() is None:
        s.p.kill()
        s.p.wait()


@pytest.mark.parametrize("asked,got", [("2025-06-18", "2025-06-18"),
                                       ("2025-03-26", "2025-03-26"),
                                       ("2024-11-05", "2024-11-05"),
                                       ("2030-01-01", "2025-06-18")])
def test_initialize_negotiates_the_revision(srv, asked, got):
    r = srv.initialize(asked)["result"]
    assert r["protocolVersion"] == got
    assert r["serverInfo"]["name"] == "sandboxio"
    assert "tools" in r["capabilities"]
    assert srv.close()[0] == 0


def test_tools_list(srv):
    srv.initialize()
    tools = srv.request("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == ["run_code", "run_command", "write_file", "read_file",
                                          "list_files"]
    for t in tools:
        s = t["inputSchema"]
        assert s["type"] == "object" and s["additionalProperties"] is False
        assert t["description"]
    assert srv.close()[0] == 0


def test_requests_before_initialize_are_refused(srv):
    r = srv.request("tools/list")
    assert r["error"]["code"] == -32600 and "initialize" in r["error"]["message"]
    assert "result" in srv.request("ping")
    srv.close()


def test_malformed_batch_and_unknown_method(srv):
    srv.initialize()
    srv.send_raw("this is not json")
    r = srv.read()
    assert r["error"]["code"] == -32700 and r["id"] is None
    srv.send([{"jsonrpc": "2.0", "id": 50, "method": "ping"}])
    r = srv.read()
    assert r["error"]["code"] == -32600 and "batch" in r["error"]["message"]
    assert srv.request("resources/list")["error"]["code"] == -32601
    srv.send({"jsonrpc": "2.0", "id": 51, "method": 3})
    assert srv.read()["error"]["code"] == -32600
    # a notification gets no reply: the next reply is the ping's
    srv.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
    assert "result" in srv.request("ping")
    srv.close()


def test_a_line_over_the_bound_is_refused_and_the_session_goes_on(srv):
    srv.initialize()
    srv.send_raw(b"{\"pad\":\"" + b"x" * (24 << 20) + b"\"}")
    r = srv.read()
    assert r["error"]["code"] == -32700 and "at most" in r["error"]["message"]
    assert "result" in srv.request("ping")
    srv.close()


def test_no_tool_argument_reaches_the_policy(srv):
    srv.initialize()
    for args in ({"code": "print(1)", "network": True}, {"code": "x", "image": "alpine"},
                 {"code": "x", "memory": "64g"}, {"code": "x", "allow_cidr": "198.51.100.0/24"}):
        r = srv.call("run_code", args)
        assert r["error"]["code"] == -32602, args
        assert "has no argument" in r["error"]["message"]
    srv.close()


def test_a_tool_call_with_the_daemon_down_is_a_tool_error_naming_the_socket(srv):
    srv.initialize()
    r = srv.call("run_code", {"code": "print(6*7)"})["result"]
    assert r["isError"] is True
    assert NOSOCK in r["content"][0]["text"]
    rc, err = srv.close()
    assert rc == 0


def test_eof_ends_the_session(srv):
    srv.initialize()
    rc, _ = srv.close()
    assert rc == 0


def test_sigterm_ends_the_session(srv):
    srv.initialize()
    assert "result" in srv.request("ping")  # the server waits in its read of stdin
    rc, _ = srv.terminate()
    assert rc == 0


def test_stdout_carries_only_the_protocol():
    s = Server("--json", global_args=("--socket", NOSOCK))
    rc, err = s.close()
    assert rc == 125
    s = Server(global_args=("--json", "--socket", NOSOCK))
    out = s.p.communicate(b"")[0]
    assert s.p.returncode == 125 and out == b""


def test_a_bad_policy_option_is_refused_before_any_message():
    s = Server("--memory", "0", global_args=("--socket", NOSOCK))
    rc, err = s.close()
    assert rc == 125 and "memory" in err


def test_help_names_the_tools():
    import subprocess
    out = subprocess.run([CLI, "mcp", "--help"], capture_output=True, check=True).stdout
    assert b"run_code" in out and b"--lifetime" in out


def test_a_secret_option_is_read_and_never_printed():
    value = "mcp-secret-value-0123"
    s = Server("--secret", "API_TOKEN", global_args=("--socket", NOSOCK),
               env={"API_TOKEN": value})
    s.initialize()
    r = s.call("run_code", {"code": "x"})["result"]  # the daemon is down: a tool error
    assert r["isError"] is True
    rc, err = s.close()
    assert rc == 0 and value not in err
    s = Server("--secret", "NOT_SET_ANYWHERE_42", global_args=("--socket", NOSOCK),
               env={"NOT_SET_ANYWHERE_42": ""})
    rc, err = s.close()
    assert rc == 125 and "NOT_SET_ANYWHERE_42" in err

"""check_double.py: checks of the Modal double with a plain gRPC client.

Run by test_double.sh. Starts run-double (tenant from --tenant) and drives it
with hand-made calls built on the double's own protos: bad credentials
(UNAUTHENTICATED, "token expired"), bad requests (INVALID_ARGUMENT,
NOT_FOUND, FAILED_PRECONDITION, garbage bytes), a missing image (FAILURE
naming it), the router's bearer JWT, exec output/exit/timeout/stdin/env/
idempotency, the CLI's own messages kept out of a program's stderr,
tags/list paging, terminate, lifetime and entrypoint results. Stops the
double with SIGTERM and checks it exits 0. Last line "N passed, N failed".
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import uuid
from typing import Callable, Optional

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grpc  # noqa: E402

import protos  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CP = "/modal.client.ModalClient/"
TCR = "/modal.task_command_router.TaskCommandRouter/"
IMAGE = "sandboxio/python:3.11"
SB_RE = re.compile(r"^sb-[0-9A-Za-z]{22}$")
api, tcr = protos.load()
passed = failed = 0


def check(name: str, ok: bool, detail: str = "") -> None:
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name, flush=True)
    else:
        failed += 1
        print("FAIL %s%s" % (name, (": " + detail) if detail else ""), flush=True)


def code_of(fn: Callable) -> tuple[Optional[grpc.StatusCode], str]:
    try:
        fn()
    except grpc.RpcError as e:
        return e.code(), e.details() or ""
    return grpc.StatusCode.OK, ""


def expect(name: str, fn: Callable, code: grpc.StatusCode, needle: str = "") -> None:
    got, details = code_of(fn)
    check(name, got == code and needle in details, "got %s %r" % (got, details))


class Double:
    def __init__(self, cli: str, tenant: str, extra: list[str]) -> None:
        self.tid, self.tsec = "ak-" + secrets.token_hex(8), "as-" + secrets.token_hex(16)
        env = dict(os.environ, MODAL_TOKEN_ID=self.tid, MODAL_TOKEN_SECRET=self.tsec)
        self.proc = subprocess.Popen([os.path.join(HERE, "run-double"), "--listen", "127.0.0.1:0", "--cli", cli,
                                      "--tenant", tenant] + extra, env=env, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "ready" or not line[1].startswith("http://"):
            raise SystemExit("the double did not become ready (printed %r)" % line)
        self.addr = line[1][len("http://"):]
        self.ch = grpc.insecure_channel(self.addr)
        self.token = ""

    def md(self, token: Optional[str] = None, tid: Optional[str] = None, tsec: Optional[str] = None):
        return (("x-modal-token-id", tid or self.tid), ("x-modal-token-secret", tsec or self.tsec),
                ("x-modal-auth-token", self.token if token is None else token))

    def raw(self, method: str, req, resp_cls, md=(), stream=False, ch=None, path=CP):
        ch = ch or self.ch
        if stream:
            f = ch.unary_stream(path + method, request_serializer=type(req).SerializeToString,
                                response_deserializer=resp_cls.FromString)
            return list(f(req, metadata=md, timeout=120))
        f = ch.unary_unary(path + method, request_serializer=type(req).SerializeToString,
                           response_deserializer=resp_cls.FromString)
        return f(req, metadata=md, timeout=120)

    def call(self, method: str, req, resp_cls, stream=False):
        return self.raw(method, req, resp_cls, self.md(), stream)

    def login(self) -> str:
        self.token = self.raw("AuthTokenGet", api.AuthTokenGetRequest(), api.AuthTokenGetResponse,
                              self.md(token="")[:2]).token
        return self.token

    def stop(self) -> int:
        self.ch.close()
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait()


class Router:
    def __init__(self, d: Double, task_id: str) -> None:
        acc = d.call("TaskGetCommandRouterAccess", api.TaskGetCommandRouterAccessRequest(task_id=task_id),
                     api.TaskGetCommandRouterAccessResponse)
        self.url, self.jwt, self.task = acc.url, acc.jwt, task_id
        self.ch = grpc.insecure_channel(acc.url[len("https://"):])
        self.d = d

    def call(self, method, req, resp_cls, stream=False, jwt: Optional[str] = None):
        md = () if jwt == "" else (("authorization", "Bearer " + (jwt or self.jwt)),)
        return self.d.raw(method, req, resp_cls, md, stream, self.ch, TCR)

    def start(self, argv: list[str], exec_id: Optional[str] = None, **kw) -> str:
        exec_id = exec_id or str(uuid.uuid4())
        kw.setdefault("stdout_config", 1)
        kw.setdefault("stderr_config", 1)
        self.call("TaskExecStart", tcr.TaskExecStartRequest(task_id=self.task, exec_id=exec_id,
                                                            command_args=argv, **kw), tcr.TaskExecStartResponse)
        return exec_id

    def read(self, exec_id: str, fd: int, offset: int = 0) -> bytes:
        items = self.call("TaskExecStdioRead", tcr.TaskExecStdioReadRequest(
            task_id=self.task, exec_id=exec_id, offset=offset, file_descriptor=fd),
            tcr.TaskExecStdioReadResponse, stream=True)
        return b"".join(i.data for i in items)

    def wait(self, exec_id: str):
        r = self.call("TaskExecWait", tcr.TaskExecWaitRequest(task_id=self.task, exec_id=exec_id),
                      tcr.TaskExecWaitResponse)
        return (r.WhichOneof("exit_status"), getattr(r, r.WhichOneof("exit_status") or "code"))

    def run(self, argv: list[str], **kw) -> tuple[bytes, bytes, tuple]:
        eid = self.start(argv, **kw)
        return self.read(eid, 0), self.read(eid, 1), self.wait(eid)


def create(d: Double, app_id: str, image_id: str, tags=(), **definition):
    definition.setdefault("timeout_secs", 600)
    definition.setdefault("network_access", api.NetworkAccess(network_access_type=2))
    req = api.SandboxCreateRequest(app_id=app_id, definition=api.Sandbox(image_id=image_id, **definition),
                                   tags=[api.SandboxTag(tag_name=k, tag_value=v) for k, v in tags])
    f = d.ch.unary_unary(CP + "SandboxCreate", request_serializer=api.SandboxCreateRequest.SerializeToString,
                         response_deserializer=api.SandboxCreateResponse.FromString)
    resp, call = f.with_call(req, metadata=d.md(), timeout=120)
    return resp.sandbox_id, dict(call.initial_metadata())


def startup_checks(cli: str) -> None:
    exe = os.path.join(HERE, "run-double")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODAL_TOKEN")}
    r = subprocess.run([exe, "--listen", "127.0.0.1:0", "--cli", cli], env=env, capture_output=True, text=True)
    check("refuses to start without MODAL_TOKEN_ID/SECRET", r.returncode != 0 and "MODAL_TOKEN_ID" in r.stderr,
          "exit %d %r" % (r.returncode, r.stderr[-200:]))
    env.update(MODAL_TOKEN_ID="ak-x", MODAL_TOKEN_SECRET="as-x")
    r = subprocess.run([exe, "--listen", "0.0.0.0:0", "--cli", cli], env=env, capture_output=True, text=True)
    check("refuses a non-loopback --listen", r.returncode != 0 and "loopback" in r.stderr,
          "exit %d %r" % (r.returncode, r.stderr[-200:]))


def auth_checks(d: Double, cli: str, tenant: str) -> None:
    AT = api.AuthTokenGetRequest()
    ATR = api.AuthTokenGetResponse
    expect("AuthTokenGet with a wrong secret: UNAUTHENTICATED",
           lambda: d.raw("AuthTokenGet", AT, ATR, d.md(token="", tsec="as-wrong")[:2]), grpc.StatusCode.UNAUTHENTICATED)
    expect("AuthTokenGet with a wrong id: UNAUTHENTICATED",
           lambda: d.raw("AuthTokenGet", AT, ATR, d.md(token="", tid="ak-wrong")[:2]), grpc.StatusCode.UNAUTHENTICATED)
    expect("AuthTokenGet without credentials: UNAUTHENTICATED",
           lambda: d.raw("AuthTokenGet", AT, ATR, ()), grpc.StatusCode.UNAUTHENTICATED)
    tok = d.login()
    parts = tok.split(".")
    claims = {}
    if len(parts) == 3:
        claims = json.loads(__import__("base64").urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    check("AuthTokenGet returns a JWT whose payload has exp", isinstance(claims.get("exp"), int), tok[:80])
    req = api.AppGetOrCreateRequest(app_name="checks", object_creation_type=1)
    R = api.AppGetOrCreateResponse
    expect("a call without x-modal-auth-token: UNAUTHENTICATED",
           lambda: d.raw("AppGetOrCreate", req, R, d.md()[:2]), grpc.StatusCode.UNAUTHENTICATED)
    expect("a call with the auth token but a wrong pair: UNAUTHENTICATED",
           lambda: d.raw("AppGetOrCreate", req, R, d.md(tsec="as-wrong")), grpc.StatusCode.UNAUTHENTICATED)
    bad = tok[:-2] + ("AA" if not tok.endswith("AA") else "BB")
    expect("a call with a tampered auth token: UNAUTHENTICATED",
           lambda: d.raw("AppGetOrCreate", req, R, d.md(token=bad)), grpc.StatusCode.UNAUTHENTICATED, "signature")
    short = Double(cli, tenant, ["--token-ttl", "1"])
    try:
        short.login()
        exp = json.loads(__import__("base64").urlsafe_b64decode(
            short.token.split(".")[1] + "=" * (-len(short.token.split(".")[1]) % 4)))["exp"]
        while time.time() < exp:  # waits for the token's own exp, no fixed bound
            time.sleep(0.2)
        expect("a call with an expired auth token: UNAUTHENTICATED 'token expired'",
               lambda: short.call("AppGetOrCreate", req, R), grpc.StatusCode.UNAUTHENTICATED, "token expired")
    finally:
        short.stop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--tenant", required=True)
    args = ap.parse_args()
    startup_checks(args.cli)
    d = Double(args.cli, args.tenant, [])
    try:
        auth_checks(d, args.cli, args.tenant)
        d.login()
        run_checks(d, args.cli, args.tenant)
    except Exception as e:  # noqa: BLE001 - counted, then the double is still stopped
        check("the checks ran to the end", False, "%s: %s" % (type(e).__name__, str(e)[:500]))
    finally:
        rc = d.stop()
    check("SIGTERM: the double exits 0", rc == 0, "exit %d" % rc)
    left = subprocess.run([args.cli, "ls", "--json", "--tenant", args.tenant], capture_output=True, text=True)
    check("no sandbox of the tenant is left after SIGTERM", left.stdout.strip() == "[]", left.stdout[:300])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def run_checks(d: Double, cli: str, tenant: str) -> None:
    A, AR = api.AppGetOrCreateRequest, api.AppGetOrCreateResponse
    expect("AppGetOrCreate lookup of a missing app: NOT_FOUND",
           lambda: d.call("AppGetOrCreate", A(app_name="nope", object_creation_type=0), AR), grpc.StatusCode.NOT_FOUND)
    expect("AppGetOrCreate with a bad name: INVALID_ARGUMENT",
           lambda: d.call("AppGetOrCreate", A(app_name="a b", object_creation_type=1), AR),
           grpc.StatusCode.INVALID_ARGUMENT)
    app = d.call("AppGetOrCreate", A(app_name="checks", object_creation_type=1), AR).app_id
    again = d.call("AppGetOrCreate", A(app_name="checks", object_creation_type=0), AR).app_id
    check("AppGetOrCreate creates, then finds the same ap- id", app == again and app.startswith("ap-"), app)

    from google.protobuf import empty_pb2
    hello = d.call("ClientHello", empty_pb2.Empty(), api.ClientHelloResponse)
    check("ClientHello names an image builder version", hello.image_builder_version == "2024.10", str(hello))
    env = d.call("EnvironmentGetOrCreate", api.EnvironmentGetOrCreateRequest(deployment_name="main"),
                 api.EnvironmentGetOrCreateResponse)
    check("EnvironmentGetOrCreate: an en- id", env.environment_id.startswith("en-"), str(env))
    SG, SGR = api.SecretGetOrCreateRequest, api.SecretGetOrCreateResponse
    expect("SecretGetOrCreate lookup of a missing secret: NOT_FOUND",
           lambda: d.call("SecretGetOrCreate", SG(deployment_name="nope"), SGR), grpc.StatusCode.NOT_FOUND)
    d.call("SecretGetOrCreate", SG(deployment_name="named", object_creation_type=1,
                                   env_dict={"NAMED_KEY": "named-value"}), SGR)
    expect("SecretGetOrCreate with a missing required key: FAILED_PRECONDITION",
           lambda: d.call("SecretGetOrCreate", SG(deployment_name="named", required_keys=["OTHER"]), SGR),
           grpc.StatusCode.FAILED_PRECONDITION, "OTHER")
    expect("SecretGetOrCreate with a bad key: INVALID_ARGUMENT",
           lambda: d.call("SecretGetOrCreate", SG(object_creation_type=5, env_dict={"1X": "value"}), SGR),
           grpc.StatusCode.INVALID_ARGUMENT)
    sb_secret = d.call("SecretGetOrCreate", SG(object_creation_type=5, env_dict={"SB_WIDE": "sandbox-wide"}),
                       SGR).secret_id
    check("SecretGetOrCreate ephemeral: an st- id", sb_secret.startswith("st-"), sb_secret)

    IG, IGR = api.ImageGetOrCreateRequest, api.ImageGetOrCreateResponse
    def image(cmds):
        return d.call("ImageGetOrCreate", IG(app_id=app, image=api.Image(dockerfile_commands=cmds)), IGR)
    r = image(["FROM sandboxio/no-such-image:0"])
    check("a missing image: FAILURE naming it", r.result.status == 2 and "sandboxio/no-such-image:0" in
          r.result.exception, str(r.result).replace("\n", " "))
    js = d.call("ImageJoinStreaming", api.ImageJoinStreamingRequest(image_id=r.image_id, timeout=55),
                api.ImageJoinStreamingResponse, stream=True)
    check("ImageJoinStreaming returns the FAILURE", len(js) == 1 and js[0].result.status == 2, str(js)[:200])
    r2 = image(["FROM " + IMAGE, "RUN pip install x"])
    check("an image with build steps: FAILURE", r2.result.status == 2, str(r2.result)[:200])
    ok = image(["FROM " + IMAGE])
    check("an image in the engine: SUCCESS with an im- id", ok.result.status == 1 and ok.image_id.startswith("im-"),
          str(ok)[:200])
    img = ok.image_id

    N = api.NetworkAccess
    expect("SandboxCreate BLOCKED with allowed_cidrs: INVALID_ARGUMENT",
           lambda: create(d, app, img, network_access=N(network_access_type=2, allowed_cidrs=["198.51.100.0/24"])),
           grpc.StatusCode.INVALID_ARGUMENT, "BLOCKED")
    expect("SandboxCreate with timeout_secs 86401: INVALID_ARGUMENT",
           lambda: create(d, app, img, timeout_secs=86401), grpc.StatusCode.INVALID_ARGUMENT, "86400")
    expect("SandboxCreate ALLOWLIST with a bad CIDR: INVALID_ARGUMENT",
           lambda: create(d, app, img, network_access=N(network_access_type=3, allowed_cidrs=["not-a-cidr"])),
           grpc.StatusCode.INVALID_ARGUMENT, "not-a-cidr")
    expect("SandboxCreate in an unknown app: NOT_FOUND",
           lambda: create(d, "ap-" + "x" * 22, img), grpc.StatusCode.NOT_FOUND)
    expect("SandboxCreate with an unknown image: NOT_FOUND",
           lambda: create(d, app, "im-" + "x" * 22), grpc.StatusCode.NOT_FOUND)
    expect("SandboxCreate from a failed image: FAILED_PRECONDITION",
           lambda: create(d, app, r.image_id), grpc.StatusCode.FAILED_PRECONDITION)
    expect("SandboxCreate with a volume mount: UNIMPLEMENTED",
           lambda: create(d, app, img, volume_mounts=[api.VolumeMount()]), grpc.StatusCode.UNIMPLEMENTED, "volume")
    unknown = "sb-" + "0" * 22
    expect("SandboxWait on an unknown sandbox: NOT_FOUND",
           lambda: d.call("SandboxWait", api.SandboxWaitRequest(sandbox_id=unknown, timeout=0),
                          api.SandboxWaitResponse), grpc.StatusCode.NOT_FOUND)
    expect("SandboxTerminate on an unknown sandbox: NOT_FOUND",
           lambda: d.call("SandboxTerminate", api.SandboxTerminateRequest(sandbox_id=unknown),
                          api.SandboxTerminateResponse), grpc.StatusCode.NOT_FOUND)
    garbage = d.ch.unary_unary(CP + "SandboxCreate")  # bytes in, bytes out
    got, _ = code_of(lambda: garbage(b"\x0a\xff\xff\xff\xff\x0f", metadata=d.md(), timeout=30))
    check("garbage request bytes are refused", got not in (None, grpc.StatusCode.OK), str(got))

    sid, md = create(d, app, img, tags=[("suite", "checks"), ("n", "1")], secret_ids=[sb_secret], name="box")
    check("SandboxCreate: an sb- id of 22 base62 characters", bool(SB_RE.match(sid)), sid)
    check("SandboxCreate announces sandboxio-tier: container", md.get("sandboxio-tier") == "container", str(md))
    task = d.call("SandboxGetTaskId", api.SandboxGetTaskIdRequest(sandbox_id=sid),
                  api.SandboxGetTaskIdResponse).task_id
    check("SandboxGetTaskId: a ta- id", task.startswith("ta-"), task)
    w = d.call("SandboxWait", api.SandboxWaitRequest(sandbox_id=sid, timeout=0.5), api.SandboxWaitResponse)
    check("SandboxWait on a running sandbox: no result", not w.HasField("result"), str(w))

    rt = Router(d, task)
    check("TaskGetCommandRouterAccess: an https URL and a JWT", rt.url.startswith("https://127.0.0.1:")
          and rt.jwt.count(".") == 2, rt.url)
    S = tcr.TaskExecStartRequest(task_id=task, exec_id="x", command_args=["true"])
    expect("router call without the bearer JWT: UNAUTHENTICATED",
           lambda: rt.call("TaskExecStart", S, tcr.TaskExecStartResponse, jwt=""), grpc.StatusCode.UNAUTHENTICATED)
    expect("router call with the control-plane token as bearer: UNAUTHENTICATED",
           lambda: rt.call("TaskExecStart", S, tcr.TaskExecStartResponse, jwt=d.token),
           grpc.StatusCode.UNAUTHENTICATED)
    S2 = tcr.TaskExecStartRequest(task_id="ta-" + "0" * 22, exec_id="x", command_args=["true"])
    expect("router call with another task's JWT: PERMISSION_DENIED",
           lambda: rt.call("TaskExecStart", S2, tcr.TaskExecStartResponse), grpc.StatusCode.PERMISSION_DENIED)
    expect("TaskExecWait of an unknown exec: NOT_FOUND",
           lambda: rt.wait("no-such-exec"), grpc.StatusCode.NOT_FOUND)

    got = d.call("SandboxGetFromName", api.SandboxGetFromNameRequest(sandbox_name="box", app_name="checks"),
                 api.SandboxGetFromNameResponse).sandbox_id
    check("SandboxGetFromName finds the named sandbox", got == sid, got)
    out, _, st = rt.run(["sh", "-c", 'printf %s "$SB_WIDE"'])
    check("a sandbox's secret reaches its execs", out == b"sandbox-wide", repr((out, st)))
    out, err, st = rt.run(["sh", "-c", "echo out; echo err >&2; exit 5"])
    check("exec: stdout, stderr, exit code 5", (out, err, st) == (b"out\n", b"err\n", ("code", 5)),
          repr((out, err, st)))
    out, err, st = rt.run(["sh", "-c", "printf 'partial'; sleep 60"], timeout_secs=1)
    check("exec killed at its timeout: {signal: 9}, the CLI's message not in stderr",
          (out, err, st) == (b"partial", b"", ("signal", 9)), repr((out, err, st)))
    out, err, st = rt.run(["sh", "-c", "printf 'sandboxio: x\\nsandboxio: y' >&2; exit 124"])
    check("a program's own 'sandboxio: ' stderr and exit 124 are kept",
          (err, st) == (b"sandboxio: x\nsandboxio: y", ("code", 124)), repr((err, st)))
    out, err, st = rt.run(["sh", "-c", "printf 'no newline' >&2; kill -9 $$"])
    check("a program killed by SIGKILL: {signal: 9}, its stderr exact", (err, st) == (b"no newline", ("signal", 9)),
          repr((err, st)))
    out, _, st = rt.run(["sh", "-c", "printf '\\377\\000\\001'"])
    check("binary stdout is exact", out == b"\xff\x00\x01" and st == ("code", 0), repr((out, st)))
    _, _, st = rt.run(["no-such-command"])
    check("a command that does not exist: code 127", st == ("code", 127), repr(st))
    out, _, _ = rt.run(["sh", "-c", "yes 0123456789abcdef | head -c 300000"])
    check("300000 bytes of stdout arrive whole", len(out) == 300000, "%d bytes" % len(out))
    eid = rt.start(["sh", "-c", "seq 1 5000"])
    rt.wait(eid)
    tail = rt.read(eid, 0, offset=len(b"".join(b"%d\n" % i for i in range(1, 4999))))
    check("TaskExecStdioRead from an offset", tail == b"4999\n5000\n", repr(tail))

    out, _, st = rt.run(["sh", "-c", 'printf %s "$LD_PRELOAD|$SBX_VAR"'],
                        env={"LD_PRELOAD": "/no/such/lib.so", "SBX_VAR": "value\n"})
    check("exec env reaches the program only (even LD_PRELOAD), values exact",
          out == b"/no/such/lib.so|value\n" and st == ("code", 0), repr((out, st)))
    out, _, st = rt.run(["sh", "-c", 'printf %s "[$A][$B]"'], env={"A": "", "B": "1"})
    check("exec env values under 4 bytes (plain --env) reach the program", out == b"[][1]", repr((out, st)))
    expect("exec env value over 16384 bytes: INVALID_ARGUMENT",
           lambda: rt.start(["true"], env={"BIG": "x" * 16385}), grpc.StatusCode.INVALID_ARGUMENT, "16384")
    expect("exec with a relative workdir: INVALID_ARGUMENT",
           lambda: rt.start(["true"], workdir="tmp"), grpc.StatusCode.INVALID_ARGUMENT)

    eid = str(uuid.uuid4())
    for _ in range(2):
        rt.start(["sh", "-c", "echo x >> /tmp/idem"], exec_id=eid)
    rt.wait(eid)
    out, _, _ = rt.run(["sh", "-c", "wc -l < /tmp/idem"])
    check("TaskExecStart twice with one exec_id runs once", out.strip() == b"1", repr(out))

    W, WR = tcr.TaskExecStdinWriteRequest, tcr.TaskExecStdinWriteResponse
    eid = rt.start(["cat"])
    rt.call("TaskExecStdinWrite", W(task_id=task, exec_id=eid, offset=0, data=b"hello"), WR)
    rt.call("TaskExecStdinWrite", W(task_id=task, exec_id=eid, offset=0, data=b"hello"), WR)  # a retry
    expect("TaskExecStdinWrite past the received offset: OUT_OF_RANGE",
           lambda: rt.call("TaskExecStdinWrite", W(task_id=task, exec_id=eid, offset=99, data=b"x"), WR),
           grpc.StatusCode.OUT_OF_RANGE)
    rt.call("TaskExecStdinWrite", W(task_id=task, exec_id=eid, offset=5, data=b" world", eof=True), WR)
    out = rt.read(eid, 0)
    check("stdin by offset (a retried write not doubled), then eof", out == b"hello world", repr(out))
    eid = rt.start(["cat"])
    rt.call("TaskExecStdinWrite", W(task_id=task, exec_id=eid, offset=0, data=b"abc"), WR)
    P, PR = tcr.TaskExecPollRequest, tcr.TaskExecPollResponse
    polled = rt.call("TaskExecPoll", P(task_id=task, exec_id=eid), PR)
    rt.call("TaskExecStdinWrite", W(task_id=task, exec_id=eid, offset=3, data=b"def", eof=True), WR)
    out = rt.read(eid, 0)
    polled2 = rt.call("TaskExecPoll", P(task_id=task, exec_id=eid), PR)
    check("after some stdin, a poll does not start the exec; its eof does",
          polled.WhichOneof("exit_status") is None and out == b"abcdef" and polled2.code == 0
          and polled2.WhichOneof("exit_status") == "code", repr((polled, out, polled2)))
    eid = rt.start(["cat"])
    rt.wait(eid)
    expect("stdin after the exec started: FAILED_PRECONDITION",
           lambda: rt.call("TaskExecStdinWrite", W(task_id=task, exec_id=eid, offset=0, data=b"late"), WR),
           grpc.StatusCode.FAILED_PRECONDITION)

    T = api.SandboxTagsSetRequest
    d.call("SandboxTagsSet", T(sandbox_id=sid, tags=[api.SandboxTag(tag_name="suite", tag_value="checks2")]),
           __import__("google.protobuf.empty_pb2", fromlist=["Empty"]).Empty)
    tags = d.call("SandboxTagsGet", api.SandboxTagsGetRequest(sandbox_id=sid), api.SandboxTagsGetResponse).tags
    check("SandboxTagsSet replaces the tags", [(t.tag_name, t.tag_value) for t in tags] == [("suite", "checks2")],
          str(tags))
    sid2, _ = create(d, app, img, tags=[("suite", "checks2"), ("extra", "y")])
    L, LR = api.SandboxListRequest, api.SandboxListResponse
    lst = d.call("SandboxList", L(app_id=app, tags=[api.SandboxTag(tag_name="suite", tag_value="checks2")]), LR)
    ids = [s.id for s in lst.sandboxes]
    check("SandboxList by tag, newest first", ids == [sid2, sid], str(ids))
    page2 = d.call("SandboxList", L(app_id=app, before_timestamp=lst.sandboxes[0].created_at,
                                    tags=[api.SandboxTag(tag_name="suite", tag_value="checks2")]), LR)
    check("SandboxList before_timestamp pages on", [s.id for s in page2.sandboxes] == [sid], str(page2)[:200])
    lst = d.call("SandboxList", L(app_id=app, tags=[api.SandboxTag(tag_name="extra", tag_value="y"),
                                                     api.SandboxTag(tag_name="suite", tag_value="checks2")]), LR)
    check("SandboxList: tags are 'has at least these'", [s.id for s in lst.sandboxes] == [sid2], str(lst)[:200])

    TR, TRR = api.SandboxTerminateRequest, api.SandboxTerminateResponse
    first = d.call("SandboxTerminate", TR(sandbox_id=sid), TRR)
    second = d.call("SandboxTerminate", TR(sandbox_id=sid), TRR)
    check("SandboxTerminate is idempotent (existing_result the second time)",
          not first.HasField("existing_result") and second.existing_result.status == 3, str(second))
    w = d.call("SandboxWait", api.SandboxWaitRequest(sandbox_id=sid, timeout=10), api.SandboxWaitResponse)
    check("SandboxWait after terminate: TERMINATED", w.result.status == 3, str(w))
    expect("TaskExecStart in a terminated sandbox: NOT_FOUND", lambda: rt.start(["true"]), grpc.StatusCode.NOT_FOUND)
    lst = d.call("SandboxList", L(app_id=app, tags=[api.SandboxTag(tag_name="suite", tag_value="checks2")]), LR)
    fin = d.call("SandboxList", L(app_id=app, include_finished=True,
                                  tags=[api.SandboxTag(tag_name="suite", tag_value="checks2")]), LR)
    check("SandboxList leaves finished ones out unless include_finished",
          [s.id for s in lst.sandboxes] == [sid2] and [s.id for s in fin.sandboxes] == [sid2, sid], str(fin)[:200])
    d.call("SandboxTerminate", TR(sandbox_id=sid2), TRR)

    sid3, _ = create(d, app, img, timeout_secs=2)
    res = None
    while res is None:  # each wait blocks up to 10 s; the sandbox's own deadline ends it
        w = d.call("SandboxWait", api.SandboxWaitRequest(sandbox_id=sid3, timeout=10), api.SandboxWaitResponse)
        res = w.result if w.HasField("result") else None
    check("a sandbox past its timeout_secs: TIMEOUT", res.status == 4, str(res))
    sid4, _ = create(d, app, img, entrypoint_args=["sh", "-c", "echo entry; echo oops >&2; exit 4"])
    res = None
    while res is None:
        w = d.call("SandboxWait", api.SandboxWaitRequest(sandbox_id=sid4, timeout=10), api.SandboxWaitResponse)
        res = w.result if w.HasField("result") else None
    check("an entrypoint that exits 4: FAILURE, exitcode 4", (res.status, res.exitcode) == (2, 4), str(res))
    logs = d.call("SandboxGetLogs", api.SandboxGetLogsRequest(sandbox_id=sid4, file_descriptor=1, timeout=10,
                                                              last_entry_id="0-0"), api.TaskLogsBatch, stream=True)
    text = "".join(i.data for b in logs for i in b.items)
    check("SandboxGetLogs: the entrypoint's stdout, then eof", text == "entry\n" and logs[-1].eof, str(logs)[:300])
    sid5, _ = create(d, app, img, idle_timeout_secs=1)
    res = None
    while res is None:
        w = d.call("SandboxWait", api.SandboxWaitRequest(sandbox_id=sid5, timeout=10), api.SandboxWaitResponse)
        res = w.result if w.HasField("result") else None
    check("a sandbox idle past idle_timeout_secs: IDLE_TIMEOUT", res.status == 7, str(res))
    ls = subprocess.run([cli, "ls", "--json", "--tenant", tenant], capture_output=True, text=True).stdout
    gone = json.loads(ls) if ls.strip().startswith("[") else None
    check("terminated, timed-out and finished sandboxes are removed from the engine", gone == [], ls[:300])


if __name__ == "__main__":
    sys.exit(main())

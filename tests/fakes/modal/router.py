"""router.py: the Modal double's Task Command Router, service
modal.task_command_router.TaskCommandRouter (the exec RPCs).

Every call needs `authorization: Bearer <jwt>` with the JWT that
TaskGetCommandRouterAccess issued for that task (UNAUTHENTICATED otherwise,
which makes the SDKs fetch a new one; PERMISSION_DENIED for another task's).
TaskExecStart's exec_id is the idempotency key: a repeated start with the
same id answers OK and runs nothing. The program starts when its stdin is
closed (TaskExecStdinWrite eof), or, if no stdin byte has come, on the first
read, wait or poll (sandboxio takes stdin whole: see cli.py); it runs as
`sandboxio exec ID --timeout T [--workdir W] [--stdin -] --secret-file ...`,
T the exec's timeout_secs or else the sandbox's run timeout (its lifetime).
An exec killed at its timeout is reported as {signal: 9}.
"""
from __future__ import annotations

import time
from typing import Iterator

import grpc

import rpc
from auth import AUD_ROUTER, AuthError, Credentials
from cli import CHUNK
from state import MAX_EXECS_PER_SANDBOX, Exec, Fail, Sandbox, Store, check_exec_env

SERVICE = "modal.task_command_router.TaskCommandRouter"
MAX_STDIN = 64 << 20
MAX_ARGV = 65536  # bytes, as the SDKs' ARG_MAX_BYTES


class Router:
    def __init__(self, tcr, store: Store, creds: Credentials) -> None:
        self.tcr = tcr
        self.store = store
        self.creds = creds

    def handler(self) -> grpc.GenericRpcHandler:
        t = self.tcr
        methods = {
            "TaskExecStart": rpc.unary("TaskExecStart", t.TaskExecStartRequest, t.TaskExecStartResponse,
                                       self.exec_start),
            "TaskExecStdioRead": rpc.stream("TaskExecStdioRead", t.TaskExecStdioReadRequest,
                                            t.TaskExecStdioReadResponse, self.exec_stdio_read),
            "TaskExecStdinWrite": rpc.unary("TaskExecStdinWrite", t.TaskExecStdinWriteRequest,
                                            t.TaskExecStdinWriteResponse, self.exec_stdin_write),
            "TaskExecWait": rpc.unary("TaskExecWait", t.TaskExecWaitRequest, t.TaskExecWaitResponse,
                                      self.exec_wait),
            "TaskExecPoll": rpc.unary("TaskExecPoll", t.TaskExecPollRequest, t.TaskExecPollResponse,
                                      self.exec_poll),
        }
        return grpc.method_handlers_generic_handler(SERVICE, methods)

    def _task(self, context, task_id: str) -> Sandbox:
        auth = rpc.metadata(context).get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            raise Fail("UNAUTHENTICATED", "missing authorization: Bearer <jwt> (from TaskGetCommandRouterAccess)")
        try:
            claims = self.creds.verify(auth[7:].strip(), AUD_ROUTER)
        except AuthError as e:
            raise Fail("UNAUTHENTICATED", str(e)) from None
        if claims.get("task_id") != task_id:
            raise Fail("PERMISSION_DENIED", "the JWT is for another task than '%s'" % task_id[:64])
        return self.store.task(task_id)

    def _exec(self, context, task_id: str, exec_id: str) -> tuple[Sandbox, Exec]:
        sb = self._task(context, task_id)
        ex = sb.execs.get(exec_id)
        if ex is None:
            raise Fail("NOT_FOUND", "exec '%s' not found in task %s" % (exec_id[:64], task_id))
        return sb, ex

    def exec_start(self, req, context):
        sb = self._task(context, req.task_id)
        if not req.exec_id or len(req.exec_id) > 128:
            raise Fail("INVALID_ARGUMENT", "exec_id must be 1 to 128 bytes")
        st = self.store
        with st.cond:
            if req.exec_id in sb.execs:
                return self.tcr.TaskExecStartResponse()  # the idempotency key: not run twice
        if sb.result is not None:
            raise Fail("NOT_FOUND", "task %s has finished" % sb.task_id)
        argv = list(req.command_args)
        if not argv or not argv[0]:
            raise Fail("INVALID_ARGUMENT", "command_args is empty")
        if sum(len(a.encode()) for a in argv) > MAX_ARGV or any("\0" in a for a in argv):
            raise Fail("INVALID_ARGUMENT", "command_args hold a NUL or more than %d bytes" % MAX_ARGV)
        if req.HasField("pty_info") and req.pty_info.enabled:
            raise Fail("UNIMPLEMENTED", "PTY execs are not supported by the Modal double")
        workdir = req.workdir if req.HasField("workdir") else None
        if workdir is not None and (not workdir.startswith("/") or "\0" in workdir or len(workdir) > 4096):
            raise Fail("INVALID_ARGUMENT", "workdir must be an absolute path, got %r" % workdir[:100])
        timeout = sb.timeout
        if req.HasField("timeout_secs") and req.timeout_secs > 0:
            timeout = min(req.timeout_secs, sb.timeout)
        env: dict[str, str] = {}
        for sid in list(sb.secret_ids) + list(req.secret_ids):
            sec = st.secrets.get(sid)
            if sec is None:
                raise Fail("NOT_FOUND", "Secret '%s' not found" % sid[:64])
            env.update(sec.env)
        env.update(req.env)
        check_exec_env(env, "exec env")
        if req.stdout_config not in (0, 1) or req.stderr_config not in (0, 1, 2):
            raise Fail("INVALID_ARGUMENT", "unknown stdout_config %d or stderr_config %d"
                       % (req.stdout_config, req.stderr_config))
        ex = Exec(id=req.exec_id, argv=argv, timeout=timeout, workdir=workdir, env=env,
                  keep_out=req.stdout_config == 1, err_mode=("devnull", "pipe", "stdout")[req.stderr_config])
        with st.cond:
            if req.exec_id in sb.execs:
                return self.tcr.TaskExecStartResponse()
            if len(sb.execs) >= MAX_EXECS_PER_SANDBOX:
                raise Fail("RESOURCE_EXHAUSTED", "at most %d execs per sandbox" % MAX_EXECS_PER_SANDBOX)
            sb.execs[req.exec_id] = ex
            sb.last_active = time.monotonic()
        return self.tcr.TaskExecStartResponse()

    def exec_stdin_write(self, req, context):
        sb, ex = self._exec(context, req.task_id, req.exec_id)
        st = self.store
        with st.cond:
            have = ex.stdin_len
            if req.offset > have:
                raise Fail("OUT_OF_RANGE", "stdin offset %d is past the %d bytes received" % (req.offset, have))
            new = req.data[have - req.offset:]
            if ex.proc is not None:
                if new:
                    raise Fail("FAILED_PRECONDITION",
                               "exec %s has started: the Modal double (sandboxio exec) gives a program its whole "
                               "stdin when it starts, which is when stdin is closed (eof), or when its output or "
                               "exit status is asked for before any stdin came" % ex.id)
                return self.tcr.TaskExecStdinWriteResponse()
            if have + len(new) > MAX_STDIN:
                raise Fail("RESOURCE_EXHAUSTED", "stdin above %d bytes" % MAX_STDIN)
            ex.stdin += new
            ex.stdin_len = have + len(new)
            sb.last_active = time.monotonic()
            eof = req.eof
        if eof:
            st.launch(sb, ex)
        return self.tcr.TaskExecStdinWriteResponse()

    def exec_stdio_read(self, req, context) -> Iterator:
        sb, ex = self._exec(context, req.task_id, req.exec_id)
        if req.file_descriptor not in (0, 1):
            raise Fail("INVALID_ARGUMENT", "unknown file_descriptor %d" % req.file_descriptor)
        is_err = req.file_descriptor == 1
        if (not is_err and not ex.keep_out) or (is_err and ex.err_mode != "pipe"):
            return  # not piped: EOF at once
        p = self._started(sb, ex, context)
        if p is None:
            return
        active = rpc.on_cancel(context, p.cond)
        off = req.offset
        while True:
            with p.cond:
                buf = p.err if is_err else p.out
                while len(buf) <= off and not p.done and active():
                    p.cond.wait()
                data, done = bytes(buf[off:off + CHUNK]), p.done
            if data:
                off += len(data)
                yield self.tcr.TaskExecStdioReadResponse(data=data)
            elif done or not active():
                return

    def _started(self, sb: Sandbox, ex: Exec, context):
        """The exec's process, started for a reader or waiter (see
        Store.launch); None if the call ended while its stdin was awaited."""
        self.store.launch(sb, ex, reader=True)
        while not ex.launched.wait(1.0):
            if not context.is_active():
                return None
        return ex.proc

    def _status(self, resp_cls, status):
        kind, n = status
        return resp_cls(code=n) if kind == "code" else resp_cls(signal=n)

    def exec_wait(self, req, context):
        sb, ex = self._exec(context, req.task_id, req.exec_id)
        p = self._started(sb, ex, context)
        if p is None:
            raise Fail("CANCELLED", "the call ended before exec %s started" % ex.id)
        active = rpc.on_cancel(context, p.cond)
        with p.cond:
            while not p.done and active():
                p.cond.wait()
            if not p.done:
                raise Fail("CANCELLED", "the call ended before exec %s did" % ex.id)
        return self._status(self.tcr.TaskExecWaitResponse, ex.status())

    def exec_poll(self, req, context):
        sb, ex = self._exec(context, req.task_id, req.exec_id)
        self.store.launch(sb, ex, reader=True)
        status = ex.status()
        if status is None:
            return self.tcr.TaskExecPollResponse()
        return self._status(self.tcr.TaskExecPollResponse, status)

"""state.py: what the Modal double remembers: apps, images, secrets,
sandboxes and their execs, with Modal's ids and Modal's lifecycle rules.

One lock (Store.cond) guards the tables and every sandbox's state; each exec
has its own condition for its output (cli.ExecProcess). A monitor thread ends
sandboxes at their deadline (TIMEOUT) or idle deadline (IDLE_TIMEOUT) and
removes them with `sandboxio rm`; sandboxio's --lifetime bounds them anyway.
"""
from __future__ import annotations

import re
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Optional

from cli import Cli, CliError, ExecProcess

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# GenericResult.GenericStatus
SUCCESS, FAILURE, TERMINATED, TIMEOUT, IDLE_TIMEOUT = 1, 2, 3, 4, 7
SIGKILL = 9
MAX_EXECS_PER_SANDBOX = 1024
MAX_RUNNING = 256  # sandboxes at once
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
VAR_MAX, VARS_MAX = 16384, 64  # sandboxio's bounds on a secret and on secrets per run


class Fail(Exception):
    """An RPC error: a grpc.StatusCode name and a message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_exec_env(env: dict[str, str], what: str) -> None:
    """Exec variables travel as sandboxio secrets (cli.py), so they take
    sandboxio's bounds: a name as an environment variable's, a value of at
    most 16384 bytes without NUL, at most 64 of them. (A value under 4 bytes,
    which sandboxio takes as no secret, goes as a plain --env.)"""
    if len(env) > VARS_MAX:
        raise Fail("INVALID_ARGUMENT", "%s: %d variables; the Modal double passes at most %d to an exec"
                   % (what, len(env), VARS_MAX))
    for k, v in env.items():
        if not ENV_NAME_RE.match(k) or len(k) > 255:
            raise Fail("INVALID_ARGUMENT", "%s: '%s' is not an environment variable name" % (what, k[:64]))
        n = len(v.encode())
        if "\0" in v or n > VAR_MAX:
            raise Fail("INVALID_ARGUMENT", "%s: variable %s has a value of %d bytes%s; the Modal double passes "
                       "exec variables as sandboxio secrets, which take at most %d bytes without NUL"
                       % (what, k, n, " with a NUL" if "\0" in v else "", VAR_MAX))


def new_id(prefix: str) -> str:
    """Modal's shape: a type prefix and 22 base62 characters (the JS SDK
    routes an "sb-" id with exactly 22 base62 characters to V1 RPCs)."""
    return prefix + "-" + "".join(secrets.choice(BASE62) for _ in range(22))


@dataclass
class Result:
    status: int
    exitcode: int = 0
    exception: str = ""


@dataclass
class App:
    id: str
    name: str
    env: str


@dataclass
class Image:
    id: str
    ref: str
    result: Result


@dataclass
class Secret:
    id: str
    name: str
    env: dict[str, str]


@dataclass
class Exec:
    """A Modal exec; its `sandboxio exec` starts at launch() (see cli.py)."""
    id: str
    argv: list[str]
    timeout: int
    workdir: Optional[str]
    env: dict[str, str]
    keep_out: bool
    err_mode: str
    stdin: bytearray = field(default_factory=bytearray)
    stdin_len: int = 0
    proc: Optional[ExecProcess] = None
    entrypoint: bool = False
    launched: threading.Event = field(default_factory=threading.Event)

    def status(self) -> Optional[tuple[str, int]]:
        """("code", n) or ("signal", n) once finished, else None."""
        p = self.proc
        if p is None or not p.done:
            return None
        return p.exit_status


@dataclass
class Sandbox:
    id: str
    task_id: str
    app_id: str
    cli_id: str
    image_id: str
    tier: str
    created_at: float
    timeout: int
    deadline: float  # time.monotonic()
    idle_timeout: Optional[int]
    tags: dict[str, str]
    name: str
    secret_ids: list[str]
    result: Optional[Result] = None
    finished_at: float = 0.0
    last_active: float = 0.0
    running: int = 0
    removed: bool = False
    ending: bool = False  # being removed; its result comes next
    execs: dict[str, Exec] = field(default_factory=dict)
    entry: Optional[Exec] = None


class Store:
    def __init__(self, cli: Cli) -> None:
        self.cli = cli
        self.cond = threading.Condition()
        self.apps: dict[tuple[str, str], App] = {}
        self.app_ids: dict[str, App] = {}
        self.images: dict[str, Image] = {}
        self.image_by_ref: dict[str, str] = {}
        self.secrets: dict[str, Secret] = {}
        self.named_secrets: dict[tuple[str, str], str] = {}
        self.sandboxes: dict[str, Sandbox] = {}
        self.by_task: dict[str, Sandbox] = {}
        self.envs: dict[str, str] = {}
        self._last_created = 0.0
        self._stopping = False
        self._monitor = threading.Thread(target=self._watch, daemon=True)
        self._monitor.start()

    # ---- lookups (callers hold no lock; reads of dicts are atomic) ----
    def sandbox(self, sandbox_id: str) -> Sandbox:
        sb = self.sandboxes.get(sandbox_id)
        if sb is None:
            raise Fail("NOT_FOUND", "Sandbox with id '%s' not found" % sandbox_id[:64])
        return sb

    def task(self, task_id: str) -> Sandbox:
        sb = self.by_task.get(task_id)
        if sb is None:
            raise Fail("NOT_FOUND", "task '%s' not found" % task_id[:64])
        return sb

    def created_at(self) -> float:
        """Strictly increasing, so that SandboxList's before_timestamp pages
        never skip two sandboxes made in the same microsecond."""
        with self.cond:
            t = max(time.time(), self._last_created + 1e-6)
            self._last_created = t
            return t

    # ---- sandbox lifecycle ----
    def admit(self) -> None:
        """Refuses a new sandbox when the double stops or holds too many."""
        with self.cond:
            if self._stopping:
                raise Fail("UNAVAILABLE", "the Modal double is shutting down")
            if sum(1 for sb in self.sandboxes.values() if sb.result is None) >= MAX_RUNNING:
                raise Fail("RESOURCE_EXHAUSTED", "the Modal double runs at most %d sandboxes at once" % MAX_RUNNING)

    def add(self, sb: Sandbox) -> None:
        """Records a created sandbox; one made while the double was stopping
        is removed at once (shutdown() may already have listed the others)."""
        with self.cond:
            stopping = self._stopping
            if not stopping:
                sb.last_active = time.monotonic()
                self.sandboxes[sb.id] = sb
                self.by_task[sb.task_id] = sb
                self.cond.notify_all()
        if stopping:
            self.cli.rm([sb.cli_id])
            raise Fail("UNAVAILABLE", "the Modal double is shutting down")

    def finish(self, sb: Sandbox, result: Result, claimed: bool = False) -> Optional[Result]:
        """Ends a sandbox once: removes its container (`sandboxio rm`), then
        publishes the result, so that whoever sees the result also finds the
        container gone. Returns the result it already had (or got meanwhile
        from another ending), else None. claimed: the caller has set
        sb.ending itself (the monitor)."""
        with self.cond:
            if not claimed:
                while sb.ending and sb.result is None:
                    self.cond.wait()
                if sb.result is not None:
                    return sb.result
                sb.ending = True
            self.cond.notify_all()
        try:
            for err in self.cli.rm([sb.cli_id]):
                print("modal-double: removing %s: %s" % (sb.id, err), file=sys.stderr, flush=True)
        finally:
            with self.cond:
                sb.removed = True
                sb.result = result
                sb.finished_at = time.time()
                self.cond.notify_all()
        return None

    def _watch(self) -> None:
        with self.cond:
            while not self._stopping:
                now = time.monotonic()
                nxt = None
                due: list[tuple[Sandbox, int]] = []
                for sb in self.sandboxes.values():
                    if sb.result is not None or sb.ending:
                        continue
                    if now >= sb.deadline:
                        due.append((sb, TIMEOUT))
                        continue
                    nxt = sb.deadline if nxt is None else min(nxt, sb.deadline)
                    if sb.idle_timeout and sb.running == 0:
                        idle_at = sb.last_active + sb.idle_timeout
                        if now >= idle_at:
                            due.append((sb, IDLE_TIMEOUT))
                        else:
                            nxt = min(nxt, idle_at)
                for sb, st in due:
                    sb.ending = True  # finish() below does the rest, off this thread
                    threading.Thread(target=self.finish, args=(sb, Result(st), True), daemon=True).start()
                if due:
                    continue
                self.cond.wait(None if nxt is None else max(0.0, nxt - now))

    def touch(self, sb: Sandbox, delta_running: int = 0) -> None:
        with self.cond:
            sb.last_active = time.monotonic()
            sb.running += delta_running
            self.cond.notify_all()

    def wait_finished(self, sb: Sandbox, timeout: float, active) -> Optional[Result]:
        end = time.monotonic() + max(0.0, timeout)
        with self.cond:
            while sb.result is None and active():
                left = end - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(min(left, 1.0))
            return sb.result

    # ---- execs ----
    def launch(self, sb: Sandbox, ex: Exec, reader: bool = False) -> None:
        """Starts the exec's `sandboxio exec` unless it already runs. A reader
        (a read, wait or poll) starts it only if no stdin has come: once
        some has, the start waits for the stdin's eof."""
        with self.cond:
            if ex.proc is not None or (reader and ex.stdin_len > 0):
                return
            if sb.result is not None or sb.ending:
                ex.proc = _Finished(("signal", SIGKILL))
                ex.launched.set()
                return
            stdin, ex.stdin = bytes(ex.stdin), bytearray()
            env, ex.env = ex.env, {}
            sb.running += 1
            sb.last_active = time.monotonic()
            self.cond.notify_all()

            def classify(p: ExecProcess) -> tuple[str, int]:
                return exit_status(p, sb.result is not None or sb.ending)

            def done(p: ExecProcess) -> None:
                self.touch(sb, -1)
                if ex.entrypoint:
                    self._entry_done(sb, p)

            try:
                ex.proc = ExecProcess(self.cli, sb.cli_id, ex.argv, ex.timeout, ex.workdir, env, stdin,
                                      ex.keep_out, ex.err_mode, classify, done)
            except (OSError, CliError) as e:
                sb.running -= 1
                ex.proc = _Finished(("code", 125), ("sandboxio exec could not start: %s\n" % e).encode())
            ex.launched.set()

    def _entry_done(self, sb: Sandbox, p: ExecProcess) -> None:
        kind, n = p.exit_status
        status = (p.run_end or {}).get("status")
        if status == "timeout":
            res = Result(TIMEOUT)
        elif kind == "code":
            res = Result(SUCCESS if n == 0 else FAILURE, n)
        else:
            res = Result(FAILURE, 128 + n, "killed by signal %d" % n)
        self.finish(sb, res)

    def shutdown(self) -> list[str]:
        """Ends every sandbox; removes those still there. Returns errors."""
        with self.cond:
            self._stopping = True
            boxes = list(self.sandboxes.values())
            for sb in boxes:
                if sb.result is None:
                    sb.result = Result(TERMINATED, -1)
                    sb.finished_at = time.time()
            ids = [sb.cli_id for sb in boxes if not sb.removed]
            for sb in boxes:
                sb.removed = True
            self.cond.notify_all()
        return self.cli.rm(ids)


class _Finished:
    """Stands in for an ExecProcess that never ran."""

    def __init__(self, status: tuple[str, int], err: bytes = b"") -> None:
        self.cond = threading.Condition()
        self.out = bytearray()
        self.err = bytearray(err)
        self.done = True
        self.run_end = None
        self.exit_status = status


def exit_status(p: ExecProcess, sandbox_ended: bool) -> tuple[str, int]:
    """What TaskExecWait reports. A run killed at its deadline, or killed
    (OOM included), is reported as signal 9, as a worker that SIGKILLs the
    process would (the JS SDK then returns 128+9 = 137); an exec cut short
    because its sandbox ended, likewise."""
    ev = p.run_end
    if ev is not None:
        st = ev.get("status")
        code = int(ev.get("exit_code", 0))
        if st == "exited":
            return ("code", code)
        if st == "error":
            return ("code", code if code in (126, 127) else 126)
        if st in ("timeout", "killed", "oom"):
            return ("signal", int(ev.get("signal") or SIGKILL))
    if sandbox_ended:
        return ("signal", SIGKILL)
    return ("code", p.cli_rc if p.cli_rc is not None and p.cli_rc >= 0 else 125)

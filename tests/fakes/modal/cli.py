"""cli.py: how the Modal double drives sandboxio's CLI (build/sandboxio).

Every sandbox the double hands out is a `sandboxio create` sandbox, so it gets
sandboxio's defaults (no capabilities, read-only root, caps, no network but
the allowlist) and its lifetime is enforced inside it even if the double dies.
Each Modal exec is one `sandboxio exec` process:

- Exec variables (TaskExecStart.env and secrets) reach the program through
  `--secret-file NAME=/dev/fd/N`, N an inherited memfd holding the value: the
  value is never on a command line, and never in the environment of the CLI
  process either, where a client-chosen name (LD_PRELOAD, GCONV_PATH, ...)
  would act on the host-side CLI before it could scrub it. A value under 4
  bytes, which sandboxio refuses as a secret, goes as `--env NAME=VALUE`.
- The program's output is streamed as the CLI copies it. The CLI also writes
  its own messages ("sandboxio: timed out ...") to the same stderr, always
  after the program's bytes, so a tail that could be such messages is held
  back until the run ends; the run's audit event (--audit-log) then gives
  the exact number of stderr bytes that were the program's (stderr_kept),
  and its status, exit code and signal.
- stdin: the CLI takes a program's whole stdin before starting it, so the
  exec starts when its stdin is closed (a TaskExecStdinWrite with eof), or,
  if no stdin byte has come by then, when the client first asks for output
  or status; stdin written after the start is refused (FAILED_PRECONDITION).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from typing import Callable, Optional

CHUNK = 64 * 1024
SECRET_MIN = 4  # bytes: sandboxio's shortest secret
HOLD_MAX = 64 * 1024  # more than any run of CLI messages
# A held stderr tail: an optional separator newline, whole "sandboxio: " lines,
# then a partial one (or a prefix of the prefix).
_PREFIX = b"sandboxio: "
_PARTIAL = b"|".join(re.escape(_PREFIX[:i]) for i in range(len(_PREFIX) - 1, -1, -1))
_CLI_TAIL = re.compile(rb"\n?(?:sandboxio: [^\n]*\n)*(?:sandboxio: [^\n]*|" + _PARTIAL + rb")", re.S)


class CliError(Exception):
    """The CLI failed; the message is its own (it never holds a secret)."""


def _last_error(stderr: str) -> str:
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    return lines[-1][:1000] if lines else "no message"


class Cli:
    def __init__(self, path: str, tenant: str) -> None:
        self.path = path
        self.tenant = tenant
        # The CLI's environment: ours without the double's own credentials.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("MODAL_")}
        self.tmp = tempfile.mkdtemp(prefix="modal-double-")  # 0700: audit logs

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, args: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run([self.path] + args, env=self.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, start_new_session=True)

    def create(self, args: list[str]) -> dict:
        r = self.run(["create", "--json", "--tenant", self.tenant] + args)
        if r.returncode != 0:
            raise CliError("sandboxio create failed (exit %d): %s" % (r.returncode, _last_error(r.stderr)))
        try:
            out = json.loads(r.stdout)
            if not isinstance(out.get("sandbox_id"), str):
                raise ValueError("no sandbox_id")
            return out
        except ValueError as e:
            raise CliError("sandboxio create printed no usable JSON (%s)" % e) from None

    def rm(self, ids: list[str]) -> list[str]:
        """Removes sandboxes; returns the errors other than "already gone"."""
        if not ids:
            return []
        r = self.run(["rm", "--json"] + ids)
        try:
            out = json.loads(r.stdout)
            errs = out.get("errors", [])
        except ValueError:
            return ["sandboxio rm failed (exit %d): %s" % (r.returncode, _last_error(r.stderr))]
        return ["%s: %s" % (e.get("id"), e.get("error")) for e in errs
                if not str(e.get("error", "")).startswith("no sandbox")]


class ExecProcess:
    """One `sandboxio exec`: its output as it arrives, then its exit status.

    Readers wait on `cond`; `out`/`err` hold what may be shown (for stderr,
    the bytes before a possibly-CLI tail, then exactly the program's)."""

    def __init__(self, cli: Cli, cli_id: str, argv: list[str], timeout: int, workdir: Optional[str],
                 env: dict[str, str], stdin: bytes, keep_out: bool, err_mode: str,
                 classify: Callable[["ExecProcess"], tuple[str, int]],
                 on_done: Callable[["ExecProcess"], None]) -> None:
        self.cond = threading.Condition()
        self.out = bytearray()
        self.err = bytearray()
        self._raw_err = bytearray()
        self._held = 0  # raw stderr bytes committed (shown) so far
        self.keep_out = keep_out
        self.err_mode = err_mode  # "pipe", "devnull" or "stdout" (merged)
        self.done = False
        self.run_end: Optional[dict] = None
        self.cli_rc: Optional[int] = None
        self.exit_status: tuple[str, int] = ("code", -1)  # set before done
        self._classify = classify
        self._on_done = on_done
        fd, self._audit = tempfile.mkstemp(prefix="audit-", dir=cli.tmp)
        os.close(fd)
        os.unlink(self._audit)  # the CLI creates it (0600)
        args = [cli.path, "--audit-log", self._audit, "exec", "--no-redact-output", "--timeout", str(timeout)]
        if workdir:
            args += ["--workdir", workdir]
        if stdin:
            args += ["--stdin", "-"]
        memfds = []
        try:
            for name, value in env.items():
                if len(value.encode()) < SECRET_MIN:
                    # sandboxio takes no secret this short (redacting it would
                    # mangle output), so it is no secret to it: a plain variable.
                    args += ["--env", "%s=%s" % (name, value)]
                    continue
                mfd = os.memfd_create("exec-var", os.MFD_CLOEXEC)
                memfds.append(mfd)
                data = value.encode()
                # The CLI drops one trailing "\n" (or "\r\n") from a file.
                os.write(mfd, data + b"\n" if data.endswith(b"\n") else data)
                args += ["--secret-file", "%s=/dev/fd/%d" % (name, mfd)]
            args += [cli_id, "--"] + argv
            self.proc = subprocess.Popen(args, env=cli.env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=memfds,
                                         start_new_session=True)
        finally:
            for mfd in memfds:
                os.close(mfd)
        threads = [threading.Thread(target=self._pump, args=(self.proc.stdout, False), daemon=True),
                   threading.Thread(target=self._pump, args=(self.proc.stderr, True), daemon=True)]
        if stdin:
            threading.Thread(target=self._feed, args=(stdin,), daemon=True).start()
        for t in threads:
            t.start()
        threading.Thread(target=self._reap, args=(threads,), daemon=True).start()

    def _feed(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
        except OSError:
            pass  # the CLI failed before reading it: its message says why
        finally:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def _pump(self, pipe, is_err: bool) -> None:
        while True:
            data = pipe.read1(CHUNK)
            if not data:
                break
            with self.cond:
                if is_err:
                    self._raw_err += data
                    self._commit(self._hold_start())
                elif self.keep_out:
                    self.out += data
                self.cond.notify_all()
        pipe.close()

    def _hold_start(self) -> int:
        """The first raw stderr offset that might be the CLI's own text: the
        earliest line start (or separator newline) from which all the rest
        matches _CLI_TAIL; the end of the bytes if there is none."""
        buf, start = self._raw_err, self._held
        n = len(buf)
        if n - start > HOLD_MAX:
            return n
        if (start == 0 or buf[start - 1] == 0x0A) and _CLI_TAIL.fullmatch(buf, start):
            return start
        i = buf.find(b"\n", start)
        while i >= 0:
            for c in (i, i + 1):
                if _CLI_TAIL.fullmatch(buf, c):
                    return c
            i = buf.find(b"\n", i + 1)
        return n

    def _commit(self, upto: int) -> None:
        if upto <= self._held:
            return
        piece = self._raw_err[self._held:upto]
        self._held = upto
        if self.err_mode == "pipe":
            self.err += piece
        elif self.err_mode == "stdout" and self.keep_out:
            self.out += piece

    def _reap(self, threads: list[threading.Thread]) -> None:
        for t in threads:
            t.join()
        rc = self.proc.wait()
        run_end = None
        try:
            with open(self._audit, encoding="utf-8") as f:
                for line in f:
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(ev, dict) and ev.get("event") == "run.end":
                        run_end = ev
            os.unlink(self._audit)
        except OSError:
            pass
        self.cli_rc = rc
        self.run_end = run_end
        status = self._classify(self)
        with self.cond:
            self.exit_status = status
            if run_end is not None:
                kept = int(run_end.get("output", {}).get("stderr_kept", 0))
                self._commit(max(self._held, min(kept, len(self._raw_err))))
            else:
                # No run: all of stderr is the CLI's message, shown as it is.
                self._commit(len(self._raw_err))
            self._raw_err = bytearray()
            self.done = True
            self.cond.notify_all()
        self._on_done(self)

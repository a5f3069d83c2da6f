#!/usr/bin/env python3
"""tests/cli/test_exec_tty.py: `sandboxio exec -it` driven through a real
terminal on the host (python3's pty module), against one sandbox made by
`sandboxio create` (its id is argv[2], the command argv[1], the tenant
argv[3]).

Each step waits for what the sandbox's shell prints (a prompt set through
--env PS1, values computed in the sandbox so that the terminal's echo of
the typed line cannot match); the only bound is a hang guard. Checks: the
prompt, the window size asked at the start, a resize passed on (stty size
read back), ^C delivered to a `sleep 1000` as SIGINT through the sandbox's
terminal (the prompt comes back), our terminal restored afterwards, and
`exit 3` giving exit status 3; then the run's deadline (124), `run -it`
(its own sandbox, over the init's channel: size, keys, exit status) and
SIGTERM (143), each leaving our terminal as it was. The last line is
"N passed, N failed".
"""
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

GUARD = 120  # seconds: a hang guard, not a measure
PROMPT = b"SBXP> "
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print("ok  ", what)
    else:
        failed += 1
        print("FAIL", what)


def setsize(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Term:
    """sandboxio on a new terminal of rows x cols, as its controlling one."""

    def __init__(self, argv, rows, cols):
        self.fd, slave = os.openpty()
        setsize(slave, rows, cols)
        self.cooked = termios.tcgetattr(slave)
        self.pid = os.fork()
        if self.pid == 0:
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for fd in (0, 1, 2):
                os.dup2(slave, fd)
            os.execv(argv[0], argv)
        os.close(slave)
        self.buf = b""

    def restored(self):
        a = termios.tcgetattr(self.fd)
        return a[:4] == self.cooked[:4]

    def wait_raw(self):
        end = time.monotonic() + GUARD
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            if time.monotonic() > end:
                raise TimeoutError("the terminal never went raw")
            select.select([], [], [], 0.05)

    def expect(self, needle):
        """Reads until needle appears after what was consumed; returns the text before it."""
        end = time.monotonic() + GUARD
        while needle not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no %r in %r" % (needle, self.buf[-400:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            if not data:
                raise EOFError("the terminal ended before %r: %r" % (needle, self.buf[-400:]))
            self.buf += data
        before, _, self.buf = self.buf.partition(needle)
        return before

    def send(self, b):
        os.write(self.fd, b)

    def wait(self):
        end = time.monotonic() + GUARD
        while True:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(st)
            if time.monotonic() > end:
                raise TimeoutError("sandboxio did not exit")
            r, _, _ = select.select([self.fd], [], [], 1)
            if r:
                try:
                    os.read(self.fd, 65536)
                except OSError:
                    pass


def main():
    cli, sid, tenant = sys.argv[1], sys.argv[2], sys.argv[3]
    # The terminal's size before sandboxio starts is what it asks for.
    t = Term([cli, "exec", "-it", "--env", "PS1=" + PROMPT.decode(), sid, "--",
              "bash", "--norc", "--noprofile"], 33, 101)
    try:
        t.expect(PROMPT)
        check(True, "the prompt of bash in the sandbox")
        t.send(b"echo size=$(stty size)\r")
        got = t.expect(PROMPT)
        check(b"size=33 101" in got, "the window size at the start (33 101)")
        # Resize our terminal: sandboxio gets SIGWINCH and passes it on; it
        # arrives on its own time, so ask until it shows (within the guard).
        setsize(t.fd, 41, 123)
        end = time.monotonic() + GUARD
        while True:
            t.send(b"echo size=$(stty size)\r")
            got = t.expect(PROMPT)
            if b"size=41 123" in got or time.monotonic() > end:
                break
        check(b"size=41 123" in got, "a resize read back with stty size (41 123)")
        # While a program runs, our terminal is raw: ^C goes in as a byte.
        raw = termios.tcgetattr(t.fd)
        check(not (raw[3] & termios.ISIG) and not (raw[3] & termios.ICANON),
              "our terminal is in raw mode during the run")
        # The marker comes from the job itself, so it is in the foreground by then.
        t.send(b"sh -c 'echo go$((40+2)); exec sleep 1000'; echo after=$?\r")
        t.expect(b"go42")
        t.send(b"\x03")
        got = t.expect(PROMPT)
        check(b"after=0" not in got, "^C ended sleep 1000 and the prompt came back")
        t.send(b"exit 3\r")
        rc = t.wait()
        check(rc == 3, "exit 3 gives exit status 3 (got %s)" % rc)
        check(t.restored(), "our terminal's settings are restored at the exit")

        # The run's deadline: status 124, the terminal restored.
        t = Term([cli, "exec", "-it", "--timeout", "3", sid, "--", "sleep", "1000"], 24, 80)
        t.wait_raw()
        rc = t.wait()
        check(rc == 124, "the run's deadline gives 124 (got %s)" % rc)
        check(t.restored(), "our terminal's settings are restored at the deadline")

        # run -it makes its own sandbox: its run goes over the init's channel.
        t = Term([cli, "run", "-it", "--tenant", tenant, "--", "sh", "-c",
                  "stty size; echo typed=$(head -c 2)x; exit 4"], 20, 70)
        t.expect(b"20 70")
        t.wait_raw()
        t.send(b"ab\r")
        got = t.expect(b"x")
        check(b"typed=ab" in got, "run -it: the size asked, and keys as typed")
        rc = t.wait()
        check(rc == 4, "run -it: exit 4 gives exit status 4 (got %s)" % rc)
        check(t.restored(), "run -it: our terminal's settings are restored")

        # SIGTERM to sandboxio (this cancels the run and removes the sandbox: last).
        t = Term([cli, "exec", "-it", sid, "--", "sleep", "1000"], 24, 80)
        t.wait_raw()
        os.kill(t.pid, 15)
        rc = t.wait()
        check(rc == 143, "SIGTERM gives 143 (got %s)" % rc)
        check(t.restored(), "our terminal's settings are restored at SIGTERM")
    except (TimeoutError, EOFError) as e:
        check(False, str(e))
        try:
            os.kill(t.pid, 15)
        except OSError:
            pass
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

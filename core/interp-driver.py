# core/interp-driver.py: the code interpreter's driver, run inside a sandbox.
#
# The library embeds this file (build/gen/core/interp-driver.h) and passes it to
# python3 -c, so any image with python3 can hold code contexts; nothing of it
# lives in the image. It is written here rather than taken from ipykernel:
# ipykernel talks ZeroMQ over TCP or IPC sockets and needs jupyter_client's
# connection files and a heartbeat; Debian's python3-ipykernel pulls in
# IPython, tornado and pyzmq (some 40 MiB). A context needs none of that.
#
# Modes (argv after -c):
#   serve DIR NAME LANG   one context: listens on DIR/NAME.sock, runs one
#                         cell per connection (python: exec of all but the
#                         last expression, eval of the last; bash: a bash
#                         process whose variables and cwd persist).
#   client DIR NAME DEADLINE_MS GRACE_MS LIMIT [ENVNAMES]
#                         reads a cell on stdin, sends it, relays the
#                         context's JSON lines to stdout (LIMIT bytes of
#                         them, then only short ones); at the deadline
#                         sends SIGINT to the context, and SIGKILL after the
#                         grace (then says {"t":"dead"}).
#   signal DIR NAME SIG   sends SIG (INT or KILL) to the context.
#   wait DIR NAME MS      waits until the context listens, at most MS.
#   list DIR              prints "NAME LANG CWD" of each live context.
#
# The host starts `serve` as a detached run of the sandbox's init (so under
# the sandbox user, its seccomp, caps and limits, killed at its deadline) and
# every cell as a normal run of `client`. Each line the host reads is one
# JSON object: {"t":"out","s":1|2,"d":TEXT}, {"t":"display","main":BOOL,
# "data":{MIME:TEXT}} (image/png base64), {"t":"err","name","value","tb"},
# {"t":"end","status":"ok"|"error"|"interrupted","n":N}; from the client,
# {"t":"deadline"} (it interrupts the cell), {"t":"truncated"} (lines past
# its limit were dropped) and {"t":"dead","why"}.
import os
import sys
import json
import signal
import socket
import time

MAX_REQ = 64 << 20


def paths(d, name):
    return os.path.join(d, name + ".sock"), os.path.join(d, name + ".pid")


class Link:
    """The connection of the cell in progress; events are dropped between cells."""

    def __init__(self):
        self.conn = None
        import threading

        self.lock = threading.Lock()

    def send(self, obj):
        line = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
        with self.lock:
            if self.conn is None:
                return
            try:
                self.conn.sendall(line)
            except OSError:
                self.conn = None


LINK = Link()


class Out:
    """sys.stdout and sys.stderr of a python context: text goes out as events."""

    def __init__(self, stream):
        self.stream = stream
        self.buf = []
        self.size = 0
        self.encoding = "utf-8"
        self.errors = "replace"

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if s:
            self.buf.append(s)
            self.size += len(s)
            if "\n" in s or self.size >= 4096:
                self.flush()
        return len(s)

    def writelines(self, lines):
        for s in lines:
            self.write(s)

    def flush(self):
        if self.buf:
            text = "".join(self.buf)
            self.buf = []
            self.size = 0
            LINK.send({"t": "out", "s": self.stream, "d": text})

    def isatty(self):
        return False

    def fileno(self):
        return self.stream

    def readable(self):
        return False

    def writable(self):
        return True


def mime_bundle(obj):
    """The rich forms of one value: text/plain always, more as it offers."""
    import base64

    data = {}
    mod = type(obj).__module__ or ""
    if mod.startswith("matplotlib") and hasattr(obj, "savefig"):
        figure_bundle(obj, data)
    for meth, mime in (
        ("_repr_html_", "text/html"),
        ("_repr_svg_", "image/svg+xml"),
        ("_repr_markdown_", "text/markdown"),
        ("_repr_latex_", "text/latex"),
        ("_repr_json_", "application/json"),
        ("_repr_png_", "image/png"),
    ):
        f = getattr(obj, meth, None)
        if f is None or isinstance(obj, type):
            continue
        try:
            v = f()
        except Exception:
            continue
        if v is None:
            continue
        if mime == "image/png":
            if isinstance(v, bytes):
                data[mime] = base64.b64encode(v).decode("ascii")
        elif mime == "application/json":
            data[mime] = json.dumps(v, default=str, ensure_ascii=False)
        elif isinstance(v, str):
            data[mime] = v
    if isinstance(obj, (dict, list)) and "application/json" not in data:
        try:
            data["application/json"] = json.dumps(obj, ensure_ascii=False)
        except (TypeError, ValueError):
            pass
    try:
        data["text/plain"] = repr(obj)
    except Exception as e:
        data["text/plain"] = "<repr failed: %s>" % type(e).__name__
    return data


def figure_bundle(fig, data):
    import base64
    import io

    png = io.BytesIO()
    fig.savefig(png, format="png")
    data["image/png"] = base64.b64encode(png.getvalue()).decode("ascii")
    svg = io.StringIO()
    fig.savefig(svg, format="svg")
    data["image/svg+xml"] = svg.getvalue()


def display(*objs):
    """Sends each object's rich forms as a display item (as IPython's display)."""
    for o in objs:
        LINK.send({"t": "display", "main": False, "data": mime_bundle(o)})


def flush_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in plt.get_fignums():
        data = {"text/plain": "<Figure %d>" % num}
        try:
            figure_bundle(plt.figure(num), data)
        except Exception as e:
            data = {"text/plain": "<Figure %d: %s: %s>" % (num, type(e).__name__, e)}
        LINK.send({"t": "display", "main": False, "data": data})
    plt.close("all")


class Python:
    def __init__(self):
        import types

        os.environ.setdefault("MPLBACKEND", "Agg")
        mod = types.ModuleType("__main__")
        mod.__dict__["display"] = display
        sys.modules["__main__"] = mod
        self.ns = mod.__dict__
        self.n = 0
        if "" not in sys.path:
            sys.path.insert(0, "")
        sys.stdout = Out(1)
        sys.stderr = Out(2)

    def run(self, code):
        import ast
        import linecache
        import traceback

        self.n += 1
        name = "<cell-%d>" % self.n
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        status = "ok"
        try:
            try:
                tree = ast.parse(code, name, "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = ast.Expression(tree.body.pop().value)
                exec(compile(tree, name, "exec"), self.ns)
                if last is not None:
                    v = eval(compile(last, name, "eval"), self.ns)
                    if v is not None:
                        self.ns["_"] = v
                        LINK.send({"t": "display", "main": True, "data": mime_bundle(v)})
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                flush_figures()
        except BaseException as e:
            status = "interrupted" if isinstance(e, KeyboardInterrupt) else "error"
            tb = e.__traceback__
            # Drop this driver's own frames: the cell's come after them.
            while tb is not None and tb.tb_frame.f_code.co_filename != name:
                tb = tb.tb_next
            text = "".join(traceback.format_exception(type(e), e, tb))
            LINK.send({"t": "err", "name": type(e).__name__, "value": str(e), "tb": text})
        return status


class Bash:
    def __init__(self, d, name):
        import subprocess

        self.cell = os.path.join(d, name + ".cell")
        r, w = os.pipe()
        self.status_r = r
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc", "-c",
             "exec 3>&%d; while IFS= read -r l; do eval \"$l\"; done" % w],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(w,), start_new_session=True)
        os.close(w)
        self.n = 0

    def alive(self):
        return self.proc.poll() is None

    def run(self, code):
        import select

        self.n += 1
        with open(self.cell, "w") as f:
            f.write(code)
        # The trap is set again for each cell: once a trap has returned from
        # an interrupted cell, bash would not run it a second time.
        cmd = "trap 'return 130' INT; . '%s'; echo \"$?\" >&3\n" % self.cell.replace("'", "")
        self.proc.stdin.write(cmd.encode())
        self.proc.stdin.flush()
        fds = {self.proc.stdout.fileno(): 1, self.proc.stderr.fileno(): 2}
        status, got = None, b""
        while status is None:
            try:
                ready, _, _ = select.select(list(fds) + [self.status_r], [], [])
            except KeyboardInterrupt:
                try:
                    os.killpg(self.proc.pid, signal.SIGINT)
                except OSError:
                    pass
                continue
            for fd in ready:
                chunk = os.read(fd, 65536)
                if fd == self.status_r:
                    if not chunk:
                        status = -1
                    got += chunk
                    if b"\n" in got:
                        status = int(got.split(b"\n")[0] or b"1")
                elif chunk:
                    LINK.send({"t": "out", "s": fds[fd], "d": chunk.decode("utf-8", "replace")})
        # Output written before the status line is in the pipes already.
        while True:
            ready, _, _ = select.select(list(fds), [], [], 0)
            chunks = [(fd, os.read(fd, 65536)) for fd in ready]
            chunks = [(fd, c) for fd, c in chunks if c]
            if not chunks:
                break
            for fd, c in chunks:
                LINK.send({"t": "out", "s": fds[fd], "d": c.decode("utf-8", "replace")})
        if status == -1 or not self.alive():
            LINK.send({"t": "err", "name": "Exit", "value": "bash exited", "tb": ""})
            return "dead"
        if status == 130:
            LINK.send({"t": "err", "name": "KeyboardInterrupt", "value": "", "tb": ""})
            return "interrupted"
        if status != 0:
            LINK.send({"t": "err", "name": "ExitCode", "value": str(status), "tb": ""})
            return "error"
        return "ok"


def serve(d, name, lang):
    # A process started in the background may inherit SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.makedirs(d, 0o700, exist_ok=True)
    sock_path, pid_path = paths(d, name)
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    tmp = "%s.%d" % (sock_path, os.getpid())
    lsock.bind(tmp)
    lsock.listen(4)
    ctx = Python() if lang == "python" else Bash(d, name)
    with open(pid_path + ".tmp", "w") as f:
        f.write("%d %s %s\n" % (os.getpid(), lang, os.getcwd()))
    os.rename(pid_path + ".tmp", pid_path)
    os.rename(tmp, sock_path)
    while True:
        conn = None
        try:
            conn, _ = lsock.accept()
            req = b""
            while not req.endswith(b"\n") and len(req) < MAX_REQ:
                c = conn.recv(1 << 20)
                if not c:
                    break
                req += c
            msg = json.loads(req.decode("utf-8", "replace"))
            for k, v in (msg.get("env") or {}).items():
                os.environ[str(k)] = str(v)
            LINK.conn = conn
            status = ctx.run(str(msg.get("code", "")))
            LINK.send({"t": "end", "status": status, "n": ctx.n})
            if status == "dead":
                os._exit(1)
        except KeyboardInterrupt:
            # Between cells, or in this loop: nothing ran that it could stop.
            LINK.send({"t": "end", "status": "interrupted", "n": ctx.n})
        except Exception as e:
            LINK.send({"t": "err", "name": type(e).__name__, "value": str(e), "tb": ""})
            LINK.send({"t": "end", "status": "error", "n": ctx.n})
        finally:
            LINK.conn = None
            if conn is not None:
                conn.close()


def read_pid(d, name):
    try:
        with open(paths(d, name)[1]) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def alive(pid):
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def dead(why):
    sys.stdout.write(json.dumps({"t": "dead", "why": why}) + "\n")
    sys.stdout.flush()
    sys.exit(0)


def client(d, name, deadline_ms, grace_ms, limit, envnames):
    import select

    code = sys.stdin.buffer.read().decode("utf-8", "replace")
    t0 = time.monotonic()
    deadline = t0 + int(deadline_ms) / 1000.0
    grace = int(grace_ms) / 1000.0
    sock_path = paths(d, name)[0]
    s = None
    # The context may still be starting: its socket appears once it listens.
    while s is None:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock_path)
        except OSError:
            s.close()
            s = None
            if os.path.exists(sock_path) and not alive(read_pid(d, name)):
                dead("the context's process is gone")
            if time.monotonic() >= deadline:
                dead("the context did not start by the deadline")
            time.sleep(0.005)
    env = {}
    for n in [x for x in envnames.split(",") if x]:
        if n in os.environ:
            env[n] = os.environ[n]
    s.sendall((json.dumps({"code": code, "env": env}) + "\n").encode("utf-8", "backslashreplace"))
    out = sys.stdout.buffer
    relay = Relay(out, int(limit))
    interrupted = False
    while True:
        now = time.monotonic()
        if now >= deadline:
            pid = read_pid(d, name)
            if not interrupted:
                interrupted = True
                out.write(b'{"t": "deadline"}\n')
                out.flush()
                if alive(pid):
                    os.kill(pid, signal.SIGINT)
                deadline = now + grace
                continue
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
            out.flush()
            dead("the cell did not stop within the grace after its interrupt")
        ready, _, _ = select.select([s], [], [], deadline - now)
        if not ready:
            continue
        c = s.recv(65536)
        if not c:
            break
        relay.feed(c)


class Relay:
    """Passes whole lines on, at most limit bytes of them, so that the end
    of the cell always fits in the host's output cap: streams stop first,
    other lines at the limit, then only a few short end lines go on, and
    {"t":"truncated"} once."""

    def __init__(self, out, limit):
        self.out, self.limit, self.total = out, limit, 0
        # Streams stop first, leaving room for the value, error and items.
        self.out_limit = limit - min(65536, limit // 4)
        self.buf, self.skipping, self.dropped, self.ends = b"", False, False, 0

    def drop(self):
        if not self.dropped:
            self.dropped = True
            self.out.write(b'{"t": "truncated"}\n')

    def feed(self, c):
        self.buf += c
        while True:
            i = self.buf.find(b"\n")
            if i < 0:
                break
            line, self.buf = self.buf[: i + 1], self.buf[i + 1 :]
            if self.skipping:
                self.skipping = False
            elif self.total + len(line) <= (
                self.out_limit if line.startswith(b'{"t": "out"') else self.limit
            ):
                self.total += len(line)
                self.out.write(line)
            elif line.startswith(b'{"t": "end"') and len(line) <= 256 and self.ends < 4:
                self.ends += 1
                self.out.write(line)
            else:
                self.drop()
        if len(self.buf) > self.limit:
            # A line longer than all that may pass: dropped as it comes.
            self.buf, self.skipping = b"", True
            self.drop()
        self.out.flush()


def main(argv):
    mode = argv[1]
    if mode == "serve":
        serve(argv[2], argv[3], argv[4])
    elif mode == "client":
        client(argv[2], argv[3], argv[4], argv[5], argv[6], argv[7] if len(argv) > 7 else "")
    elif mode == "signal":
        pid = read_pid(argv[2], argv[3])
        if not alive(pid):
            sys.stderr.write("no such context: %s\n" % argv[3])
            sys.exit(3)
        os.kill(pid, signal.SIGINT if argv[4] == "INT" else signal.SIGKILL)
        if argv[4] == "KILL":
            for p in paths(argv[2], argv[3]):
                try:
                    os.unlink(p)
                except OSError:
                    pass
    elif mode == "wait":
        # Until the context listens: create returns a context that can run.
        d, name = argv[2], argv[3]
        until = time.monotonic() + int(argv[4]) / 1000.0
        while not (alive(read_pid(d, name)) and os.path.exists(paths(d, name)[0])):
            if time.monotonic() >= until:
                sys.stderr.write("context %s did not start in %s ms (does its cwd exist "
                                 "and hold python3?)\n" % (name, argv[4]))
                sys.exit(4)
            time.sleep(0.005)
    elif mode == "list":
        try:
            names = sorted(os.listdir(argv[2]))
        except OSError:
            names = []
        for f in names:
            if f.endswith(".pid"):
                n = f[:-4]
                try:
                    with open(os.path.join(argv[2], f)) as fh:
                        pid, lang, cwd = fh.read().rstrip("\n").split(" ", 2)
                except (OSError, ValueError):
                    continue
                if alive(int(pid)):
                    print(n, lang, cwd)


main(sys.argv)

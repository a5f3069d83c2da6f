"""sandboxio.sandbox: Backend, Sandbox, Result.

A Sandbox is closed (killed and removed, sbx_sandbox_close()) when its
`with` block ends however it ends, when close() is called, and otherwise by
a weakref finalizer when the object is collected or the interpreter exits.
A process killed with -9 runs none of these; its sandboxes are left to the
library's reaper (owner gone) and their dead-man deadline (lifetime).

Waiting calls (create, run, run_code, files, close) release the GIL (see
_lib). On the main thread, all but close run in a helper thread while the
main thread waits, so that a signal (Ctrl-C: KeyboardInterrupt) is seen at
once: the sandbox is then killed (sbx_sandbox_kill(), the C API's way to end
a run that is under way), the call is waited for, and the exception goes
on. close runs on the calling thread, so a signal waits until the sandbox
is removed.
"""

import logging
import threading
import weakref

from . import _lib
from . import context as _context
from .errors import InvalidError, SandboxError
from .policy import Policy
from .secrets import Secrets, refuse_secret

log = logging.getLogger("sandboxio")

_backends = weakref.WeakValueDictionary()
_backends_lock = threading.Lock()


def _wait_call(fn, on_interrupt=None, cleanup=None):
    """Calls fn() (which makes C calls and reads their errors on its own
    thread) and returns its value. On the main thread fn runs in a helper
    thread so that signals interrupt the wait. On any BaseException while
    waiting (KeyboardInterrupt):
      - with on_interrupt (a run, whose buffers must outlive the C call):
        on_interrupt() ends the work (kills the sandbox), fn is waited for,
        and the exception goes on;
      - else the exception goes on at once; fn finishes in its thread, and
        cleanup(value) undoes what it made (closes the new sandbox)."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    box = {}
    lock = threading.Lock()
    done = threading.Event()

    def body():
        v, err = None, None
        try:
            v = fn()
        except BaseException as e:  # handed over to the caller's thread
            err = e
        with lock:
            box["v"], box["e"] = v, err
            done.set()
            abandoned = box.get("abandoned")
        if abandoned and err is None and cleanup is not None:
            try:
                cleanup(v)
            except BaseException:
                log.debug("cleanup after an interrupted call failed", exc_info=True)

    t = threading.Thread(target=body, name="sandboxio-call", daemon=True)
    t.start()
    try:
        # In slices: a signal sent to the process may be taken by another
        # thread, and then nothing wakes this one to run the handler.
        while not done.wait(0.05):
            pass
    except BaseException:
        if on_interrupt is None:
            with lock:
                if not done.is_set():
                    box["abandoned"] = True
                    raise
            if box["e"] is None and cleanup is not None:
                cleanup(box["v"])
            raise
        try:
            on_interrupt()
        except SandboxError:
            pass
        while not done.is_set():
            try:
                done.wait()
            except BaseException:
                pass
        raise
    t.join()
    e = box.pop("e")
    if e is not None:
        try:
            raise e
        finally:
            e = None
    return box["v"]


class Backend:
    """An open backend (sbx_backend_open()); shared by the sandboxes that use it."""

    def __init__(self, name="docker", socket_path=None, init_path=None, config=None,
                 hosts_file=None, audit_path=None, api_timeout_ms=0, no_reap_at_open=False):
        L = _lib
        self.name = name
        self._cfg = None
        self._h = None
        opts = L.sbx_backend_options()
        L.check(L.sbx_backend_options_init(L.byref(opts), L.BACKEND_OPTIONS_VERSION), "Backend")
        keep = []

        def s(v, what):
            if v is None:
                return None
            b = L.enc(v, what)
            keep.append(b)
            return b

        opts.socket_path = s(socket_path, "socket_path")
        if init_path is None and L.TREE_INIT and not __import__("os").environ.get(
                "SANDBOXIO_INIT"):
            init_path = L.TREE_INIT
        opts.init_path = s(init_path, "init_path")
        opts.hosts_file = s(hosts_file, "hosts_file")
        opts.audit_path = s(audit_path, "audit_path")
        opts.api_timeout_ms = api_timeout_ms
        opts.no_reap_at_open = 1 if no_reap_at_open else 0
        # As the CLI: the system config is the bound, and config= (else
        # $SANDBOXIO_CONFIG) can only narrow it, so that values a caller
        # passes on (an agent's) never widen what the operator allows.
        c = L.c_void_p()
        L.check(L.sbx_config_load_narrowed(
            L.byref(c), L.enc(config, "config") if config is not None else None), "config")
        self._cfg = c
        opts.config = c
        h = L.c_void_p()

        cfg = self._cfg

        def call():
            rc = L.sbx_backend_open(L.byref(h), L.enc(name, "backend"), L.byref(opts))
            if rc < 0:
                raise L.last_error("backend %s" % name, rc)
            return h

        def cleanup(handle):
            L.sbx_backend_free(handle)
            if cfg:
                L.sbx_config_free(cfg)

        try:
            _wait_call(call, cleanup=cleanup)
        except KeyboardInterrupt:
            self._cfg = None  # the helper thread frees it with the handle
            raise
        except BaseException:
            self._free_cfg()
            raise
        self._h = h

    @classmethod
    def shared(cls, name="docker", **kw):
        key = (name,) + tuple(sorted(kw.items()))
        with _backends_lock:
            b = _backends.get(key)
            if b is None:
                b = cls(name, **kw)
                _backends[key] = b
            return b

    def _free_cfg(self):
        if self._cfg:
            _lib.sbx_config_free(self._cfg)
            self._cfg = None

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.sbx_backend_free(h)
        if getattr(self, "_cfg", None):
            self._free_cfg()

    def list(self, tenant=None):
        """This library's sandboxes: a list of dicts (id, tenant, image,
        state, created, deadline)."""
        out = []

        @_lib.sbx_list_cb
        def cb(info, payload):
            i = info.contents
            out.append({"id": _lib.dec(i.id), "tenant": _lib.dec(i.tenant),
                        "image": _lib.dec(i.image), "state": _lib.dec(i.state),
                        "created": i.created, "deadline": i.deadline})
            return 0

        t = _lib.enc(tenant, "tenant") if tenant is not None else None
        _lib.check(_lib.sbx_backend_list(self._h, t, cb, None), "list")
        return out

    def reap(self, tenant=None, dry_run=False):
        """Removes sandboxes nobody will close (owner gone, deadline passed);
        returns a list of dicts (id, tenant, reason, removed, detail)."""
        out = []

        @_lib.sbx_reap_cb
        def cb(info, payload):
            i = info.contents
            out.append({"id": _lib.dec(i.id), "tenant": _lib.dec(i.tenant),
                        "reason": _lib.REAP_REASONS.get(i.reason, str(i.reason)),
                        "removed": bool(i.removed), "detail": _lib.dec(i.detail)})
            return 0

        o = _lib.sbx_reap_options(version=1, dry_run=1 if dry_run else 0)
        o.tenant = _lib.enc(tenant, "tenant") if tenant is not None else None
        _lib.check(_lib.sbx_backend_reap(self._h, _lib.byref(o), cb, None), "reap")
        return out


class Result:
    """What a run produced."""

    __slots__ = ("status", "exit_code", "term_signal", "stdout", "stderr", "stdout_truncated",
                 "stderr_truncated", "stdout_total", "stderr_total", "duration_ms",
                 "cpu_user_us", "cpu_system_us", "max_rss_kb", "limits_hit", "path")

    def __init__(self, r):
        self.status = _lib.RUN_STATUS.get(r.status, str(r.status))
        self.exit_code = r.exit_code
        self.term_signal = r.term_signal
        self.stdout = _lib.ctypes.string_at(r.stdout_data, r.stdout_len) if r.stdout_len else b""
        self.stderr = _lib.ctypes.string_at(r.stderr_data, r.stderr_len) if r.stderr_len else b""
        self.stdout_truncated = bool(r.stdout_truncated)
        self.stderr_truncated = bool(r.stderr_truncated)
        self.stdout_total = r.stdout_total
        self.stderr_total = r.stderr_total
        self.duration_ms = r.duration_ms
        self.cpu_user_us = r.cpu_user_us
        self.cpu_system_us = r.cpu_system_us
        self.max_rss_kb = r.max_rss_kb
        self.limits_hit = frozenset(n for bit, n in _lib.HIT_BITS if r.limits_hit & bit)
        self.path = _lib.RUN_PATHS.get(r.path, str(r.path))

    @property
    def ok(self):
        return self.status == "exited" and self.exit_code == 0

    @property
    def text(self):
        return self.stdout.decode("utf-8", "replace")

    def __repr__(self):
        def cut(b):
            return b if len(b) <= 60 else b[:60] + b"..."
        return ("Result(status=%r, exit_code=%d, stdout=%r, stderr=%r, duration_ms=%d, "
                "limits_hit=%s)" % (self.status, self.exit_code, cut(self.stdout),
                                    cut(self.stderr), self.duration_ms, sorted(self.limits_hit)))


class _State:
    """What the finalizer needs, apart from the Sandbox itself."""

    def __init__(self, backend):
        self.h = None
        self.backend = backend
        self.lock = threading.Lock()  # guards h
        self.busy = threading.Lock()  # held by a call that uses h (Sandbox._lock)
        # The handles of its contexts (context._CtxState), freed before h.
        self.contexts = set()
        self.ctx_lock = threading.RLock()


def _finalize(state):
    # One sandbox is used by one thread at a time (sandbox.h), and the
    # finalizer also runs at interpreter exit, while a daemon thread may
    # still be in a run: kill it (allowed from any thread), wait for the run
    # to return, and only then close.
    if not state.busy.acquire(blocking=False):
        with state.lock:
            if state.h:
                _lib.sbx_sandbox_kill(state.h)
        state.busy.acquire()
    try:
        _context.free_all(state)
        with state.lock:
            h, state.h = state.h, None
        if h:
            rc = _lib.sbx_sandbox_close(h)
            log.debug("sandbox closed by finalizer (rc %d)", rc)
    finally:
        state.busy.release()


class Sandbox:
    """A sandbox: Sandbox(policy=None, backend="docker", tenant=None, **fields).

    fields are Policy fields (applied to a copy of policy when both are
    given). Backend options: socket_path, init_path, config (a config file
    that narrows the system config, as the CLI's --config), hosts_file,
    audit_path.
    """

    _BACKEND_KW = ("socket_path", "init_path", "config", "hosts_file", "audit_path")

    def __init__(self, policy=None, backend="docker", tenant=None, **fields):
        bkw = {k: fields.pop(k) for k in self._BACKEND_KW if k in fields}
        if policy is None:
            policy = Policy()
        elif not isinstance(policy, Policy):
            raise InvalidError("policy: expected a sandboxio.Policy, got %s"
                               % type(policy).__name__)
        else:
            policy = policy.copy()
        if tenant is not None:
            policy.set("tenant", tenant)
        for k, v in fields.items():
            policy.set(k, v)
        self.policy = policy
        self._id = None
        if isinstance(backend, Backend):
            be = backend
        else:
            be = Backend.shared(backend, **bkw)
        self._backend = be
        self._state = _State(be)
        self._lock = self._state.busy  # one call on the handle at a time
        self._finalizer = weakref.finalize(self, _finalize, self._state)
        st = self._state
        h = _lib.c_void_p()

        def call():
            rc = _lib.sbx_sandbox_create(_lib.byref(h), be._h, policy._h)
            if rc < 0:
                raise _lib.last_error("create", rc)
            st.h = h
            return _lib.dec(_lib.sbx_sandbox_id(h))

        # Interrupted while creating: the sandbox, once made, is closed by the
        # finalizer (at once, or by the helper thread when create returns).
        try:
            self._id = _wait_call(call, cleanup=lambda _id: _finalize(st))
        except BaseException:
            self._finalizer()
            raise
        log.debug("sandbox %s created", self._id)

    @property
    def id(self):
        return self._id

    @property
    def closed(self):
        return self._state.h is None

    def _handle(self):
        h = self._state.h
        if not h:
            raise InvalidError("sandbox %s is closed" % self._id)
        return h

    def kill(self):
        """Kills the sandbox now, from any thread: a run under way on it
        returns (status killed, or CancelledError), and later runs fail."""
        with self._state.lock:
            h = self._state.h
            if not h:
                return
            _lib.check(_lib.sbx_sandbox_kill(h), "kill")

    def _kill_quietly(self):
        try:
            self.kill()
        except SandboxError:
            pass

    def close(self):
        """Kills and removes the sandbox. Idempotent."""
        if self._finalizer.alive:
            with self._lock:
                st = self._state
                _context.free_all(st)
                with st.lock:
                    h, st.h = st.h, None
                self._finalizer.detach()
                if h:
                    rc = _lib.sbx_sandbox_close(h)
                    log.debug("sandbox %s closed", self._id)
                    if rc < 0:
                        raise _lib.last_error("close", rc)

    def detach(self):
        """Leaves the sandbox running until its deadline; frees the handle."""
        with self._lock:
            st = self._state
            _context.free_all(st)
            with st.lock:
                h, st.h = st.h, None
            self._finalizer.detach()
            if h:
                _lib.sbx_sandbox_detach(h)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if ev is not None:
            try:
                self.close()
            except SandboxError:
                pass  # the exception that left the block wins
        else:
            self.close()

    def __repr__(self):
        return "Sandbox(id=%r, backend=%r, closed=%r)" % (self._id, self._backend.name,
                                                         self.closed)

    # ----- runs -----

    def _options(self, keep, env, workdir, stdin, timeout, secrets, raw_output, on_output):
        L = _lib
        o = L.sbx_run_options()
        L.check(L.sbx_run_options_init(L.byref(o), L.RUN_OPTIONS_VERSION), "run")
        if env is not None:
            refuse_secret("env", env)
            if not hasattr(env, "items"):
                raise InvalidError("env: expected a mapping of NAME to VALUE")
            arr = (L.c_char_p * (len(env) + 1))()
            for i, (k, v) in enumerate(env.items()):
                refuse_secret("env", v)
                if "=" in k:
                    raise InvalidError("env: a name holds '='")
                arr[i] = L.enc(k, "env name") + b"=" + L.enc(v, "env value")
            arr[len(env)] = None
            keep.append(arr)
            o.env = L.ctypes.cast(arr, L.POINTER(L.c_char_p))
        if workdir is not None:
            w = L.enc(workdir, "workdir")
            keep.append(w)
            o.workdir = w
        if stdin is not None:
            if isinstance(stdin, str):
                stdin = stdin.encode("utf-8")
            if not isinstance(stdin, (bytes, bytearray)):
                raise InvalidError("stdin: expected bytes or str")
            b = L.ctypes.create_string_buffer(bytes(stdin), len(stdin))
            keep.append(b)
            o.stdin_data = L.ctypes.cast(b, L.c_void_p)
            o.stdin_len = len(stdin)
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
                    timeout != timeout or timeout <= 0:
                raise InvalidError("timeout: %r is not a positive number of seconds"
                                   % (timeout,))
            o.timeout_ms = max(1, L.ms_of_seconds(timeout, "timeout"))
        if secrets is not None:
            if not isinstance(secrets, Secrets):
                raise InvalidError("secrets: expected a sandboxio.Secrets, got %s"
                                   % type(secrets).__name__)
            o.secrets = secrets._acquire()
            keep.append(secrets)  # released by _run once the C call returned
        o.raw_output = 1 if raw_output else 0
        if on_output is not None:
            def cb(stream, data, n, payload):
                try:
                    stop = on_output("stdout" if stream == 1 else "stderr",
                                     L.ctypes.string_at(data, n))
                except BaseException:
                    return 1
                return 1 if stop else 0
            c = L.sbx_output_cb(cb)
            keep.append(c)
            o.on_output = c
        return o

    def _run(self, what, start, opts_kw):
        keep = []
        out = _lib.POINTER(_lib.sbx_result)()

        def call(o):
            with self._lock:
                rc = start(_lib.byref(out), self._handle(), _lib.byref(o))
                if rc < 0:
                    raise _lib.last_error(what, rc)
                try:
                    return Result(out.contents)
                finally:
                    _lib.sbx_result_free(out)

        try:
            o = self._options(keep, **opts_kw)
            return _wait_call(lambda: call(o), on_interrupt=self._kill_quietly)
        finally:
            for k in keep:
                if isinstance(k, Secrets):
                    k._release()
            keep.clear()

    def run(self, argv, timeout=None, secrets=None, stdin=None, env=None, workdir=None,
            raw_output=False, on_output=None):
        """Runs argv (a list; a str is refused) and returns a Result.
        on_output(stream, bytes) sees output as it comes; a true return
        cancels the run (CancelledError)."""
        if isinstance(argv, (str, bytes)) or not argv:
            raise InvalidError("argv: expected a non-empty list of arguments")
        L = _lib
        arr = (L.c_char_p * (len(argv) + 1))()
        for i, a in enumerate(argv):
            arr[i] = L.enc(a, "argv[%d]" % i)
        arr[len(argv)] = None

        def start(out, h, o):
            return L.sbx_sandbox_run(out, h, arr, o)

        return self._run("run", start, dict(env=env, workdir=workdir, stdin=stdin,
                                            timeout=timeout, secrets=secrets,
                                            raw_output=raw_output, on_output=on_output))

    def run_code(self, code, lang="python", timeout=None, secrets=None, env=None, workdir=None,
                 raw_output=False, on_output=None):
        """Runs source code ("python" or "bash"), passed on standard input."""
        L = _lib
        c = code.encode("utf-8") if isinstance(code, str) else code
        if not isinstance(c, bytes):
            raise InvalidError("code: expected str or bytes")
        lg = L.enc(lang, "lang")

        def start(out, h, o):
            return L.sbx_sandbox_run_code(out, h, lg, c, len(c), o)

        return self._run("run_code", start, dict(env=env, workdir=workdir, stdin=None,
                                                 timeout=timeout, secrets=secrets,
                                                 raw_output=raw_output, on_output=on_output))

    # ----- code contexts -----

    def context(self, language="python", cwd=None, name=None):
        """Starts a code context (a Context): "python" or "bash", in cwd
        (absolute; None: the policy's workdir), named name (1 to 64 of
        [A-Za-z0-9_-]; None: a random one). Docker backend only."""
        return _context.create(self, language, cwd, name)

    def open_context(self, name):
        """A Context on the live context of that name (NotFoundError: none)."""
        return _context.open_(self, name)

    def contexts(self):
        """The sandbox's live contexts: a list of dicts (name, language)."""
        return _context.list_(self)

    # ----- files -----

    def write_file(self, path, data, mode=0o644):
        """Writes a file in the sandbox (under /workspace or /tmp)."""
        L = _lib
        p = L.enc(path, "path")
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not isinstance(data, (bytes, bytearray)):
            raise InvalidError("data: expected bytes or str")
        data = bytes(data)

        def call():
            with self._lock:
                rc = L.sbx_sandbox_write_file(self._handle(), p, data, len(data), mode)
                if rc < 0:
                    raise L.last_error("write_file %s" % path, rc)

        _wait_call(call, on_interrupt=self._kill_quietly)

    def read_file(self, path, max_bytes=0):
        """Reads a file from the sandbox (redacted of live secrets) as bytes."""
        L = _lib
        p = L.enc(path, "path")

        def call():
            buf = L.c_void_p()
            n = L.c_size_t()
            with self._lock:
                rc = L.sbx_sandbox_read_file(L.byref(buf), L.byref(n), self._handle(), p,
                                             max_bytes)
                if rc < 0:
                    raise L.last_error("read_file %s" % path, rc)
            try:
                return L.ctypes.string_at(buf, n.value) if n.value else b""
            finally:
                L.sbx_free(buf)

        return _wait_call(call, on_interrupt=self._kill_quietly)

    def upload(self, local_path, path, mode=None):
        """Copies a host file into the sandbox."""
        import os
        with open(local_path, "rb") as f:
            data = f.read()
        if mode is None:
            mode = os.stat(local_path).st_mode & 0o777
        self.write_file(path, data, mode)

    def download(self, path, local_path, max_bytes=0):
        """Copies a sandbox file to the host."""
        data = self.read_file(path, max_bytes)
        with open(local_path, "wb") as f:
            f.write(data)

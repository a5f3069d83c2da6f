"""sandboxio.context: code contexts (include/sandboxio/interp.h).

A Context is a long-lived interpreter (python or bash) in a live sandbox
whose variables, imports and working directory persist from one cell to the
next, as in a notebook. Sandbox.context() starts one; Sandbox.open_context()
finds a live one by name (from this process or another, such as the
sandboxio command's `code`).

Handles: the C handle of a context must be freed before its sandbox's, so
a Sandbox keeps the handles of its contexts and frees them (leaving the
contexts to die with the sandbox) before it is closed, detached or
collected; a Context keeps its Sandbox alive. Context.close() kills the
context; detach(), or the garbage collector, frees the handle only and the
context lives on for open_context().

Threads: as runs, one sandbox's contexts take one call at a time (the
sandbox's lock), except interrupt(), which may be called from any thread
while a cell runs. On the main thread, Ctrl-C during run() interrupts the
cell (sbx_context_interrupt()), waits for it to end, and raises
KeyboardInterrupt; the context lives on.
"""

import collections
import threading
import weakref

from . import _lib
from .errors import InvalidError, SandboxError, VersionError
from .secrets import Secrets

CodeError = collections.namedtuple("CodeError", "name value traceback")
CodeError.__doc__ = "A cell's error: the exception's class name, its text, the traceback."

DisplayItem = collections.namedtuple("DisplayItem", "mime data is_result")
DisplayItem.__doc__ = "A display item: its MIME type, its bytes, whether it is the last value."


class CodeResult:
    """What a cell produced (sbx_code_result)."""

    __slots__ = ("status", "stdout", "stderr", "text", "error", "items", "execution_count",
                 "truncated", "malformed", "duration_ms")

    def __init__(self, r):
        L = _lib
        if r.version < L.CODE_RESULT_VERSION:
            raise VersionError("context run: result version %d is older than %d"
                               % (r.version, L.CODE_RESULT_VERSION))
        self.status = L.dec(L.sbx_code_status_name(r.status)) or str(r.status)
        self.stdout = L.ctypes.string_at(r.stdout_data, r.stdout_len) if r.stdout_len else b""
        self.stderr = L.ctypes.string_at(r.stderr_data, r.stderr_len) if r.stderr_len else b""
        self.text = L.dec(r.text)
        if r.error_name is not None or r.error_value is not None or \
                r.error_traceback is not None:
            self.error = CodeError(L.dec(r.error_name), L.dec(r.error_value),
                                   L.dec(r.error_traceback))
        else:
            self.error = None
        items = []
        for i in range(r.n_items):
            it = r.items[i]
            data = L.ctypes.string_at(it.data, it.len) if it.len else b""
            items.append(DisplayItem(L.dec(it.mime), data, bool(it.is_result)))
        self.items = items
        self.execution_count = r.execution_count
        self.truncated = bool(r.truncated)
        self.malformed = r.malformed
        self.duration_ms = r.duration_ms

    @property
    def ok(self):
        return self.status == "ok"

    def __repr__(self):
        def cut(b):
            if b is None or len(b) <= 60:
                return b
            return b[:60] + (b"..." if isinstance(b, bytes) else "...")
        return ("CodeResult(status=%r, execution_count=%d, text=%r, error=%r, stdout=%r, "
                "items=%r, duration_ms=%d)"
                % (self.status, self.execution_count, cut(self.text),
                   self.error.name if self.error else None, cut(self.stdout),
                   [i.mime for i in self.items], self.duration_ms))


class _CtxState:
    """The handle, apart from the Context (what the finalizer needs)."""

    def __init__(self, h):
        self.h = h
        self.lock = threading.RLock()  # guards h; held by interrupt() during its call


def _free_handle(cs):
    with cs.lock:
        h, cs.h = cs.h, None
    if h:
        _lib.sbx_context_free(h)


def _release(sandbox_state, cs):
    """The finalizer of a Context: frees the handle, the context lives on."""
    with sandbox_state.ctx_lock:
        sandbox_state.contexts.discard(cs)
    _free_handle(cs)


def free_all(sandbox_state):
    """Frees the handles of a sandbox's contexts (before its own handle)."""
    with sandbox_state.ctx_lock:
        all_, sandbox_state.contexts = list(sandbox_state.contexts), set()
    for cs in all_:
        _free_handle(cs)


def _timeout_ms(timeout):
    if timeout is None:
        return 0
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            timeout != timeout or timeout <= 0:
        # the value is not quoted (errors.py: the package's own texts quote none)
        raise InvalidError("timeout: not a positive number of seconds")
    return max(1, _lib.ms_of_seconds(timeout, "timeout"))


def _code_bytes(code):
    c = code.encode("utf-8") if isinstance(code, str) else code
    if not isinstance(c, bytes):
        raise InvalidError("code: expected str or bytes, got %s" % type(code).__name__)
    return c


def check_name(name):
    if name is None:
        return None
    if not isinstance(name, str) or not name:
        raise InvalidError("name: expected a non-empty str")
    return _lib.enc(name, "name")


class Context:
    """A code context of a Sandbox: made by Sandbox.context() and
    Sandbox.open_context(), not directly."""

    def __init__(self, sandbox, h):
        self._sandbox = sandbox
        self._name = _lib.dec(_lib.sbx_context_name(h))
        self._language = _lib.dec(_lib.sbx_context_language(h))
        cs = _CtxState(h)
        self._cs = cs
        st = sandbox._state
        with st.ctx_lock:
            st.contexts.add(cs)
        self._finalizer = weakref.finalize(self, _release, st, cs)

    @property
    def name(self):
        return self._name

    @property
    def language(self):
        return self._language

    @property
    def closed(self):
        return self._cs.h is None

    def _handle(self):
        h = self._cs.h
        if not h:
            raise InvalidError("context %s is closed (or its sandbox is)" % self._name)
        return h

    def run(self, code, timeout=None, secrets=None, on_output=None):
        """Runs one cell and returns a CodeResult. A cell's own failure
        (an exception, a timeout, an interrupt) is in the result; a failed
        call raises SandboxError. timeout: seconds (None: the policy's
        run_code_timeout). secrets: a Secrets set in the context's
        environment for this cell and the later ones. on_output(stream,
        data) sees the cell's output as it comes, redacted (its return value
        is ignored: stop a cell with interrupt())."""
        from .sandbox import _wait_call
        L = _lib
        c = _code_bytes(code)
        keep = []
        o = L.sbx_code_options()
        o.version = L.CODE_OPTIONS_VERSION
        o.timeout_ms = _timeout_ms(timeout)
        if on_output is not None:
            if not callable(on_output):
                raise InvalidError("on_output: expected a callable")

            def cb(stream, data, n, payload):
                try:
                    on_output("stdout" if stream == 1 else "stderr", L.ctypes.string_at(data, n))
                except BaseException:
                    pass
                return 0
            f = L.sbx_output_cb(cb)
            keep.append(f)
            o.on_output = f
        if secrets is not None:
            if not isinstance(secrets, Secrets):
                raise InvalidError("secrets: expected a sandboxio.Secrets, got %s"
                                   % type(secrets).__name__)
            o.secrets = secrets._acquire()
            keep.append(secrets)
        out = L.POINTER(L.sbx_code_result)()
        sb = self._sandbox

        def call():
            with sb._lock:
                rc = L.sbx_context_run(L.byref(out), self._handle(), c, len(c), L.byref(o))
                if rc < 0:
                    raise L.last_error("context %s run" % self._name, rc)
                try:
                    return CodeResult(out.contents)
                finally:
                    L.sbx_code_result_free(out)

        try:
            return _wait_call(call, on_interrupt=self._interrupt_quietly)
        finally:
            for k in keep:
                if isinstance(k, Secrets):
                    k._release()
            keep.clear()

    def interrupt(self):
        """Sends SIGINT to the context, from any thread: a cell under way
        ends with status "interrupted"; the context lives on."""
        with self._cs.lock:
            _lib.check(_lib.sbx_context_interrupt(self._handle()),
                       "context %s interrupt" % self._name)

    def _interrupt_quietly(self):
        try:
            self.interrupt()
        except SandboxError:
            pass

    def restart(self):
        """Kills the context's process and starts a new one of the same
        name, language and cwd: its state is gone."""
        from .sandbox import _wait_call
        sb = self._sandbox

        def call():
            with sb._lock:
                _lib.check(_lib.sbx_context_restart(self._handle()),
                           "context %s restart" % self._name)

        _wait_call(call)

    def close(self):
        """Kills the context and frees the handle. Idempotent; a context
        already gone (with its sandbox) is not an error."""
        if not self._finalizer.alive:
            return
        with self._sandbox._lock:
            st = self._sandbox._state
            self._finalizer.detach()
            with st.ctx_lock:
                st.contexts.discard(self._cs)
            with self._cs.lock:
                h, self._cs.h = self._cs.h, None
            if h:
                rc = _lib.sbx_context_close(h)
                if rc < 0 and rc != _lib.SBX_ENOTFOUND:
                    raise _lib.last_error("context %s close" % self._name, rc)

    def detach(self):
        """Frees the handle and leaves the context alive (open_context()
        finds it again by name). Waits for a cell under way on another
        thread: the handle is not freed under it."""
        with self._sandbox._lock:
            self._finalizer()

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
        return "Context(name=%r, language=%r, closed=%r)" % (self._name, self._language,
                                                             self.closed)


def create(sandbox, language, cwd, name):
    from .sandbox import _wait_call
    L = _lib
    o = L.sbx_context_options()
    o.version = L.CONTEXT_OPTIONS_VERSION
    if language is None:
        language = "python"
    if not isinstance(language, str):
        raise InvalidError("language: expected \"python\" or \"bash\"")
    lg = L.enc(language, "language")
    o.language = lg
    cw = L.enc(cwd, "cwd") if cwd is not None else None
    o.cwd = cw
    nm = check_name(name)
    o.name = nm
    h = L.c_void_p()

    def call():
        with sandbox._lock:
            rc = L.sbx_context_create(L.byref(h), sandbox._handle(), L.byref(o))
            if rc < 0:
                raise L.last_error("context", rc)
            return Context(sandbox, h)

    # Interrupted while it starts: the context, once made, is closed.
    return _wait_call(call, cleanup=lambda ctx: ctx.close())


def open_(sandbox, name):
    from .sandbox import _wait_call
    L = _lib
    if name is None:
        raise InvalidError("name: expected the name of a live context")
    nm = check_name(name)
    h = L.c_void_p()

    def call():
        with sandbox._lock:
            rc = L.sbx_context_open(L.byref(h), sandbox._handle(), nm)
            if rc < 0:
                raise L.last_error("context %s" % name, rc)
            return Context(sandbox, h)

    return _wait_call(call, cleanup=lambda ctx: ctx.detach())


def list_(sandbox):
    from .sandbox import _wait_call
    L = _lib
    out = []

    @L.sbx_context_list_cb
    def cb(name, language, payload):
        out.append({"name": L.dec(name), "language": L.dec(language)})
        return 0

    def call():
        with sandbox._lock:
            L.check(L.sbx_context_list(sandbox._handle(), cb, None), "contexts")
        return out

    return _wait_call(call)

"""Tests that need no engine: policy checks, secrets hygiene, errors, and
what the bindings do around a blocking C call (against a socket server of
the test's own, never the host's dockerd)."""

import ctypes
import logging
import os
import signal
import socket
import threading
import traceback

import pytest

import sandboxio
from sandboxio import _lib

from fakeengine import FakeEngine

SECRET = "s3cr3t-Value-9f8e7d"


def test_library_is_the_trees():
    tree = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    if not os.environ.get("SANDBOXIO_LIBRARY"):
        assert sandboxio.LIBRARY == os.path.join(tree, "build", "libsandboxio.so")
    assert sandboxio.__version__ == "0.1.0"


def test_a_missing_library_is_an_import_error_naming_it(tmp_path):
    import subprocess
    import sys
    missing = str(tmp_path / "libsandboxio.so.0")
    pkg = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
    p = subprocess.run([sys.executable, "-c", "import sandboxio"], capture_output=True,
                       text=True, env=dict(os.environ, SANDBOXIO_LIBRARY=missing,
                                           PYTHONPATH=pkg))
    assert p.returncode != 0
    assert "ImportError" in p.stderr and missing in p.stderr and "SANDBOXIO_LIBRARY" in p.stderr


def test_policy_defaults_are_the_c_defaults():
    p = sandboxio.Policy()
    assert p.memory == 512 << 20 and p.cpu_milli == 1000 and p.pids == 256
    assert p.disk == 1 << 30 and p.nofile == 1024 and p.output == 16 << 20
    assert p.run_timeout == 300 and p.lifetime == 300 and p.create_timeout == 300
    assert p.image == "sandboxio/python:3.11" and p.tenant == "default"
    assert p.workdir == "/workspace" and p.min_tier == "container"
    assert p.detached is False and p.allow_count == 0


def test_policy_every_field_is_set_in_c():
    p = sandboxio.Policy(image="example/img:1", tenant="t-1", workdir="/tmp", env={"A": "1"},
                         create_timeout=10, run_timeout="90s", run_code_timeout=20.5,
                         lifetime="5m", cpus=0.5, memory="256m", disk=64 << 20,
                         output="1m", pids=64, nofile=128, min_tier="gvisor", detached=True,
                         allow_hosts=["example.com:443", ("example.org", 80)],
                         allow_cidrs=["198.51.100.0/24:443", ("203.0.113.7", 0)])
    assert (p.image, p.tenant, p.workdir) == ("example/img:1", "t-1", "/tmp")
    assert p.env_names == ["A"]
    assert (p.create_timeout, p.run_timeout, p.run_code_timeout, p.lifetime) == \
        (10, 90, 20.5, 300)
    assert (p.cpu_milli, p.memory, p.disk, p.output, p.pids, p.nofile) == \
        (500, 256 << 20, 64 << 20, 1 << 20, 64, 128)
    assert p.min_tier == "gvisor" and p.detached is True and p.allow_count == 4
    q = p.copy()
    q.memory = "128m"
    assert p.memory == 256 << 20 and q.memory == 128 << 20


@pytest.mark.parametrize("field,value,code", [
    ("memory", 0, -2), ("memory", -1, -2), ("memory", "64t", -2), ("pids", 1, -2),
    ("cpu_milli", 10 ** 9, -2), ("disk", "lots", -2), ("nofile", 0, -2), ("output", 1, -2),
    ("run_timeout", 0, -2), ("lifetime", "0", -2), ("create_timeout", 10 ** 9, -2),
    ("image", "bad image", -2), ("tenant", "", -2), ("workdir", "relative", -2),
    ("workdir", "/a/../b", -2), ("min_tier", "vm", -2), ("allow_cidrs", ["127.0.0.1"], -2),
    ("allow_cidrs", ["0.0.0.0/0"], -2), ("allow_hosts", ["localhost"], -2),
    ("allow_hosts", ["*.example.com"], -2), ("allow_cidrs", ["198.51.100.0/24:0"], -2),
    ("env", {"1BAD": "x"}, -2), ("env", {"A=B": "x"}, -2),
])
def test_policy_refusal_carries_the_c_code_and_names_the_field(field, value, code):
    p = sandboxio.Policy()
    before = repr(p)
    with pytest.raises(sandboxio.SandboxError) as ei:
        p.set(field, value)
    assert ei.value.code == code
    assert isinstance(ei.value, sandboxio.InvalidError)
    assert str(ei.value).startswith(field)
    assert repr(p) == before  # a refused value changes nothing


def test_policy_unknown_field():
    with pytest.raises(sandboxio.InvalidError, match="no field 'memroy'"):
        sandboxio.Policy(memroy="1g")


def test_error_classes_carry_each_c_code():
    from sandboxio.errors import BY_CODE, from_code
    for code in range(-2, -13, -1):
        e = from_code(code, "m")
        assert e.code == code and isinstance(e, sandboxio.SandboxError)
        assert _lib.dec(_lib.sbx_strerror(code))
        assert BY_CODE[code] is type(e)
    assert issubclass(sandboxio.UnavailableError, sandboxio.EngineError)
    assert issubclass(sandboxio.TimeoutError, TimeoutError)


def _texts_of(exc, with_locals=True):
    """Every text a user may see of an exception: str, repr, args, and its
    traceback formatted without and (unless with_locals is false) with the
    frames' locals."""
    out = [str(exc), repr(exc), repr(exc.args)]
    out.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    if with_locals:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__,
                                          capture_locals=True)
        out.append("".join(te.format()))
    return out


def test_secrets_repr_and_str_show_names_only():
    s = sandboxio.Secrets({"API_TOKEN": SECRET}, OTHER=SECRET + "x")
    for t in (repr(s), str(s), "%s" % s, "{!r}".format(s), repr([s]), repr({"k": s})):
        assert SECRET not in t and "API_TOKEN" in t
    assert s.names == ["API_TOKEN", "OTHER"] and len(s) == 2 and "API_TOKEN" in s
    assert not hasattr(s, "__dict__")
    with pytest.raises(TypeError):
        import pickle
        pickle.dumps(s)
    s.close()


def _make_bad_secrets(bad_name):
    value = SECRET  # a local in a frame of the traceback
    return sandboxio.Secrets({"GOOD": value, bad_name: value})


@pytest.mark.parametrize("case", ["bad name", "short", "nul", "type"])
def test_secret_never_in_exception_text_or_traceback(case):
    with pytest.raises(sandboxio.SandboxError) as ei:
        if case == "bad name":
            sandboxio.Secrets({"BAD NAME": SECRET})
        elif case == "short":
            sandboxio.Secrets({"A": SECRET, "A2": "ab"})
        elif case == "nul":
            sandboxio.Secrets({"N": SECRET + "\0" + SECRET})
        else:
            sandboxio.Secrets({"N": int("1234" + "5678")})
    for t in _texts_of(ei.value):
        assert SECRET not in t
        assert "12345678" not in t


def test_secret_not_in_traceback_locals_of_the_package():
    """capture_locals shows every frame's locals: the caller's own frame
    holds the value (its business), the package's frames must not."""
    try:
        _make_bad_secrets("BAD-NAME")
    except sandboxio.SandboxError as e:
        te = traceback.TracebackException(type(e), e, e.__traceback__, capture_locals=True)
        frames = [f for f in te.stack if "sandboxio" + os.sep in f.filename]
        assert frames, "the package's frames are in the traceback"
        for f in frames:
            for v in (f.locals or {}).values():
                assert SECRET not in v
    else:
        pytest.fail("a bad name was accepted")


@pytest.mark.parametrize("field,value", [
    ("allow_hosts", [SECRET + "*.x"]), ("allow_cidrs", [SECRET]), ("lifetime", SECRET),
    ("memory", SECRET), ("image", SECRET + " x"), ("tenant", SECRET + "!"),
    ("workdir", SECRET), ("min_tier", SECRET), ("allow_hosts", [(SECRET, 1, 2)]),
    ("env", {SECRET + "=": "x"}), ("env", {"A": SECRET + "\0"}), ("image", 12345678),
])
def test_a_refused_value_that_is_a_live_secret_is_never_quoted(field, value):
    """The library redacts every live secret from its messages about the
    caller's own arguments; the package's own messages quote no value.
    (Policy values are plain: the frames' locals hold what the caller
    passed, so the traceback is checked without them.)"""
    s = sandboxio.Secrets({"API_TOKEN": SECRET})
    with pytest.raises(sandboxio.SandboxError) as ei:
        sandboxio.Policy(**{field: value})
    for t in _texts_of(ei.value, with_locals=False):
        assert SECRET not in t
    s.close()


def test_duplicate_secret_name_refused_without_value():
    with pytest.raises(sandboxio.InvalidError) as ei:
        sandboxio.Secrets([("DUP", SECRET), ("DUP", SECRET + "2")])
    assert "DUP" in str(ei.value)
    for t in _texts_of(ei.value):
        assert SECRET not in t


def test_secret_never_in_a_logging_record(tmp_path):
    records = []

    class H(logging.Handler):
        def emit(self, rec):
            records.append(self.format(rec))

    h = H(level=logging.DEBUG)
    root = logging.getLogger()
    old = root.level
    root.addHandler(h)
    root.setLevel(logging.DEBUG)
    try:
        s = sandboxio.Secrets({"API_TOKEN": SECRET})
        logging.getLogger("app").info("secrets: %s %r", s, s)
        with pytest.raises(sandboxio.UnavailableError) as ei:
            sandboxio.Sandbox(socket_path=str(tmp_path / "none.sock"), env={"PLAIN": "1"})
        logging.getLogger("app").exception("failed: %s", ei.value, exc_info=ei.value)
        s.close()
    finally:
        root.removeHandler(h)
        root.setLevel(old)
    assert records
    for r in records:
        assert SECRET not in r


def test_env_refuses_a_secrets_object():
    s = sandboxio.Secrets({"API_TOKEN": SECRET})
    with pytest.raises(sandboxio.InvalidError, match="secrets="):
        sandboxio.Policy(env=s)
    with pytest.raises(sandboxio.InvalidError, match="secrets="):
        sandboxio.Policy(env={"API_TOKEN": s})
    with pytest.raises(sandboxio.InvalidError, match="secrets="):
        # refused before any engine is contacted: the socket does not exist
        sandboxio.Sandbox(env={"API_TOKEN": s}, socket_path="/nonexistent/docker.sock")
    s.close()


def test_secret_value_reaches_c_only():
    """The object keeps the C handle and the names, nothing else."""
    s = sandboxio.Secrets({"API_TOKEN": SECRET})
    held = [getattr(s, a) for a in s.__slots__ if a != "__weakref__" and hasattr(s, a)]
    for v in held:
        assert SECRET not in repr(v)
    assert _lib.sbx_secrets_count(s.handle()) == 1
    assert _lib.sbx_secrets_name(s.handle(), 0) == b"API_TOKEN"
    s.close()


def test_secrets_closed_during_a_run_live_until_the_run_returns():
    """close() while a run holds the object defers the free to the run's
    end: the library's values must outlive every run given them."""
    s = sandboxio.Secrets({"API_TOKEN": SECRET})
    h = s._acquire()  # what a run does before its C call
    s.close()
    assert _lib.sbx_secrets_count(h) == 1  # still alive (ASan would see a use after free)
    with pytest.raises(sandboxio.InvalidError, match="closed"):
        s._acquire()  # no new run takes it
    s._release()  # the run returned: now it is freed
    assert s._h is None


def test_daemon_down_is_engine_error_naming_the_socket(tmp_path):
    path = str(tmp_path / "docker.sock")
    with pytest.raises(sandboxio.EngineError) as ei:
        sandboxio.Sandbox(socket_path=path)
    assert isinstance(ei.value, sandboxio.UnavailableError)
    assert ei.value.code == -10 and path in str(ei.value)
    # a socket file with no one listening
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    try:
        with pytest.raises(sandboxio.EngineError) as ei:
            sandboxio.Sandbox(socket_path=path)
        assert ei.value.code == -10 and path in str(ei.value)
    finally:
        s.close()


def test_engine_answering_500_is_engine_error(tmp_path):
    srv = FakeEngine(str(tmp_path / "e.sock"),
                     answer=b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
                            b"application/json\r\nContent-Length: 20\r\nConnection: close"
                            b"\r\n\r\n{\"message\":\"boom\"}\n\n")
    try:
        with pytest.raises(sandboxio.SandboxError) as ei:
            sandboxio.Backend("docker", socket_path=srv.path, api_timeout_ms=600000)
        assert ei.value.code in (-5, -10)
        assert srv.requested.is_set()
    finally:
        srv.stop()


def test_gil_is_released_while_a_c_call_waits(tmp_path):
    """sbx_backend_open() waits for the engine's answer; the engine here is a
    Python thread of this process. It can answer only if the waiting C call
    has released the GIL; if it had not, the call would wait out its
    10-minute API deadline and fail with TimeoutError."""
    answered = threading.Event()
    srv = FakeEngine(str(tmp_path / "e.sock"),
                     answer=b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
                            b"Connection: close\r\n\r\n")
    srv.on_request = lambda data: answered.set()
    box = {}

    def opener():
        try:
            sandboxio.Backend("docker", socket_path=srv.path, api_timeout_ms=600000)
        except sandboxio.SandboxError as e:
            box["e"] = e

    try:
        t = threading.Thread(target=opener)
        t.start()
        t.join()
    finally:
        srv.stop()
    assert answered.is_set()
    assert not isinstance(box["e"], sandboxio.TimeoutError)


def test_ctrl_c_interrupts_a_waiting_call(tmp_path):
    """On the main thread a blocking call waits in a helper thread, so
    SIGINT raises KeyboardInterrupt at once, not when the engine answers.
    The engine here reads the request and never answers."""
    srv = FakeEngine(str(tmp_path / "e.sock"), answer=None)
    srv.on_request = lambda data: os.kill(os.getpid(), signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            sandboxio.Backend("docker", socket_path=srv.path, api_timeout_ms=600000)
        # the C call is still waiting: the interrupt did not wait for it
        assert not srv.client_closed.is_set()
    finally:
        srv.stop()


def test_ctrl_c_taken_by_another_thread_still_interrupts(tmp_path):
    """A signal sent to the process may land on any thread: here it is
    sent to the engine's own thread. The waiting main thread must still see
    it while the C call waits (on the old wait it slept until the call's
    20 s deadline, and the engine saw the client leave)."""
    srv = FakeEngine(str(tmp_path / "e.sock"), answer=None)
    srv.on_request = lambda data: signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            sandboxio.Backend("docker", socket_path=srv.path, api_timeout_ms=20000)
        assert not srv.client_closed.is_set()
    finally:
        srv.stop()


def test_run_options_layout_matches_the_library():
    """The structs' versions are the header's: the library accepts them."""
    o = _lib.sbx_run_options()
    assert _lib.sbx_run_options_init(ctypes.byref(o), _lib.RUN_OPTIONS_VERSION) == 0
    assert o.version == _lib.RUN_OPTIONS_VERSION
    b = _lib.sbx_backend_options()
    assert _lib.sbx_backend_options_init(ctypes.byref(b), _lib.BACKEND_OPTIONS_VERSION) == 0
    assert _lib.sbx_run_options_init(ctypes.byref(o), 99) == -8


def test_struct_layouts_match_the_headers(tmp_path):
    """The ctypes structs are written by hand from include/sandboxio/*.h:
    every field's offset and every struct's size must be the C compiler's."""
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.fail("no C compiler to check the layouts with")
    tree = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    structs = {"sbx_error": _lib.sbx_error, "sbx_backend_options": _lib.sbx_backend_options,
               "sbx_run_options": _lib.sbx_run_options, "sbx_result": _lib.sbx_result,
               "sbx_sandbox_info": _lib.sbx_sandbox_info, "sbx_reap_info": _lib.sbx_reap_info,
               "sbx_reap_options": _lib.sbx_reap_options,
               "sbx_context_options": _lib.sbx_context_options,
               "sbx_display_item": _lib.sbx_display_item,
               "sbx_code_result": _lib.sbx_code_result,
               "sbx_code_options": _lib.sbx_code_options}
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <sandboxio.h>",
             "int main(void) {"]
    for name, st in structs.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (name, name))
        for f, _ in st._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (name, f, name, f))
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-I", os.path.join(tree, "include"), "-o", str(exe), str(src)],
                   check=True)
    got = dict(line.split() for line in subprocess.run(
        [str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
    for name, st in structs.items():
        assert int(got[name]) == ctypes.sizeof(st), name
        for f, _ in st._fields_:
            assert int(got["%s.%s" % (name, f)]) == getattr(st, f).offset, (name, f)


def _config_file(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    os.chmod(p, 0o600)
    return str(p)


def test_the_operator_config_binds_a_sandbox_made_without_config(tmp_path, monkeypatch):
    """As the CLI does, a Sandbox made without config= is bound by the
    system config narrowed by $SANDBOXIO_CONFIG (sbx_config_load_narrowed()),
    not by the built-in config: here that config permits no docker backend,
    so the open is refused before any engine is asked (the socket does not
    exist; without the config the error would be UnavailableError)."""
    monkeypatch.setenv("SANDBOXIO_CONFIG",
                       _config_file(tmp_path, "c.json", '{"backends": ["modal"]}\n'))
    with pytest.raises(sandboxio.DeniedError) as ei:
        sandboxio.Sandbox(socket_path=str(tmp_path / "no.sock"))
    assert ei.value.code == -4 and "docker" in str(ei.value)


def test_config_given_by_the_caller_can_only_narrow(tmp_path, monkeypatch):
    """config= is a narrowing config, as the CLI's --config: a file naming
    what only the system config may choose (how allowed names resolve) is
    refused, rather than replacing the system config."""
    monkeypatch.delenv("SANDBOXIO_CONFIG", raising=False)
    hosts = _config_file(tmp_path, "hosts", "198.18.0.2 pkg.example\n")
    cfg = _config_file(tmp_path, "c.json", '{"egress": {"hosts_file": "%s"}}\n' % hosts)
    with pytest.raises(sandboxio.DeniedError) as ei:
        sandboxio.Sandbox(socket_path=str(tmp_path / "no.sock"), config=cfg)
    assert "hosts_file" in str(ei.value)


@pytest.mark.parametrize("field,value", [
    ("lifetime", float("inf")), ("run_timeout", (2**64 + 5000) // 1000 + 1),
    ("memory", 2**64 + 512 * 2**20), ("disk", 2**63), ("pids", 2**64 + 64),
    ("cpus", float("inf")), ("cpus", float("nan")), ("cpus", 2.0**61),
])
def test_a_number_the_c_type_cannot_hold_is_refused_not_wrapped(field, value):
    """ctypes stores an int modulo the C type's range (2**64 + 512 MiB would
    be 512 MiB) and raises OverflowError for an infinity; both are refused
    with InvalidError naming the field, and the policy is unchanged."""
    p = sandboxio.Policy()
    before = getattr(p, field)
    with pytest.raises(sandboxio.InvalidError) as ei:
        p.set(field, value)
    assert str(ei.value).startswith(field)
    assert getattr(p, field) == before


@pytest.mark.parametrize("timeout", [float("inf"), 2**64 // 1000 + 1, 1e30])
def test_a_run_timeout_the_c_type_cannot_hold_is_refused(timeout):
    """A run's timeout beyond 64 bits of milliseconds is refused before any
    C call, rather than wrapped (to a short one, or to 0: the policy's)."""
    with pytest.raises(sandboxio.InvalidError, match="^timeout"):
        sandboxio.Sandbox._options(None, [], env=None, workdir=None, stdin=None,
                                   timeout=timeout, secrets=None, raw_output=False,
                                   on_output=None)


# ----- code contexts: the checks made before any C call -----

@pytest.mark.parametrize("kw,field", [
    (dict(language=42), "language"), (dict(language=b"py\0thon"), "language"),
    (dict(cwd="/tmp\0x"), "cwd"), (dict(cwd=7), "cwd"),
    (dict(name=""), "name"), (dict(name=5), "name"), (dict(name="a\0b"), "name"),
])
def test_context_arguments_are_refused_naming_the_field(kw, field):
    """A context's arguments the C library could not take are refused with
    InvalidError naming the argument, before the sandbox is asked (there
    is none here)."""
    from sandboxio import context
    args = dict(language="python", cwd=None, name=None)
    args.update(kw)
    with pytest.raises(sandboxio.InvalidError, match="^" + field):
        context.create(None, **args)


def test_open_context_needs_a_name():
    from sandboxio import context
    with pytest.raises(sandboxio.InvalidError, match="^name"):
        context.open_(None, None)
    with pytest.raises(sandboxio.InvalidError, match="^name"):
        context.open_(None, "")


@pytest.mark.parametrize("kw,match", [
    (dict(code=42), "^code"), (dict(code=["x"]), "^code"),
    (dict(timeout=0), "^timeout"), (dict(timeout=-1), "^timeout"),
    (dict(timeout=float("nan")), "^timeout"), (dict(timeout=float("inf")), "^timeout"),
    (dict(timeout=True), "^timeout"), (dict(timeout="5"), "^timeout"),
    (dict(timeout=2**64 // 1000 + 1), "^timeout"),
    (dict(secrets={"A": "b"}), "^secrets"), (dict(on_output="print"), "^on_output"),
])
def test_context_run_arguments_are_refused_before_the_call(kw, match):
    """A cell's arguments are checked before any C call (a timeout beyond
    64 bits of milliseconds is refused, not wrapped): the Context here has
    no handle at all, and the call never reaches one."""
    ctx = sandboxio.Context.__new__(sandboxio.Context)
    args = dict(code="1")
    args.update(kw)
    with pytest.raises(sandboxio.InvalidError, match=match):
        ctx.run(**args)


def test_code_result_of_an_unknown_older_version_is_refused():
    """A result whose version is older than the fields the package reads
    is refused (VersionError), not misread."""
    r = _lib.sbx_code_result(version=0)
    with pytest.raises(sandboxio.VersionError):
        sandboxio.CodeResult(r)


def test_code_result_reads_every_field():
    """CodeResult reads the C struct as the header lays it out (the status
    by the library's own names)."""
    out = ctypes.create_string_buffer(b"o\n")
    png = (ctypes.c_ubyte * 4)(0x89, 0x50, 0x4e, 0x47)
    items = (_lib.sbx_display_item * 2)()
    items[0] = _lib.sbx_display_item(b"image/png", png, 4, 0)
    items[1] = _lib.sbx_display_item(b"text/plain", ctypes.cast(
        ctypes.create_string_buffer(b"42"), ctypes.POINTER(ctypes.c_ubyte)), 2, 1)
    r = _lib.sbx_code_result(version=1, status=1, stdout_len=2, stderr_len=0, text=b"42",
                             error_name=b"NameError", error_value=b"v",
                             error_traceback=b"tb", items=items, n_items=2,
                             execution_count=3, truncated=1, malformed=2, duration_ms=9)
    r.stdout_data = ctypes.cast(out, ctypes.POINTER(ctypes.c_char))
    c = sandboxio.CodeResult(r)
    assert c.status == "error" and not c.ok and c.stdout == b"o\n" and c.stderr == b""
    assert c.text == "42" and c.error == sandboxio.CodeError("NameError", "v", "tb")
    assert c.items[0] == sandboxio.DisplayItem("image/png", b"\x89PNG", False)
    assert c.items[1].is_result and c.items[1].mime == "text/plain"
    assert (c.execution_count, c.truncated, c.malformed, c.duration_ms) == (3, True, 2, 9)
    names = [_lib.dec(_lib.sbx_code_status_name(k)) for k in sorted(_lib.CODE_STATUS)]
    assert names == [_lib.CODE_STATUS[k] for k in sorted(_lib.CODE_STATUS)]


def test_a_refused_cell_argument_that_is_a_live_secret_is_never_quoted():
    """A cell's timeout or on_output refused before the call names the
    argument and quotes no value (the library's redaction never sees the
    package's own messages)."""
    s = sandboxio.Secrets({"API_TOKEN": SECRET})
    ctx = sandboxio.Context.__new__(sandboxio.Context)
    for kw in (dict(timeout=SECRET), dict(on_output=SECRET), dict(code=[SECRET])):
        with pytest.raises(sandboxio.InvalidError) as ei:
            ctx.run(**dict(dict(code="1"), **kw))
        for t in _texts_of(ei.value, with_locals=False):
            assert SECRET not in t
    s.close()

"""sandboxio._lib: the C library, loaded with ctypes, and its prototypes.

Why ctypes: it is in the standard library, so the package needs no build
step, no compiler and no C extension ABI to match; it works with Debian's
python3 as installed, and needs nothing from PyPI (which is not reachable
where this project is built). The price is that the struct layouts below
must follow include/sandboxio/*.h by hand; every options struct carries a
version, so a mismatch is refused by the library (SBX_EVERSION), not
misread.

The GIL: every function here is called through ctypes.CDLL, and a call
through a CDLL function pointer releases the GIL for the duration of the C
call (ctypes' _ctypes_callproc saves the thread state around the foreign
call; only PyDLL keeps it). So while sbx_sandbox_run() waits for a program,
other Python threads run. Callbacks (CFUNCTYPE) take the GIL back while
Python code runs in them. tests/test_engine.py::test_threads_run_in_parallel
proves it.

Which library: $SANDBOXIO_LIBRARY when set; else, when this package sits in
a source tree (bindings/python/sandboxio) whose build/libsandboxio.so
exists, that one; else the installed libsandboxio.so.0.
"""

import ctypes
import ctypes.util
import os

_here = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.normpath(os.path.join(_here, "..", "..", ".."))


def _find():
    env = os.environ.get("SANDBOXIO_LIBRARY")
    if env:
        return env, False
    cand = os.path.join(TREE, "build", "libsandboxio.so")
    if os.path.isfile(os.path.join(TREE, "include", "sandboxio.h")) and os.path.isfile(cand):
        return cand, True
    found = ctypes.util.find_library("sandboxio")
    return (found or "libsandboxio.so.0"), False


PATH, FROM_TREE = _find()
try:
    lib = ctypes.CDLL(PATH)
except OSError as e:
    raise ImportError("sandboxio: cannot load the C library %s (%s); build it with `make` "
                      "in the source tree, install it with `make install`, or name it with "
                      "$SANDBOXIO_LIBRARY" % (PATH, e)) from None

# The sbx-init of the tree, for a library loaded from the tree (the
# installed library knows its own).
TREE_INIT = os.path.join(TREE, "build", "sbx-init") if FROM_TREE else None

c_int, c_uint, c_long = ctypes.c_int, ctypes.c_uint, ctypes.c_long
c_size_t, c_char_p, c_void_p = ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p
c_uint64, c_int64, c_uint16, c_uint32 = ctypes.c_uint64, ctypes.c_int64, ctypes.c_uint16, ctypes.c_uint32
POINTER, byref = ctypes.POINTER, ctypes.byref

# ----- errors.h -----
SBX_OK, SBX_ERROR, SBX_EINVALID, SBX_ENOTFOUND, SBX_EDENIED = 0, -1, -2, -3, -4
SBX_EENGINE, SBX_ETIMEOUT, SBX_EUNSUPPORTED, SBX_EVERSION, SBX_ENOMEM = -5, -6, -7, -8, -9
SBX_EUNAVAILABLE, SBX_ECANCELED, SBX_ETOOBIG, SBX_EPAUSED = -10, -11, -12, -13


class sbx_error(ctypes.Structure):
    _fields_ = [("code", c_int), ("klass", c_int), ("os_errno", c_int),
                ("http_status", c_long), ("message", c_char_p)]


# ----- policy.h -----
TIMEOUT_KINDS = {"create_timeout": 1, "run_timeout": 2, "run_code_timeout": 3, "lifetime": 4}
LIMIT_KINDS = {"cpu_milli": 1, "memory": 2, "pids": 3, "disk": 4, "nofile": 5, "output": 6}
TIERS = {"container": 0, "gvisor": 1, "microvm": 2}

# ----- sandbox.h -----
sbx_audit_cb = ctypes.CFUNCTYPE(c_int, c_char_p, c_size_t, c_void_p)
sbx_output_cb = ctypes.CFUNCTYPE(c_int, c_int, POINTER(ctypes.c_char), c_size_t, c_void_p)


class sbx_backend_options(ctypes.Structure):
    _fields_ = [("version", c_uint), ("socket_path", c_char_p), ("init_path", c_char_p),
                ("api_timeout_ms", c_uint32), ("no_reap_at_open", c_int),
                ("config", c_void_p), ("audit_path", c_char_p), ("audit_cb", sbx_audit_cb),
                ("audit_payload", c_void_p), ("traceparent", c_char_p),
                ("hosts_file", c_char_p)]


BACKEND_OPTIONS_VERSION = 4


class sbx_run_options(ctypes.Structure):
    _fields_ = [("version", c_uint), ("env", POINTER(c_char_p)), ("workdir", c_char_p),
                ("stdin_data", c_void_p), ("stdin_len", c_size_t), ("timeout_ms", c_uint64),
                ("on_output", sbx_output_cb), ("payload", c_void_p), ("secrets", c_void_p),
                ("raw_output", c_int), ("traceparent", c_char_p),
                # version 3: a terminal and streamed stdin (not used here)
                ("pty", c_int), ("pty_rows", c_uint), ("pty_cols", c_uint),
                ("stream_stdin", c_int), ("stdin_fd", c_int)]


RUN_OPTIONS_VERSION = 3


class sbx_result(ctypes.Structure):
    _fields_ = [("version", c_uint), ("status", c_int), ("exit_code", c_int),
                ("term_signal", c_int), ("stdout_data", POINTER(ctypes.c_char)),
                ("stdout_len", c_size_t), ("stderr_data", POINTER(ctypes.c_char)),
                ("stderr_len", c_size_t), ("stdout_truncated", c_int),
                ("stderr_truncated", c_int), ("stdout_total", c_uint64),
                ("stderr_total", c_uint64), ("duration_ms", c_uint64),
                ("cpu_user_us", c_uint64), ("cpu_system_us", c_uint64),
                ("max_rss_kb", c_uint64), ("limits_hit", c_uint), ("path", c_uint)]


RUN_STATUS = {0: "exited", 1: "timeout", 2: "oom", 3: "killed", 4: "error"}
HIT_BITS = [(1, "memory"), (2, "pids"), (4, "output"), (8, "timeout"), (16, "disk")]
RUN_PATHS = {0: "unknown", 1: "channel", 2: "exec"}


class sbx_sandbox_info(ctypes.Structure):
    _fields_ = [("id", c_char_p), ("tenant", c_char_p), ("image", c_char_p),
                ("state", c_char_p), ("created", c_int64), ("deadline", c_int64)]


sbx_list_cb = ctypes.CFUNCTYPE(c_int, POINTER(sbx_sandbox_info), c_void_p)


class sbx_reap_info(ctypes.Structure):
    _fields_ = [("id", c_char_p), ("tenant", c_char_p), ("reason", c_int),
                ("removed", c_int), ("detail", c_char_p)]


sbx_reap_cb = ctypes.CFUNCTYPE(c_int, POINTER(sbx_reap_info), c_void_p)


class sbx_reap_options(ctypes.Structure):
    _fields_ = [("version", c_uint), ("tenant", c_char_p), ("dry_run", c_int)]


REAP_REASONS = {1: "owner_gone", 2: "deadline_passed", 3: "owner_rebooted", 4: "skipped"}


# ----- interp.h -----
class sbx_context_options(ctypes.Structure):
    _fields_ = [("version", c_uint), ("language", c_char_p), ("cwd", c_char_p),
                ("name", c_char_p)]


CONTEXT_OPTIONS_VERSION = 1


class sbx_display_item(ctypes.Structure):
    _fields_ = [("mime", c_char_p), ("data", POINTER(ctypes.c_ubyte)), ("len", c_size_t),
                ("is_result", c_int)]


class sbx_code_result(ctypes.Structure):
    _fields_ = [("version", c_uint), ("status", c_int), ("stdout_data", POINTER(ctypes.c_char)),
                ("stdout_len", c_size_t), ("stderr_data", POINTER(ctypes.c_char)),
                ("stderr_len", c_size_t), ("text", c_char_p), ("error_name", c_char_p),
                ("error_value", c_char_p), ("error_traceback", c_char_p),
                ("items", POINTER(sbx_display_item)), ("n_items", c_size_t),
                ("execution_count", c_uint), ("truncated", c_int), ("malformed", c_uint),
                ("duration_ms", c_uint64)]


# The result version whose fields are above; a later one only appends.
CODE_RESULT_VERSION = 1


class sbx_code_options(ctypes.Structure):
    _fields_ = [("version", c_uint), ("timeout_ms", c_uint64), ("on_output", sbx_output_cb),
                ("payload", c_void_p), ("secrets", c_void_p)]


CODE_OPTIONS_VERSION = 1
CODE_STATUS = {0: "ok", 1: "error", 2: "interrupted", 3: "timeout", 4: "restarted"}
sbx_context_list_cb = ctypes.CFUNCTYPE(c_int, c_char_p, c_char_p, c_void_p)


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


PP = POINTER(c_void_p)
sbx_version = _proto("sbx_version", c_char_p)
sbx_free = _proto("sbx_free", None, c_void_p)
sbx_error_last = _proto("sbx_error_last", POINTER(sbx_error))
sbx_error_clear = _proto("sbx_error_clear", None)
sbx_strerror = _proto("sbx_strerror", c_char_p, c_int)

sbx_policy_new = _proto("sbx_policy_new", c_int, PP)
sbx_policy_dup = _proto("sbx_policy_dup", c_int, PP, c_void_p)
sbx_policy_free = _proto("sbx_policy_free", None, c_void_p)
sbx_policy_set_timeout_ms = _proto("sbx_policy_set_timeout_ms", c_int, c_void_p, c_int, c_uint64)
sbx_policy_timeout_ms = _proto("sbx_policy_timeout_ms", c_uint64, c_void_p, c_int)
sbx_policy_set_limit = _proto("sbx_policy_set_limit", c_int, c_void_p, c_int, c_int64)
sbx_policy_limit = _proto("sbx_policy_limit", c_int64, c_void_p, c_int)
sbx_policy_set_image = _proto("sbx_policy_set_image", c_int, c_void_p, c_char_p)
sbx_policy_image = _proto("sbx_policy_image", c_char_p, c_void_p)
sbx_policy_set_tenant = _proto("sbx_policy_set_tenant", c_int, c_void_p, c_char_p)
sbx_policy_tenant = _proto("sbx_policy_tenant", c_char_p, c_void_p)
sbx_policy_set_env = _proto("sbx_policy_set_env", c_int, c_void_p, c_char_p, c_char_p)
sbx_policy_set_workdir = _proto("sbx_policy_set_workdir", c_int, c_void_p, c_char_p)
sbx_policy_workdir = _proto("sbx_policy_workdir", c_char_p, c_void_p)
sbx_policy_set_min_tier = _proto("sbx_policy_set_min_tier", c_int, c_void_p, c_int)
sbx_policy_min_tier = _proto("sbx_policy_min_tier", c_int, c_void_p)
sbx_policy_set_detached = _proto("sbx_policy_set_detached", c_int, c_void_p, c_int)
sbx_policy_detached = _proto("sbx_policy_detached", c_int, c_void_p)
sbx_policy_allow_host = _proto("sbx_policy_allow_host", c_int, c_void_p, c_char_p, c_uint16)
sbx_policy_allow_cidr = _proto("sbx_policy_allow_cidr", c_int, c_void_p, c_char_p, c_uint16)
sbx_policy_allow_host_spec = _proto("sbx_policy_allow_host_spec", c_int, c_void_p, c_char_p)
sbx_policy_allow_cidr_spec = _proto("sbx_policy_allow_cidr_spec", c_int, c_void_p, c_char_p)
sbx_policy_allow_count = _proto("sbx_policy_allow_count", c_size_t, c_void_p)
sbx_parse_size = _proto("sbx_parse_size", c_int, POINTER(c_int64), c_char_p)
sbx_parse_duration_ms = _proto("sbx_parse_duration_ms", c_int, POINTER(c_uint64), c_char_p)

sbx_secrets_new = _proto("sbx_secrets_new", c_int, PP)
sbx_secrets_free = _proto("sbx_secrets_free", None, c_void_p)
sbx_secrets_add = _proto("sbx_secrets_add", c_int, c_void_p, c_char_p, c_void_p, c_size_t)
sbx_secrets_add_file = _proto("sbx_secrets_add_file", c_int, c_void_p, c_char_p, c_char_p)
sbx_secrets_count = _proto("sbx_secrets_count", c_size_t, c_void_p)
sbx_secrets_name = _proto("sbx_secrets_name", c_char_p, c_void_p, c_size_t)

sbx_config_load = _proto("sbx_config_load", c_int, PP, c_char_p)
sbx_config_load_narrowed = _proto("sbx_config_load_narrowed", c_int, PP, c_char_p)
sbx_config_free = _proto("sbx_config_free", None, c_void_p)

sbx_backend_options_init = _proto("sbx_backend_options_init", c_int,
                                  POINTER(sbx_backend_options), c_uint)
sbx_backend_open = _proto("sbx_backend_open", c_int, PP, c_char_p, POINTER(sbx_backend_options))
sbx_backend_free = _proto("sbx_backend_free", None, c_void_p)
sbx_sandbox_create = _proto("sbx_sandbox_create", c_int, PP, c_void_p, c_void_p)
sbx_sandbox_id = _proto("sbx_sandbox_id", c_char_p, c_void_p)
sbx_sandbox_tier = _proto("sbx_sandbox_tier", c_int, c_void_p)
sbx_sandbox_close = _proto("sbx_sandbox_close", c_int, c_void_p)
sbx_sandbox_detach = _proto("sbx_sandbox_detach", None, c_void_p)
sbx_sandbox_kill = _proto("sbx_sandbox_kill", c_int, c_void_p)
sbx_run_options_init = _proto("sbx_run_options_init", c_int, POINTER(sbx_run_options), c_uint)
sbx_result_free = _proto("sbx_result_free", None, POINTER(sbx_result))
sbx_sandbox_run = _proto("sbx_sandbox_run", c_int, POINTER(POINTER(sbx_result)), c_void_p,
                         POINTER(c_char_p), POINTER(sbx_run_options))
sbx_sandbox_run_code = _proto("sbx_sandbox_run_code", c_int, POINTER(POINTER(sbx_result)),
                              c_void_p, c_char_p, c_char_p, c_size_t, POINTER(sbx_run_options))
sbx_sandbox_write_file = _proto("sbx_sandbox_write_file", c_int, c_void_p, c_char_p, c_char_p,
                                c_size_t, c_uint)
sbx_sandbox_read_file = _proto("sbx_sandbox_read_file", c_int, PP, POINTER(c_size_t), c_void_p,
                               c_char_p, c_size_t)
sbx_backend_list = _proto("sbx_backend_list", c_int, c_void_p, c_char_p, sbx_list_cb, c_void_p)
sbx_backend_reap = _proto("sbx_backend_reap", c_int, c_void_p, POINTER(sbx_reap_options),
                          sbx_reap_cb, c_void_p)

sbx_context_create = _proto("sbx_context_create", c_int, PP, c_void_p,
                            POINTER(sbx_context_options))
sbx_context_open = _proto("sbx_context_open", c_int, PP, c_void_p, c_char_p)
sbx_context_name = _proto("sbx_context_name", c_char_p, c_void_p)
sbx_context_language = _proto("sbx_context_language", c_char_p, c_void_p)
sbx_code_status_name = _proto("sbx_code_status_name", c_char_p, c_int)
sbx_code_result_free = _proto("sbx_code_result_free", None, POINTER(sbx_code_result))
sbx_context_run = _proto("sbx_context_run", c_int, POINTER(POINTER(sbx_code_result)), c_void_p,
                         c_char_p, c_size_t, POINTER(sbx_code_options))
sbx_context_interrupt = _proto("sbx_context_interrupt", c_int, c_void_p)
sbx_context_restart = _proto("sbx_context_restart", c_int, c_void_p)
sbx_context_close = _proto("sbx_context_close", c_int, c_void_p)
sbx_context_free = _proto("sbx_context_free", None, c_void_p)
sbx_context_list = _proto("sbx_context_list", c_int, c_void_p, sbx_context_list_cb, c_void_p)


def enc(s, what):
    """Text for a C string: str (UTF-8) or bytes, without NUL."""
    from .errors import InvalidError
    if isinstance(s, str):
        s = s.encode("utf-8")
    elif not isinstance(s, (bytes, bytearray)):
        raise InvalidError("%s: expected str, got %s" % (what, type(s).__name__))
    if b"\0" in s:
        raise InvalidError("%s: contains a NUL byte" % what)
    return bytes(s)


def last_error(prefix=None, rc=None):
    """The calling thread's C error record as an exception (call it on the
    thread that made the failed call, before any other library call)."""
    from .errors import from_code
    e = sbx_error_last().contents
    code = e.code if e.code < 0 else (rc if rc is not None and rc < 0 else SBX_ERROR)
    msg = dec(e.message) or dec(sbx_strerror(code))
    if prefix:
        msg = "%s: %s" % (prefix, msg)
    return from_code(code, msg, http_status=e.http_status, os_errno=e.os_errno)


U64_MAX, I64_MIN, I64_MAX = 2**64 - 1, -2**63, 2**63 - 1


def fits(v, lo, hi, what):
    """v (an int) for a C integer of range lo..hi. ctypes would store it
    modulo the range (2**64 + 512 MiB as 512 MiB), so a value outside is
    refused, naming what (never quoting the value)."""
    from .errors import InvalidError
    if not lo <= v <= hi:
        raise InvalidError("%s: out of the range the library takes" % what)
    return v


def ms_of_seconds(v, what):
    """Seconds (int or finite float) as whole milliseconds for a uint64_t."""
    from .errors import InvalidError
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        raise InvalidError("%s: not a finite number of seconds" % what)
    return fits(int(round(v * 1000)), 0, U64_MAX, what)


def check(rc, prefix=None):
    if rc < 0:
        raise last_error(prefix, rc)
    return rc


def dec(b):
    return b.decode("utf-8", "replace") if b is not None else None

"""sandboxio: run untrusted code in sandboxes, over the C library libsandboxio.

    import sandboxio
    with sandboxio.Sandbox(memory="256m", run_timeout=30) as sb:
        r = sb.run_code("print(6*7)")
        print(r.status, r.exit_code, r.stdout)

The package is a thin layer over libsandboxio.so through ctypes (see
sandboxio/_lib.py for why); every check and guarantee is the C library's.
docs/python.md has the whole API.
"""

from . import _lib
from .aio import AsyncContext, AsyncSandbox
from .context import CodeError, CodeResult, Context, DisplayItem
from .errors import (CancelledError, DeniedError, EngineError, InvalidError, LimitError,
                     NotFoundError, OutOfMemoryError, PausedError, SandboxError, TimeoutError,
                     UnavailableError, UnsupportedError, VersionError)
from .policy import Policy
from .sandbox import Backend, Result, Sandbox
from .secrets import Secrets

__version__ = _lib.dec(_lib.sbx_version())
LIBRARY = _lib.PATH


def list_sandboxes(tenant=None, backend="docker", **backend_kw):
    """This library's sandboxes on a backend (dicts: id, tenant, image, state...)."""
    return Backend.shared(backend, **backend_kw).list(tenant)


def reap(tenant=None, dry_run=False, backend="docker", **backend_kw):
    """Removes sandboxes whose owner is gone or whose deadline passed."""
    return Backend.shared(backend, **backend_kw).reap(tenant, dry_run)


__all__ = ["AsyncContext", "AsyncSandbox", "Backend", "CancelledError", "CodeError", "CodeResult",
           "Context", "DeniedError", "DisplayItem", "EngineError",
           "InvalidError", "LimitError", "NotFoundError", "OutOfMemoryError", "PausedError", "Policy",
           "Result", "Sandbox", "SandboxError", "Secrets", "TimeoutError", "UnavailableError",
           "UnsupportedError", "VersionError", "list_sandboxes", "reap"]

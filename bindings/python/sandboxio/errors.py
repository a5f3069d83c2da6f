"""sandboxio.errors: the exception tree, one class per C error code.

Every exception the package raises for a failed C call is a SandboxError
whose .code is the C sbx_error_code (a negative int) and whose text is the
library's message, which the library has already redacted of every live
secret (include/sandboxio/secret.h). Checks done in Python before a call
raise the same classes with the code the library would have given, and
never quote the value they refuse (the library's redaction does not see
messages made here).
"""

import builtins


class SandboxError(Exception):
    """Base of every error of the package. .code: the C sbx_error_code."""

    code = -1

    def __init__(self, message, code=None, http_status=0, os_errno=0):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.http_status = http_status
        self.os_errno = os_errno

    def __repr__(self):
        return "%s(%r, code=%d)" % (type(self).__name__, self.message, self.code)


class InvalidError(SandboxError, ValueError):
    """SBX_EINVALID: a bad argument or a refused policy value."""
    code = -2


class NotFoundError(SandboxError):
    """SBX_ENOTFOUND: no such sandbox, image or file."""
    code = -3


class DeniedError(SandboxError, PermissionError):
    """SBX_EDENIED: refused by policy, the operator config or the system."""
    code = -4


class EngineError(SandboxError):
    """SBX_EENGINE: the engine failed or answered with an error."""
    code = -5


class TimeoutError(SandboxError, builtins.TimeoutError):
    """SBX_ETIMEOUT: a deadline passed."""
    code = -6


class UnsupportedError(SandboxError):
    """SBX_EUNSUPPORTED: the backend cannot enforce what was asked."""
    code = -7


class VersionError(SandboxError):
    """SBX_EVERSION: an options struct this library does not know."""
    code = -8


class OutOfMemoryError(SandboxError, MemoryError):
    """SBX_ENOMEM."""
    code = -9


class UnavailableError(EngineError):
    """SBX_EUNAVAILABLE: the engine cannot be reached (daemon down, wrong socket)."""
    code = -10


class CancelledError(SandboxError):
    """SBX_ECANCELED: canceled by the caller."""
    code = -11


class LimitError(SandboxError):
    """SBX_ETOOBIG: an input or output passed its size bound."""
    code = -12


class PausedError(SandboxError):
    """SBX_EPAUSED: the sandbox is paused."""
    code = -13


BY_CODE = {c.code: c for c in (InvalidError, NotFoundError, DeniedError, EngineError,
                               TimeoutError, UnsupportedError, VersionError, OutOfMemoryError,
                               UnavailableError, CancelledError, LimitError, PausedError)}


def from_code(code, message, **kw):
    return BY_CODE.get(code, SandboxError)(message, code=code, **kw)

"""sandboxio.secrets: Secrets, values that only the C secrets API holds.

    sec = sandboxio.Secrets({"API_TOKEN": token})
    sb.run(["sh", "-c", "use-token"], secrets=sec)

Each value goes to sbx_secrets_add() at once, through a ctypes buffer that
is wiped when the call returns; the object keeps only the C handle and the
names. The library holds the value in locked memory, wipes it on close, and
redacts it (and its base64, hex and percent-encoded forms) from every record
it makes (include/sandboxio/secret.h). There is no getter: repr() and str()
show the names only, an exception raised while adding a value names only the
name, and the frames of this module drop the value before they raise, so a
traceback formatted with its locals (traceback.TracebackException
(capture_locals=True)) does not show it. What Python cannot wipe: the str or
bytes the caller passed in stays in the caller's memory until it is
collected; pass the value straight from its source (or use Secrets.from_file,
which never brings it into Python).

A Secrets object is never accepted as, or inside, env= (refuse_secret()):
plain environment can be seen in the engine's records.
"""

import ctypes
import threading

from . import _lib
from .errors import InvalidError


class Secrets:
    """NAME -> value pairs handed to a run's program as environment variables."""

    __slots__ = ("_h", "_names", "_lock", "_users", "_closing", "__weakref__")

    def __init__(self, values=None, **kw):
        h = _lib.c_void_p()
        _lib.check(_lib.sbx_secrets_new(_lib.byref(h)), "Secrets")
        self._h = h
        self._names = []
        self._lock = threading.Lock()
        self._users = 0
        self._closing = False
        err = None
        try:
            items = _pairs(values) + list(kw.items())
        except (TypeError, ValueError):
            items = []
            err = InvalidError("Secrets: expected a mapping of NAME to value, or (NAME, "
                               "value) pairs")
        values = kw = None
        while items and err is None:
            name, _v = items.pop(0)
            err = self._add(name, _v)
            _v = None
        items = None
        if err is not None:
            self.close()
            raise err

    @classmethod
    def from_file(cls, **paths):
        """Secrets whose values are files' contents, read by the C library
        straight into locked memory: Secrets.from_file(KEY="/run/keys/k")."""
        self = cls()
        for name, path in paths.items():
            self._check_name(name)
            rc = _lib.sbx_secrets_add_file(self._h, _lib.enc(name, "secret name"),
                                           _lib.enc(path, "secret file"))
            if rc < 0:
                e = _lib.last_error("Secrets: %s" % name, rc)
                self.close()
                raise e
            self._names.append(name)
        return self

    @staticmethod
    def _check_name(name):
        if not isinstance(name, str):
            raise InvalidError("Secrets: a name must be str, got %s" % type(name).__name__)

    def _add(self, name, value):
        """Adds one value; returns the exception rather than raising it, so
        that no frame holding the value is in its traceback."""
        if not isinstance(name, str):
            return InvalidError("Secrets: a name must be str, got %s" % type(name).__name__)
        if isinstance(value, str):
            value = value.encode("utf-8")
        elif isinstance(value, (bytes, bytearray, memoryview)):
            value = bytes(value)
        else:
            return InvalidError("Secrets: the value of %s must be str or bytes, got %s"
                                % (name, type(value).__name__))
        n = len(value)
        buf = ctypes.create_string_buffer(value, n + 1)
        value = None
        try:
            bname = name.encode("utf-8")
        except UnicodeEncodeError:
            ctypes.memset(buf, 0, n + 1)
            return InvalidError("Secrets: a name is not UTF-8")
        rc = _lib.sbx_secrets_add(self._h, bname, buf, n)
        ctypes.memset(buf, 0, n + 1)
        buf = None
        if rc < 0:
            return _lib.last_error("Secrets: %s" % name, rc)
        self._names.append(name)
        return None

    @property
    def names(self):
        return list(self._names)

    def __len__(self):
        return len(self._names)

    def __contains__(self, name):
        return name in self._names

    def close(self):
        """Wipes every value and stops redacting them. A run that was given
        the object and is under way keeps it: the last one frees it."""
        with self._lock:
            self._closing = True
            if self._users:
                return
            h, self._h = self._h, None
        if h:
            _lib.sbx_secrets_free(h)

    def _acquire(self):
        """The C handle for one run; _release() when the run has returned."""
        with self._lock:
            if not self._h or self._closing:
                raise InvalidError("Secrets: the object is closed")
            self._users += 1
            return self._h

    def _release(self):
        with self._lock:
            self._users -= 1
            h = None
            if self._closing and self._users == 0:
                h, self._h = self._h, None
        if h:
            _lib.sbx_secrets_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            if getattr(self, "_h", None):
                self.close()
        except Exception:
            pass

    def __repr__(self):
        return "Secrets(names=%r)" % (self._names,)

    __str__ = __repr__

    def __reduce__(self):
        raise TypeError("a Secrets object cannot be pickled")

    def __getstate__(self):
        raise TypeError("a Secrets object cannot be pickled")

    def __copy__(self):
        raise TypeError("a Secrets object cannot be copied")

    def __deepcopy__(self, memo):
        raise TypeError("a Secrets object cannot be copied")

    def handle(self):
        if not self._h:
            raise InvalidError("Secrets: the object is closed")
        return self._h


def _pairs(values):
    if values is None:
        return []
    if hasattr(values, "items"):
        return list(values.items())
    out = []
    for pair in values:
        name, value = pair
        out.append((name, value))
    return out


def refuse_secret(where, value):
    """env= takes plain values only: a Secrets object (as the mapping or as
    a value) is refused, with a message that names no value."""
    if isinstance(value, Secrets):
        raise InvalidError("%s: a Secrets object is not plain environment; pass it as "
                           "secrets=" % where)

"""sandboxio.policy: Policy, every field of the C policy (sandboxio/policy.h).

A Policy owns an sbx_policy. Each field is set through the C setter, so the
library's checks are the only ones and a refusal raises the exception of its
C code with the field's name in front of the library's message:

    Policy(memory=0)  ->  InvalidError("memory: ...", code=-2)

Fields (keyword arguments, also readable as attributes):
  image, tenant, workdir          text
  env                             {NAME: VALUE} plain, non-secret variables
                                  (a Secrets object is refused here)
  create_timeout, run_timeout, run_code_timeout, lifetime
                                  seconds (int or float) or text ("90s", "5m")
  cpu_milli                       thousandths of a core (cpus= in cores too)
  memory, disk, output            bytes, or text ("512m", "1g")
  pids, nofile                    counts
  min_tier                        "container", "gvisor" or "microvm"
  detached                        bool
  allow_hosts, allow_cidrs        iterables of "NAME[:PORT]" / "CIDR[:PORT]"
                                  text, or (name, port) pairs
"""


from . import _lib
from .errors import InvalidError
from .secrets import refuse_secret

FIELDS = ("image", "tenant", "workdir", "env", "create_timeout", "run_timeout",
          "run_code_timeout", "lifetime", "cpu_milli", "cpus", "memory", "disk", "output",
          "pids", "nofile", "min_tier", "detached", "allow_hosts", "allow_cidrs")


def _ms(field, v):
    if isinstance(v, bool):
        raise InvalidError("%s: expected seconds, got a bool" % field)
    if isinstance(v, (int, float)):
        if v != v or v <= 0:
            raise InvalidError("%s: %r is not a positive number of seconds (there is no "
                               "unbounded deadline)" % (field, v))
        return _lib.ms_of_seconds(v, field)
    if isinstance(v, str):
        out = _lib.c_uint64()
        _lib.check(_lib.sbx_parse_duration_ms(_lib.byref(out), _lib.enc(v, field)), field)
        return out.value
    raise InvalidError("%s: expected seconds or text, got %s" % (field, type(v).__name__))


def _size(field, v):
    if isinstance(v, bool):
        raise InvalidError("%s: expected a size, got a bool" % field)
    if isinstance(v, int):
        return _lib.fits(v, _lib.I64_MIN, _lib.I64_MAX, field)
    if isinstance(v, str):
        out = _lib.c_int64()
        _lib.check(_lib.sbx_parse_size(_lib.byref(out), _lib.enc(v, field)), field)
        return out.value
    raise InvalidError("%s: expected bytes (int) or text such as '512m', got %s"
                       % (field, type(v).__name__))


def _count(field, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidError("%s: expected a whole number, got %s" % (field, type(v).__name__))
    return _lib.fits(v, _lib.I64_MIN, _lib.I64_MAX, field)


class Policy:
    """A sandbox policy; new ones hold the library's secure defaults."""

    def __init__(self, **fields):
        h = _lib.c_void_p()
        _lib.check(_lib.sbx_policy_new(_lib.byref(h)), "Policy")
        self._h = h
        self._env_names = []
        self._allow = []
        for k, v in fields.items():
            self.set(k, v)

    @classmethod
    def _adopt(cls, handle):
        self = cls.__new__(cls)
        self._h = handle
        self._env_names = []
        self._allow = []
        return self

    def copy(self):
        h = _lib.c_void_p()
        _lib.check(_lib.sbx_policy_dup(_lib.byref(h), self._h), "Policy.copy")
        p = Policy._adopt(h)
        p._env_names = list(self._env_names)
        p._allow = list(self._allow)
        return p

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            _lib.sbx_policy_free(h)
            self._h = None

    def set(self, field, value):
        """Sets one field; refused values raise and change nothing."""
        L = _lib
        if field in L.TIMEOUT_KINDS:
            L.check(L.sbx_policy_set_timeout_ms(self._h, L.TIMEOUT_KINDS[field],
                                                _ms(field, value)), field)
        elif field == "cpus":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidError("cpus: expected a number of cores, got %s"
                                   % type(value).__name__)
            if value != value or value in (float("inf"), float("-inf")):
                raise InvalidError("cpus: not a finite number of cores")
            milli = L.fits(int(round(value * 1000)), L.I64_MIN, L.I64_MAX, field)
            L.check(L.sbx_policy_set_limit(self._h, 1, milli), field)
        elif field in ("memory", "disk", "output"):
            v = _size(field, value)
            L.check(L.sbx_policy_set_limit(self._h, L.LIMIT_KINDS[field], v), field)
        elif field in ("cpu_milli", "pids", "nofile"):
            v = _count(field, value)
            L.check(L.sbx_policy_set_limit(self._h, L.LIMIT_KINDS[field], v), field)
        elif field == "image":
            L.check(L.sbx_policy_set_image(self._h, L.enc(value, field)), field)
        elif field == "tenant":
            L.check(L.sbx_policy_set_tenant(self._h, L.enc(value, field)), field)
        elif field == "workdir":
            L.check(L.sbx_policy_set_workdir(self._h, L.enc(value, field)), field)
        elif field == "env":
            refuse_secret("env", value)
            if not hasattr(value, "items"):
                raise InvalidError("env: expected a mapping of NAME to VALUE")
            for name, v in value.items():
                refuse_secret("env", v)
                L.check(L.sbx_policy_set_env(self._h, L.enc(name, "env name"),
                                             L.enc(v, "env value")), "env")
                if name not in self._env_names:
                    self._env_names.append(name)
        elif field == "min_tier":
            if value not in L.TIERS:
                # the value is not quoted: a message the library did not
                                # make is not redacted by it
                raise InvalidError("min_tier: not one of %s" % ", ".join(L.TIERS))
            L.check(L.sbx_policy_set_min_tier(self._h, L.TIERS[value]), field)
        elif field == "detached":
            L.check(L.sbx_policy_set_detached(self._h, 1 if value else 0), field)
        elif field in ("allow_hosts", "allow_cidrs"):
            if isinstance(value, (str, bytes)):
                value = [value]
            host = field == "allow_hosts"
            for e in value:
                if isinstance(e, tuple):
                    if len(e) != 2:
                        raise InvalidError("%s: expected (name, port) pairs" % field)
                    fn = L.sbx_policy_allow_host if host else L.sbx_policy_allow_cidr
                    port = _count(field + " port", e[1])
                    if not 0 <= port <= 65535:
                        raise InvalidError("%s: port %d is out of range" % (field, port))
                    L.check(fn(self._h, L.enc(e[0], field), port), field)
                    self._allow.append("%s:%d" % e if port else e[0])
                else:
                    fn = L.sbx_policy_allow_host_spec if host else L.sbx_policy_allow_cidr_spec
                    L.check(fn(self._h, L.enc(e, field)), field)
                    self._allow.append(e if isinstance(e, str) else e.decode())
        else:
            raise InvalidError("Policy: no field %r (fields: %s)" % (field, ", ".join(FIELDS)))

    def __getattr__(self, name):
        L = _lib
        if name.startswith("_"):
            raise AttributeError(name)
        h = self.__dict__.get("_h")
        if name in L.TIMEOUT_KINDS:
            return L.sbx_policy_timeout_ms(h, L.TIMEOUT_KINDS[name]) / 1000.0
        if name in L.LIMIT_KINDS:
            return L.sbx_policy_limit(h, L.LIMIT_KINDS[name])
        if name == "cpus":
            return L.sbx_policy_limit(h, 1) / 1000.0
        if name == "image":
            return L.dec(L.sbx_policy_image(h))
        if name == "tenant":
            return L.dec(L.sbx_policy_tenant(h))
        if name == "workdir":
            return L.dec(L.sbx_policy_workdir(h))
        if name == "min_tier":
            t = L.sbx_policy_min_tier(h)
            return {v: k for k, v in L.TIERS.items()}.get(t, str(t))
        if name == "detached":
            return bool(L.sbx_policy_detached(h))
        if name == "allow_count":
            return L.sbx_policy_allow_count(h)
        if name == "env_names":
            return list(self._env_names)
        if name == "allow":
            return list(self._allow)
        raise AttributeError("Policy has no field %r" % name)

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self.set(name, value)

    def __repr__(self):
        return ("Policy(image=%r, tenant=%r, cpu_milli=%d, memory=%d, pids=%d, disk=%d, "
                "run_timeout=%g, lifetime=%g, min_tier=%r, allow=%r, env_names=%r)"
                % (self.image, self.tenant, self.cpu_milli, self.memory, self.pids, self.disk,
                   self.run_timeout, self.lifetime, self.min_tier, self.allow,
                   self.env_names))

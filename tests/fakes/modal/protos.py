"""protos.py: the Modal double's protobuf modules, compiled at startup.

The double's .proto files (proto/api.proto, proto/task_command_router.proto)
are compiled with `protoc --python_out` into a temporary directory and
imported from there; only the message classes are generated (no grpc_tools
stubs), and the services are registered by hand in control.py and router.py.
"""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import types

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proto")
PROTO_FILES = ("api.proto", "task_command_router.proto")
# Where Debian's protobuf-compiler keeps google/protobuf/empty.proto.
WKT_DIRS = ("/usr/include", "/usr/local/include")


class ProtoError(RuntimeError):
    pass


def load() -> tuple[types.ModuleType, types.ModuleType]:
    """Returns (api_pb2, task_command_router_pb2)."""
    protoc = shutil.which("protoc")
    if not protoc:
        raise ProtoError("protoc not found on PATH (Debian package protobuf-compiler)")
    includes = [d for d in WKT_DIRS if os.path.exists(os.path.join(d, "google/protobuf/empty.proto"))]
    if not includes:
        raise ProtoError("google/protobuf/empty.proto not found in %s" % ", ".join(WKT_DIRS))
    out = tempfile.mkdtemp(prefix="modal-double-pb2-")
    try:
        cmd = [protoc, "-I" + PROTO_DIR] + ["-I" + d for d in includes]
        cmd += ["--python_out=" + out] + list(PROTO_FILES)
        r = subprocess.run(cmd, cwd=PROTO_DIR, capture_output=True, text=True)
        if r.returncode != 0:
            raise ProtoError("protoc failed (exit %d): %s" % (r.returncode, r.stderr.strip()[:2000]))
        sys.path.insert(0, out)
        try:
            api = importlib.import_module("api_pb2")
            tcr = importlib.import_module("task_command_router_pb2")
        finally:
            sys.path.remove(out)
        return api, tcr
    finally:
        shutil.rmtree(out, ignore_errors=True)

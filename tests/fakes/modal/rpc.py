"""rpc.py: registering the Modal double's handlers with grpc by hand.

No generated service stubs: each method is a (request class, response class,
function) and is wrapped into grpc's unary_unary / unary_stream handlers. The
wrapper turns state.Fail into the gRPC status it names, and any other
exception into INTERNAL with a message naming it (logged with its traceback),
so that a bug shows up as an error and never as a hung call.
"""
from __future__ import annotations

import sys
import traceback
from typing import Callable, Iterator

import grpc

from state import Fail


def metadata(context: grpc.ServicerContext) -> dict[str, str]:
    md: dict[str, str] = {}
    for item in context.invocation_metadata() or ():
        if isinstance(item.value, str):
            md[item.key.lower()] = item.value
    return md


def _abort(context: grpc.ServicerContext, code: str, message: str) -> None:
    context.abort(getattr(grpc.StatusCode, code), message)


def _internal(context: grpc.ServicerContext, name: str, e: Exception) -> None:
    print("modal-double: %s: unexpected %s" % (name, type(e).__name__), file=sys.stderr)
    traceback.print_exc(file=sys.stderr)
    sys.stderr.flush()
    _abort(context, "INTERNAL", "%s: internal error in the Modal double (%s)" % (name, type(e).__name__))


def unary(name: str, req_cls, resp_cls, fn: Callable) -> grpc.RpcMethodHandler:
    def handler(request, context):
        try:
            return fn(request, context)
        except Fail as f:
            _abort(context, f.code, f.message)
        except Exception as e:  # noqa: BLE001 - reported as INTERNAL
            if context.code() is not None:  # context.abort() already ran
                raise
            _internal(context, name, e)

    return grpc.unary_unary_rpc_method_handler(handler, request_deserializer=req_cls.FromString,
                                               response_serializer=resp_cls.SerializeToString)


def stream(name: str, req_cls, resp_cls, fn: Callable[..., Iterator]) -> grpc.RpcMethodHandler:
    def handler(request, context):
        try:
            yield from fn(request, context)
        except Fail as f:
            _abort(context, f.code, f.message)
        except Exception as e:  # noqa: BLE001 - reported as INTERNAL
            if context.code() is not None:
                raise
            _internal(context, name, e)

    return grpc.unary_stream_rpc_method_handler(handler, request_deserializer=req_cls.FromString,
                                                response_serializer=resp_cls.SerializeToString)


def on_cancel(context: grpc.ServicerContext, cond) -> Callable[[], bool]:
    """Wakes `cond`'s waiters when the call ends; returns "is it still on"."""
    def wake() -> None:
        with cond:
            cond.notify_all()

    context.add_callback(wake)
    return context.is_active

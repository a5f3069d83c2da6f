"""sandboxio.aio: AsyncSandbox, the asyncio flavour of Sandbox.

    async with sandboxio.AsyncSandbox(memory="256m") as sb:
        r = await sb.run(["echo", "hi"])

Each call runs in a thread of the loop's default executor (the C call
releases the GIL there). Cancelling the task that awaits a run ends the run:
the sandbox is killed with sbx_sandbox_kill(), which the C API documents as
the way to end a run from another thread (include/sandboxio/sandbox.h); the
awaiting task then waits for the C call to return and gets CancelledError.
A killed sandbox takes no more runs. Leaving the `async with` block, however
it is left, closes (removes) the sandbox.
"""

import asyncio
import functools

from .sandbox import Sandbox


class AsyncSandbox:
    """AsyncSandbox(policy=None, backend="docker", tenant=None, **fields)."""

    def __init__(self, *args, **kw):
        self._args, self._kw = args, kw
        self.sandbox = None

    async def _call(self, fn, *a, **kw):
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, functools.partial(fn, *a, **kw))
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            if self.sandbox is not None:
                await asyncio.shield(loop.run_in_executor(None, self.sandbox._kill_quietly))
            try:
                await asyncio.shield(fut)
            except BaseException:
                pass
            raise

    async def start(self):
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, functools.partial(Sandbox, *self._args, **self._kw))
        try:
            self.sandbox = await asyncio.shield(fut)
        except asyncio.CancelledError:
            try:
                sb = await asyncio.shield(fut)
                await asyncio.shield(loop.run_in_executor(None, sb.close))
            except BaseException:
                pass
            raise
        return self

    async def __aenter__(self):
        return await self.start()

    async def close(self):
        if self.sandbox is not None:
            loop = asyncio.get_running_loop()
            await asyncio.shield(loop.run_in_executor(None, self.sandbox.close))

    async def __aexit__(self, et, ev, tb):
        try:
            await self.close()
        except Exception:
            if ev is None:
                raise

    @property
    def id(self):
        return self.sandbox.id if self.sandbox else None

    async def run(self, argv, **kw):
        return await self._call(self.sandbox.run, argv, **kw)

    async def run_code(self, code, lang="python", **kw):
        return await self._call(self.sandbox.run_code, code, lang, **kw)

    async def write_file(self, path, data, mode=0o644):
        return await self._call(self.sandbox.write_file, path, data, mode)

    async def read_file(self, path, max_bytes=0):
        return await self._call(self.sandbox.read_file, path, max_bytes)

    def __repr__(self):
        return "AsyncSandbox(id=%r)" % (self.id,)

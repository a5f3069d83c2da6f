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

    async with sb.context() as ctx:               # an AsyncContext
        r = await ctx.run("x = 41\nx + 1")       # r.text == "42"

Cancelling the task that awaits a cell interrupts the cell
(sbx_context_interrupt()) instead: the task waits for the cell to end and
gets CancelledError, and the context and its sandbox live on.
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

    async def context(self, language="python", cwd=None, name=None):
        """Starts a code context: an AsyncContext (Sandbox.context())."""
        ctx = await self._call(self.sandbox.context, language, cwd, name)
        return AsyncContext(ctx)

    async def open_context(self, name):
        """An AsyncContext on the live context of that name."""
        return AsyncContext(await self._call(self.sandbox.open_context, name))

    async def contexts(self):
        return await self._call(self.sandbox.contexts)

    async def write_file(self, path, data, mode=0o644):
        return await self._call(self.sandbox.write_file, path, data, mode)

    async def read_file(self, path, max_bytes=0):
        return await self._call(self.sandbox.read_file, path, max_bytes)

    def __repr__(self):
        return "AsyncSandbox(id=%r)" % (self.id,)


class AsyncContext:
    """The asyncio flavour of Context, made by AsyncSandbox.context() and
    open_context(); `async with` closes (kills) the context."""

    def __init__(self, ctx):
        self.context = ctx

    @property
    def name(self):
        return self.context.name

    @property
    def language(self):
        return self.context.language

    async def _call(self, fn, *a):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(fn, *a))

    async def run(self, code, **kw):
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(None, functools.partial(self.context.run, code, **kw))
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            await asyncio.shield(loop.run_in_executor(None, self.context._interrupt_quietly))
            try:
                await asyncio.shield(fut)
            except BaseException:
                pass
            raise

    async def interrupt(self):
        await self._call(self.context.interrupt)

    async def restart(self):
        await asyncio.shield(self._call(self.context.restart))

    async def close(self):
        await asyncio.shield(self._call(self.context.close))

    async def detach(self):
        await self._call(self.context.detach)

    async def __aenter__(self):
        return self

    async def __aexit__(self, et, ev, tb):
        try:
            await self.close()
        except Exception:
            if ev is None:
                raise

    def __repr__(self):
        return "AsyncContext(name=%r)" % (self.name,)

"""Tests against the local Docker Engine (dockerd and the image
sandboxio/python:3.11, as the C contract tests need). Each proves one
guarantee of docs/python.md; none waits on the clock: they synchronise on
output seen, events and process exits."""

import asyncio
import gc
import os
import signal
import subprocess
import sys
import threading

import pytest

import sandboxio

pytestmark = pytest.mark.engine

SECRET = "s3cr3t-Value-9f8e7d"
HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.normpath(os.path.join(HERE, ".."))
# A program that says it started and then waits far longer than any test.
STARTED_THEN_WAIT = ["sh", "-c", "echo started; exec sleep 3000"]


HANG_GUARD_S = 600


async def first_of(event, task):
    """Waits until event is set or task ends (when the run failed to start,
    the test then fails on the task's result instead of hanging)."""
    ev = asyncio.ensure_future(event.wait())
    await asyncio.wait({ev, task}, return_when=asyncio.FIRST_COMPLETED)
    if not event.is_set():
        ev.cancel()
        await task  # raises what ended it
        pytest.fail("the run ended before it started")


def live_ids():
    return {s["id"] for s in sandboxio.list_sandboxes()}


def on_started(event):
    def cb(stream, data):
        if b"started" in data:
            event.set()
        return False
    return cb


def test_run_returns_a_result():
    with sandboxio.Sandbox(memory="256m") as sb:
        r = sb.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
        assert r.status == "exited" and r.exit_code == 3
        assert r.stdout == b"out\n" and r.stderr == b"err\n"
        assert r.duration_ms >= 0 and r.limits_hit == frozenset()
        r = sb.run(["cat"], stdin=b"fed")
        assert r.ok and r.stdout == b"fed"
        r = sb.run(["sh", "-c", "echo $PLAIN"], env={"PLAIN": "visible"})
        assert r.stdout == b"visible\n"


def test_run_code_prints_42():
    with sandboxio.Sandbox() as sb:
        r = sb.run_code("print(6*7)")
        assert r.ok and r.stdout == b"42\n"
        r = sb.run_code("echo $((6*7))", lang="bash")
        assert r.stdout == b"42\n"
        with pytest.raises(sandboxio.UnsupportedError) as ei:
            sb.run_code("x", lang="cobol")
        assert ei.value.code == -7


def test_run_timeout_status_and_limits_hit():
    with sandboxio.Sandbox(run_timeout=2) as sb:
        r = sb.run(["sleep", "3000"])
        assert r.status == "timeout" and "timeout" in r.limits_hit
        with pytest.raises(sandboxio.SandboxError):
            sb.run(["true"], timeout=10)  # a run can only narrow the policy's deadline


def test_files_in_and_out(tmp_path):
    with sandboxio.Sandbox() as sb:
        sb.write_file("/workspace/a.txt", "hello\n")
        assert sb.read_file("/workspace/a.txt") == b"hello\n"
        src = tmp_path / "src.bin"
        src.write_bytes(bytes(range(256)))
        sb.upload(str(src), "/workspace/b.bin")
        sb.download("/workspace/b.bin", str(tmp_path / "back.bin"))
        assert (tmp_path / "back.bin").read_bytes() == bytes(range(256))
        r = sb.run(["python3", "-c", "print(open('/workspace/a.txt').read().upper())"])
        assert r.stdout == b"HELLO\n\n"
        with pytest.raises(sandboxio.NotFoundError):
            sb.read_file("/workspace/none")


def test_leaving_with_by_exception_removes_the_sandbox():
    with pytest.raises(ZeroDivisionError):
        with sandboxio.Sandbox() as sb:
            sid = sb.id
            assert sid in live_ids()
            1 / 0
    assert sb.closed and sid not in live_ids()


def test_keyboard_interrupt_ends_the_run_and_removes_the_sandbox():
    started = threading.Event()

    def cb(stream, data):
        if b"started" in data and not started.is_set():
            started.set()
            os.kill(os.getpid(), signal.SIGINT)
        return False

    with pytest.raises(KeyboardInterrupt):
        with sandboxio.Sandbox() as sb:
            sid = sb.id
            sb.run(STARTED_THEN_WAIT, on_output=cb)
    assert started.is_set() and sid not in live_ids()


def test_asyncio_cancellation_ends_the_run_and_the_sandbox():
    async def main():
        loop = asyncio.get_running_loop()
        started = asyncio.Event()

        def cb(stream, data):
            if b"started" in data:
                loop.call_soon_threadsafe(started.set)
            return False

        async with sandboxio.AsyncSandbox() as sb:
            sid = sb.id
            task = asyncio.create_task(sb.run(STARTED_THEN_WAIT, on_output=cb))
            await first_of(started, task)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # the run has ended; the killed sandbox runs nothing more
            try:
                r = await sb.run(["true"])
            except sandboxio.SandboxError:
                pass
            else:
                assert not r.ok
        return sid

    sid = asyncio.run(main())
    assert sid not in live_ids()


def test_asyncio_cancelling_the_whole_block_removes_the_sandbox():
    ids = []

    async def main():
        loop = asyncio.get_running_loop()
        started = asyncio.Event()

        def cb(stream, data):
            loop.call_soon_threadsafe(started.set)
            return False

        async def body():
            async with sandboxio.AsyncSandbox() as sb:
                ids.append(sb.id)
                await sb.run(STARTED_THEN_WAIT, on_output=cb)

        task = asyncio.create_task(body())
        await first_of(started, task)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert ids[0] not in live_ids()


def test_garbage_collection_removes_the_sandbox():
    sb = sandboxio.Sandbox()
    sid = sb.id
    assert sid in live_ids()
    del sb
    gc.collect()
    assert sid not in live_ids()


def test_exit_with_a_daemon_thread_in_a_run_kills_then_closes():
    """At interpreter exit the finalizer runs while a daemon thread may still
    be in a run on the sandbox; one sandbox is used by one thread at a time,
    so the finalizer kills the run, waits for it to return, and only then
    closes: the process exits 0 and the sandbox is gone."""
    code = ("import sandboxio, threading\n"
            "started = threading.Event()\n"
            "sb = sandboxio.Sandbox(lifetime=600)\n"
            "def cb(stream, data):\n"
            "    if b'started' in data:\n"
            "        started.set()\n"
            "def run():\n"
            "    try:\n"
            "        sb.run(%r, on_output=cb)\n"
            "    except sandboxio.SandboxError:\n"
            "        pass\n"
            "threading.Thread(target=run, daemon=True).start()\n"
            "assert started.wait(%d), 'the run never started'\n"
            "print(sb.id, flush=True)\n" % (STARTED_THEN_WAIT, HANG_GUARD_S))
    env = dict(os.environ, PYTHONPATH=PKG)
    be = sandboxio.Backend("docker", no_reap_at_open=True)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    sid = p.stdout.readline().decode().strip()
    assert p.wait() == 0
    assert sid and sid not in {s["id"] for s in be.list()}


def test_kill_9_is_left_to_the_reaper():
    """A process killed with -9 closes nothing; its sandbox is removed by the
    reaper (owner gone) and, failing that, by its dead-man deadline."""
    code = ("import sandboxio, sys\n"
            "sb = sandboxio.Sandbox(lifetime=600)\n"
            "print(sb.id, flush=True)\n"
            "sys.stdin.read()\n")
    env = dict(os.environ, PYTHONPATH=PKG)
    # a backend of our own that does not reap when it opens, so that the
    # reap below is the one that finds the orphan
    be = sandboxio.Backend("docker", no_reap_at_open=True)
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env)
    sid = p.stdout.readline().decode().strip()
    assert sid and sid in {s["id"] for s in be.list()}
    p.kill()
    p.wait()
    assert sid in {s["id"] for s in be.list()}  # nothing closed it
    reaped = [r for r in be.reap() if r["id"] == sid]
    assert reaped and reaped[0]["reason"] == "owner_gone" and reaped[0]["removed"]
    assert sid not in {s["id"] for s in be.list()}


def test_threads_run_sandboxes_in_parallel():
    """Thread A's run waits; thread B runs in another sandbox to completion
    meanwhile, then ends A's run. With the GIL held by A's C call, B could
    not run at all until A's run ended."""
    a_started, b_done = threading.Event(), threading.Event()
    order = []
    with sandboxio.Sandbox() as sa, sandboxio.Sandbox() as sb:
        def a():
            try:
                sa.run(STARTED_THEN_WAIT, on_output=on_started(a_started))
            except sandboxio.SandboxError:
                pass  # killed: the run may end with an error rather than a status
            finally:
                order.append("a")

        def b():
            if not a_started.wait(HANG_GUARD_S):  # a hang guard only
                order.append("a never started")
                sa.kill()
                return
            r = sb.run(["echo", "b"])
            order.append("b" if r.stdout == b"b\n" else "b-wrong")
            b_done.set()
            sa.kill()

        ta, tb = threading.Thread(target=a), threading.Thread(target=b)
        ta.start()
        tb.start()
        ta.join()
        tb.join()
    assert order == ["b", "a"]


def test_secret_is_redacted_and_never_in_repr_or_env():
    with sandboxio.Secrets({"API_TOKEN": SECRET}) as sec, sandboxio.Sandbox() as sb:
        r = sb.run(["sh", "-c", "echo $API_TOKEN; echo $API_TOKEN | base64"], secrets=sec)
        assert r.ok and SECRET.encode() not in r.stdout and b"<redacted>" in r.stdout
        for t in (repr(r), repr(sb), repr(sec), str(sec), repr(sb.policy)):
            assert SECRET not in t
        with pytest.raises(sandboxio.InvalidError, match="secrets="):
            sb.run(["true"], env={"API_TOKEN": sec})
        with pytest.raises(sandboxio.InvalidError, match="secrets="):
            sb.run(["true"], env=sec)
        # a program's error output naming the value is redacted
        r = sb.run(["sh", "-c", "/no/such/$API_TOKEN"], secrets=sec)
        assert SECRET.encode() not in r.stderr and b"<redacted>" in r.stderr
        # so is an error's text that would quote it
        with pytest.raises(sandboxio.UnsupportedError) as ei:
            sb.run_code("x", lang=SECRET, secrets=sec)
        assert SECRET not in str(ei.value) and SECRET not in repr(ei.value)


# ----- code contexts (include/sandboxio/interp.h) -----

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CTX_TENANT = "pyctx-%d" % os.getpid()


def test_context_keeps_state_between_cells():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb, sb.context() as c:
        assert c.language == "python" and c.name.startswith("ctx-")
        r = c.run("x = 41")
        assert r.status == "ok" and r.text is None and r.error is None
        r = c.run("x + 1")
        assert r.ok and r.text == "42" and r.execution_count == 2
        assert sandboxio.DisplayItem("text/plain", b"42", True) in r.items
        assert not r.truncated and r.duration_ms >= 0
        r = c.run(b"print('out'); import sys; print('err', file=sys.stderr)")
        assert r.stdout == b"out\n" and r.stderr == b"err\n"
        assert {"name": c.name, "language": "python"} in sb.contexts()
    # closed with its block: the context is gone, the handle is refused
    assert c.closed
    with pytest.raises(sandboxio.InvalidError, match="closed"):
        c.run("x")


def test_context_bash_keeps_its_variables():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb, sb.context("bash", cwd="/tmp") as c:
        assert c.language == "bash"
        c.run("Y=6; cd /workspace")
        r = c.run("echo $((Y*7)) $PWD")
        assert r.ok and r.stdout == b"42 /workspace\n"
        r = c.run("false")
        assert r.status == "error" and r.error.name == "ExitCode"


def test_context_matplotlib_plot_is_a_png_item():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb, sb.context() as c:
        r = c.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])\n"
                  "plt.title('t')")
        assert r.ok, r
        png = [i for i in r.items if i.mime == "image/png"]
        assert len(png) == 1 and png[0].data.startswith(PNG_MAGIC) and not png[0].is_result


def test_two_contexts_are_independent():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb:
        with sb.context(name="first") as a, sb.context(name="second") as b:
            assert a.run("only_here = 1").ok
            r = b.run("only_here")
            assert r.status == "error" and r.text is None
            assert r.error.name == "NameError"
            assert r.error.value == "name 'only_here' is not defined"
            assert "NameError" in r.error.traceback
            assert a.run("only_here").text == "1"


def test_context_timeout_then_the_next_cell_works():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb, sb.context() as c:
        c.run("kept = 'still here'")
        # The timeout under test, not a bound on the machine's speed: generous
        # (the cell's exec and the grace are inside it), as the contract test's.
        r = c.run("while True:\n    pass", timeout=8)
        assert r.status == "timeout" and r.error.name == "KeyboardInterrupt"
        r = c.run("kept")
        assert r.ok and r.text == "'still here'"


def test_context_interrupt_from_a_thread_stops_the_cell():
    with sandboxio.Sandbox(tenant=CTX_TENANT, run_code_timeout=HANG_GUARD_S) as sb, \
            sb.context() as c:
        started = threading.Event()
        errors = []

        def on_output(stream, data):
            if stream == "stdout" and b"looping" in data:
                started.set()

        def interrupter():
            # the guard only bounds a hang: the cell says when it loops
            if started.wait(HANG_GUARD_S):
                try:
                    c.interrupt()
                except BaseException as e:
                    errors.append(e)

        t = threading.Thread(target=interrupter)
        t.start()
        try:
            r = c.run("n = 0\nprint('looping', flush=True)\nwhile True:\n    n += 1",
                      on_output=on_output)
        finally:
            started.set()
            t.join()
        assert not errors
        assert r.status == "interrupted" and r.error.name == "KeyboardInterrupt"
        r = c.run("n > 0")
        assert r.ok and r.text == "True"


def test_context_secret_is_redacted_in_stdout_and_html():
    with sandboxio.Secrets({"API_TOKEN": SECRET}) as sec, \
            sandboxio.Sandbox(tenant=CTX_TENANT) as sb, sb.context() as c:
        r = c.run("import os\nt = os.environ['API_TOKEN']\nprint(t)\n"
                  "class H:\n"
                  "    def _repr_html_(self):\n"
                  "        return '<b>' + t + '</b>'\n"
                  "display(H())\n", secrets=sec)
        assert r.ok, r
        assert SECRET.encode() not in r.stdout and b"<redacted>" in r.stdout
        html = [i for i in r.items if i.mime == "text/html"]
        assert len(html) == 1
        assert SECRET.encode() not in html[0].data and b"<redacted>" in html[0].data
        # the environment stays for later cells, still redacted
        r = c.run("t")
        assert SECRET not in r.text and "<redacted>" in r.text
        for t in (repr(r), repr(c)):
            assert SECRET not in t


def test_context_outlives_its_handle_and_open_context_finds_it():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb:
        c = sb.context(name="kept")
        c.run("y = 7")
        c.detach()
        assert c.closed
        again = sb.open_context("kept")
        assert again.name == "kept" and again.language == "python"
        assert again.run("y * 6").text == "42"
        # the garbage collector frees the handle only, as detach() does
        del again
        gc.collect()
        third = sb.open_context("kept")
        assert third.run("y").text == "7"
        third.close()
        with pytest.raises(sandboxio.NotFoundError):
            sb.open_context("kept")
        assert all(x["name"] != "kept" for x in sb.contexts())


def test_context_closing_the_sandbox_frees_the_handles():
    sb = sandboxio.Sandbox(tenant=CTX_TENANT)
    c = sb.context()
    sb.close()
    assert c.closed
    with pytest.raises(sandboxio.InvalidError, match="closed"):
        c.run("1")
    c.close()  # nothing left to do


def test_context_refusals_carry_the_c_code():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb:
        with pytest.raises(sandboxio.InvalidError, match="cobol") as ei:
            sb.context("cobol")
        assert ei.value.code == -2
        with pytest.raises(sandboxio.InvalidError, match="is not 1 to 64"):
            sb.context(name="no spaces")
        with pytest.raises(sandboxio.InvalidError, match="absolute"):
            sb.context(cwd="relative")
        with sb.context(name="dup"):
            with pytest.raises(sandboxio.InvalidError, match="already alive"):
                sb.context(name="dup")
        with pytest.raises(sandboxio.NotFoundError) as ei:
            sb.open_context("nobody")
        assert ei.value.code == -3


def test_context_struct_versions_are_checked_by_the_library():
    """The versions the package sets are the header's: the library takes
    them, and refuses one it does not know (SBX_EVERSION)."""
    import ctypes
    from sandboxio import _lib
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb:
        h = ctypes.c_void_p()
        o = _lib.sbx_context_options(version=_lib.CONTEXT_OPTIONS_VERSION + 1)
        assert _lib.sbx_context_create(ctypes.byref(h), sb._handle(), ctypes.byref(o)) == -8
        with sb.context() as c:
            out = ctypes.POINTER(_lib.sbx_code_result)()
            co = _lib.sbx_code_options(version=_lib.CODE_OPTIONS_VERSION + 1)
            assert _lib.sbx_context_run(ctypes.byref(out), c._cs.h, b"1", 1,
                                        ctypes.byref(co)) == -8
            r = c.run("1")
            assert r.ok and r.text == "1"


def test_asyncio_cancelling_a_cell_interrupts_it():
    async def main():
        async with sandboxio.AsyncSandbox(tenant=CTX_TENANT,
                                          run_code_timeout=HANG_GUARD_S) as sb:
            async with await sb.context() as c:
                loop = asyncio.get_running_loop()
                started = asyncio.Event()

                def on_output(stream, data):
                    if b"looping" in data:
                        loop.call_soon_threadsafe(started.set)

                task = asyncio.ensure_future(c.run(
                    "print('looping', flush=True)\nwhile True:\n    pass",
                    on_output=on_output))
                await first_of(started, task)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                r = await c.run("6 * 7")
                assert r.ok and r.text == "42"
    asyncio.run(main())


def test_keyboard_interrupt_during_a_cell_interrupts_it_and_the_context_lives():
    """Ctrl-C while a cell runs on the main thread interrupts the cell (not
    the sandbox): KeyboardInterrupt is raised once the cell has ended, and
    the context keeps its state."""
    started = threading.Event()

    def cb(stream, data):
        if b"looping" in data and not started.is_set():
            started.set()
            os.kill(os.getpid(), signal.SIGINT)

    with sandboxio.Sandbox(tenant=CTX_TENANT, run_code_timeout=HANG_GUARD_S) as sb, \
            sb.context() as c:
        c.run("kept = 42")
        with pytest.raises(KeyboardInterrupt):
            c.run("print('looping', flush=True)\nwhile True:\n    pass", on_output=cb)
        assert started.is_set()
        r = c.run("kept")
        assert r.ok and r.text == "42" and r.execution_count == 3


def test_context_is_shared_with_the_sandboxio_command():
    """A context made here is reached by `sandboxio code` from another
    process, and one the command made is found by open_context()."""
    cli = os.environ.get("SBX_CLI") or os.path.join(PKG, "..", "..", "build", "sandboxio")
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb:
        c = sb.context(name="shared")
        c.run("y = 41")
        p = subprocess.run([cli, "code", "--context", "shared", sb.id, "--", "y += 1\ny"],
                           capture_output=True)
        assert p.returncode == 0 and p.stdout == b"42\n", p.stderr
        assert c.run("y").text == "42"
        p = subprocess.run([cli, "code", "--context", "made-by-cli", "--lang", "bash", sb.id,
                            "--", "Z=5"], capture_output=True)
        assert p.returncode == 0, p.stderr
        with sb.open_context("made-by-cli") as d:
            assert d.language == "bash"
            assert d.run("echo $((Z*2))").stdout == b"10\n"


def test_context_restart_loses_the_state_and_keeps_the_name():
    with sandboxio.Sandbox(tenant=CTX_TENANT) as sb, sb.context(name="again") as c:
        c.run("gone = 1")
        c.restart()
        r = c.run("gone")
        assert r.status == "error" and r.error.name == "NameError"
        c.run("gone = 2")
        # a context whose process ends is started again: status restarted
        r = c.run("import os\nos._exit(3)")
        assert r.status == "restarted"
        r = c.run("gone")
        assert r.error.name == "NameError" and c.name == "again"

"""A task awaiting a unary call is stepped from the reactor's reader callback
(triple_py/aio/_calls._Wakeup), not on a later turn of the loop: what that must keep.

Each case runs in a child process with a hard timeout (a lost wake-up is a hang)."""
from __future__ import annotations

import textwrap

import pytest

from _helpers import probe_child
from triple_py.testing import EchoServer

HARD_TIMEOUT = 60

PRELUDE = textwrap.dedent("""\
    import asyncio, sys
    import triple_py, triple_py.aio as aio
    ADDR = sys.argv[1]
    UNARY = "/benchmark.BenchmarkService/UnaryCall"
""")


@pytest.fixture(scope="module")
def server():
    with EchoServer() as srv:
        yield srv


def probe(server: EchoServer, body: str) -> str:
    return probe_child(PRELUDE, body, server.address, HARD_TIMEOUT)


def test_many_tasks_and_a_cancel_and_a_close_from_a_woken_task(server):
    """200 tasks x 50 calls each get their own echo; a task cancelled while it awaits
    ends CancelledError and its RPC CANCELLED; a task woken by its response closes the
    channel while others still await (the drain nested in a task): they end, none
    hangs."""
    out = probe(server, """
        async def main():
            ch = aio.insecure_channel(ADDR)
            stub = ch.unary_unary(UNARY)

            async def work(i):
                for n in range(50):
                    req = b"%d:%d" % (i, n)
                    assert await stub(req, timeout=10) == req
            await asyncio.gather(*(work(i) for i in range(200)))

            call = stub(b"slow", timeout=10, metadata=[("x-delay-ms", "5000")])
            task = asyncio.ensure_future(call)
            await asyncio.sleep(0.05)
            task.cancel()
            try:
                await task
                raise AssertionError("the cancelled task finished")
            except asyncio.CancelledError:
                pass
            assert call.cancelled(), await call.code()

            slow = [asyncio.ensure_future(stub(b"s", timeout=10,
                                               metadata=[("x-delay-ms", "3000")]))
                    for _ in range(20)]
            async def closer():
                assert await stub(b"fast", timeout=10) == b"fast"
                await ch.close()
            await asyncio.wait_for(closer(), 10)
            done, pending = await asyncio.wait(slow, timeout=10)
            assert not pending, len(pending)
            for t in done:
                assert t.exception() is not None
            print("OK")
        asyncio.run(main())
    """)
    assert out.rstrip().endswith("OK")


def test_done_callback_runs_before_the_awaiting_task_goes_on(server):
    """grpc.aio's add_done_callback runs when the call ends, before the task that
    awaited it runs on (as with a future scheduled for the next turn)."""
    out = probe(server, """
        async def main():
            async with aio.insecure_channel(ADDR) as ch:
                stub = ch.unary_unary(UNARY)
                for _ in range(20):
                    seen = []
                    call = stub(b"x", timeout=10)
                    call.add_done_callback(lambda c: seen.append("callback"))
                    assert await call == b"x"
                    seen.append("task")
                    assert seen == ["callback", "task"], seen
            print("OK")
        asyncio.run(main())
    """)
    assert out.rstrip().endswith("OK")


def test_system_exit_in_a_woken_task_loses_no_completion(server):
    """A task stepped from the reader callback that raises SystemExit stops the loop;
    the completions polled with its own are still delivered when the loop runs on."""
    out = probe(server, """
        loop = asyncio.new_event_loop()
        ch = aio.insecure_channel(ADDR)
        stub = ch.unary_unary(UNARY)

        async def quitter():
            await stub(b"q", timeout=10, metadata=[("x-delay-ms", "200")])
            raise SystemExit(3)

        async def waiter(i):
            return await stub(b"%d" % i, timeout=10, metadata=[("x-delay-ms", "200")])

        async def start():
            return asyncio.ensure_future(quitter()), [asyncio.ensure_future(waiter(i))
                                                      for i in range(30)]
        q, ws = loop.run_until_complete(start())
        try:
            loop.run_until_complete(asyncio.gather(*ws))
        except SystemExit as e:
            assert e.code == 3
        results = loop.run_until_complete(asyncio.wait_for(asyncio.gather(*ws), 10))
        assert results == [b"%d" % i for i in range(30)], results
        loop.run_until_complete(ch.close())
        loop.close()
        print("OK")
    """)
    assert out.rstrip().endswith("OK")


def test_a_woken_task_that_blocks_in_the_library_is_not_left_waiting(server):
    """The calls the stepped tasks start wake their I/O threads once, when the drain
    ends (tri_wakes_defer_begin).  A stepped task that then blocks, in a blocking call
    of a sync channel, or a streaming read with the call it has just started, must
    still get its response: a wait in the library sends the held-back wake-ups first.
    A task started late in the burst still has its call sent when the drain ends."""
    out = probe(server, """
        async def main():
            ch = aio.insecure_channel(ADDR)
            stub = ch.unary_unary(UNARY)
            sync = triple_py.insecure_channel(ADDR)
            sync_stub = sync.unary_unary(UNARY)
            assert await stub(b"warm", timeout=10) == b"warm"
            async def blocker(i):
                assert await stub(b"a%d" % i, timeout=10) == b"a%d" % i
                # Stepped in the drain: this call's start, then its wait, on this thread.
                ours = ch._sync.core_channel.call(UNARY, b"c%d" % i, 10, None, wait=True)
                assert ours.response() == b"c%d" % i
                assert sync_stub(b"b%d" % i, timeout=10) == b"b%d" % i
                return await stub(b"d%d" % i, timeout=10)
            got = await asyncio.gather(*(blocker(i) for i in range(20)))
            assert got == [b"d%d" % i for i in range(20)], got
            sync.close()
            await ch.close()
            print("OK")
        asyncio.run(main())
    """)
    assert out.rstrip().endswith("OK")


def test_done_callbacks_run_before_await_returns_when_the_call_ended_first(server):
    """A call that ended before its task awaited it (the reactor has not told it yet):
    awaiting it runs its done callbacks before the task goes on, once, as the reactor
    would have; OK and failed calls alike."""
    out = probe(server, """
        import time
        async def main():
            ch = aio.insecure_channel(ADDR)
            stub = ch.unary_unary(UNARY)
            assert await stub(b"warm", timeout=10) == b"warm"
            for md in (None, [("x-status", "5")]):
                call = stub(b"u", timeout=10, metadata=md)
                seen = []
                call.add_done_callback(seen.append)
                time.sleep(0.05)  # the call ends meanwhile; the loop is not told yet
                try:
                    assert await call == b"u"
                except aio.AioRpcError as e:
                    assert md and e.code() is triple_py.StatusCode.NOT_FOUND
                assert len(seen) == 1 and seen[0] is call, len(seen)
                await asyncio.sleep(0.05)  # the reactor's delivery: not a second time
                assert len(seen) == 1, len(seen)
            await ch.close()
            print("OK")
        asyncio.run(main())
    """)
    assert out.rstrip().endswith("OK")

"""An asyncio channel to one endpoint runs its connection on the event loop's thread
(a driven IoLoop, option ``triple.io_on_event_loop``): what users rely on.

Each case runs in a child process with a hard timeout (a turn nobody runs is a hang)."""
from __future__ import annotations

import textwrap

import pytest

from _helpers import probe_child
from triple_py.testing import EchoServer

HARD_TIMEOUT = 60

PRELUDE = textwrap.dedent("""\
    import asyncio, os, sys, time
    import triple_py, triple_py.aio as aio
    ADDR = sys.argv[1]
    UNARY = "/benchmark.BenchmarkService/UnaryCall"
    BIDI = "/benchmark.BenchmarkService/StreamCall"

    def io_threads():
        names = []
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    names.append(f.read().strip())
            except FileNotFoundError:  # the thread ended meanwhile
                pass
        return names.count("tri-io")
""")


@pytest.fixture(scope="module")
def server():
    with EchoServer() as srv:
        yield srv


def probe(server: EchoServer, body: str) -> str:
    return probe_child(PRELUDE, body, server.address, HARD_TIMEOUT)


@pytest.mark.parametrize("on", [True, False])
def test_calls_and_streams_with_and_without_an_io_thread(server, on):
    """On (the default): no I/O thread at any point, and every kind of call works:
    concurrent unary calls, a 1 MiB echo, a bidi stream whose 3 MiB message is over
    the writer's send limit (the write waits for room on the loop), a deadline that
    expires while the loop has nothing else to do.  Off: one I/O thread, same results."""
    out = probe(server, f"""
        ON = {on!r}
        async def main():
            ch = aio.insecure_channel(ADDR, options=[("triple.io_on_event_loop", ON)])
            assert (ch._sync.io_loop is not None) is ON
            stub = ch.unary_unary(UNARY)
            threads = []

            async def work(i):
                for n in range(20):
                    req = b"%d:%d" % (i, n)
                    assert await stub(req, timeout=10) == req
                    threads.append(io_threads())
            await asyncio.gather(*(work(i) for i in range(20)))
            big = os.urandom(1 << 20)
            assert await stub(big, timeout=10) == big

            stream = ch.stream_stream(BIDI)(timeout=20)
            huge = os.urandom(3 << 20)
            for msg in (b"a", huge, b"b"):
                await stream.write(msg)
                assert await stream.read() == msg
                threads.append(io_threads())
            await stream.done_writing()
            assert await stream.read() is aio.EOF

            started = time.monotonic()
            try:
                await stub(b"slow", timeout=0.2, metadata=[("x-delay-ms", "5000")])
                raise AssertionError("the deadline did not fire")
            except aio.AioRpcError as e:
                assert e.code() is triple_py.StatusCode.DEADLINE_EXCEEDED, e
            assert time.monotonic() - started < 3
            await ch.close()
            assert set(threads) == ({{0}} if ON else {{1}}), set(threads)
            print("OK")
        asyncio.run(main())
    """)
    assert out.rstrip().endswith("OK")


def test_a_host_name_is_looked_up_off_the_loop(server):
    """Every target of one endpoint runs on the loop, a host name too (looked up on a
    short-lived thread, not the loop's); only a balanced target keeps an I/O thread.
    A call to a host name works with no I/O thread, and a name the name service does
    not know fails (UNAVAILABLE with the reason, or the deadline if the name server
    never answers) while the loop keeps running."""
    out = probe(server, """
        port = ADDR.rsplit(":", 1)[1]
        async def main():
            ch = aio.insecure_channel(f"localhost:{port}")
            assert await ch.unary_unary(UNARY)(b"by name", timeout=10) == b"by name"
            assert io_threads() == 0
            await ch.close()
            ticks = []
            async def ticker():
                while True:
                    ticks.append(time.monotonic())
                    await asyncio.sleep(0.01)
            tick = asyncio.ensure_future(ticker())
            ticks.append(time.monotonic())
            bad = aio.insecure_channel("example.invalid:1")
            try:
                await bad.unary_unary(UNARY)(b"x", timeout=5)
                raise AssertionError("a call to example.invalid succeeded")
            except aio.AioRpcError as e:
                codes = (triple_py.StatusCode.UNAVAILABLE,
                         triple_py.StatusCode.DEADLINE_EXCEEDED)
                assert e.code() in codes, e
                if e.code() is triple_py.StatusCode.UNAVAILABLE:
                    assert "failed to resolve example.invalid:1" in e.details(), e
            tick.cancel()
            ticks.append(time.monotonic())
            assert max(b - a for a, b in zip(ticks, ticks[1:])) < 1.0, "the loop stalled"
            assert io_threads() == 0
            await bad.close()
        asyncio.run(main())
        for target, driven in (("example.invalid:1", True), ("localhost:1", True),
                               ("127.0.0.1:1", True), ("[::1]:1", True),
                               ("unix:/tmp/nothing.sock", True),
                               ("ipv4:127.0.0.1:1,127.0.0.1:2", False)):
            ch = aio.insecure_channel(target)
            assert (ch._sync.io_loop is not None) is driven, target
            asyncio.run(ch.close())
        print("OK")
    """)
    assert out.rstrip().endswith("OK")


def test_a_channel_moves_to_a_new_event_loop_and_connects_there(server):
    """asyncio.run twice with one channel: the second loop turns the connection (the
    first loop's reactor is gone); channel_ready() alone, with no call yet, connects."""
    out = probe(server, """
        ch = aio.insecure_channel(ADDR)
        async def ready():
            await asyncio.wait_for(ch.channel_ready(), 10)
        asyncio.run(ready())
        async def call():
            assert await ch.unary_unary(UNARY)(b"again", timeout=10) == b"again"
            await ch.close()
        asyncio.run(call())
        print("OK")
    """)
    assert out.rstrip().endswith("OK")

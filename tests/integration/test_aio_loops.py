"""triple_py.aio and its event loops: a later loop takes a channel over from a closed one,
and nothing an aio channel does blocks its loop (discovery runs on a helper thread)."""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

import triple_py
import triple_py.aio
from _zk_helpers import zk  # noqa: F401  (fixture)
from triple_py.registry.zookeeper_provider import ZookeeperProvider, provider_url
from triple_py.testing import EchoServer

UNARY = "/benchmark.BenchmarkService/UnaryCall"
SERVICE = "benchmark.BenchmarkService"
REQUEST = b"\n\x04ping"  # BenchmarkRequest{payload}: the echo server sends it back


@pytest.fixture(scope="module")
def server():
    with EchoServer() as srv:
        yield srv


def test_a_new_loop_takes_over_a_channel_whose_loop_closed_with_calls_in_flight(server):
    """The first loop closes with calls still awaited by its tasks; the next loop's
    first call on the same channel works (it raised "Event loop is closed")."""
    ch = triple_py.aio.insecure_channel(server.address)
    first = asyncio.new_event_loop()

    async def start_calls():
        delayed = (("x-delay-ms", "2000"),)  # still running when the loop closes
        for _ in range(5):
            asyncio.ensure_future(ch.unary_unary(UNARY)(REQUEST, timeout=10,
                                                        metadata=delayed))
        await asyncio.sleep(0.05)
    first.run_until_complete(start_calls())
    first.close()

    async def call():
        return await ch.unary_unary(UNARY)(REQUEST, timeout=10)
    try:
        assert asyncio.run(call()) == REQUEST
        assert asyncio.run(call()) == REQUEST  # and the loop after it
    finally:
        asyncio.run(ch.close())


def test_a_loop_running_in_another_thread_keeps_its_channel(server):
    """While a channel's loop runs in one thread, a call from a loop running in another
    thread raises RuntimeError (the channel's reactor is not taken for that loop's),
    and the channel's own loop keeps calling; once that loop has stopped, the other
    loop takes the channel over."""
    import threading
    ch = triple_py.aio.insecure_channel(server.address)
    first = asyncio.new_event_loop()
    runner = threading.Thread(target=first.run_forever)
    runner.start()

    async def call():
        return await ch.unary_unary(UNARY)(REQUEST, timeout=10)
    try:
        assert asyncio.run_coroutine_threadsafe(call(), first).result(10) == REQUEST
        with pytest.raises(RuntimeError, match="in use by an event loop"):
            asyncio.run(call())
        assert asyncio.run_coroutine_threadsafe(call(), first).result(10) == REQUEST
    finally:
        first.call_soon_threadsafe(first.stop)
        runner.join(10)
        first.close()
    try:
        assert asyncio.run(call()) == REQUEST
    finally:
        asyncio.run(ch.close())


def free_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ticker:
    """A task of the loop that wakes every 20 ms and keeps the longest gap seen."""

    def __init__(self) -> None:
        self.max_gap = 0.0
        self._task: "asyncio.Task[None] | None" = None

    async def _run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.02)
            now = time.monotonic()
            self.max_gap = max(self.max_gap, now - last)
            last = now

    def __enter__(self) -> "Ticker":
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def outcome(call) -> tuple[str, float]:
    """(code name, seconds taken) of an awaited call."""
    start = time.monotonic()
    try:
        await call
        code = "OK"
    except triple_py.RpcError as err:
        code = err.code().name
    return code, time.monotonic() - start


def test_zookeeper_channel_creation_never_blocks_the_loop_while_zookeeper_is_down():
    """Nothing listens where ZooKeeper should be: the channel is made at once, the loop
    keeps running (it stalled 5 s), and calls fail by their deadline, or UNAVAILABLE once
    the resolver gives up waiting for its first list."""
    async def main():
        await asyncio.sleep(0.05)
        with Ticker() as ticker:
            started = time.monotonic()
            ch = triple_py.aio.insecure_channel(f"zookeeper://127.0.0.1:{free_port()}/{SERVICE}")
            made_in = time.monotonic() - started
            short, long = await asyncio.gather(
                outcome(ch.unary_unary(UNARY)(REQUEST, timeout=1.0)),
                outcome(ch.unary_unary(UNARY)(REQUEST, timeout=20.0)))
        await ch.close()
        return made_in, ticker.max_gap, short, long
    made_in, max_gap, short, long = asyncio.run(main())
    assert made_in < 0.5
    assert max_gap < 0.5, f"the loop stalled {max_gap:.2f} s"
    assert short[0] == "DEADLINE_EXCEEDED" and short[1] < 2.0
    assert long[0] == "UNAVAILABLE" and long[1] < 15.0


def test_zookeeper_channel_first_call_waits_for_the_first_list(zk, server):  # noqa: F811
    """With ZooKeeper up, a call made right after the channel waits for the resolver's
    first list (off the loop) and reaches the registered provider."""
    url = provider_url(server.address, SERVICE, methods=("UnaryCall",))
    provider = ZookeeperProvider(zk.address, url).start()

    async def main():
        with Ticker() as ticker:
            ch = triple_py.aio.insecure_channel(f"zookeeper://{zk.address}/{SERVICE}")
            got = await ch.unary_unary(UNARY)(REQUEST, timeout=15)
            again = await ch.unary_unary(UNARY)(REQUEST, timeout=15)
        await ch.close()
        return got, again, ticker.max_gap
    try:
        got, again, max_gap = asyncio.run(main())
    finally:
        provider.close()
    assert got == again == REQUEST
    assert max_gap < 0.5, f"the loop stalled {max_gap:.2f} s"

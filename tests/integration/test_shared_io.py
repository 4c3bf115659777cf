"""One I/O thread for a channel's backends (issue 25, ``triple.shared_io_thread``).

A channel over several backends runs their connections on one shared thread
(csrc/tri_loop.h) unless the option turns it off.  Every call shape works over it, a
backend that dies and comes back is used again, closing the channel leaves no thread
behind, and a fork child's own channel works (the inherited loop is never joined).
Embedded echo servers on 127.0.0.1, started by the test.
"""
from __future__ import annotations

import asyncio
import gc
import os
import time
from typing import Iterator, List

import pytest

import triple_py
import triple_py.aio
from _helpers import TIMEOUT, calls_of, echo_servers, unary, wait_all_ready
from test_misuse import FORK_CHILD, probe
from triple_py import _triple
from triple_py.testing import EchoServer

STREAM = "/benchmark.BenchmarkService/StreamCall"
ROUND_ROBIN = ("grpc.lb_policy_name", "round_robin")
SHARED = [ROUND_ROBIN]  # the default: shared
PER_BACKEND = [ROUND_ROBIN, ("triple.shared_io_thread", False)]


@pytest.fixture(scope="module")
def servers() -> Iterator[List[EchoServer]]:
    with echo_servers(4) as started:
        yield started


def ipv4_list(servers) -> str:
    return "ipv4:" + ",".join(f"127.0.0.1:{s.port}" for s in servers)


def io_threads() -> int:
    """The core's connection I/O threads in this process (named "tri-io" by
    csrc/tri_thread.c); the embedded servers' and other tests' threads are not counted."""
    count = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                count += comm.read().strip() == "tri-io"
        except FileNotFoundError:  # the thread ended meanwhile
            pass
    return count


def settle(want: int) -> int:
    """The I/O thread count once it is at most `want` (threads end asynchronously),
    waiting at most 5 s; the last count seen otherwise."""
    deadline = time.monotonic() + 5
    while io_threads() > want and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.02)
    return io_threads()


def echo_stream(channel, n: int) -> List[bytes]:
    call = channel.stream_stream(STREAM)
    return list(call(iter([b"m%d" % i for i in range(n)]), timeout=TIMEOUT))


def test_the_option_is_a_row_of_the_table_and_on_by_default():
    row = next(r for r in _triple.CHANNEL_OPTIONS if r[1] == "shared_io_thread")
    assert row[0] == "triple.shared_io_thread" and row[5] is True


def test_unary_and_streams_over_four_backends_on_one_thread(servers):
    before = calls_of(servers)
    with triple_py.insecure_channel(ipv4_list(servers), options=SHARED) as channel:
        triple_py.channel_ready_future(channel).result(timeout=TIMEOUT)
        wait_all_ready(channel._core, len(servers))  # round_robin picks READY ones only
        call = unary(channel)
        for i in range(40):
            assert call(b"%d" % i, timeout=TIMEOUT) == b"%d" % i
        for _ in range(4):
            assert echo_stream(channel, 5) == [b"m%d" % i for i in range(5)]
    spread = [a - b for a, b in zip(calls_of(servers), before)]
    assert sum(spread) == 44 and all(n >= 10 for n in spread), spread


def test_one_thread_instead_of_one_per_backend_and_none_left_after_close(servers):
    target = ipv4_list(servers)
    counts = {}
    for name, options in (("per_backend", PER_BACKEND), ("shared", SHARED)):
        gc.collect()
        base = settle(io_threads())
        channel = triple_py.insecure_channel(target, options=options)
        wait_all_ready(channel._core, len(servers))  # every backend connected
        call = unary(channel)
        for _ in range(8):
            assert call(b"x", timeout=TIMEOUT) == b"x"
        counts[name] = io_threads() - base
        channel.close()
        del channel, call
        assert settle(base) <= base, f"{name}: I/O threads left after close"
    # Four connections: four I/O threads apart, one shared.
    assert counts == {"per_backend": 4, "shared": 1}, counts


def test_a_backend_that_dies_and_comes_back_is_used_again():
    a, b = EchoServer().start(), EchoServer().start()
    port_b = b.port
    try:
        options = SHARED + [("grpc.initial_reconnect_backoff_ms", 100),
                            ("grpc.max_reconnect_backoff_ms", 100)]
        with triple_py.insecure_channel(f"ipv4:127.0.0.1:{a.port},127.0.0.1:{port_b}",
                                        options=options) as channel:
            call = unary(channel)
            for _ in range(4):
                assert call(b"x", timeout=TIMEOUT) == b"x"
            b.stop()
            for _ in range(10):  # every one succeeds on a, which shares b's old thread
                assert call(b"y", timeout=TIMEOUT) == b"y"
            b = EchoServer(port=port_b).start()
            deadline = time.monotonic() + 10
            while b.stats()["calls"] == 0 and time.monotonic() < deadline:
                assert call(b"z", timeout=TIMEOUT) == b"z"
                time.sleep(0.05)
            assert b.stats()["calls"] > 0, "the restarted backend got no call"
    finally:
        a.stop()
        b.stop()


def test_aio_unary_and_stream_over_a_shared_thread(servers):
    async def main() -> None:
        async with triple_py.aio.insecure_channel(ipv4_list(servers),
                                                  options=SHARED) as channel:
            await channel.channel_ready()
            wait_all_ready(channel._sync.core_channel, len(servers))
            call = channel.unary_unary("/benchmark.BenchmarkService/UnaryCall")
            replies = await asyncio.gather(*(call(b"%d" % i, timeout=TIMEOUT)
                                             for i in range(32)))
            assert replies == [b"%d" % i for i in range(32)]
            stream = channel.stream_stream(STREAM)(iter([b"a", b"b"]), timeout=TIMEOUT)
            assert [m async for m in stream] == [b"a", b"b"]
    before = calls_of(servers)
    asyncio.run(main())
    assert all(n > 0 for n in (a - b for a, b in zip(calls_of(servers), before)))


def test_fork_child_own_shared_channel_works_and_inherited_one_fails_fast(servers):
    """The child has no loop thread: the inherited channel fails at once, closing it and
    dropping it never join; a channel the child makes gets a loop of its own."""
    target = ipv4_list(servers[:2])
    probe(servers[0], FORK_CHILD, f"""
        OPTS = [("grpc.lb_policy_name", "round_robin")]
        ch = triple_py.insecure_channel("{target}", options=OPTS)
        stub = ch.unary_unary(UNARY)
        for _ in range(4):
            assert stub(b"x", timeout=5) == b"x"
        def child():
            try:
                stub(b"y", timeout=5)
                raise AssertionError("a call on an inherited channel succeeded")
            except triple_py.RpcError as e:
                assert e.code() is Code.UNAVAILABLE, e
            with triple_py.insecure_channel("{target}", options=OPTS) as own:
                for _ in range(4):
                    assert own.unary_unary(UNARY)(b"own", timeout=5) == b"own"
            ch.close()
        in_child(child)
        assert stub(b"after", timeout=5) == b"after"
        ch.close()
    """)

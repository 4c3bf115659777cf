"""triple_py under concurrency: many threads on one channel, the GIL released while a call
waits, garbage collection of a channel in a reference cycle, and the steady-state costs
(no C allocations per call, at most one write syscall per call with 50 calls in flight)."""
import gc
import os
import threading
import time
import weakref
from concurrent import futures

import pytest

import triple_py
from _helpers import TIMEOUT, ThreadCounter, os_thread_count, unary, wait_for

THREADS = 16
CALLS_PER_THREAD = 1000


def test_threads_share_one_channel(peer):
    """16 threads x 1000 calls on one channel; every response belongs to its request."""
    with triple_py.insecure_channel(peer.address) as channel:
        call = unary(channel)
        stop = threading.Event()  # set on the first failure, so the others stop early

        def worker(index: int) -> int:
            matched = 0
            for n in range(CALLS_PER_THREAD):
                if stop.is_set():
                    break
                # unique, and of varying length so a response of another call cannot match
                request = f"{index}:{n}:".encode() + os.urandom(n % 64)
                try:
                    response = call(request, timeout=TIMEOUT)
                except BaseException:
                    stop.set()
                    raise
                if response != request:
                    stop.set()
                    raise AssertionError(f"thread {index} call {n}: {response!r} != {request!r}")
                matched += 1
            return matched

        started = time.monotonic()
        with futures.ThreadPoolExecutor(THREADS) as pool:
            results = [pool.submit(worker, i) for i in range(THREADS)]
            matched = [r.result(timeout=120) for r in results]
        elapsed = time.monotonic() - started
        stats = channel.stats()
    assert matched == [CALLS_PER_THREAD] * THREADS
    assert stats["calls"] == THREADS * CALLS_PER_THREAD
    assert stats["connects"] == 1, "all calls share one connection"
    assert elapsed < 60


def test_futures_matched_to_requests(go_server):
    """Many futures in flight at once, each resolved with its own response."""
    with triple_py.insecure_channel(go_server.address) as channel:
        call = unary(channel)
        requests = [os.urandom(16) + i.to_bytes(4, "big") for i in range(2000)]
        pending = [call.future(r, timeout=TIMEOUT) for r in requests]
        assert [f.result(timeout=TIMEOUT) for f in pending] == requests


@pytest.mark.parametrize("blocking", ["call", "future.result"])
def test_other_threads_run_while_a_call_waits(peer, blocking):
    """The GIL is released while the main thread waits for a slow (500 ms) call."""
    with triple_py.insecure_channel(peer.address) as channel:
        call = unary(channel)
        assert call(b"warm-up", timeout=TIMEOUT) == b"warm-up"
        counter = ThreadCounter()
        counter.start()
        try:
            assert wait_for(lambda: counter.count > 0, 5)
            before = counter.count
            started = time.monotonic()
            if blocking == "call":
                response = call(b"slow", metadata=[("x-delay-ms", "500")], timeout=TIMEOUT)
            else:
                response = call.future(b"slow", metadata=[("x-delay-ms", "500")],
                                       timeout=TIMEOUT).result(timeout=TIMEOUT)
            elapsed = time.monotonic() - started
            during = counter.count - before
        finally:
            counter.stop()
    assert response == b"slow"
    assert elapsed >= 0.5
    # A free-running Python loop counts millions per second; with the GIL held by the
    # waiting thread it would not move at all for the 500 ms.
    assert during > 50_000, f"the other thread counted only {during} in {elapsed:.2f} s"
    assert counter.max_gap < 0.2, f"the other thread stalled for {counter.max_gap:.3f} s"


class Holder:
    """An object in a reference cycle that owns a channel."""

    def __init__(self, channel):
        self.channel = channel
        self.me = self


@pytest.mark.parametrize("cycle", ["channel-attribute", "holder-object"])
def test_channel_in_reference_cycle_is_collected(go_server, cycle):
    gc.collect()
    baseline = os_thread_count()
    channel = triple_py.insecure_channel(go_server.address)
    channel_ref = weakref.ref(channel)
    call = unary(channel)
    assert call(b"sync", timeout=TIMEOUT) == b"sync"
    fut = call.future(b"async", timeout=TIMEOUT)
    assert fut.result(timeout=TIMEOUT) == b"async"
    assert os_thread_count() > baseline, "the channel runs an I/O thread"
    if cycle == "channel-attribute":
        channel.self_ref = channel
        channel.calls = [call, fut]  # the multi-callable refers back to the channel
    else:
        holder = Holder(channel)
        holder.calls = [call, fut]
        del holder
    del channel, call, fut
    gc.collect()
    assert channel_ref() is None, "the channel in a reference cycle was not collected"
    # deallocation joins the I/O thread; the futures' dispatcher thread ends by itself
    assert wait_for(lambda: os_thread_count() <= baseline, 2), \
        f"{os_thread_count()} threads, {baseline} before the channel"


def test_unclosed_channel_without_cycle_is_freed(go_server):
    baseline = os_thread_count()
    channel = triple_py.insecure_channel(go_server.address)
    channel_ref = weakref.ref(channel)
    assert unary(channel)(b"x", timeout=TIMEOUT) == b"x"
    del channel
    assert channel_ref() is None
    assert wait_for(lambda: os_thread_count() <= baseline, 2)


def test_closed_channel_counters_stay_in_process_stats(go_server):
    before = triple_py.stats()["calls"]
    with triple_py.insecure_channel(go_server.address) as channel:
        for _ in range(5):
            unary(channel)(b"x", timeout=TIMEOUT)
    del channel
    gc.collect()
    assert triple_py.stats()["calls"] - before == 5


def test_no_allocations_in_steady_state(go_server):
    with triple_py.insecure_channel(go_server.address) as channel:
        call = unary(channel)
        request = os.urandom(128)
        for _ in range(200):  # warm-up: connection, pools
            assert call(request, timeout=TIMEOUT) == request
        before = channel.stats()
        n = 2000
        for _ in range(n):
            call(request, timeout=TIMEOUT)
        after = channel.stats()
    assert after["calls"] - before["calls"] == n
    allocations = after["allocations"] - before["allocations"]
    assert allocations / n < 0.05, f"{allocations} C allocations in {n} steady-state calls"
    assert after["pool_misses"] - before["pool_misses"] <= allocations


@pytest.mark.parametrize("size", [128, 1024])
def test_write_syscalls_per_call_with_50_in_flight(go_server, size):
    with triple_py.insecure_channel(go_server.address) as channel:
        call = unary(channel)
        request = os.urandom(size)

        def round_of_futures():
            pending = [call.future(request, timeout=TIMEOUT) for _ in range(50)]
            assert all(f.result(timeout=TIMEOUT) == request for f in pending)

        for _ in range(5):
            round_of_futures()
        before = channel.stats()
        for _ in range(40):
            round_of_futures()
        after = channel.stats()
    calls = after["calls"] - before["calls"]
    writes = after["write_syscalls"] - before["write_syscalls"]
    assert calls == 40 * 50
    assert writes / calls <= 1.0, f"{writes} write syscalls for {calls} calls"


def test_finished_futures_are_not_kept_by_the_completion_thread(go_server):
    """Once its callbacks ran, a future (and its call and response) is not kept alive by
    the completion thread while it waits for the next completions (it used to hold its
    last batch, up to 2 x 256 calls, for as long as the next wait lasted)."""
    with triple_py.insecure_channel(go_server.address) as channel:
        call = unary(channel)
        slow = call.future(b"slow", timeout=TIMEOUT, metadata=[("x-delay-ms", "2000")])
        batch = [call.future(b"x" * 100_000, timeout=TIMEOUT) for _ in range(50)]
        called = []
        for future in batch:
            future.add_done_callback(called.append)
        refs = [weakref.ref(future) for future in batch]
        assert all(f.result(timeout=TIMEOUT) == b"x" * 100_000 for f in batch)
        wait_for(lambda: len(called) == 50, timeout=TIMEOUT)
        del batch, future, called
        gc.collect()
        wait_for(lambda: all(r() is None for r in refs), timeout=0.3)
        assert [r for r in refs if r() is not None] == []
        assert not slow.done()  # the completion thread is still waiting

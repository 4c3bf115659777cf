"""Connection backoff (grpc/grpc doc/connection-backoff.md, issue 9): after a failed
connection attempt the next one waits (initial 1 s, x1.6 per further failure, +-20 %
jitter, at most 120 s; ``grpc.initial_reconnect_backoff_ms``, ``grpc.max_reconnect_backoff_ms``)
and calls made meanwhile fail at once with UNAVAILABLE, as grpcio's do without
wait_for_ready.  A connection that worked and then broke is replaced at once.
"""
from __future__ import annotations

import threading
import time

import pytest

import triple_py
from _helpers import TIMEOUT, closed_port, unary
from triple_py.testing import EchoServer
from triple_py_testing.faults import FaultProxy

Code = triple_py.StatusCode
FAIL_FAST = 0.05  # seconds: a call refused during the backoff returns within this


@pytest.fixture(scope="module")
def embedded_server():
    with EchoServer() as server:
        yield server


def failing_call(channel) -> tuple[triple_py.RpcError, float]:
    started = time.monotonic()
    try:
        unary(channel)(b"x", timeout=TIMEOUT)
    except triple_py.RpcError as error:
        return error, time.monotonic() - started
    raise AssertionError("the call succeeded")


def attempt_bounds(initial: float, seconds: float, poll: float) -> tuple[int, int]:
    """The fewest and most connection attempts that fit in `seconds` when each attempt
    starts (at the latest `poll` seconds) after the jittered delay: delays initial * 1.6^k,
    each scaled by a factor in [0.8, 1.2]."""
    def count(factor: float, slack: float) -> int:
        at, delay, n = 0.0, initial, 1  # the first attempt is at 0
        while True:
            at += delay * factor + slack
            if at > seconds:
                return n
            n += 1
            delay *= 1.6
    return count(1.2, poll), count(0.8, 0.0)


def test_attempts_back_off_against_a_closed_port():
    """Calls made every few ms for 2.5 s against a port nobody listens on: the channel tries
    to connect at 0, ~0.1, ~0.26, ~0.52, ~0.93, ~1.58 s (initial 100 ms), not once per
    call; every other call fails at once and says why."""
    options = [("grpc.initial_reconnect_backoff_ms", 100)]
    seconds, poll = 2.5, 0.005
    with triple_py.insecure_channel(f"127.0.0.1:{closed_port()}", options=options) as channel:
        started = time.monotonic()
        calls, slowest, messages = 0, 0.0, set()
        while time.monotonic() - started < seconds:
            error, took = failing_call(channel)
            assert error.code() is Code.UNAVAILABLE
            calls += 1
            slowest = max(slowest, took)
            messages.add(error.details().split(";")[0].split(", the next")[0])
            time.sleep(poll)
        stats = channel.stats()
        if stats["connect_failures"] != stats["connects"]:
            # A failed attempt is booked when the channel next looks for a connection:
            # the loop ended right after one began, and one more call books it (too soon
            # after it for the backoff to allow another).
            failing_call(channel)
            stats = channel.stats()
    low, high = attempt_bounds(0.1, seconds, poll + FAIL_FAST)
    assert low <= stats["connects"] <= high, (stats["connects"], low, high, calls)
    assert stats["connect_failures"] == stats["connects"]
    assert calls > 10 * stats["connects"]
    assert slowest < FAIL_FAST * 4, f"a call took {slowest:.3f} s"
    assert "failed to connect to 127.0.0.1" in "".join(messages)
    assert any(m.startswith("connection backoff: ") for m in messages), messages


def test_grpcio_defaults():
    """Without options: one attempt, then calls fail fast for about a second (0.8-1.2 s)
    without a second attempt."""
    with triple_py.insecure_channel(f"127.0.0.1:{closed_port()}") as channel:
        first, _ = failing_call(channel)
        assert "failed to connect" in first.details()
        started = time.monotonic()
        while time.monotonic() - started < 0.7:
            error, took = failing_call(channel)
            assert error.details().startswith("connection backoff: 1 connection attempt "
                                              "failed, the next one in ")
            assert "last error: failed to connect to 127.0.0.1" in error.details()
            assert took < FAIL_FAST
            time.sleep(0.01)
        assert channel.stats()["connects"] == 1


def test_server_started_later_is_reached_after_the_backoff():
    """A call fails (refused), the server starts, calls still fail fast until the backoff
    (200 ms +-20 %) is over, then they succeed: not much later either."""
    port = closed_port()
    options = [("grpc.initial_reconnect_backoff_ms", 200)]
    with triple_py.insecure_channel(f"127.0.0.1:{port}", options=options) as channel:
        started = time.monotonic()
        error, _ = failing_call(channel)
        assert "failed to connect" in error.details()
        with EchoServer(port=port):
            error, took = failing_call(channel)
            assert error.details().startswith("connection backoff")
            assert took < FAIL_FAST
            refused = 0
            while True:
                try:
                    assert unary(channel)(b"hello", timeout=TIMEOUT) == b"hello"
                    break
                except triple_py.RpcError as error:
                    assert error.details().startswith("connection backoff"), error
                    refused += 1
                    assert time.monotonic() - started < 2, "no success after the backoff"
                    time.sleep(0.005)
            reached = time.monotonic() - started
            assert 0.16 <= reached <= 0.24 + 0.25, reached
            assert refused > 0
            stats = channel.stats()
            assert (stats["connects"], stats["connect_failures"]) == (2, 1)


def test_a_broken_connection_is_replaced_at_once(embedded_server):
    """A connection that worked and was then reset: the next call reconnects at once and
    the backoff starts over (a later failure waits `initial` again, not more)."""
    options = [("grpc.initial_reconnect_backoff_ms", 300)]
    with FaultProxy(embedded_server.address) as proxy, \
            triple_py.insecure_channel(proxy.address, options=options) as channel:
        # two failed attempts: the backoff is up to 300 ms * 1.6
        proxy.set_fault("reset")
        failing_call(channel)
        time.sleep(0.4)
        failing_call(channel)
        assert channel.stats()["connects"] == 2  # (a failure is booked when it is replaced)
        proxy.clear()
        time.sleep(0.6)
        assert unary(channel)(b"up", timeout=TIMEOUT) == b"up"
        for _ in range(3):  # worked, then broke: reconnects at once, every time
            proxy.set_fault("reset")
            proxy.clear()
            time.sleep(0.05)  # the client sees the reset (a call sent before that fails)
            started = time.monotonic()
            assert unary(channel)(b"again", timeout=TIMEOUT) == b"again"
            assert time.monotonic() - started < 0.2
        stats = channel.stats()
        assert (stats["connects"], stats["connect_failures"]) == (6, 2)
        # the backoff restarted: a new failure waits ~300 ms, not 300 * 1.6^2
        proxy.set_fault("reset")
        time.sleep(0.05)
        failing_call(channel)  # replaces the reset connection: this attempt fails
        failed_at = time.monotonic()
        error, _ = failing_call(channel)
        assert error.details().startswith("connection backoff: 1 connection attempt failed")
        proxy.clear()
        while True:
            try:
                unary(channel)(b"back", timeout=TIMEOUT)
                break
            except triple_py.RpcError as error:
                assert error.details().startswith("connection backoff"), error
                time.sleep(0.005)
        assert time.monotonic() - failed_at < 0.36 + 0.2


def test_futures_refused_at_once_skip_the_completion_thread():
    """Futures of calls refused at once (backoff) are done when future() returns and never
    queue for the completion thread: a closed loop of them cannot build a backlog of
    pending futures (it used to hold ~30,000 of them, and their buffers, at a time)."""
    with triple_py.insecure_channel(f"127.0.0.1:{closed_port()}") as channel:
        failing_call(channel)  # the attempt fails: backoff for ~1 s
        call = unary(channel)
        ended = []
        for _ in range(20_000):
            future = call.future(b"x", timeout=TIMEOUT)
            assert future.done()
            future.add_done_callback(lambda f: ended.append(f.code()))
        assert ended == [Code.UNAVAILABLE] * 20_000
        dispatcher = channel._dispatcher
        assert not dispatcher._pending and not dispatcher._early
        assert dispatcher._thread is None
        assert channel.stats()["connects"] == 1


def test_backoff_in_threads_makes_one_attempt():
    """Many threads calling a dead port at once: one connection attempt serves them all and
    the calls made after it fail fast."""
    with triple_py.insecure_channel(f"127.0.0.1:{closed_port()}") as channel:
        errors = []

        def caller():
            for _ in range(20):
                errors.append(failing_call(channel)[0].code())

        threads = [threading.Thread(target=caller) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [Code.UNAVAILABLE] * 160
        assert channel.stats()["connects"] == 1

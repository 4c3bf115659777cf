"""Fault injection (issue 9): calls through triple_py_testing.faults.FaultProxy to the embedded
echo server and to the grpc-go peer while the proxy resets, stalls, truncates, closes, delays or
dribbles the connection.

For each fault: calls in flight, an open bidi stream and new calls end with the right status
within their deadline (UNAVAILABLE when the connection is reset or closed, DEADLINE_EXCEEDED
when it stalls, success when it is only slow), and once the fault is cleared new calls
succeed (the channel reconnects when the connection was lost, after its connection backoff
when an attempt failed, and keeps the connection when it was only stalled or slow).  A
connection whose peer reads nothing for the write-stall timeout is declared dead; one whose
keepalive PING goes unanswered too.  Then 10,000 failing calls of each kind leave no file
descriptor, thread or memory behind (/proc/self/fd, /proc/self/task, VmRSS; a stalled
connection is measured while it still stalls).
"""
from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import os
import subprocess
import ctypes
import time
from typing import Callable

import pytest

import triple_py
import triple_py.aio
from _helpers import (ROOT, TIMEOUT, VENV_PYTHON, MiB, closed_port, open_fd_count,
                      os_thread_count, probe_child, wait_for)
from _stream_helpers import rss_bytes as _rss_bytes
from peers import STREAM_METHOD, UNARY_METHOD
from triple_py.testing import EchoServer
from triple_py_testing.faults import FaultProxy

Code = triple_py.StatusCode


def live_rss() -> int:
    """RSS after glibc returned its free pages (malloc_trim): live memory, not the
    allocator's cache, so a leak shows and a reused arena does not."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _rss_bytes()
PAYLOAD = b"p" * 1024  # larger than the truncation points below: a response gets cut
SMALL = b"s" * 32  # for dribbled calls, which cost one proxy round per byte
SLACK = 2.0  # seconds a call may end after its deadline on a loaded 2-core machine
STALL_DEADLINE = 0.5  # seconds: the deadline of calls made while the proxy stalls
IN_FLIGHT_DELAY = [("x-delay-ms", "500")]  # keeps a call pending while the fault starts
# Failed connection attempts back off (grpcio's 1 s by default); 100 ms, grpc core's least,
# keeps the recovery steps short.
SHORT_BACKOFF = [("grpc.initial_reconnect_backoff_ms", 100),
                 ("grpc.max_reconnect_backoff_ms", 100)]


@dataclasses.dataclass(frozen=True)
class Case:
    """One fault and what every call must end with while it lasts."""
    kind: str
    params: dict
    code: Code  # OK: the calls succeed
    loses_connection: bool
    payload: bytes = PAYLOAD

    @property
    def deadline(self) -> float:
        return STALL_DEADLINE if self.code is Code.DEADLINE_EXCEEDED else TIMEOUT


CASES = {
    "reset": Case("reset", {}, Code.UNAVAILABLE, True),
    "truncate": Case("truncate", {"nbytes": 100}, Code.UNAVAILABLE, True),
    "close_after_request": Case("close_after", {"nbytes": 100, "direction": "request"},
                                Code.UNAVAILABLE, True),
    "close_after_response": Case("close_after", {"nbytes": 100, "direction": "response"},
                                 Code.UNAVAILABLE, True),
    "stall": Case("stall", {}, Code.DEADLINE_EXCEEDED, False),
    "stall_response": Case("stall", {"direction": "response"}, Code.DEADLINE_EXCEEDED, False),
    "delay": Case("delay", {"seconds": 0.05}, Code.OK, False),
    "dribble": Case("dribble", {"seconds": 0.0002, "direction": "both"}, Code.OK, False,
                    SMALL),
}


@pytest.fixture(scope="module")
def embedded():
    with EchoServer() as server:
        yield server


@pytest.fixture(params=["embedded", "go"])
def target(request):
    """The server behind the proxy: the embedded echo server or the grpc-go peer."""
    return request.getfixturevalue("embedded" if request.param == "embedded" else "go_server")


@pytest.fixture
def proxy(target):
    with FaultProxy(target.address) as p:
        yield p


@pytest.fixture
def channel(proxy):
    with triple_py.insecure_channel(proxy.address, options=SHORT_BACKOFF) as ch:
        yield ch


def unary(channel):
    return channel.unary_unary(UNARY_METHOD)


def bidi(channel):
    return channel.stream_stream(STREAM_METHOD)


def outcome(fn: Callable[[], object]) -> tuple[Code, float]:
    """(status code, seconds taken) of fn(): OK if it returns, the RpcError's code if not."""
    started = time.monotonic()
    try:
        fn()
        code = Code.OK
    except triple_py.RpcError as error:
        code = error.code()
    return code, time.monotonic() - started


def after_backoff(fn: Callable[[], object], limit: float = 2.0) -> object:
    """fn() once the channel may connect again: a call refused at once because connection
    attempts back off (grpcio without wait_for_ready does the same) is made again, for up
    to `limit` seconds; any other error fails."""
    started = time.monotonic()
    while True:
        try:
            return fn()
        except triple_py.RpcError as error:
            backing_off = (error.code() is Code.UNAVAILABLE
                           and error.details().startswith("connection backoff"))
            if not backing_off or time.monotonic() - started > limit:
                raise
            time.sleep(0.01)


def bidi_round(call, payload: bytes) -> None:
    """One echo on an open stream, then half-close and read to the end."""
    call.write(payload)
    assert next(call) == payload
    call.done_writing()
    assert list(call) == []


def new_bidi_round(channel, payload: bytes, timeout: float) -> None:
    bidi_round(bidi(channel)(timeout=timeout), payload)


# --- every fault: the status of each call, then recovery --------------------------------------

@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_calls_end_with_the_right_status_then_recover(channel, proxy, case):
    payload, deadline = case.payload, case.deadline
    assert unary(channel)(payload, timeout=TIMEOUT) == payload
    open_stream = bidi(channel)(timeout=deadline)
    open_stream.write(payload)
    assert next(open_stream) == payload
    opened = time.monotonic()
    in_flight = unary(channel).future(payload, timeout=deadline, metadata=IN_FLIGHT_DELAY)
    connects = channel.stats()["connects"]

    proxy.set_fault(case.kind, **case.params)
    results = {
        # the open stream's deadline runs from when it was opened
        "open stream": outcome(lambda: bidi_round(open_stream, payload)),
        "in-flight unary": outcome(lambda: in_flight.result(timeout=deadline + SLACK)),
        "new unary": outcome(lambda: unary(channel)(payload, timeout=deadline)),
        "new stream": outcome(lambda: new_bidi_round(channel, payload, deadline)),
    }
    since_open = time.monotonic() - opened
    codes = {name: code for name, (code, _) in results.items()}
    assert codes == dict.fromkeys(results, case.code), results
    for name, (code, seconds) in results.items():
        assert seconds <= deadline + SLACK, f"{name} took {seconds:.2f} s"
    if case.code is Code.DEADLINE_EXCEEDED:
        assert since_open >= deadline  # not failed early either
        assert results["new unary"][1] >= deadline - 0.05

    proxy.clear()
    assert after_backoff(lambda: unary(channel)(payload, timeout=TIMEOUT)) == payload
    new_bidi_round(channel, payload, TIMEOUT)
    if case.loses_connection:
        assert channel.stats()["connects"] > connects  # reconnected
    else:
        assert channel.stats()["connects"] == connects  # the same connection carried on


def test_reset_fails_every_call_and_stream_at_once(channel, proxy):
    """200 unary calls and 20 streams in flight on the one connection all end UNAVAILABLE
    as soon as it is reset, long before their deadlines; then the channel reconnects."""
    assert unary(channel)(b"warm", timeout=TIMEOUT) == b"warm"
    slow = [("x-delay-ms", "5000")]
    futures = [unary(channel).future(b"%d" % i, timeout=30, metadata=slow) for i in range(200)]
    streams = [bidi(channel)(timeout=30) for _ in range(20)]
    for stream in streams:
        stream.write(b"hello")
        assert next(stream) == b"hello"
    started = time.monotonic()
    proxy.set_fault("reset")
    for future in futures:
        assert future.exception(timeout=10).code() is Code.UNAVAILABLE
    for stream in streams:
        with pytest.raises(triple_py.RpcError) as info:
            next(stream)
        assert info.value.code() is Code.UNAVAILABLE
    assert time.monotonic() - started < 5
    proxy.clear()
    assert after_backoff(lambda: unary(channel)(b"x", timeout=TIMEOUT)) == b"x"
    assert [f.result(timeout=TIMEOUT) for f in
            [unary(channel).future(b"%d" % i, timeout=TIMEOUT) for i in range(50)]] == \
        [b"%d" % i for i in range(50)]


def test_calls_survive_a_stall_shorter_than_their_deadline(channel, proxy):
    """A stall that ends before the deadlines loses nothing: the calls made before and
    during it complete once it is cleared, on the same connection."""
    assert unary(channel)(b"warm", timeout=TIMEOUT) == b"warm"
    stream = bidi(channel)(timeout=TIMEOUT)
    stream.write(b"before")
    assert next(stream) == b"before"
    proxy.set_fault("stall")
    futures = [unary(channel).future(b"%d" % i, timeout=TIMEOUT) for i in range(100)]
    stream.write(b"during")
    time.sleep(0.3)
    assert not any(f.done() for f in futures)
    proxy.clear()
    assert [f.result(timeout=TIMEOUT) for f in futures] == [b"%d" % i for i in range(100)]
    assert next(stream) == b"during"
    stream.done_writing()
    assert list(stream) == [] and stream.code() is Code.OK
    assert channel.stats()["connects"] == 1


def test_connection_reset_while_connecting(proxy):
    """A channel whose first connection is reset fails the call, then connects."""
    proxy.set_fault("reset")
    with triple_py.insecure_channel(proxy.address, options=SHORT_BACKOFF) as channel:
        code, seconds = outcome(lambda: unary(channel)(b"x", timeout=TIMEOUT))
        assert code is Code.UNAVAILABLE and seconds < SLACK
        proxy.clear()
        assert after_backoff(lambda: unary(channel)(b"x", timeout=TIMEOUT)) == b"x"


def test_stall_before_the_server_settings(proxy):
    """A connection that never gets the server's HTTP/2 preface: the call ends with its
    deadline, and the next connection after the stall works."""
    proxy.set_fault("stall")
    with triple_py.insecure_channel(proxy.address) as channel:
        code, seconds = outcome(lambda: unary(channel)(b"x", timeout=STALL_DEADLINE))
        assert code is Code.DEADLINE_EXCEEDED
        assert STALL_DEADLINE - 0.05 <= seconds <= STALL_DEADLINE + SLACK
        proxy.clear()
        assert unary(channel)(b"x", timeout=TIMEOUT) == b"x"


# --- liveness: the write-stall watchdog and keepalive ------------------------------------------

STALL_TIMEOUT_MS = 300
BIG = b"b" * (256 * 1024)  # 128 of them (32 MiB) are more than the socket buffers hold


def test_write_stall_kills_the_connection(embedded):
    """A peer that reads nothing: once the output has waited STALL_TIMEOUT_MS without a byte
    written, the connection is declared dead; every call on it (an open stream too) ends
    UNAVAILABLE with the reason, long before its deadline.  Later calls connect again: they
    end with their deadline while the peer still stalls, and succeed once it reads."""
    # Retries off: a future started after the watchdog fired would otherwise be sent
    # again on a new connection (transparent retry) that stalls too, and end with its
    # deadline; this test is about the watchdog's own verdict.
    options = [("triple.write_stall_timeout_ms", STALL_TIMEOUT_MS), *SHORT_BACKOFF,
               ("grpc.enable_retries", 0)]
    with FaultProxy(embedded.address) as proxy, \
            triple_py.insecure_channel(proxy.address, options=options) as channel:
        assert unary(channel)(b"warm", timeout=TIMEOUT) == b"warm"
        stream = bidi(channel)(timeout=TIMEOUT)
        stream.write(b"open")
        assert next(stream) == b"open"
        proxy.set_fault("stall")
        started = time.monotonic()
        futures = [unary(channel).future(BIG, timeout=TIMEOUT) for _ in range(128)]
        errors = [future.exception(timeout=TIMEOUT + SLACK) for future in futures]
        seconds = time.monotonic() - started
        assert [e.code() if e else Code.OK for e in errors] == [Code.UNAVAILABLE] * 128
        reason = f"connection stalled: no write progress for {STALL_TIMEOUT_MS} ms"
        assert {e.details() for e in errors} == {reason}
        assert STALL_TIMEOUT_MS / 1000 - 0.05 <= seconds <= STALL_TIMEOUT_MS / 1000 + SLACK
        code, _ = outcome(lambda: next(stream))
        assert code is Code.UNAVAILABLE
        assert channel.stats()["write_stalls"] == 1
        # still stalled: a new connection is made, and a small call ends with its deadline
        connects = channel.stats()["connects"]
        code, seconds = outcome(lambda: unary(channel)(b"x", timeout=STALL_DEADLINE))
        assert code is Code.DEADLINE_EXCEEDED and seconds <= STALL_DEADLINE + SLACK
        assert channel.stats()["connects"] == connects + 1
        proxy.clear()
        assert after_backoff(lambda: unary(channel)(b"after", timeout=TIMEOUT)) == b"after"
        new_bidi_round(channel, b"after", TIMEOUT)


def test_write_stall_watchdog_off(embedded):
    """triple.write_stall_timeout_ms = 0: no watchdog; the calls end with their deadline."""
    options = [("triple.write_stall_timeout_ms", 0)]
    with FaultProxy(embedded.address) as proxy, \
            triple_py.insecure_channel(proxy.address, options=options) as channel:
        assert unary(channel)(b"warm", timeout=TIMEOUT) == b"warm"
        proxy.set_fault("stall")
        futures = [unary(channel).future(BIG, timeout=1.0) for _ in range(64)]
        codes = {f.exception(timeout=1.0 + SLACK).code() for f in futures}
        assert codes == {Code.DEADLINE_EXCEEDED}
        assert channel.stats()["write_stalls"] == 0
        proxy.clear()
        assert unary(channel)(b"after", timeout=TIMEOUT) == b"after"


KEEPALIVE = [("grpc.keepalive_time_ms", 200), ("grpc.keepalive_timeout_ms", 300)]


def test_keepalive_detects_a_peer_that_stopped_answering(embedded):
    """Responses stall (requests still flow, so nothing waits to be written): a call open
    keepalive_time without anything read gets a PING, and when its ACK does not come within
    keepalive_timeout the connection is dead: the call ends UNAVAILABLE at about 0.5 s, not
    at its 10 s deadline."""
    with FaultProxy(embedded.address) as proxy, \
            triple_py.insecure_channel(proxy.address, options=KEEPALIVE) as channel:
        assert unary(channel)(b"warm", timeout=TIMEOUT) == b"warm"
        proxy.set_fault("stall", direction="response")
        started = time.monotonic()
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"x", timeout=TIMEOUT)
        seconds = time.monotonic() - started
        assert info.value.code() is Code.UNAVAILABLE
        assert info.value.details() == "keepalive ping not acknowledged within 300 ms"
        assert 0.45 <= seconds <= 0.5 + SLACK
        assert channel.stats()["keepalive_timeouts"] == 1
        proxy.clear()
        assert unary(channel)(b"after", timeout=TIMEOUT) == b"after"


def test_keepalive_keeps_a_healthy_connection(embedded):
    """A call slower than keepalive_time on a healthy connection: the PING is answered and
    the call succeeds on the one connection."""
    with triple_py.insecure_channel(embedded.address, options=KEEPALIVE) as channel:
        assert unary(channel)(b"slow", timeout=TIMEOUT, metadata=[("x-delay-ms", "1200")]) \
            == b"slow"
        stats = channel.stats()
        assert (stats["connects"], stats["keepalive_timeouts"]) == (1, 0)


# --- asyncio ------------------------------------------------------------------------------

def test_aio_keepalive_detects_a_peer_that_stopped_answering(embedded):
    """As above on an asyncio channel, whose connection the event loop turns (no I/O
    thread): the PING goes out and its missing ACK is noticed on time while the loop has
    nothing to do but wait for the call; the channel reconnects afterwards.  In a child
    process with a hard timeout: a lost turn would hang."""
    probe_child("", f"""
        import asyncio, sys, time
        import triple_py, triple_py.aio
        from triple_py_testing.faults import FaultProxy
        KEEPALIVE, SLACK, TIMEOUT = {KEEPALIVE!r}, {SLACK!r}, {TIMEOUT!r}
        UNARY_METHOD = {UNARY_METHOD!r}
        Code = triple_py.StatusCode
        async def scenario(proxy):
            async with triple_py.aio.insecure_channel(proxy.address, options=KEEPALIVE) as ch:
                assert ch._sync.io_loop is not None  # the case this test is about
                call = ch.unary_unary(UNARY_METHOD)
                assert await call(b"warm", timeout=TIMEOUT) == b"warm"
                proxy.set_fault("stall", direction="response")
                started = time.monotonic()
                try:
                    await call(b"x", timeout=TIMEOUT)
                    raise AssertionError("the call on a stalled connection succeeded")
                except triple_py.aio.AioRpcError as e:
                    info = e
                seconds = time.monotonic() - started
                assert info.code() is Code.UNAVAILABLE, info
                assert info.details() == "keepalive ping not acknowledged within 300 ms"
                assert 0.45 <= seconds <= 0.5 + SLACK, seconds
                assert ch.stats()["keepalive_timeouts"] == 1
                proxy.clear()
                assert await call(b"after", timeout=TIMEOUT) == b"after"
        with FaultProxy(sys.argv[1]) as proxy:
            asyncio.run(scenario(proxy))
    """, embedded.address, 60)


@pytest.mark.parametrize("case", [CASES["reset"], CASES["truncate"], CASES["stall"],
                                  CASES["dribble"]], ids=["reset", "truncate", "stall", "dribble"])
def test_aio_calls_end_with_the_right_status(proxy, case):
    async def scenario():
        async with triple_py.aio.insecure_channel(proxy.address, options=SHORT_BACKOFF) as channel:
            call = channel.unary_unary(UNARY_METHOD)
            chat = channel.stream_stream(STREAM_METHOD)
            payload, deadline = case.payload, case.deadline
            assert await call(payload, timeout=TIMEOUT) == payload
            stream = chat(timeout=deadline)
            await stream.write(payload)
            assert await stream.read() == payload
            proxy.set_fault(case.kind, **case.params)

            async def open_stream():
                await stream.write(payload)
                assert await stream.read() == payload
                await stream.done_writing()
                assert await stream.read() is triple_py.aio.EOF

            async def code_of(coro) -> Code:
                try:
                    await coro
                    return Code.OK
                except triple_py.RpcError as error:
                    return error.code()

            started = time.monotonic()
            codes = await asyncio.gather(
                code_of(open_stream()),
                *[code_of(call(payload, timeout=deadline)) for _ in range(20)])
            assert set(codes) == {case.code}
            assert time.monotonic() - started <= deadline + SLACK
            proxy.clear()
            for _ in range(200):  # while connection attempts back off (100 ms), calls fail
                try:
                    assert await call(payload, timeout=TIMEOUT) == payload
                    break
                except triple_py.RpcError as error:
                    assert error.details().startswith("connection backoff"), error
                    await asyncio.sleep(0.01)
            else:
                raise AssertionError("no call succeeded after the fault was cleared")

    asyncio.run(asyncio.wait_for(scenario(), 60))


# --- 10,000 failing calls leak nothing ----------------------------------------------------------

WARM_UP_CALLS = 2_000
FAILING_CALLS = 10_000
FD_SLACK = 2  # descriptors that may come and go (a connection attempt in progress)
THREAD_SLACK = 1  # the completion dispatcher thread lives while futures are pending
LEAK_STALL_TIMEOUT_MS = 200
RSS_BOUND_FRACTION = 0.05
RSS_BOUND_BYTES = 20 * MiB
STALL_PAYLOAD = b"s" * 4096  # fills the stalled socket's buffers within the warm-up


@dataclasses.dataclass
class LeakRun:
    """What running one kind of failing call did to the process."""
    codes: dict
    seconds: float
    fds: tuple[int, int]
    threads: tuple[int, int]
    rss: tuple[int, int]
    new_fds: dict  # descriptors open after the run that were not before: fd -> what


def fd_targets() -> dict:
    """fd -> what it is (socket:[inode], anon_inode:[eventfd], a path)."""
    targets = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            targets[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # closed meanwhile (the listing's own descriptor)
            pass
    return targets


def _futures(call, count: int, batch: int, payload: bytes, **kwargs) -> dict:
    """count unary calls as futures, `batch` in flight at a time; their codes counted."""
    codes: dict = {}
    for start in range(0, count, batch):
        futures = [call.future(payload, **kwargs) for _ in range(min(batch, count - start))]
        for future in futures:
            error = future.exception(timeout=60)
            code = error.code() if error is not None else Code.OK
            codes[code] = codes.get(code, 0) + 1
    return codes


def _streams(channel, count: int) -> dict:
    """count bidi streams one after the other (write, half-close, read); their codes."""
    def one_stream() -> None:
        stream = bidi(channel)(timeout=TIMEOUT)
        stream.write(b"x")
        stream.done_writing()
        next(stream)

    codes: dict = {}
    for _ in range(count):
        code, _ = outcome(one_stream)
        codes[code] = codes.get(code, 0) + 1
    return codes


def _aio_calls(address: str, count: int, batch: int) -> dict:
    async def run() -> dict:
        codes: dict = {}
        async with triple_py.aio.insecure_channel(address) as channel:
            call = channel.unary_unary(UNARY_METHOD)

            async def one() -> Code:
                try:
                    await call(b"x", timeout=TIMEOUT)
                    return Code.OK
                except triple_py.RpcError as error:
                    return error.code()
            for start in range(0, count, batch):
                for code in await asyncio.gather(*[one() for _ in range(batch)]):
                    codes[code] = codes.get(code, 0) + 1
        return codes
    return asyncio.run(run())


LEAK_KINDS = {
    # kind: the code every failing call must end with
    "refused": Code.UNAVAILABLE,  # nothing listens: every connection attempt fails
    "status": Code.UNAVAILABLE,  # the embedded server answers x-status: 14
    "reset": Code.UNAVAILABLE,  # the proxy resets every connection
    "truncate": Code.UNAVAILABLE,  # the proxy closes each connection after 30 bytes
    # The connection stalls (50 ms deadlines): the write-stall watchdog (LEAK_STALL_TIMEOUT_MS)
    # kills the stalled connection; the next one gets no SETTINGS, so it stays under the
    # default flow-control window and never fills the socket (it would fail as an attempt).
    "stall": {Code.DEADLINE_EXCEEDED, Code.UNAVAILABLE},
    # Only the requests stall (the peer reads nothing, its SETTINGS still come): every new
    # connection fills the socket and is killed by the watchdog, again and again.
    "stall-request": {Code.DEADLINE_EXCEEDED, Code.UNAVAILABLE},
    "stream-reset": Code.UNAVAILABLE,  # bidi streams, the proxy resets
    "aio-reset": Code.UNAVAILABLE,  # triple_py.aio unary calls, the proxy resets
}


def _settled(baseline_fds: int, baseline_threads: int) -> None:
    gc.collect()
    wait_for(lambda: open_fd_count() <= baseline_fds and os_thread_count() <= baseline_threads,
             timeout=5)


@pytest.fixture(scope="module", params=LEAK_KINDS.keys())
def leak_run(request, embedded) -> tuple[str, LeakRun]:
    """Runs WARM_UP_CALLS, measures, runs FAILING_CALLS failing calls of one kind,
    measures again (the channel and the proxy stay open throughout)."""
    kind = request.param
    with FaultProxy(embedded.address) as proxy:
        address = proxy.address
        if kind == "refused":
            address = f"127.0.0.1:{closed_port()}"
        elif kind == "status":
            address = embedded.address
        options = [("triple.write_stall_timeout_ms", LEAK_STALL_TIMEOUT_MS), *SHORT_BACKOFF]
        with triple_py.insecure_channel(address, options=options) as channel:
            call = unary(channel)
            if kind in ("reset", "stream-reset", "aio-reset"):
                proxy.set_fault("reset")
            elif kind == "truncate":
                proxy.set_fault("truncate", nbytes=30)
            elif kind.startswith("stall"):
                assert call(b"connect", timeout=TIMEOUT) == b"connect"
                # descriptors and threads with one working connection, as after the run
                gc.collect()
                connected = (open_fd_count(), os_thread_count(), fd_targets())
                proxy.set_fault("stall", direction="request" if kind == "stall-request" else "both")

            def run(count: int) -> dict:
                if kind in ("refused", "reset", "truncate"):
                    return _futures(call, count, 500, b"x", timeout=TIMEOUT)
                if kind == "status":
                    return _futures(call, count, 1000, b"x", timeout=TIMEOUT,
                                    metadata=[("x-status", "14")])
                if kind.startswith("stall"):
                    return _futures(call, count, 1000, STALL_PAYLOAD, timeout=0.05)
                if kind == "stream-reset":
                    return _streams(channel, count)
                return _aio_calls(proxy.address, count, 500)

            run(WARM_UP_CALLS)
            gc.collect()
            # One more call once the warm-up's calls are gone, so that the baseline is a
            # settled channel (dead connections used to be freed only by a later call).
            outcome(lambda: call(b"x", timeout=0.05, metadata=[("x-status", "14")]))
            gc.collect()
            time.sleep(1.1)  # the completion thread exits after an idle 0.5 s wait
            before = (open_fd_count(), os_thread_count(), live_rss())
            fds_before = fd_targets()
            if kind.startswith("stall"):
                before = (connected[0], connected[1], before[2])
                fds_before = connected[2]
            started = time.monotonic()
            codes = run(FAILING_CALLS)
            seconds = time.monotonic() - started
            stall_rss = None
            if kind.startswith("stall"):
                # Measured while the peer still reads nothing: the watchdog has killed the
                # stalled connections, so the expired calls' frames and streams did not pile
                # up.  (The proxy keeps its side of each dead connection until it reads
                # again: descriptors are counted after the fault is cleared.)
                assert channel.stats()["write_stalls"] > 0 or not LEAK_STALL_TIMEOUT_MS
                gc.collect()
                stall_rss = live_rss()
                proxy.clear()
                for _ in range(5):  # the server may close a connection (GOAWAY) first
                    try:
                        assert after_backoff(lambda: call(b"after", timeout=TIMEOUT)) == b"after"
                        break
                    except triple_py.RpcError as exc:
                        assert exc.code() is Code.UNAVAILABLE, exc
                else:
                    raise AssertionError("the channel did not recover after the stall")
            _settled(before[0] + FD_SLACK, before[1] + THREAD_SLACK)
            after = (open_fd_count(), os_thread_count(), stall_rss or live_rss())
            new_fds = {fd: what for fd, what in fd_targets().items()
                       if fds_before.get(fd) != what}
            proxy.clear()
    return kind, LeakRun(codes, seconds, (before[0], after[0]), (before[1], after[1]),
                         (before[2], after[2]), new_fds)


def test_failing_calls_leak_no_fd_or_thread(leak_run):
    kind, run = leak_run
    expected = LEAK_KINDS[kind]
    if isinstance(expected, set):
        assert set(run.codes) <= expected and sum(run.codes.values()) == FAILING_CALLS, \
            run.codes
    else:
        assert run.codes == {expected: FAILING_CALLS}
    assert run.seconds < 60, f"{FAILING_CALLS} failing calls took {run.seconds:.1f} s"
    assert run.fds[1] <= run.fds[0] + FD_SLACK, \
        f"file descriptors {run.fds[0]} -> {run.fds[1]}; new or changed: {run.new_fds}"
    assert run.threads[1] <= run.threads[0] + THREAD_SLACK, \
        f"threads {run.threads[0]} -> {run.threads[1]}"


@pytest.mark.rss
def test_failing_calls_leak_no_memory(leak_run):
    kind, run = leak_run
    before, after = run.rss
    bound = max(RSS_BOUND_FRACTION * before, RSS_BOUND_BYTES)
    assert after - before < bound, (
        f"RSS grew {(after - before) / MiB:.1f} MiB ({before / MiB:.1f} -> "
        f"{after / MiB:.1f} MiB) over {FAILING_CALLS} failing calls ({kind}); "
        f"bound {bound / MiB:.1f} MiB")


# --- tools/soak.py (make soak) ------------------------------------------------------------------

@pytest.mark.checkout("tools/soak.py")
def test_soak_tool_smoke(tmp_path):
    """A short run of the soak tool: it drives the load through the fault windows, writes
    its JSON and exits 0 or 1 (the RSS verdict; 2 would mean the run itself failed)."""
    out = tmp_path / "soak.json"
    result = subprocess.run(
        [str(VENV_PYTHON), str(ROOT / "tools" / "soak.py"), "--seconds", "3", "--warmup", "1.5",
         "--in-flight", "100", "--fault-every", "1", "--fault-window", "0.3", "--out", str(out)],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    report = json.loads(out.read_text())
    assert report["calls"] > 0 and report["codes"].get("OK", 0) > 0
    assert {w["kind"] for w in report["windows"]} >= {"reset", "stall"}
    assert report["problems"] == []
    for key in ("rss", "fds", "threads"):
        assert report["start"][key] > 0 and report["end"][key] > 0
    assert "RSS growth" in result.stdout and str(out) in result.stdout

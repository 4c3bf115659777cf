"""Connectivity and wait_for_ready (issue 24): subscribe, channel_ready_future, aio
get_state / wait_for_state_change / channel_ready, and readiness through a server restart
on the same port, against grpcio and grpc-go peers (grpcio's client run alongside)."""
from __future__ import annotations

import asyncio
import threading
import time

import grpc
import pytest

import triple_py
import triple_py.aio
from _helpers import TIMEOUT, closed_port
from peers import UNARY_METHOD
from peers.launch import start_peer

C = triple_py.ChannelConnectivity
OPTIONS = [("grpc.initial_reconnect_backoff_ms", 1000)]


class Recorder:
    """Collects subscribed states; waits (bounded) for one to show up."""

    def __init__(self) -> None:
        self.states: list = []
        self._cond = threading.Condition()

    def __call__(self, state) -> None:
        with self._cond:
            self.states.append(state)
            self._cond.notify_all()

    def wait_for(self, state, timeout: float = TIMEOUT) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: state in self.states, timeout), self.states


def in_order(seen: list, expected: list) -> bool:
    """True if ``expected`` is a subsequence of ``seen``."""
    it = iter(seen)
    return all(any(s is e for s in it) for e in expected)


@pytest.mark.parametrize("name", ["grpcio", "go"])
def test_subscribe_sees_idle_connecting_ready_transient_failure(name):
    peer = start_peer(name)
    rec = Recorder()
    with triple_py.insecure_channel(peer.address, options=OPTIONS) as ch:
        ch.subscribe(rec, try_to_connect=True)
        rec.wait_for(C.READY)
        peer.stop()  # the connection breaks; the retry is refused
        rec.wait_for(C.TRANSIENT_FAILURE)
        ch.unsubscribe(rec)
    assert in_order(rec.states, [C.IDLE, C.CONNECTING, C.READY, C.TRANSIENT_FAILURE]), rec.states


def test_subscribe_without_try_to_connect_stays_idle(grpcio_server):
    rec = Recorder()
    with triple_py.insecure_channel(grpcio_server.address) as ch:
        ch.subscribe(rec)
        rec.wait_for(C.IDLE)
        time.sleep(0.1)
        assert rec.states == [C.IDLE]
        ch.unary_unary(UNARY_METHOD)(b"", timeout=TIMEOUT)  # a call connects it
        rec.wait_for(C.READY)
        ch.unsubscribe(rec)


def restart_then_call(mod, name: str, wait_for_ready):
    """The issue's case: a server, a call, the server killed, one failed call, the server
    back on the same port, then a call with timeout=3: its outcome."""
    peer = start_peer(name)
    port = peer.port
    ch = mod.insecure_channel(peer.address, options=OPTIONS)
    try:
        mc = ch.unary_unary(UNARY_METHOD)
        assert mc(b"1", timeout=TIMEOUT) == b"1"
        peer.stop()
        with pytest.raises(mod.RpcError):
            mc(b"2", timeout=TIMEOUT)
        peer = start_peer(name, port=port)
        try:
            return "OK", mc(b"3", timeout=3, wait_for_ready=wait_for_ready)
        except mod.RpcError as err:
            return err.code().name, None
    finally:
        ch.close()
        peer.stop()


@pytest.mark.parametrize("name", ["grpcio", "go"])
def test_wait_for_ready_rides_out_a_restart_like_grpcio(name):
    assert restart_then_call(triple_py, name, True) == ("OK", b"3")
    assert restart_then_call(grpc, name, True) == ("OK", b"3")


def test_without_wait_for_ready_the_backoff_fails_at_once():
    # What wait_for_ready changes: the same call without it fails during the backoff.
    assert restart_then_call(triple_py, "grpcio", None)[0] == "UNAVAILABLE"


def test_wait_for_ready_ends_at_the_deadline_like_grpcio():
    address = f"127.0.0.1:{closed_port()}"
    got = []
    for mod in (triple_py, grpc):
        with mod.insecure_channel(address) as ch:
            started = time.monotonic()
            with pytest.raises(mod.RpcError) as info:
                ch.unary_unary(UNARY_METHOD)(b"", timeout=0.3, wait_for_ready=True)
            got.append((info.value.code().name, time.monotonic() - started >= 0.29))
    assert got[0] == got[1] == ("DEADLINE_EXCEEDED", True)


def test_wait_for_ready_future_and_streams(grpcio_server):
    with triple_py.insecure_channel(grpcio_server.address) as ch:
        fut = ch.unary_unary(UNARY_METHOD).future(b"f", timeout=TIMEOUT, wait_for_ready=True)
        assert fut.result() == b"f"
        stream = ch.stream_stream("/benchmark.BenchmarkService/StreamCall")(
            iter([b"s"]), timeout=TIMEOUT, wait_for_ready=True)
        assert list(stream) == [b"s"]


def test_channel_ready_future_waits_for_a_server_that_comes_later():
    port = closed_port()
    with triple_py.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as ch:
        fut = triple_py.channel_ready_future(ch)
        with pytest.raises(triple_py.FutureTimeoutError):
            fut.result(timeout=0.2)
        assert not fut.done()
        with start_peer("go", port=port):
            fut.result(timeout=TIMEOUT)
            assert fut.done() and not fut.cancelled()
            done = []
            fut.add_done_callback(done.append)
            assert done == [fut]


def test_channel_ready_future_cancel():
    with triple_py.insecure_channel(f"127.0.0.1:{closed_port()}") as ch:
        fut = triple_py.channel_ready_future(ch)
        assert fut.cancel() and fut.cancelled()
        with pytest.raises(triple_py.FutureCancelledError):
            fut.result(timeout=1)


def test_closed_channel_is_shutdown(grpcio_server):
    ch = triple_py.insecure_channel(grpcio_server.address)
    rec = Recorder()
    ch.subscribe(rec, try_to_connect=True)
    rec.wait_for(C.READY)
    ch.close()
    rec.wait_for(C.SHUTDOWN)


def test_aio_state_changes_through_a_restart():
    async def scenario(peer):
        async with triple_py.aio.insecure_channel(peer.address, options=OPTIONS) as ch:
            assert ch.get_state() is C.IDLE
            assert ch.get_state(try_to_connect=True) in (C.CONNECTING, C.READY)
            await asyncio.wait_for(ch.channel_ready(), TIMEOUT)
            assert ch.get_state() is C.READY
            peer.stop()
            await asyncio.wait_for(ch.wait_for_state_change(C.READY), TIMEOUT)
            assert ch.get_state() is not C.READY
            restarted = start_peer("grpcio", port=peer.port)
            try:
                await asyncio.wait_for(ch.channel_ready(), TIMEOUT)
                reply = await ch.unary_unary(UNARY_METHOD)(b"aio", timeout=TIMEOUT)
            finally:
                restarted.stop()
            return reply
    assert asyncio.run(scenario(start_peer("grpcio"))) == b"aio"


def test_wait_for_ready_future_returns_at_once_and_answers_later():
    port = closed_port()
    with triple_py.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS) as ch:
        started = time.monotonic()
        fut = ch.unary_unary(UNARY_METHOD).future(b"later", timeout=TIMEOUT,
                                                  wait_for_ready=True)
        assert time.monotonic() - started < 0.5 and not fut.done()
        done = threading.Event()
        fut.add_done_callback(lambda f: done.set())
        with start_peer("grpcio", port=port):
            assert fut.result(TIMEOUT) == b"later"
            assert done.wait(TIMEOUT) and fut.code() is triple_py.StatusCode.OK


def test_wait_for_ready_future_cancelled_before_it_starts():
    with triple_py.insecure_channel(f"127.0.0.1:{closed_port()}") as ch:
        fut = ch.unary_unary(UNARY_METHOD).future(b"", timeout=TIMEOUT, wait_for_ready=True)
        seen = []
        fut.add_done_callback(seen.append)
        assert fut.cancel() and fut.cancelled() and fut.done()
        assert seen == [fut]
        with pytest.raises(triple_py.FutureCancelledError):
            fut.result(1)
        assert fut.code() is triple_py.StatusCode.CANCELLED

"""The cases of test_balancer_ready.py, each run in a child process with a hard timeout
(a wrong wait would hang): round_robin picks READY backends only, calls queue while no
backend is READY, fail fast or wait_for_ready when every backend is down, and
``waitForReady`` from the service config.  Each case raises AssertionError on failure.

Run one: ``python -c "import ready_cases; ready_cases.<name>()"`` with this directory on
``sys.path``.
"""
from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Callable, List

import triple_py
import triple_py.aio
from triple_py._resolver import Endpoint, register_scheme
from triple_py.testing import EchoServer
from triple_py_testing.faults import FaultProxy

METHOD = "/benchmark.BenchmarkService/UnaryCall"
STREAM_METHOD = "/benchmark.BenchmarkService/StreamCall"
ROUND_ROBIN = [("grpc.lb_policy_name", "round_robin")]
LONG = 10.0  # the deadline of calls that must succeed


def stalled(server: EchoServer) -> FaultProxy:
    """A proxy to ``server`` that accepts connections and forwards nothing until
    ``clear()``: a backend whose HTTP/2 SETTINGS do not come (black-holed, or still
    starting)."""
    proxy = FaultProxy(server.address).start()
    proxy.set_fault("stall")
    return proxy


def free_port() -> int:
    """A loopback port nobody listens on now (bound for a moment, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ipv4(*ports: int) -> str:
    return "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports)


def code_of(fn: Callable[[], object]) -> triple_py.StatusCode:
    """The status code fn() fails with (OK if it does not)."""
    try:
        fn()
    except triple_py.RpcError as exc:
        return exc.code()
    return triple_py.StatusCode.OK


def black_holed_backend_gets_no_calls() -> None:
    """Round robin over a black-holed backend and two live ones: every call succeeds
    on the live ones well within a deadline that a call held by the black hole would
    miss (sync, futures, aio)."""
    with EchoServer() as a, EchoServer() as b, EchoServer() as c, stalled(c) as hole:
        target = ipv4(hole.port, a.port, b.port)
        with triple_py.insecure_channel(target, options=ROUND_ROBIN) as channel:
            call = channel.unary_unary(METHOD)
            for _ in range(30):  # the first ones queue until a or b is READY
                assert call(b"x", timeout=2) == b"x"
            futures = [call.future(b"f", timeout=2) for _ in range(12)]
            assert [f.result() for f in futures] == [b"f"] * 12

        async def aio() -> list:
            async with triple_py.aio.insecure_channel(target, options=ROUND_ROBIN) as ch:
                unary = ch.unary_unary(METHOD)
                return await asyncio.gather(*(unary(b"a", timeout=2) for _ in range(12)))
        assert asyncio.run(aio()) == [b"a"] * 12
        assert a.stats()["calls"] + b.stats()["calls"] == 54


class ListResolver:
    """A resolver whose endpoint list the case sets."""

    def __init__(self, endpoints: List[Endpoint]) -> None:
        self.endpoints = endpoints
        self.on_update: Callable[[List[Endpoint]], None] = lambda eps: None

    def start(self, on_update: Callable[[List[Endpoint]], None]) -> None:
        self.on_update = on_update
        on_update(list(self.endpoints))

    def set(self, endpoints: List[Endpoint]) -> None:
        self.on_update(list(endpoints))

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass


def backend_added_under_load_gets_calls_once_ready() -> None:
    """A backend added under load whose connection does not become READY for 1.5 s:
    no call waits for it (each has a 1 s deadline) and it gets none; once READY it
    serves calls."""
    with EchoServer() as a, EchoServer() as c, stalled(c) as slow:
        resolver = ListResolver([Endpoint("127.0.0.1", a.port)])
        register_scheme("ready-list", lambda parsed: resolver)
        failures: List[BaseException] = []
        stop = threading.Event()
        with triple_py.insecure_channel("ready-list:///svc", options=ROUND_ROBIN) as channel:
            call = channel.unary_unary(METHOD)

            def load() -> None:
                end = time.monotonic() + 20
                for _ in range(100_000):
                    if stop.is_set() or time.monotonic() > end:
                        return
                    try:
                        call(b"x", timeout=1.0)
                    except triple_py.RpcError as exc:
                        failures.append(exc)
            threads = [threading.Thread(target=load) for _ in range(3)]
            for t in threads:
                t.start()
            time.sleep(0.3)
            resolver.set([Endpoint("127.0.0.1", a.port), Endpoint("127.0.0.1", slow.port)])
            time.sleep(1.5)
            assert c.stats()["calls"] == 0, "a call reached the backend before it was READY"
            slow.clear()
            end = time.monotonic() + 15
            while c.stats()["calls"] < 20 and time.monotonic() < end:
                time.sleep(0.05)
            stop.set()
            for t in threads:
                t.join()
        assert not failures, failures[:3]
        assert c.stats()["calls"] >= 20, "the added backend got no calls once READY"


def queued_calls_succeed_when_a_backend_becomes_ready() -> None:
    """No backend becomes READY for 1 s: calls started meanwhile (sync threads,
    futures, aio) wait and then succeed; the aio wait does not block the loop."""
    with EchoServer() as a, EchoServer() as b:
        def ready_in_1s() -> tuple:
            proxies = (stalled(a), stalled(b))
            threading.Timer(1.0, lambda: [p.clear() for p in proxies]).start()
            return proxies
        proxies = ready_in_1s()
        with triple_py.insecure_channel(ipv4(*(p.port for p in proxies)),
                                        options=ROUND_ROBIN) as channel:
            call = channel.unary_unary(METHOD)
            results: List[object] = []
            threads = [threading.Thread(
                target=lambda: results.append(call(b"s", timeout=LONG))) for _ in range(4)]
            for t in threads:
                t.start()
            futures = [call.future(b"f", timeout=LONG) for _ in range(4)]
            for t in threads:
                t.join()
            assert results == [b"s"] * 4
            assert [f.result() for f in futures] == [b"f"] * 4

        async def aio(target: str) -> tuple:
            ticks = 0
            async with triple_py.aio.insecure_channel(target, options=ROUND_ROBIN) as ch:
                unary = ch.unary_unary(METHOD)
                calls = asyncio.gather(*(unary(b"a", timeout=LONG) for _ in range(6)))
                while not calls.done():  # the loop keeps running while the calls wait
                    ticks += 1
                    await asyncio.sleep(0.01)
                return await calls, ticks
        proxies += ready_in_1s()
        answers, ticks = asyncio.run(aio(ipv4(*(p.port for p in proxies[2:]))))
        assert answers == [b"a"] * 6
        assert ticks >= 20, f"the event loop ran only {ticks} times in the 1 s wait"
        for p in proxies:
            p.stop()


def all_backends_down_fail_fast_or_wait() -> None:
    """Every backend refuses: a call fails UNAVAILABLE at once (not at its deadline);
    with wait_for_ready it waits and succeeds when a backend starts late."""
    late = free_port()
    target = ipv4(free_port(), late)
    with triple_py.insecure_channel(target, options=ROUND_ROBIN) as channel:
        call = channel.unary_unary(METHOD)
        end = time.monotonic() + LONG
        while channel._core.state() != 3 and time.monotonic() < end:  # TRANSIENT_FAILURE
            time.sleep(0.01)
        assert code_of(lambda: call(b"x", timeout=LONG)) is triple_py.StatusCode.UNAVAILABLE
        assert code_of(lambda: call(b"x", timeout=0.3, wait_for_ready=True)) is \
            triple_py.StatusCode.DEADLINE_EXCEEDED
        got: List[object] = []
        waiter = threading.Thread(
            target=lambda: got.append(call(b"w", timeout=LONG, wait_for_ready=True)))
        waiter.start()
        time.sleep(0.3)
        with EchoServer(port=late):
            waiter.join()
    assert got == [b"w"]


def _late_server_case(target: str, options: list, port: int, make_call: Callable) -> object:
    """make_call(channel) while nothing listens on ``port``; a server starts there
    0.3 s later; what make_call returned (or the RpcError's code)."""
    out: List[object] = []
    with triple_py.insecure_channel(target, options=options) as channel:
        def run() -> None:
            try:
                out.append(make_call(channel))
            except triple_py.RpcError as exc:
                out.append(exc.code())
        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(0.3)
        with EchoServer(port=port):
            worker.join()
    return out[0]


def service_config_wait_for_ready() -> None:
    """methodConfig waitForReady true: a call without wait_for_ready waits for a
    backend that starts late (sync, with_call, future, a bidi stream, aio; direct and
    round_robin channels); a call's own wait_for_ready=False overrides it and fails
    UNAVAILABLE; without the config the call fails UNAVAILABLE too."""
    config = json.dumps({"methodConfig": [{
        "name": [{"service": "benchmark.BenchmarkService"}], "waitForReady": True}]})
    ok, unavailable = b"x", triple_py.StatusCode.UNAVAILABLE

    def aio_call(target: str, options: list) -> Callable:
        def make(_: object) -> object:
            async def run() -> object:
                async with triple_py.aio.insecure_channel(target, options=options) as ch:
                    return await ch.unary_unary(METHOD)(b"x", timeout=LONG)
            return asyncio.run(run())
        return make
    for balanced in (False, True):
        kinds = {
            "call": lambda ch: ch.unary_unary(METHOD)(b"x", timeout=LONG),
            "with_call": lambda ch: ch.unary_unary(METHOD).with_call(b"x", timeout=LONG)[0],
            "future": lambda ch: ch.unary_unary(METHOD).future(b"x", timeout=LONG).result(),
            "stream_stream": lambda ch: b"".join(
                ch.stream_stream(STREAM_METHOD)(iter([b"x"]), timeout=LONG)),
        }
        for name, make_call in [*kinds.items(), ("aio", None)]:
            for options, want in (([("grpc.service_config", config)], ok), ([], unavailable)):
                port = free_port()
                target = ipv4(port, port) if balanced else f"127.0.0.1:{port}"
                opts = [*options, *(ROUND_ROBIN if balanced else [])]
                fn = make_call if make_call else aio_call(target, opts)
                got = _late_server_case(target, opts, port, fn)
                assert got == want, (name, balanced, options, got)
        port = free_port()
        target = ipv4(port, port) if balanced else f"127.0.0.1:{port}"
        got = _late_server_case(
            target, [("grpc.service_config", config), *(ROUND_ROBIN if balanced else [])],
            port, lambda ch: ch.unary_unary(METHOD)(b"x", timeout=LONG, wait_for_ready=False))
        assert got == unavailable, ("explicit False", balanced, got)

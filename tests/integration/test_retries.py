"""Retries (issue 25): the service config's retryPolicy, retry throttling and per-method
timeouts (grpc doc/service_config.md, proposal A6), and the transparent retry of calls
no server processed (REFUSED_STREAM, streams above a GOAWAY's last-stream-id)."""
from __future__ import annotations

import asyncio
import collections
import json
import threading
import time
from concurrent import futures
from typing import List

import grpc
import pytest

import triple_py
import triple_py.aio
from _helpers import TIMEOUT, unary
from triple_py.testing import EchoServer

Code = triple_py.StatusCode
METHOD = "/benchmark.BenchmarkService/UnaryCall"


class FlakyServer:
    """A grpcio server whose UnaryCall fails the first ``x-fail`` attempts of each
    ``x-id`` with status ``x-code`` (UNAVAILABLE by default), then echoes; an
    ``x-pushback`` value is sent as grpc-retry-pushback-ms; ``x-sleep-ms`` delays;
    ``x-headers`` sends the response headers before failing (no trailers-only answer)."""

    def __init__(self) -> None:
        self.attempts: collections.Counter = collections.Counter()
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(8))
        handler = grpc.method_handlers_generic_handler(
            "benchmark.BenchmarkService",
            {"UnaryCall": grpc.unary_unary_rpc_method_handler(self._unary)})
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _unary(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        md = dict(context.invocation_metadata())
        with self._lock:
            self.attempts[md.get("x-id", "")] += 1
            n = self.attempts[md.get("x-id", "")]
        if "x-sleep-ms" in md:
            time.sleep(int(md["x-sleep-ms"]) / 1000)
        if n <= int(md.get("x-fail", "0")):
            if "x-headers" in md:
                context.send_initial_metadata((("x-began", "1"),))
            if "x-pushback" in md:
                context.set_trailing_metadata((("grpc-retry-pushback-ms", md["x-pushback"]),))
            context.abort(grpc.StatusCode[md.get("x-code", "UNAVAILABLE")], f"attempt {n} fails")
        return request


@pytest.fixture(scope="module")
def flaky():
    server = FlakyServer()
    yield server
    server.server.stop(0)


def config(**retry_policy) -> str:
    policy = {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
              "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"],
              **retry_policy}
    return json.dumps({"methodConfig": [{"name": [{"service": "benchmark.BenchmarkService"}],
                                         "retryPolicy": policy}]})


def channel_with(flaky, service_config: str, *extra):
    return triple_py.insecure_channel(f"127.0.0.1:{flaky.port}",
                                      options=[("grpc.service_config", service_config),
                                               *extra])


def md(call_id: str, fail: int, **more) -> list:
    return [("x-id", call_id), ("x-fail", str(fail)), *((f"x-{k}", v) for k, v in more.items())]


def test_retried_until_it_succeeds(flaky):
    with channel_with(flaky, config()) as channel:
        response, call = unary(channel).with_call(b"r", timeout=TIMEOUT, metadata=md("a", 2))
        assert response == b"r" and call.code() is Code.OK
        assert flaky.attempts["a"] == 3
        assert unary(channel).future(b"f", timeout=TIMEOUT,
                                     metadata=md("f", 1)).result(TIMEOUT) == b"f"
        assert flaky.attempts["f"] == 2


def test_gives_up_after_max_attempts(flaky):
    with channel_with(flaky, config()) as channel:
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"r", timeout=TIMEOUT, metadata=md("b", 5))
    assert info.value.code() is Code.UNAVAILABLE
    assert info.value.details() == "attempt 3 fails"
    assert flaky.attempts["b"] == 3


def test_non_retryable_code_is_not_retried(flaky):
    with channel_with(flaky, config()) as channel:
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"r", timeout=TIMEOUT, metadata=md("c", 2, code="INTERNAL"))
    assert info.value.code() is Code.INTERNAL
    assert flaky.attempts["c"] == 1


def test_a_call_whose_response_began_is_not_retried(flaky):
    """Response headers that were not trailers-only commit the call (gRPC's retry design,
    A6): a retryable status after them ends the call; the same status in a trailers-only
    answer is retried (the test above)."""
    with channel_with(flaky, config()) as channel:
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"r", timeout=TIMEOUT, metadata=md("h", 2, headers="1"))
        assert info.value.code() is Code.UNAVAILABLE
        assert ("x-began", "1") in info.value.initial_metadata()
        assert flaky.attempts["h"] == 1
        response = unary(channel)(b"r", timeout=TIMEOUT, metadata=md("h2", 1))
        assert response == b"r" and flaky.attempts["h2"] == 2


def test_disabled_retries(flaky):
    with channel_with(flaky, config(), ("grpc.enable_retries", 0)) as channel:
        with pytest.raises(triple_py.RpcError):
            unary(channel)(b"r", timeout=TIMEOUT, metadata=md("d", 1))
    assert flaky.attempts["d"] == 1


def test_pushback_sets_the_delay_and_a_negative_one_stops(flaky):
    with channel_with(flaky, config(initialBackoff="5s", maxBackoff="5s")) as channel:
        started = time.monotonic()
        assert unary(channel)(b"p", timeout=TIMEOUT, metadata=md("p", 1, pushback="50")) == b"p"
        assert time.monotonic() - started < 4  # not the 0..5 s backoff... mostly
        with pytest.raises(triple_py.RpcError):
            unary(channel)(b"n", timeout=TIMEOUT, metadata=md("n", 1, pushback="-1"))
    assert flaky.attempts["p"] == 2 and flaky.attempts["n"] == 1


def test_the_deadline_covers_every_attempt(flaky):
    with channel_with(flaky, config(maxAttempts=5, initialBackoff="0.3s",
                                    maxBackoff="0.3s", backoffMultiplier=1)) as channel:
        started = time.monotonic()
        with pytest.raises(triple_py.RpcError):
            unary(channel)(b"t", timeout=0.5, metadata=md("t", 10, **{"sleep-ms": "100"}))
        assert time.monotonic() - started < 2.0
    assert 1 <= flaky.attempts["t"] < 5


def test_throttling_stops_retries(flaky):
    throttled = json.loads(config())
    throttled["retryThrottling"] = {"maxTokens": 4, "tokenRatio": 0.1}
    with channel_with(flaky, json.dumps(throttled)) as channel:
        for i in range(3):
            with pytest.raises(triple_py.RpcError):
                unary(channel)(b"x", timeout=TIMEOUT, metadata=md(f"th{i}", 9))
    # tokens 4 -> 3 (retry) -> 2 (no retry: not above half); then no more retries
    assert [flaky.attempts[f"th{i}"] for i in range(3)] == [2, 1, 1]


def test_method_timeout_from_the_service_config(flaky):
    sc = json.dumps({"methodConfig": [{"name": [{"service": "benchmark.BenchmarkService",
                                                 "method": "UnaryCall"}],
                                       "timeout": "0.2s"}]})
    with channel_with(flaky, sc) as channel:
        started = time.monotonic()
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"s", timeout=TIMEOUT, metadata=md("s", 0, **{"sleep-ms": "1500"}))
        assert info.value.code() is Code.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 1.2


def test_aio_unary_is_retried(flaky):
    async def run():
        async with triple_py.aio.insecure_channel(
                f"127.0.0.1:{flaky.port}",
                options=[("grpc.service_config", config())]) as channel:
            return await channel.unary_unary(METHOD)(b"a", timeout=TIMEOUT,
                                                     metadata=md("aio", 2))
    assert asyncio.run(run()) == b"a"
    assert flaky.attempts["aio"] == 3


def _goaway_load(options, futures: bool = False) -> tuple[int, List[Exception], int]:
    """Four threads of plain calls (``futures``: their ``future().result()``) while a
    fifth makes calls that make the embedded server send GOAWAY (x-misbehave: goaway,
    last-stream-id below them): returns the calls that succeeded, the plain calls that
    failed, and the connections made."""
    with EchoServer() as server, triple_py.insecure_channel(server.address,
                                                            options=options) as channel:
        call = unary(channel)
        failures: List[Exception] = []
        ok = [0]
        done = threading.Event()

        def load() -> None:
            deadline = time.monotonic() + 20
            while not done.is_set() and time.monotonic() < deadline:
                try:
                    if futures:
                        call.future(b"g" * 64, timeout=TIMEOUT).result(TIMEOUT)
                    else:
                        call(b"g" * 64, timeout=TIMEOUT)
                    ok[0] += 1
                except triple_py.RpcError as exc:
                    failures.append(exc)
        threads = [threading.Thread(target=load) for _ in range(4)]
        for t in threads:
            t.start()
        for _ in range(6):
            time.sleep(0.15)
            # Straight to the core, not retried, so each trigger makes one GOAWAY (a
            # retried trigger would be refused again and again, a burst of GOAWAYs that
            # could outlast a plain call's transparent retries).
            trigger = channel.core_channel.call(METHOD, b"", TIMEOUT,
                                                [("x-misbehave", "goaway")], wait=True)
            assert trigger.code() != 0  # refused by its GOAWAY
        done.set()
        for t in threads:
            t.join()
        return ok[0], failures, channel.stats()["connects"]


def test_goaway_mid_load_loses_no_call():
    ok, failures, connects = _goaway_load(None)
    assert not failures, failures[:3]
    assert ok > 50
    assert connects >= 6  # every GOAWAY moved the calls to a new connection


def test_goaway_mid_load_loses_no_future():
    """Futures without a retry policy get grpc's transparent retry too (grpc core
    applies it to every call, whatever the Python API)."""
    ok, failures, connects = _goaway_load(None, futures=True)
    assert not failures, failures[:3]
    assert ok > 50 and connects >= 6


def test_without_retries_a_refused_call_fails():
    """With grpc.enable_retries off, a call above the last-stream-id fails (the plain
    calls of the test above then fail too: 8 of about 26000-37000 in two runs)."""
    with EchoServer() as server, triple_py.insecure_channel(
            server.address, options=[("grpc.enable_retries", 0)]) as channel:
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"", timeout=TIMEOUT, metadata=[("x-misbehave", "goaway")])
        assert info.value.code() is Code.UNAVAILABLE
        assert "GOAWAY" in info.value.details()


def test_server_stream_is_retried_before_its_first_message():
    """A server stream that fails before any response is started again; the grpcio
    server fails the first attempt of each x-id, then streams three messages."""
    attempts: collections.Counter = collections.Counter()

    def stream(request, context):
        key = dict(context.invocation_metadata()).get("x-id", "")
        attempts[key] += 1
        if attempts[key] == 1:
            context.abort(grpc.StatusCode.UNAVAILABLE, "first attempt fails")
        for _ in range(3):
            yield request
    server = grpc.server(futures.ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "benchmark.BenchmarkService",
        {"StreamingFromServer": grpc.unary_stream_rpc_method_handler(stream)}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with triple_py.insecure_channel(f"127.0.0.1:{port}", options=[
                ("grpc.service_config", config())]) as channel:
            call = channel.unary_stream("/benchmark.BenchmarkService/StreamingFromServer")
            assert list(call(b"s", timeout=TIMEOUT, metadata=[("x-id", "s1")])) == [b"s"] * 3
        assert attempts["s1"] == 2
    finally:
        server.stop(0)

"""Retries of streaming calls (issue 25, gRPC's retry design A6): client streams and bidi
streams replay the requests they sent on the next attempt until the call commits (the
response began, or the kept requests passed grpc.per_rpc_retry_buffer_size); server
streams are retried until their first message; sync and asyncio.  A grpcio server fails
the first ``x-fail`` attempts of each ``x-id`` and records the requests of every attempt."""
from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import threading
import time
from concurrent import futures
from typing import Any, List

import grpc
import pytest

import triple_py
import triple_py.aio
from _helpers import TIMEOUT, start_child
from test_retries import config as unary_config

Code = triple_py.StatusCode
SERVICE = "benchmark.BenchmarkService"
CLIENT_STREAM = f"/{SERVICE}/StreamingFromClient"
SERVER_STREAM = f"/{SERVICE}/StreamingFromServer"
BIDI = f"/{SERVICE}/StreamingCall"


class FlakyStreams:
    """A grpcio server whose streaming methods fail the first ``x-fail`` attempts of each
    ``x-id`` with UNAVAILABLE: the client stream after reading every request (and
    sleeping ``x-sleep-ms``), the bidi
    stream before answering (after reading every request, or at once with ``x-early``),
    the server stream before its first message (or, with ``x-after``, after it)."""

    def __init__(self) -> None:
        self.attempts: collections.Counter = collections.Counter()
        self.seen: dict[str, List[List[bytes]]] = collections.defaultdict(list)
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(16))
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {
            "StreamingFromClient": grpc.stream_unary_rpc_method_handler(self._client),
            "StreamingFromServer": grpc.unary_stream_rpc_method_handler(self._server),
            "StreamingCall": grpc.stream_stream_rpc_method_handler(self._bidi)}),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def _attempt(self, context: grpc.ServicerContext) -> tuple[dict, int, list]:
        md = dict(context.invocation_metadata())
        key = md.get("x-id", "")
        with self._lock:
            self.attempts[key] += 1
            received: list = []
            self.seen[key].append(received)
            return md, self.attempts[key], received

    @staticmethod
    def _fails(md: dict, n: int) -> bool:
        return n <= int(md.get("x-fail", "0"))

    def _client(self, requests: Any, context: grpc.ServicerContext) -> bytes:
        md, n, received = self._attempt(context)
        received.extend(requests)
        time.sleep(int(md.get("x-sleep-ms", "0")) / 1000)
        if self._fails(md, n):
            context.abort(grpc.StatusCode.UNAVAILABLE, f"attempt {n} fails")
        return b"%d" % len(received)

    def _server(self, request: bytes, context: grpc.ServicerContext) -> Any:
        md, n, _ = self._attempt(context)
        if self._fails(md, n) and "x-after" not in md:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"attempt {n} fails")
        yield request
        if self._fails(md, n):
            context.abort(grpc.StatusCode.UNAVAILABLE, f"attempt {n} fails after a message")
        yield request

    def _bidi(self, requests: Any, context: grpc.ServicerContext) -> Any:
        md, n, received = self._attempt(context)
        if self._fails(md, n):
            if "x-early" not in md:
                received.extend(requests)
            context.abort(grpc.StatusCode.UNAVAILABLE, f"attempt {n} fails")
        for request in requests:
            received.append(request)
            yield request


@pytest.fixture(scope="module")
def flaky():
    streams = FlakyStreams()
    try:
        yield streams
    finally:
        streams.server.stop(0)


def config(throttling: Any = None, **retry_policy) -> str:
    """The retry policy of test_retries (3 attempts, UNAVAILABLE), with ``throttling``
    as the service config's retryThrottling."""
    sc = json.loads(unary_config(**retry_policy))
    if throttling:
        sc["retryThrottling"] = throttling
    return json.dumps(sc)


def channel_with(flaky, service_config: str = "", *extra):
    return triple_py.insecure_channel(f"127.0.0.1:{flaky.port}", options=[
        ("grpc.service_config", service_config or config()), *extra])


def md(call_id: str, fail: int, *flags: str) -> list:
    return [("x-id", call_id), ("x-fail", str(fail)), *((f"x-{f}", "1") for f in flags)]


def requests(n: int, size: int = 8) -> List[bytes]:
    return [b"%0*d" % (size, i) for i in range(n)]


def test_client_stream_replays_its_requests(flaky):
    sent = requests(50)
    with channel_with(flaky) as channel:
        call = channel.stream_unary(CLIENT_STREAM)
        response, result = call.with_call(iter(sent), timeout=TIMEOUT, metadata=md("cs", 2))
        assert response == b"50" and result.code() is Code.OK
        assert flaky.attempts["cs"] == 3
        assert flaky.seen["cs"][-1] == sent  # every request, in order, on the last attempt
        fut = call.future(iter(sent), timeout=TIMEOUT, metadata=md("csf", 1))
        assert fut.result(TIMEOUT) == b"50" and flaky.seen["csf"][-1] == sent


def test_client_stream_gives_up_after_max_attempts(flaky):
    with channel_with(flaky) as channel:
        with pytest.raises(triple_py.RpcError) as info:
            channel.stream_unary(CLIENT_STREAM)(iter(requests(5)), timeout=TIMEOUT,
                                                metadata=md("cmax", 9))
    assert info.value.code() is Code.UNAVAILABLE and info.value.details() == "attempt 3 fails"
    assert flaky.attempts["cmax"] == 3


def test_bidi_stream_replays_its_requests(flaky):
    sent = requests(40)
    with channel_with(flaky) as channel:
        call = channel.stream_stream(BIDI)
        assert list(call(iter(sent), timeout=TIMEOUT, metadata=md("bi", 2))) == sent
        assert flaky.attempts["bi"] == 3 and flaky.seen["bi"][-1] == sent
        # the server fails without reading: the writes of the failed attempt are refused
        assert list(call(iter(sent), timeout=TIMEOUT, metadata=md("be", 1, "early"))) == sent
        assert flaky.attempts["be"] == 2 and flaky.seen["be"][-1] == sent


def test_bidi_stream_written_by_hand_is_retried(flaky):
    sent = requests(10)
    with channel_with(flaky) as channel:
        stream = channel.stream_stream(BIDI)(timeout=TIMEOUT, metadata=md("bw", 1))
        for request in sent:
            stream.write(request)
        stream.done_writing()
        assert list(stream) == sent and stream.code() is Code.OK
    assert flaky.attempts["bw"] == 2 and flaky.seen["bw"][-1] == sent


def test_server_stream_failing_after_its_first_message_is_not_retried(flaky):
    with channel_with(flaky) as channel:
        call = channel.unary_stream(SERVER_STREAM)
        assert list(call(b"s", timeout=TIMEOUT, metadata=md("ss", 1))) == [b"s", b"s"]
        stream = call(b"a", timeout=TIMEOUT, metadata=md("sa", 1, "after"))
        assert next(stream) == b"a"
        with pytest.raises(triple_py.RpcError) as info:
            next(stream)
    assert info.value.code() is Code.UNAVAILABLE
    assert flaky.attempts["ss"] == 2 and flaky.attempts["sa"] == 1


def test_a_stream_past_the_per_call_buffer_is_not_retried(flaky):
    """40 requests of 100 bytes pass a 1000-byte buffer: the call commits and its failure
    ends it; the same stream under the default 256 KiB is retried."""
    sent = requests(40, 100)
    with channel_with(flaky, config(), ("grpc.per_rpc_retry_buffer_size", 1000)) as channel:
        with pytest.raises(triple_py.RpcError):
            channel.stream_unary(CLIENT_STREAM)(iter(sent), timeout=TIMEOUT,
                                                metadata=md("big", 1))
        with pytest.raises(triple_py.RpcError):
            list(channel.stream_stream(BIDI)(iter(sent), timeout=TIMEOUT,
                                             metadata=md("bigb", 1)))
    with channel_with(flaky) as channel:
        assert channel.stream_unary(CLIENT_STREAM)(iter(sent), timeout=TIMEOUT,
                                                   metadata=md("fits", 1)) == b"40"
    assert flaky.attempts["big"] == 1 and flaky.attempts["bigb"] == 1
    assert flaky.attempts["fits"] == 2


def test_the_channel_wide_buffer_limit_commits(flaky):
    with channel_with(flaky, config(), ("grpc.retry_buffer_size", 500)) as channel:
        with pytest.raises(triple_py.RpcError):
            channel.stream_unary(CLIENT_STREAM)(iter(requests(10, 100)), timeout=TIMEOUT,
                                                metadata=md("chan", 1))
        # the failed call gave its bytes back: a small stream is retried again
        assert channel.stream_unary(CLIENT_STREAM)(iter(requests(3, 100)), timeout=TIMEOUT,
                                                   metadata=md("chan2", 1)) == b"3"
    assert flaky.attempts["chan"] == 1 and flaky.attempts["chan2"] == 2


def test_throttling_stops_stream_retries(flaky):
    throttled = config({"maxTokens": 4, "tokenRatio": 0.1})
    with channel_with(flaky, throttled) as channel:
        for i in range(3):
            with pytest.raises(triple_py.RpcError):
                channel.stream_unary(CLIENT_STREAM)(iter(requests(3)), timeout=TIMEOUT,
                                                    metadata=md(f"th{i}", 9))
    assert [flaky.attempts[f"th{i}"] for i in range(3)] == [2, 1, 1]


def test_disabled_retries_leave_streams_alone(flaky):
    with channel_with(flaky, config(), ("grpc.enable_retries", 0)) as channel:
        with pytest.raises(triple_py.RpcError):
            channel.stream_unary(CLIENT_STREAM)(iter(requests(3)), timeout=TIMEOUT,
                                                metadata=md("off", 1))
    assert flaky.attempts["off"] == 1


def test_the_deadline_covers_every_stream_attempt(flaky):
    slow = config(maxAttempts=5, initialBackoff="0.3s", maxBackoff="0.3s",
                  backoffMultiplier=1)
    with channel_with(flaky, slow) as channel:
        started = time.monotonic()
        with pytest.raises(triple_py.RpcError):
            channel.stream_unary(CLIENT_STREAM)(iter(requests(3)), timeout=0.5,
                                                metadata=[*md("dl", 10),
                                                          ("x-sleep-ms", "150")])
        assert time.monotonic() - started < 2.0
    assert 1 <= flaky.attempts["dl"] < 5


def aio_channel(flaky, *extra):
    return triple_py.aio.insecure_channel(f"127.0.0.1:{flaky.port}", options=[
        ("grpc.service_config", config()), *extra])


def test_aio_streams_are_retried(flaky):
    sent = requests(30)

    async def run() -> tuple:
        async with aio_channel(flaky) as channel:
            client = await channel.stream_unary(CLIENT_STREAM)(iter(sent), timeout=TIMEOUT,
                                                               metadata=md("acs", 2))
            bidi = [r async for r in channel.stream_stream(BIDI)(
                iter(sent), timeout=TIMEOUT, metadata=md("abi", 2))]
            server = [r async for r in channel.unary_stream(SERVER_STREAM)(
                b"q", timeout=TIMEOUT, metadata=md("ass", 2))]
            stream = channel.unary_stream(SERVER_STREAM)(b"z", timeout=TIMEOUT,
                                                         metadata=md("asa", 1, "after"))
            first = await stream.read()
            with pytest.raises(triple_py.aio.AioRpcError):
                await stream.read()
            return client, bidi, server, first
    client, bidi, server, first = asyncio.run(run())
    assert client == b"30" and flaky.seen["acs"][-1] == sent and flaky.attempts["acs"] == 3
    assert bidi == sent and flaky.seen["abi"][-1] == sent and flaky.attempts["abi"] == 3
    assert server == [b"q", b"q"] and flaky.attempts["ass"] == 3
    assert first == b"z" and flaky.attempts["asa"] == 1


def test_aio_bidi_written_by_hand_is_retried(flaky):
    sent = requests(10)

    async def run() -> list:
        async with aio_channel(flaky) as channel:
            call = channel.stream_stream(BIDI)(timeout=TIMEOUT, metadata=md("abw", 1))
            for request in sent:
                await call.write(request)
            await call.done_writing()
            return [r async for r in call]
    assert asyncio.run(run()) == sent
    assert flaky.attempts["abw"] == 2 and flaky.seen["abw"][-1] == sent


def test_aio_stream_past_the_buffer_is_not_retried(flaky):
    async def run() -> None:
        async with aio_channel(flaky, ("grpc.per_rpc_retry_buffer_size", 1000)) as channel:
            with pytest.raises(triple_py.aio.AioRpcError):
                await channel.stream_unary(CLIENT_STREAM)(iter(requests(40, 100)),
                                                          timeout=TIMEOUT,
                                                          metadata=md("abig", 1))
    asyncio.run(run())
    assert flaky.attempts["abig"] == 1


# GOAWAY under a load of bidi streams: the streams above the last-stream-id were never
# processed and are sent again (transparent retry, requests replayed).  In a child process
# with a hard timeout: a lost wake-up would hang.
_GOAWAY_STREAMS = r"""
import asyncio, sys, threading, time
import triple_py, triple_py.aio
from triple_py.testing import EchoServer
mode, retries = sys.argv[1], int(sys.argv[2])
METHOD = "/benchmark.BenchmarkService/StreamCall"
SENT = [b"m%02d" % i for i in range(8)]
opts = [("grpc.enable_retries", retries)]
with EchoServer() as server:
    stop = time.monotonic() + 20
    done = threading.Event()
    ok, failed = [0], []

    def triggers(channel):
        # straight to the core (no retry of the trigger: one GOAWAY each)
        for _ in range(6):
            time.sleep(0.15)
            trigger = channel.core_channel.call(
                "/benchmark.BenchmarkService/UnaryCall", b"", 10,
                [("x-misbehave", "goaway")], wait=True)
            assert trigger.code() != 0
        done.set()

    if mode == "sync":
        with triple_py.insecure_channel(server.address, options=opts) as channel:
            call = channel.stream_stream(METHOD)
            def load():
                while not done.is_set() and time.monotonic() < stop:
                    try:
                        got = list(call(iter(SENT), timeout=10))
                        assert got == SENT, got
                        ok[0] += 1
                    except triple_py.RpcError as exc:
                        failed.append(exc)
            threads = [threading.Thread(target=load) for _ in range(4)]
            for t in threads:
                t.start()
            triggers(channel)
            for t in threads:
                t.join()
    else:
        async def main():
            async with triple_py.aio.insecure_channel(server.address, options=opts) as ch:
                call = ch.stream_stream(METHOD)
                async def load():
                    while not done.is_set() and time.monotonic() < stop:
                        try:
                            got = [r async for r in call(iter(SENT), timeout=10)]
                            assert got == SENT, got
                            ok[0] += 1
                        except triple_py.RpcError as exc:
                            failed.append(exc)
                # the triggers share the aio channel's connection (its sync core)
                t = threading.Thread(target=triggers, args=(ch._sync,))
                t.start()
                await asyncio.gather(*(load() for _ in range(4)))
                t.join()
        asyncio.run(main())
print(ok[0], len(failed), repr(failed[:1]))
"""


@pytest.mark.parametrize("mode", ["sync", "aio"])
def test_goaway_mid_stream_load_loses_no_stream(mode):
    child = start_child(_GOAWAY_STREAMS, mode, "1")
    try:
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 0, err[-2000:]
    ok, failed, first = out.split(maxsplit=2)
    assert int(failed) == 0, first
    assert int(ok) > 20

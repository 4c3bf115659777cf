"""The ``triple.unary_fast_path`` channel option: False sends unary calls through the
client-streaming machinery (dubbo-go's duplex path, the baseline of the seeds' A/B).

Whichever path a call takes, a user must see the same thing: the same response, metadata,
status, deadline and error for malformed answers, from the sync and asyncio APIs, against
the real peers. What differs is on the wire: on the Triple wire the fast path declares the
request's content-length, the streaming machinery cannot know it; on the gRPC wire neither
sends one (the envelope carries the length; the rogue peer records the headers).
"""
from __future__ import annotations

import asyncio
import json
import time

import pytest

import triple_py
import triple_py.aio as aio
from _helpers import MiB, TIMEOUT, echoed, rogue, rpc_error, unary
from peers import UNARY_METHOD

Code = triple_py.StatusCode
SWITCH = "triple.unary_fast_path"
ECHO_MD = [("x-echo-text", "hello"), ("x-echo-data-bin", b"\x00\xff")]


@pytest.fixture(params=[True, False], ids=["fastpath", "streamed"])
def fast_path(request) -> bool:
    return request.param


@pytest.fixture
def channel(peer, fast_path):
    with triple_py.insecure_channel(peer.address, options=[(SWITCH, fast_path)]) as ch:
        yield ch


@pytest.mark.parametrize("size", [0, 128, 16 * 1024, MiB])
def test_echo(channel, size):
    request = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert unary(channel)(request, timeout=TIMEOUT) == request


def test_metadata_both_ways(channel):
    response, call = unary(channel).with_call(b"req", metadata=ECHO_MD, timeout=TIMEOUT)
    assert response == b"req"
    assert call.code() is Code.OK
    assert echoed(call.initial_metadata()) == sorted(ECHO_MD)
    assert echoed(call.trailing_metadata()) == sorted(ECHO_MD)


def test_status_and_message(channel):
    metadata = [("x-status", "9"), ("x-message", "not now")]
    error = rpc_error(unary(channel), b"req", metadata=metadata, timeout=TIMEOUT)
    assert (error.code(), error.details()) == (Code.FAILED_PRECONDITION, "not now")
    future = unary(channel).future(b"req", metadata=metadata, timeout=TIMEOUT)
    assert future.exception(timeout=TIMEOUT).code() is Code.FAILED_PRECONDITION


def test_future_result(channel):
    futures = [unary(channel).future(bytes([i]) * 100, timeout=TIMEOUT) for i in range(20)]
    assert [f.result(timeout=TIMEOUT) for f in futures] == [bytes([i]) * 100
                                                             for i in range(20)]


def test_deadline(channel):
    started = time.monotonic()
    error = rpc_error(unary(channel), b"slow", metadata=[("x-delay-ms", "10000")],
                      timeout=0.3)
    assert error.code() is Code.DEADLINE_EXCEEDED
    assert time.monotonic() - started < 2
    assert unary(channel)(b"next", timeout=TIMEOUT) == b"next"


def test_request_larger_than_max_send(peer, fast_path):
    options = [(SWITCH, fast_path), ("grpc.max_send_message_length", 100)]
    with triple_py.insecure_channel(peer.address, options=options) as ch:
        error = rpc_error(unary(ch), b"x" * 101, timeout=TIMEOUT)
        assert error.code() is Code.RESOURCE_EXHAUSTED
        assert unary(ch)(b"x" * 100, timeout=TIMEOUT) == b"x" * 100


def test_request_not_bytes_like(channel):
    with pytest.raises(TypeError):
        unary(channel)("text", timeout=TIMEOUT)
    assert unary(channel)(b"next", timeout=TIMEOUT) == b"next"


# --- what the rogue peer shows -----------------------------------------------------------

@pytest.fixture
def rogue_channel(rogue_server, fast_path):
    with triple_py.insecure_channel(rogue_server.address,
                                    options=[(SWITCH, fast_path)]) as ch:
        yield ch


def test_no_content_length_on_the_grpc_wire(rogue_channel, fast_path):
    """gRPC requests carry no content-length on either path: the envelope says how long
    the message is, and nghttp2 would encode the header as a literal on every call."""
    request = b"r" * 300
    assert rogue(rogue_channel, "RecordHeaders")(request, timeout=TIMEOUT) == request
    headers = dict(json.loads(rogue(rogue_channel, "Stats")(b"", timeout=TIMEOUT))
                   ["headers"][-1])
    assert "content-length" not in headers
    assert headers[":path"] == "/rogue.Rogue/RecordHeaders"
    assert headers["content-type"] == "application/grpc"


@pytest.mark.parametrize("mode, code", [("TwoMessages", Code.INTERNAL),
                                        ("MalformedFlags", Code.INTERNAL),
                                        ("TrailersOnly", Code.PERMISSION_DENIED),
                                        ("Http503", Code.UNAVAILABLE)])
def test_malformed_answers_fail_alike(rogue_channel, mode, code):
    assert rpc_error(rogue(rogue_channel, mode), b"req", timeout=TIMEOUT).code() is code


# --- asyncio -------------------------------------------------------------------------------

def test_aio(peer, fast_path):
    async def main():
        async with aio.insecure_channel(peer.address, options=[(SWITCH, fast_path)]) as ch:
            method = ch.unary_unary(UNARY_METHOD)
            replies = await asyncio.gather(*(method(bytes([i]) * 1000, timeout=TIMEOUT)
                                             for i in range(50)))
            assert replies == [bytes([i]) * 1000 for i in range(50)]
            call = method(b"req", metadata=ECHO_MD, timeout=TIMEOUT)
            assert await call == b"req"
            assert echoed(await call.trailing_metadata()) == sorted(ECHO_MD)
            with pytest.raises(aio.AioRpcError) as info:
                await method(b"req", metadata=[("x-status", "5")], timeout=TIMEOUT)
            assert info.value.code() is Code.NOT_FOUND
            with pytest.raises(aio.AioRpcError) as info:
                await method(b"slow", metadata=[("x-delay-ms", "10000")], timeout=0.3)
            assert info.value.code() is Code.DEADLINE_EXCEEDED
            with pytest.raises(TypeError):
                method("text", timeout=TIMEOUT)
            assert await method(b"next", timeout=TIMEOUT) == b"next"
    asyncio.run(asyncio.wait_for(main(), 30))


# --- the option itself ---------------------------------------------------------------------

def test_the_triple_wire_streamed_path_sends_a_bare_body():
    """On the Triple wire the streamed path sends the Triple unary request (bare body, no
    content-length: dubbo-go's duplex path) and reads the Triple answer."""
    from _triple_helpers import RawH2Server
    with RawH2Server() as server, triple_py.insecure_channel(
            server.address, options=[(SWITCH, False)], wire="triple") as ch:
        method = ch.unary_unary("/benchmark.BenchmarkService/UnaryCall")
        assert method(b"\x0a\x03abc", timeout=TIMEOUT) == b"\x0a\x03abc"
    request = server.last()
    assert request.body == b"\x0a\x03abc"
    assert request.get("content-type") == "application/proto"
    assert request.get("content-length") is None


@pytest.mark.parametrize("value", ["no", None, 2])
def test_a_switch_takes_a_bool(value):
    with pytest.raises(TypeError, match="bool"):
        triple_py.insecure_channel("127.0.0.1:1", options=[(SWITCH, value)])


# --- the benchmark arm ---------------------------------------------------------------------

def test_the_bench_arm_flips_the_switch(fast_path):
    """``triple-py-sync`` with ``options={"unary_fast_path": False}`` (the seed-unary-py
    matrix's baseline) really sends its calls through the streaming machinery: on the
    Triple wire only the fast path declares a content-length."""
    from _triple_helpers import RawH2Server

    from triple_py.bench import run

    with RawH2Server() as server:
        result = run(server.address, method="/benchmark.BenchmarkService/UnaryCall",
                     mode="triple-py-sync", concurrency=2, duration=0.2, warmup=0,
                     wire="triple", options={"unary_fast_path": fast_path})
        assert result.calls > 0 and result.errors == 0
        runs = list(server.requests)
    assert len(runs) >= result.calls
    assert {request.get("content-length") is not None for request in runs} == {fast_path}

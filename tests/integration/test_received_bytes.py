"""Large responses reach Python where the I/O thread received them: a bytes object
(`triple_py._triple.ReceivedBytes`, a subclass of bytes) built around the core's receive
buffer, with no second copy. Everything a user does with the bytes a call returns must
still work, and the buffer must outlive the call and the channel."""
from __future__ import annotations

import asyncio
import copy
import gc
import os
import pickle
import tracemalloc

import pytest

import triple_py
import triple_py.aio
from triple_py import _triple
from triple_py.bench.workload.messages import STREAM_METHOD, UNARY_METHOD, benchmark_request
from triple_py.testing import EchoServer

TIMEOUT = 10
LARGE = 1 << 20  # well over _triple.RECEIVED_BYTES_MIN (16 KiB)
TRACE_DOMAIN = 0x747269  # received_bytes.c: the tracemalloc domain of core buffers


@pytest.fixture(scope="module")
def address():
    with EchoServer() as server:
        yield f"127.0.0.1:{server.port}"


def test_a_large_response_is_bytes_without_a_second_copy(address):
    request = benchmark_request(LARGE)
    with triple_py.insecure_channel(address) as channel:
        response = channel.unary_unary(UNARY_METHOD)(request, timeout=TIMEOUT)
    assert type(response) is _triple.ReceivedBytes
    assert isinstance(response, bytes)
    assert response == request  # the echo, byte for byte
    assert len(response) == len(request)
    assert hash(response) == hash(request)
    assert response[:4] == request[:4] and response[-3:] == request[-3:]
    assert response.hex()[:20] == request.hex()[:20]
    assert {response: 1}[request] == 1
    assert bytes(response) == request and type(bytes(response)) is bytes


def test_a_small_response_is_a_plain_bytes(address):
    with triple_py.insecure_channel(address) as channel:
        response = channel.unary_unary(UNARY_METHOD)(benchmark_request(100), timeout=TIMEOUT)
    assert type(response) is bytes


def test_the_threshold(address):
    """Messages of RECEIVED_BYTES_MIN bytes and more are received in place, smaller ones
    copied into a plain bytes."""
    least = _triple.RECEIVED_BYTES_MIN
    with triple_py.insecure_channel(address) as channel:
        echo = channel.unary_unary(UNARY_METHOD)
        for size, kind in ((least - 1, bytes), (least, _triple.ReceivedBytes)):
            request = os.urandom(size)
            response = echo(request, timeout=TIMEOUT)
            assert (type(response), response) == (kind, request)


def test_pickle_and_copy_give_plain_bytes(address):
    request = benchmark_request(LARGE)
    with triple_py.insecure_channel(address) as channel:
        response = channel.unary_unary(UNARY_METHOD)(request, timeout=TIMEOUT)
    for again in (pickle.loads(pickle.dumps(response)), copy.copy(response),
                  copy.deepcopy(response)):
        assert type(again) is bytes and again == request


def test_cannot_be_made_from_python():
    with pytest.raises(TypeError):
        _triple.ReceivedBytes(b"x")
    with pytest.raises(TypeError):
        bytes.__new__(_triple.ReceivedBytes, b"x")  # type: ignore[type-var]


def test_a_view_outlives_the_response_the_call_and_the_channel(address):
    request = benchmark_request(LARGE)
    with triple_py.insecure_channel(address) as channel:
        response, call = channel.unary_unary(UNARY_METHOD).with_call(request, timeout=TIMEOUT)
    view = memoryview(response)
    del response, call, channel
    gc.collect()
    assert view.tobytes() == request
    view.release()


def test_the_core_call_gives_one_object_to_response_and_memoryview(address):
    request = benchmark_request(LARGE)
    with triple_py.insecure_channel(address) as channel:
        core = channel._core.call(UNARY_METHOD, request, TIMEOUT, None, wait=True)
        first = core.response()
        assert first is core.response()
        assert memoryview(core).tobytes() == request


def test_tracemalloc_sees_the_buffer(address):
    request = benchmark_request(LARGE)
    tracemalloc.start()
    try:
        with triple_py.insecure_channel(address) as channel:
            response = channel.unary_unary(UNARY_METHOD)(request, timeout=TIMEOUT)
        traced = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.DomainFilter(True, TRACE_DOMAIN)])
        assert sum(stat.size for stat in traced.statistics("filename")) >= len(response)
        del response
        traced = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.DomainFilter(True, TRACE_DOMAIN)])
        assert sum(stat.size for stat in traced.statistics("filename")) == 0
    finally:
        tracemalloc.stop()


def test_streamed_large_messages(address):
    requests = [benchmark_request(LARGE), benchmark_request(10), benchmark_request(LARGE // 2)]
    with triple_py.insecure_channel(address) as channel:
        responses = list(channel.stream_stream(STREAM_METHOD)(iter(requests), timeout=TIMEOUT))
    assert responses == requests
    assert [type(r).__name__ for r in responses] == ["ReceivedBytes", "bytes", "ReceivedBytes"]


def test_aio_large_response(address):
    request = benchmark_request(LARGE)

    async def call() -> bytes:
        async with triple_py.aio.insecure_channel(address) as channel:
            return await channel.unary_unary(UNARY_METHOD)(request, timeout=TIMEOUT)

    response = asyncio.run(call())
    assert type(response) is _triple.ReceivedBytes and response == request


def test_compressed_large_response_is_whole(address):
    request = benchmark_request(LARGE)
    with triple_py.insecure_channel(address, compression=triple_py.Compression.Gzip) as channel:
        assert channel.unary_unary(UNARY_METHOD)(request, timeout=TIMEOUT) == request

"""triple_py.aio (the asyncio API) against the real peers (grpcio and grpc-go).

The unary and streaming cases of test_unary_echo.py / test_stream_shapes.py rerun under
asyncio, then what only asyncio has: cancellation through task.cancel() (the stream is reset;
the rogue peer counts the RST_STREAM frames it receives, and grpcio's 32 handler threads
would all stay busy if its server never saw the cancels), deadlines, 10,000 concurrent tasks
on one channel without a thread per call, and closing a channel with calls pending. Where
grpc.aio's behaviour is the specification (awaiting a call after call.cancel(), a metadata
wait that times out), the test checks grpc.aio itself on the same peer first.

pytest-asyncio is not installed: every test is an `async def` wrapped by `aio_test`, which
runs it with asyncio.run under an overall timeout, so a stalled call fails the test instead
of hanging the run.
"""
from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import threading
import time

import grpc
import pytest

import triple_py
from triple_py import _triple
import triple_py.aio as aio
from _helpers import benchmark_messages, wait_for
from _stream_helpers import KiB, MiB, TIMEOUT, assorted_messages, echoed, tagged, untag
from peers import STREAM_METHOD, UNARY_METHOD, encode_payload

StatusCode = triple_py.StatusCode
NON_OK_CODES = [c for c in StatusCode if c is not StatusCode.OK]
SIZES = [0, 1, 128, MiB, 4 * MiB]
ECHO_MD = [("x-echo-text", "hello world"), ("x-echo-multi", "1"), ("x-echo-multi", "2"),
           ("x-echo-data-bin", b"\x00\x01\xfe\xff"), ("x-echo-empty-bin", b""),
           ("x-echo-long-bin", bytes(range(256)) * 4)]
NOT_ECHOED = [("x-other", "not echoed"), ("x-echoless", "no")]
TRANSPORT_HEADERS = {":status", "content-type", "grpc-status", "grpc-message"}
SLOW = [("x-delay-ms", "5000")]  # a call that stays pending for as long as a test needs


# --- running coroutines without pytest-asyncio ---------------------------------------------

def aio_test(timeout: float = 30.0):
    """Turns `async def test_x(fixtures...)` into a plain test run by asyncio.run, failing
    (TimeoutError) if the coroutine takes longer than `timeout` seconds."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return asyncio.run(asyncio.wait_for(fn(*args, **kwargs), timeout))
        return wrapper
    return decorate


def channel_to(peer, options=None) -> aio.Channel:
    """An asyncio channel to `peer` (use it with `async with`)."""
    return aio.insecure_channel(peer.address, options=options)


def unary(ch: aio.Channel, **serializers):
    return ch.unary_unary(UNARY_METHOD, **serializers)


def bidi(ch: aio.Channel):
    return ch.stream_stream(STREAM_METHOD)


def client_stream(ch: aio.Channel):
    """StreamCall seen as client streaming (exactly one response is required)."""
    return ch.stream_unary(STREAM_METHOD)


def server_stream(ch: aio.Channel):
    """StreamCall seen as server streaming (one request, its echo)."""
    return ch.unary_stream(STREAM_METHOD)


async def aio_error(awaitable) -> aio.AioRpcError:
    """The AioRpcError that awaiting `awaitable` raises (fails the test otherwise)."""
    with pytest.raises(aio.AioRpcError) as info:
        await awaitable
    return info.value


async def read_all(call) -> list:
    """Every remaining response of a response stream, through `async for`."""
    return [response async for response in call]


async def read_until_error(call) -> tuple[list, aio.AioRpcError]:
    """(responses read before the error, the AioRpcError); fails if the call ends OK."""
    got = []
    with pytest.raises(aio.AioRpcError) as info:
        while True:
            item = await call.read()
            if item is aio.EOF:
                break
            got.append(item)
    return got, info.value


async def awaiting(call):
    """A coroutine awaiting `call` (a call object is an awaitable, not a coroutine, so
    create_task needs this wrapper)."""
    return await call


async def settle_on(predicate, timeout: float = 5.0) -> bool:
    """Awaits until predicate() (a coroutine function) is true; its last value."""
    deadline = time.monotonic() + timeout
    while not await predicate():
        if time.monotonic() >= deadline:
            return await predicate()
        await asyncio.sleep(0.02)
    return True


async def rogue_counter(ch: aio.Channel, name: str) -> int:
    """One counter of the rogue server (its Stats mode), read through triple_py.aio."""
    raw = await ch.unary_unary("/rogue.Rogue/Stats")(b"", timeout=TIMEOUT)
    return json.loads(raw).get(name, 0)


def os_thread_ids() -> set:
    """The ids of this process's OS threads (C threads included)."""
    return set(os.listdir("/proc/self/task"))


@pytest.fixture(scope="module")
def messages():
    return benchmark_messages()


# --- unary: echo -----------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}B")
@aio_test()
async def test_echo_raw_bytes(peer, size):
    request = os.urandom(size)
    async with channel_to(peer) as ch:
        response = await unary(ch)(request, timeout=TIMEOUT)
    # bytes; a large one is received in place (a subclass of bytes, no second copy)
    assert type(response) is (_triple.ReceivedBytes if size >= _triple.RECEIVED_BYTES_MIN
                              else bytes)
    assert response == request


@pytest.mark.parametrize("size", [0, 128, MiB, 4 * MiB], ids=lambda n: f"{n}B")
@aio_test()
async def test_echo_protobuf(peer, messages, size):
    request_type, response_type = messages
    # a 4 MiB payload makes a message a few bytes over the default 4 MiB receive limit
    async with channel_to(peer, [("grpc.max_receive_message_length", 5 * MiB)]) as ch:
        call = unary(ch, request_serializer=request_type.SerializeToString,
                     response_deserializer=response_type.FromString)
        payload = os.urandom(size)
        response = await call(request_type(payload=payload), timeout=TIMEOUT)
    assert isinstance(response, response_type)
    assert response.payload == payload


@aio_test()
async def test_every_size_at_once_on_one_connection(peer):
    requests = [os.urandom(size) for size in SIZES]
    async with channel_to(peer) as ch:
        responses = await asyncio.gather(*(unary(ch)(r, timeout=TIMEOUT) for r in requests))
        stats = ch.stats()
    assert responses == requests
    assert stats["connects"] == 1
    assert stats["calls"] == len(SIZES)


@aio_test()
async def test_response_size(peer, messages):
    request_type, response_type = messages
    async with channel_to(peer) as ch:
        call = unary(ch, request_serializer=request_type.SerializeToString,
                     response_deserializer=response_type.FromString)(
            request_type(payload=b"ignored"), timeout=TIMEOUT,
            metadata=[("x-response-size", "300")])
        assert (await call).payload == b"a" * 300
        assert await call.code() is StatusCode.OK


# --- unary: awaiting a call like a future --------------------------------------------------

@aio_test()
async def test_await_twice_returns_the_same_result(peer):
    async with channel_to(peer) as ch:
        call = unary(ch)(b"twice", timeout=TIMEOUT)
        first = await call
        second = await call
        assert first == second == b"twice"
        assert call.done() and not call.cancelled()
        assert await call.code() is StatusCode.OK
        assert await call.details() in ("", None)
        # two tasks awaiting one pending call both get its response
        call = unary(ch)(b"shared", timeout=TIMEOUT, metadata=[("x-delay-ms", "100")])
        assert await asyncio.gather(awaiting(call), awaiting(call)) == [b"shared", b"shared"]


@aio_test()
async def test_await_twice_deserializes_once(peer, messages):
    """grpc.aio keeps the response object: awaiting a finished call again returns that same
    object, and the deserializer runs once."""
    request_type, response_type = messages
    runs = []

    def deserialize(raw: bytes):
        runs.append(raw)
        return response_type.FromString(raw)

    async with channel_to(peer) as ch:
        call = unary(ch, request_serializer=request_type.SerializeToString,
                     response_deserializer=deserialize)(request_type(payload=b"pb"),
                                                        timeout=TIMEOUT)
        first = await call
        second = await call
    assert first.payload == b"pb" and second == first
    assert second is first
    assert len(runs) == 1


@aio_test()
async def test_await_twice_on_error_raises_each_time(peer):
    async with channel_to(peer) as ch:
        call = unary(ch)(b"x", timeout=TIMEOUT, metadata=[("x-status", "10"),
                                                            ("x-message", "twice")])
        for _ in range(2):
            error = await aio_error(call)
            assert (error.code(), error.details()) == (StatusCode.ABORTED, "twice")
        assert call.done() and not call.cancelled()


# --- unary: metadata -------------------------------------------------------------------------

@aio_test()
async def test_metadata_both_ways(peer):
    async with channel_to(peer) as ch:
        call = unary(ch)(b"req", timeout=TIMEOUT, metadata=ECHO_MD + NOT_ECHOED)
        assert await call == b"req"
        assert await call.code() is StatusCode.OK
        for received in (await call.initial_metadata(), await call.trailing_metadata()):
            assert echoed(received) == sorted(ECHO_MD)
            for key, value in received:
                assert isinstance(value, bytes if key.endswith("-bin") else str), (key, value)
            keys = {k for k, _ in received}
            assert not keys & {k for k, _ in NOT_ECHOED}
            assert not keys & TRANSPORT_HEADERS


@aio_test()
async def test_initial_metadata_awaited_first(peer):
    """initial_metadata() awaited before the call itself."""
    async with channel_to(peer) as ch:
        call = unary(ch)(b"req", timeout=TIMEOUT, metadata=[("x-echo-a", "1")])
        assert echoed(await call.initial_metadata()) == [("x-echo-a", "1")]
        assert await call == b"req"


@aio_test()
async def test_metadata_on_error(peer):
    async with channel_to(peer) as ch:
        call = unary(ch)(b"req", timeout=TIMEOUT, metadata=ECHO_MD + [("x-status", "5")])
        error = await aio_error(call)
        assert error.code() is StatusCode.NOT_FOUND
        assert echoed(error.initial_metadata()) == sorted(ECHO_MD)
        assert echoed(error.trailing_metadata()) == sorted(ECHO_MD)
        assert echoed(await call.trailing_metadata()) == sorted(ECHO_MD)


# --- unary: status codes ---------------------------------------------------------------------

@pytest.mark.parametrize("code", NON_OK_CODES, ids=lambda c: c.name)
@aio_test()
async def test_status_code_with_message(peer, code):
    message = f"{code.name} on purpose"
    async with channel_to(peer) as ch:
        call = unary(ch)(b"req", timeout=TIMEOUT,
                         metadata=[("x-status", str(code.value[0])), ("x-message", message)])
        error = await aio_error(call)
        assert isinstance(error, triple_py.RpcError)
        assert (error.code(), error.details()) == (code, message)
        assert (await call.code(), await call.details()) == (code, message)
        assert code.name in error.debug_error_string()


@aio_test()
async def test_status_with_non_ascii_message(peer):
    text = "café ☕ 100% \"quoted\" ünïcode ✓"
    async with channel_to(peer) as ch:
        error = await aio_error(unary(ch)(b"req", timeout=TIMEOUT, metadata=[
            ("x-status", "9"), ("x-message", "ignored"), ("x-message-bin", text.encode())]))
    assert (error.code(), error.details()) == (StatusCode.FAILED_PRECONDITION, text)


@aio_test()
async def test_status_ok_sent_explicitly(peer):
    async with channel_to(peer) as ch:
        call = unary(ch)(b"req", timeout=TIMEOUT, metadata=[("x-status", "0")])
        assert await call == b""
        assert await call.code() is StatusCode.OK


# --- bidi echo -------------------------------------------------------------------------------

@aio_test()
async def test_bidi_echo_write_read(peer):
    """Write one, read its echo, for 200 messages of 0 B .. 40 KiB; then EOF and OK."""
    messages = assorted_messages(200, seed=3)
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=TIMEOUT)
        for message in messages:
            await call.write(message)
            assert await call.read() == message
        await call.done_writing()
        assert await call.read() is aio.EOF
        assert await call.read() is aio.EOF  # EOF again, no error
        assert await call.code() is StatusCode.OK


@aio_test()
async def test_bidi_echo_write_all_then_read(peer):
    messages = assorted_messages(1000, seed=2)
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=TIMEOUT)
        for message in messages:
            await call.write(message)
        await call.done_writing()
        assert await read_all(call) == messages
        assert await call.code() is StatusCode.OK


@aio_test()
async def test_bidi_echo_async_iterator(peer):
    messages = assorted_messages(1000, seed=4)

    async def requests():
        for i, message in enumerate(messages):
            if i % 100 == 0:
                await asyncio.sleep(0.001)  # an iterator that really awaits
            yield message

    async with channel_to(peer) as ch:
        call = bidi(ch)(requests(), timeout=TIMEOUT)
        assert await read_all(call) == messages
        assert await call.code() is StatusCode.OK


@aio_test()
async def test_bidi_echo_sync_iterator(peer):
    messages = assorted_messages(1000, seed=5)
    async with channel_to(peer) as ch:
        call = bidi(ch)(iter(messages), timeout=TIMEOUT)
        assert await read_all(call) == messages
        assert await call.code() is StatusCode.OK


@pytest.mark.parametrize("size", [229_371, 229_372], ids=lambda n: f"{n}B")
@aio_test()
async def test_write_one_big_message(peer, size):
    """One request bigger than the call's send limit minus the writer watermark (256 KiB -
    32 KiB - 5 with the defaults) goes out like any other: the sync API writes it, and so
    must `await write()`."""
    message = tagged(size, size)
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=3)
        await call.write(message)
        await call.done_writing()
        assert await read_all(call) == [message]
        assert await call.code() is StatusCode.OK
        # the same through a request iterator, and client streaming
        assert await read_all(bidi(ch)(iter([message]), timeout=3)) == [message]
        assert await client_stream(ch)(iter([message]), timeout=3) == message


@aio_test()
async def test_bidi_big_messages_writer_task_and_reader(peer):
    """16 x 1 MiB written by one task while another reads: more than the flow-control
    windows on the path, in both directions at once."""
    count = 16
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=8)

        async def writer():
            for i in range(count):
                await call.write(tagged(i, MiB))
            await call.done_writing()

        task = asyncio.create_task(writer())
        try:
            got = []
            async for response in call:
                assert len(response) == MiB
                got.append(untag(response))
            await task
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert got == [(0, i) for i in range(count)]
        assert await call.code() is StatusCode.OK


@aio_test()
async def test_requests_depending_on_responses(peer):
    """An async request iterator that waits for the previous echo does not deadlock."""
    echoes: asyncio.Queue = asyncio.Queue()

    async def requests():
        message = b"0"
        for i in range(1, 51):
            yield message
            assert await echoes.get() == message
            message = str(i).encode()

    async with channel_to(peer) as ch:
        got = []
        async for response in bidi(ch)(requests(), timeout=TIMEOUT):
            got.append(response)
            echoes.put_nowait(response)
    assert got == [str(i).encode() for i in range(50)]


# No flush timer (0: the writer is flushed only on demand), or one far longer than the
# exchange may take: 50 round trips that each waited for it would need 100 s.
WRITER_TIMERS = {"no-timer": 0, "slow-timer": 2_000_000}


@pytest.mark.parametrize("delay_us", WRITER_TIMERS.values(), ids=WRITER_TIMERS.keys())
@aio_test()
async def test_ping_pong_never_waits_for_the_writer_timer(peer, delay_us):
    """A request written while a read already waits (the reading loop of a bidi call) is
    sent at the end of that turn of the event loop, as a sync read flushes before it
    waits: a ping-pong neither waits for the coalescing writer's timer nor, without one,
    stays unsent until its deadline."""
    echoes: asyncio.Queue = asyncio.Queue()

    async def requests():
        for i in range(50):
            yield b"%d" % i
            await echoes.get()

    options = [("triple.write_buffer_delay_us", delay_us)]
    async with channel_to(peer, options) as ch:
        got = []
        async for response in bidi(ch)(requests(), timeout=TIMEOUT):
            got.append(response)
            echoes.put_nowait(response)
    assert got == [b"%d" % i for i in range(50)]


@aio_test()
async def test_failing_request_iterator(peer):
    """An async request iterator that raises ends the call with UNKNOWN (as grpcio does)."""
    async def requests():
        yield b"fine"
        raise RuntimeError("the application failed")

    async with channel_to(peer) as ch:
        call = bidi(ch)(requests(), timeout=TIMEOUT)
        got, error = await read_until_error(call)
        assert got in ([], [b"fine"])
        assert error.code() is StatusCode.UNKNOWN


# --- stream metadata and status --------------------------------------------------------------

@aio_test()
async def test_stream_metadata_both_ways(peer):
    """x-echo-* come back in the initial metadata while the stream is still open, and again
    in the trailing metadata."""
    md = [("x-echo-text", "stream metadata"), ("x-echo-data-bin", b"\x00\x01\xfe\xff")]
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=TIMEOUT, metadata=md)
        await call.write(b"first")
        assert await call.read() == b"first"
        assert echoed(await call.initial_metadata()) == sorted(md)
        assert not call.done(), "initial_metadata() must not wait for the end of the stream"
        await call.write(b"second")
        assert await call.read() == b"second"
        await call.done_writing()
        assert await call.read() is aio.EOF
        assert echoed(await call.trailing_metadata()) == sorted(md)
        assert await call.code() is StatusCode.OK


@pytest.mark.parametrize("code", NON_OK_CODES, ids=lambda c: c.name)
@aio_test()
async def test_stream_status_from_server(peer, code):
    md = [("x-status", str(code.value[0])), ("x-message", f"ended with {code.name}"),
          ("x-echo-a", "1")]
    async with channel_to(peer) as ch:
        call = bidi(ch)(iter([b"1", b"2", b"3"]), timeout=TIMEOUT, metadata=md)
        with pytest.raises(aio.AioRpcError) as info:
            await read_all(call)
        error = info.value
        assert (error.code(), error.details()) == (code, f"ended with {code.name}")
        assert echoed(error.trailing_metadata()) == [("x-echo-a", "1")]
        assert (await call.code(), await call.details()) == (code, f"ended with {code.name}")
        assert call.done()


@aio_test()
async def test_stream_status_message_bin(peer):
    text = "échec — 失敗"
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=TIMEOUT, metadata=[("x-status", "9"),
                                                   ("x-message-bin", text.encode())])
        got, error = await read_until_error(call)
    assert got == []
    assert (error.code(), error.details()) == (StatusCode.FAILED_PRECONDITION, text)


@aio_test()
async def test_server_error_mid_stream(peer):
    """After two echoes, a message one byte over the peers' 64 MiB receive limit ends the
    call with the server's RESOURCE_EXHAUSTED; the connection goes on serving."""
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=8)
        for message in (b"one", tagged(1, 4 * KiB)):
            await call.write(message)
            assert await call.read() == message
        try:
            await call.write(b"\x00" * (64 * MiB + 1))
            await call.done_writing()
        except aio.AioRpcError:
            pass  # the call may have ended while the message was being sent
        got, error = await read_until_error(call)
        assert got == []
        assert error.code() is StatusCode.RESOURCE_EXHAUSTED
        assert await call.code() is StatusCode.RESOURCE_EXHAUSTED
        assert await read_all(bidi(ch)(iter([b"after"]), timeout=TIMEOUT)) == [b"after"]
        assert ch.stats()["connects"] == 1


@aio_test()
async def test_client_receive_limit_mid_stream(peer):
    async with channel_to(peer, [("grpc.max_receive_message_length", 1024)]) as ch:
        call = bidi(ch)(timeout=TIMEOUT)
        for i in range(3):
            await call.write(tagged(i, 1024))
            assert await call.read() == tagged(i, 1024)
        await call.write(tagged(3, 1025))
        got, error = await read_until_error(call)
        assert got == []
        assert error.code() is StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(aio.AioRpcError) as info:
            await call.write(b"more")
        assert info.value.code() is StatusCode.RESOURCE_EXHAUSTED
        assert await read_all(bidi(ch)(iter([b"x" * 1024]), timeout=TIMEOUT)) == [b"x" * 1024]


# --- empty streams ---------------------------------------------------------------------------

@aio_test()
async def test_empty_stream(peer):
    """No message at all: the server still sees the request (it echoes the metadata) and
    answers OK."""
    md = [("x-echo-empty", "yes"), ("x-echo-e-bin", b"\xff")]
    async with channel_to(peer) as ch:
        call = bidi(ch)(iter([]), timeout=TIMEOUT, metadata=md)
        assert await read_all(call) == []
        assert await call.code() is StatusCode.OK
        assert echoed(await call.trailing_metadata()) == sorted(md)

        async def nothing():
            return
            yield  # an async generator that yields nothing

        call = bidi(ch)(nothing(), timeout=TIMEOUT, metadata=md)
        assert await read_all(call) == []
        assert await call.code() is StatusCode.OK

        call = bidi(ch)(timeout=TIMEOUT, metadata=md)
        await call.done_writing()
        assert await call.read() is aio.EOF
        assert await call.code() is StatusCode.OK
        assert echoed(await call.trailing_metadata()) == sorted(md)


# --- server streaming ------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 128, 40 * KiB, MiB], ids=lambda n: f"{n}B")
@aio_test()
async def test_server_stream_one_echo(peer, size):
    request = tagged(size, size)
    async with channel_to(peer) as ch:
        call = server_stream(ch)(request, timeout=TIMEOUT)
        assert await read_all(call) == [request]
        assert await call.code() is StatusCode.OK


@aio_test()
async def test_server_stream_read_and_response_size(peer):
    async with channel_to(peer) as ch:
        call = server_stream(ch)(b"ignored", timeout=TIMEOUT,
                                 metadata=[("x-response-size", "300"), ("x-echo-s", "1")])
        assert await call.read() == encode_payload(b"a" * 300)
        assert await call.read() is aio.EOF
        assert echoed(await call.initial_metadata()) == [("x-echo-s", "1")]
        assert echoed(await call.trailing_metadata()) == [("x-echo-s", "1")]


@aio_test()
async def test_server_stream_status(peer):
    async with channel_to(peer) as ch:
        call = server_stream(ch)(b"x", timeout=TIMEOUT,
                                 metadata=[("x-status", "5"), ("x-message", "nope")])
        got, error = await read_until_error(call)
        assert got == []
        assert (error.code(), error.details()) == (StatusCode.NOT_FOUND, "nope")
        assert await call.code() is StatusCode.NOT_FOUND


# --- client streaming ------------------------------------------------------------------------

@aio_test()
async def test_client_stream_one_request(peer):
    async with channel_to(peer) as ch:
        assert await client_stream(ch)(iter([b"only one"]), timeout=TIMEOUT) == b"only one"

        async def one():
            yield tagged(7, 4 * KiB)

        call = client_stream(ch)(one(), timeout=TIMEOUT)
        assert await call == tagged(7, 4 * KiB)
        assert await call.code() is StatusCode.OK

        call = client_stream(ch)(timeout=TIMEOUT)
        await call.write(b"written")
        await call.done_writing()
        assert await call == b"written"
        assert await call == b"written"


@aio_test()
async def test_client_stream_two_responses_is_internal(peer):
    """Two requests get two echoes: a unary-response call must fail with INTERNAL."""
    async with channel_to(peer) as ch:
        error = await aio_error(client_stream(ch)(iter([b"one", b"two"]), timeout=TIMEOUT))
    assert error.code() is StatusCode.INTERNAL


@aio_test()
async def test_client_stream_no_response_is_internal(peer):
    async with channel_to(peer) as ch:
        error = await aio_error(client_stream(ch)(iter([]), timeout=TIMEOUT))
    assert error.code() is StatusCode.INTERNAL


@aio_test()
async def test_client_stream_status_from_server(peer):
    async with channel_to(peer) as ch:
        call = client_stream(ch)(iter([b"a", b"b"]), timeout=TIMEOUT,
                                 metadata=[("x-status", "7"), ("x-message", "no entry")])
        error = await aio_error(call)
        assert (error.code(), error.details()) == (StatusCode.PERMISSION_DENIED, "no entry")
        assert await call.code() is StatusCode.PERMISSION_DENIED


# --- cancellation ----------------------------------------------------------------------------

@aio_test()
async def test_task_cancel_unary(peer):
    """task.cancel() on a task awaiting a slow unary call: CancelledError in the task at
    once, the call ends CANCELLED, and the same connection serves the next call."""
    async with channel_to(peer) as ch:
        assert await unary(ch)(b"warm", timeout=TIMEOUT) == b"warm"
        call = unary(ch)(b"slow", timeout=TIMEOUT, metadata=SLOW)
        task = asyncio.create_task(awaiting(call))
        await asyncio.sleep(0.2)
        assert not task.done()
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - started < 1
        assert task.cancelled()
        assert await call.code() is StatusCode.CANCELLED
        assert call.cancelled() and call.done()
        assert call.cancel() is False  # already finished
        assert await unary(ch)(b"after", timeout=TIMEOUT) == b"after"
        assert ch.stats()["connects"] == 1


@aio_test()
async def test_wait_for_timeout_cancels_the_call(peer):
    async with channel_to(peer) as ch:
        call = unary(ch)(b"slow", timeout=TIMEOUT, metadata=SLOW)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(awaiting(call), 0.2)
        assert await call.code() is StatusCode.CANCELLED
        assert await unary(ch)(b"after", timeout=TIMEOUT) == b"after"


@aio_test()
async def test_task_cancel_stream_read(peer):
    """Cancelling a task blocked in read() of a bidi stream cancels the RPC."""
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=TIMEOUT)
        await call.write(b"hello")
        assert await call.read() == b"hello"

        async def read_next():
            return await call.read()  # the server waits for the next request: never answers

        task = asyncio.create_task(read_next())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await call.code() is StatusCode.CANCELLED
        assert await read_all(bidi(ch)(iter([b"after"]), timeout=TIMEOUT)) == [b"after"]


@aio_test()
async def test_cancelled_calls_free_the_grpcio_handlers(grpcio_server):
    """The grpcio peer runs 32 handler threads. 40 cancelled calls each asking for a 20 s
    delay would hold all of them for 20 s if the server never saw the cancels (the peer's
    delay ends when the call does); so the next call answering at once shows that the
    server saw every RST_STREAM."""
    async with channel_to(grpcio_server) as ch:
        calls = [unary(ch)(b"slow", timeout=TIMEOUT * 3, metadata=[("x-delay-ms", "20000")])
                 for _ in range(40)]
        tasks = [asyncio.create_task(awaiting(c)) for c in calls]
        await asyncio.sleep(0.5)  # the server has started every handler it can
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)
        assert [await c.code() for c in calls] == [StatusCode.CANCELLED] * 40
        started = time.monotonic()
        assert await unary(ch)(b"next", timeout=5) == b"next"
        assert time.monotonic() - started < 3


@aio_test()
async def test_task_cancel_resets_the_stream(rogue_server):
    """The rogue peer never answers NeverAnswer and counts the RST_STREAM frames it gets:
    cancelling the awaiting task (unary), or a task blocked in read() (bidi), resets the
    stream."""
    async with aio.insecure_channel(rogue_server.address) as ch:
        resets = await rogue_counter(ch, "resets")
        call = ch.unary_unary("/rogue.Rogue/NeverAnswer")(b"x", timeout=TIMEOUT)
        task = asyncio.create_task(awaiting(call))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await call.code() is StatusCode.CANCELLED

        async def one_more():
            return await rogue_counter(ch, "resets") >= resets + 1
        assert await settle_on(one_more), "the server got no RST_STREAM for the unary call"

        stream = ch.stream_stream("/rogue.Rogue/NeverAnswer")(timeout=TIMEOUT)
        await stream.write(b"x")
        task = asyncio.create_task(stream.read())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await stream.code() is StatusCode.CANCELLED

        async def two_more():
            return await rogue_counter(ch, "resets") >= resets + 2
        assert await settle_on(two_more), "the server got no RST_STREAM for the stream"


@aio_test()
async def test_await_after_call_cancel_raises_cancelled_error(peer):
    """grpc.aio: awaiting a call (or reading a stream) that the application cancelled with
    call.cancel() raises asyncio.CancelledError, not an AioRpcError. Checked against
    grpc.aio itself on the same peer, then triple_py.aio."""
    async with grpc.aio.insecure_channel(peer.address) as ch:
        call = ch.unary_unary(UNARY_METHOD)(b"slow", timeout=TIMEOUT, metadata=SLOW)
        await asyncio.sleep(0.1)
        assert call.cancel() is True
        with pytest.raises(asyncio.CancelledError):
            await call
        assert await call.code() is grpc.StatusCode.CANCELLED

    async with channel_to(peer) as ch:
        call = unary(ch)(b"slow", timeout=TIMEOUT, metadata=SLOW)
        await asyncio.sleep(0.1)
        assert call.cancel() is True
        assert await call.code() is StatusCode.CANCELLED
        assert call.cancelled()
        with pytest.raises(asyncio.CancelledError):
            await call

        stream = bidi(ch)(timeout=TIMEOUT)
        await stream.write(b"a")
        assert await stream.read() == b"a"
        assert stream.cancel() is True
        with pytest.raises(asyncio.CancelledError):
            await stream.read()


@aio_test()
async def test_timing_out_a_metadata_wait_leaves_the_call_running(peer):
    """Only the call's own awaiting cancels it: a wait for initial_metadata() or code() that
    times out (asyncio.wait_for) leaves the RPC running, as in grpc.aio (checked first)."""
    md = [("x-delay-ms", "300")]
    async with grpc.aio.insecure_channel(peer.address) as ch:
        for wait in ("initial_metadata", "code"):
            call = ch.unary_unary(UNARY_METHOD)(b"on", timeout=TIMEOUT, metadata=md)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(getattr(call, wait)(), 0.05)
            assert await call == b"on", wait

    async with channel_to(peer) as ch:
        for wait in ("initial_metadata", "code", "trailing_metadata", "details"):
            call = unary(ch)(b"on", timeout=TIMEOUT, metadata=md)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(getattr(call, wait)(), 0.05)
            assert not call.done(), f"timing out {wait}() ended the call"
            assert await call == b"on", wait
            assert await call.code() is StatusCode.OK


# --- deadlines -------------------------------------------------------------------------------

@aio_test()
async def test_unary_deadline(peer):
    async with channel_to(peer) as ch:
        started = time.monotonic()
        call = unary(ch)(b"slow", timeout=0.3, metadata=[("x-delay-ms", "3000")])
        error = await aio_error(call)
        elapsed = time.monotonic() - started
        assert error.code() is StatusCode.DEADLINE_EXCEEDED
        assert await call.code() is StatusCode.DEADLINE_EXCEEDED
        assert 0.25 < elapsed < 2, elapsed
        assert await unary(ch)(b"after", timeout=TIMEOUT) == b"after"


@aio_test()
async def test_stream_deadline_while_the_server_delays(peer):
    async with channel_to(peer) as ch:
        started = time.monotonic()
        call = bidi(ch)(timeout=0.3, metadata=[("x-delay-ms", "3000")])
        await call.write(b"never echoed in time")
        got, error = await read_until_error(call)
        assert got == []
        assert error.code() is StatusCode.DEADLINE_EXCEEDED
        assert time.monotonic() - started < 2

        call = server_stream(ch)(b"x", timeout=0.3, metadata=[("x-delay-ms", "3000")])
        with pytest.raises(aio.AioRpcError) as info:
            await read_all(call)
        assert info.value.code() is StatusCode.DEADLINE_EXCEEDED

        call = client_stream(ch)(iter([b"x"]), timeout=0.3, metadata=[("x-delay-ms", "3000")])
        assert (await aio_error(call)).code() is StatusCode.DEADLINE_EXCEEDED
        assert await read_all(bidi(ch)(iter([b"after"]), timeout=TIMEOUT)) == [b"after"]


@aio_test()
async def test_stream_deadline_after_echoes(peer):
    async with channel_to(peer) as ch:
        call = bidi(ch)(timeout=0.5)
        for message in (b"one", b"two"):
            await call.write(message)
            assert await call.read() == message
        got, error = await read_until_error(call)  # the server waits for more requests
        assert got == []
        assert error.code() is StatusCode.DEADLINE_EXCEEDED
        assert await call.code() is StatusCode.DEADLINE_EXCEEDED


# --- 10,000 concurrent tasks on one channel --------------------------------------------------

@aio_test(timeout=60)
async def test_10000_concurrent_unary_calls_without_threads(peer):
    """asyncio.gather of 10,000 unary calls on one channel: every response matches its
    request, in bounded time, over one connection, and no thread is started for them: no
    new Python thread at all, and at most 2 new OS threads (the channel's I/O thread)
    compared with before the channel existed."""
    count = 10_000
    py_before = set(threading.enumerate())
    os_before = os_thread_ids()
    async with channel_to(peer) as ch:
        assert await unary(ch)(b"warm", timeout=TIMEOUT) == b"warm"
        samples = []  # (new Python threads, new OS threads) every 5 ms
        sampling = True

        def take_sample() -> None:
            samples.append((set(threading.enumerate()) - py_before,
                            os_thread_ids() - os_before))

        async def sample():
            while sampling:
                take_sample()
                await asyncio.sleep(0.005)

        sampler = asyncio.create_task(sample())
        requests = [b"req-%d-" % i + os.urandom(i % 64) for i in range(count)]
        started = time.monotonic()
        responses = await asyncio.gather(*(unary(ch)(r, timeout=40) for r in requests))
        elapsed = time.monotonic() - started
        # The calls can all finish within one or two turns of the loop, before the
        # sampler's next turn: sample once more while the channel is still open.
        take_sample()
        sampling = False
        await sampler
        stats = ch.stats()
    assert responses == requests
    assert elapsed < 30, f"10,000 calls took {elapsed:.1f} s"
    assert stats["connects"] == 1
    assert stats["calls"] == count + 1
    assert len(samples) >= 2
    assert all(not new_py for new_py, _ in samples), "a Python thread was started"
    assert max(len(new_os) for _, new_os in samples) <= 2, samples[-1]
    assert len(set().union(*(new_os for _, new_os in samples))) <= 2
    # and the I/O thread ends with the channel
    assert wait_for(lambda: not os_thread_ids() - os_before, 2)


# --- closing the channel ---------------------------------------------------------------------

@aio_test()
async def test_close_with_pending_calls(peer):
    """close() with unary calls and streams pending: every one ends CANCELLED at once, the
    channel's readers leave the loop, and the loop goes on working (other readers, a new
    channel)."""
    loop = asyncio.get_running_loop()
    added, removed = [], []
    real_add, real_remove = loop.add_reader, loop.remove_reader

    def add_reader(fd, *args):
        added.append(fd)
        return real_add(fd, *args)

    def remove_reader(fd):
        removed.append(fd)
        return real_remove(fd)

    loop.add_reader, loop.remove_reader = add_reader, remove_reader
    try:
        ch = channel_to(peer)
        calls = [unary(ch)(b"pending", timeout=TIMEOUT, metadata=SLOW) for _ in range(5)]
        unary_tasks = [asyncio.create_task(awaiting(c)) for c in calls]
        stream = bidi(ch)(timeout=TIMEOUT)
        await stream.write(b"x")
        assert await stream.read() == b"x"
        read_task = asyncio.create_task(stream.read())
        server_call = server_stream(ch)(b"y", timeout=TIMEOUT, metadata=SLOW)
        iter_task = asyncio.create_task(read_all(server_call))
        await asyncio.sleep(0.3)
        assert not any(t.done() for t in unary_tasks + [read_task, iter_task])
        # the completions' eventfd, and the connection's IoLoop when the loop turns it
        readers = 1 + (ch._sync.io_loop is not None)
        assert len(added) == readers

        started = time.monotonic()
        await ch.close()
        results = await asyncio.gather(*unary_tasks, read_task, iter_task,
                                       return_exceptions=True)
        assert time.monotonic() - started < 1
        for result in results:
            assert isinstance(result, (aio.AioRpcError, asyncio.CancelledError)), result
            if isinstance(result, aio.AioRpcError):
                assert result.code() is StatusCode.CANCELLED
        for call in calls + [stream, server_call]:
            assert call.done()
            assert await call.code() is StatusCode.CANCELLED
        assert removed == added, "the channel's reader is still on the loop"
        await ch.close()  # twice is harmless

        # the loop still works: another reader, and a new channel on the same loop
        a, b = socket.socketpair()
        with a, b:
            readable = loop.create_future()
            real_add(a.fileno(), readable.set_result, None)
            b.send(b"!")
            await asyncio.wait_for(readable, 2)
            real_remove(a.fileno())
        async with channel_to(peer) as ch2:
            assert await unary(ch2)(b"new channel", timeout=TIMEOUT) == b"new channel"
        assert len(added) == 2 * readers and removed == added
    finally:
        loop.add_reader, loop.remove_reader = real_add, real_remove

"""triple_py streaming call shapes against the real peers (grpcio and grpc-go).

Bidi echo (iterator in / explicit writes, writer on and off), client streaming and server
streaming on StreamCall, metadata both ways, status codes (from the server before and
after echoes, from the client's own limits), empty streams, 1 MiB messages both ways and
a slow reader of 10,000 messages with bounded memory.
"""
import time

import pytest

import triple_py
from _stream_helpers import (
    KiB, MiB, TIMEOUT, WATERMARK, WRITERS, assorted_messages, bidi, drain,
    drain_until_error, echoed, open_channel, rpc_error_of, RssSampler, stream_unary, tagged,
    unary_stream, untag, warm_up,
)
from peers import encode_payload

StatusCode = triple_py.StatusCode
NON_OK_CODES = [c for c in StatusCode if c is not StatusCode.OK]
ECHO_MD = [("x-echo-text", "stream metadata"), ("x-echo-data-bin", b"\x00\x01\xfe\xff")]


@pytest.fixture
def channel(peer):
    with open_channel(peer) as ch:
        yield ch


# --- bidi echo -----------------------------------------------------------------------------

@WRITERS
def test_bidi_echo_iterator(peer, writer):
    """1,000 messages of 0 B .. 40 KiB (larger than the watermark) through an iterator:
    every echo, in order, byte for byte."""
    messages = assorted_messages(1000)
    assert max(len(m) for m in messages) > WATERMARK
    with open_channel(peer, writer) as channel:
        call = bidi(channel)(iter(messages), timeout=TIMEOUT)
        responses = drain(call)
        assert call.code() is StatusCode.OK
    assert len(responses) == len(messages)
    assert responses == messages


@WRITERS
def test_bidi_echo_explicit_writes(peer, writer):
    """The same with write() for each message, done_writing(), then reading."""
    messages = assorted_messages(1000, seed=2)
    with open_channel(peer, writer) as channel:
        call = bidi(channel)(timeout=TIMEOUT)
        for message in messages:
            call.write(message)
        call.done_writing()
        responses = drain(call)
        assert call.code() is StatusCode.OK
        assert call.details() in ("", None)
    assert responses == messages


@WRITERS
def test_bidi_echo_alternating(peer, writer):
    """Write one, read its echo, for every size: a ping-pong never waits for a flush."""
    messages = assorted_messages(100, seed=3)
    with open_channel(peer, writer) as channel:
        call = bidi(channel)(timeout=TIMEOUT)
        for message in messages:
            call.write(message)
            assert next(call) == message
        call.done_writing()
        assert drain(call) == []
        assert call.code() is StatusCode.OK


# --- client streaming and server streaming -------------------------------------------------

def test_stream_unary_one_request(channel):
    """Client streaming with one request: StreamCall's single echo is the response."""
    call = stream_unary(channel)
    assert call(iter([b"only one"]), timeout=TIMEOUT) == b"only one"
    response, result = call.with_call(iter([b"with call"]), timeout=TIMEOUT)
    assert response == b"with call"
    assert result.code() is StatusCode.OK
    future = call.future(iter([tagged(7, 4 * KiB)]), timeout=TIMEOUT)
    assert future.result(timeout=TIMEOUT) == tagged(7, 4 * KiB)
    assert future.code() is StatusCode.OK


def test_stream_unary_two_responses_is_internal(channel):
    """Two requests get two echoes: a unary-response call must fail with INTERNAL."""
    call = stream_unary(channel)
    error = rpc_error_of(call, iter([b"one", b"two"]), timeout=TIMEOUT)
    assert error.code() is StatusCode.INTERNAL
    error = rpc_error_of(call.with_call, iter([b"one", b"two"]), timeout=TIMEOUT)
    assert error.code() is StatusCode.INTERNAL
    future = call.future(iter([b"one", b"two"]), timeout=TIMEOUT)
    with pytest.raises(triple_py.RpcError):
        future.result(timeout=TIMEOUT)
    assert future.code() is StatusCode.INTERNAL


def test_stream_unary_no_response_is_internal(channel):
    """No request, so no echo, and an OK status: a unary response is missing."""
    error = rpc_error_of(stream_unary(channel), iter([]), timeout=TIMEOUT)
    assert error.code() is StatusCode.INTERNAL


def test_stream_unary_status_from_server(channel):
    md = [("x-status", "7"), ("x-message", "no entry")]
    error = rpc_error_of(stream_unary(channel), iter([b"a", b"b"]), timeout=TIMEOUT, metadata=md)
    assert error.code() is StatusCode.PERMISSION_DENIED
    assert error.details() == "no entry"


@pytest.mark.parametrize("size", [0, 1, 128, 40 * KiB, MiB], ids=lambda n: f"{n}B")
def test_unary_stream_one_echo(channel, size):
    """Server streaming with one request: exactly one response, its echo."""
    request = tagged(size, size)
    call = unary_stream(channel)(request, timeout=TIMEOUT)
    assert drain(call) == [request]
    assert call.code() is StatusCode.OK


def test_unary_stream_response_size(channel):
    call = unary_stream(channel)(b"ignored", timeout=TIMEOUT, metadata=[("x-response-size", "300")])
    assert drain(call) == [encode_payload(b"a" * 300)]


def test_unary_stream_status(channel):
    call = unary_stream(channel)(b"x", timeout=TIMEOUT,
                                 metadata=[("x-status", "5"), ("x-message", "nope")])
    got, error = drain_until_error(call)
    assert got == []
    assert error.code() is StatusCode.NOT_FOUND
    assert error.details() == "nope"
    assert call.code() is StatusCode.NOT_FOUND


# --- metadata ------------------------------------------------------------------------------

def test_metadata_both_ways(channel):
    """x-echo-* (text and -bin) come back in the initial metadata while the stream is
    still open, and again in the trailing metadata."""
    call = bidi(channel)(timeout=TIMEOUT, metadata=ECHO_MD)
    call.write(b"first")
    assert next(call) == b"first"
    assert call.is_active()
    assert echoed(call.initial_metadata()) == sorted(ECHO_MD)
    assert call.is_active(), "initial_metadata() must not wait for the end of the stream"
    call.write(b"second")
    assert next(call) == b"second"
    call.done_writing()
    assert drain(call) == []
    assert echoed(call.trailing_metadata()) == sorted(ECHO_MD)
    assert echoed(call.initial_metadata()) == sorted(ECHO_MD)
    assert call.code() is StatusCode.OK


def test_metadata_iterator_form(channel):
    call = bidi(channel)(iter([b"a", b"b"]), timeout=TIMEOUT, metadata=ECHO_MD)
    assert echoed(call.initial_metadata()) == sorted(ECHO_MD)
    assert drain(call) == [b"a", b"b"]
    assert echoed(call.trailing_metadata()) == sorted(ECHO_MD)


# --- status codes --------------------------------------------------------------------------

@pytest.mark.parametrize("code", NON_OK_CODES, ids=lambda c: c.name)
def test_status_from_server(channel, code):
    """x-status ends StreamCall with that code and message (the peers do so before reading
    any request): the iterator raises it, and the call reports it with its metadata."""
    md = [("x-status", str(code.value[0])), ("x-message", f"ended with {code.name}")] + ECHO_MD
    call = bidi(channel)(iter([b"1", b"2", b"3"]), timeout=TIMEOUT, metadata=md)
    got, error = drain_until_error(call)
    assert got == []
    assert error.code() is code
    assert error.details() == f"ended with {code.name}"
    assert echoed(error.trailing_metadata()) == sorted(ECHO_MD)
    assert call.code() is code
    assert call.details() == f"ended with {code.name}"
    assert not call.is_active()


def test_status_message_bin(channel):
    text = "échec — 失敗"
    md = [("x-status", "9"), ("x-message-bin", text.encode())]
    call = bidi(channel)(timeout=TIMEOUT, metadata=md)
    got, error = drain_until_error(call)
    assert error.code() is StatusCode.FAILED_PRECONDITION
    assert error.details() == text


def test_status_ok_without_messages(channel):
    """x-status: 0 on StreamCall: OK and no response, although requests were sent."""
    call = bidi(channel)(iter([b"1", b"2"]), timeout=TIMEOUT, metadata=[("x-status", "0")])
    assert drain(call) == []
    assert call.code() is StatusCode.OK


def test_server_error_after_echoes(channel):
    """A status from the server mid-stream: after two echoes, a message one byte over the
    peers' 64 MiB receive limit ends the call with RESOURCE_EXHAUSTED (the server's)."""
    call = bidi(channel)(timeout=30)
    for message in (b"one", tagged(1, 4 * KiB)):
        call.write(message)
        assert next(call) == message
    try:
        call.write(b"\x00" * (64 * MiB + 1))
        call.done_writing()
    except triple_py.RpcError:
        pass  # the call may already have ended while the message was being sent
    got, error = drain_until_error(call)
    assert got == []
    assert error.code() is StatusCode.RESOURCE_EXHAUSTED
    assert call.code() is StatusCode.RESOURCE_EXHAUSTED
    # the connection survives a stream-level error
    assert drain(bidi(channel)(iter([b"after"]), timeout=TIMEOUT)) == [b"after"]


def test_client_receive_limit_mid_stream(peer):
    """An echo over the client's grpc.max_receive_message_length fails the call with
    RESOURCE_EXHAUSTED after the echoes that fit were delivered."""
    options = [("grpc.max_receive_message_length", 1024)]
    with open_channel(peer, options) as channel:
        call = bidi(channel)(timeout=TIMEOUT)
        for i in range(3):
            call.write(tagged(i, 1024))
            assert next(call) == tagged(i, 1024)
        call.write(tagged(3, 1025))
        got, error = drain_until_error(call)
        assert got == []
        assert error.code() is StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(triple_py.RpcError) as info:
            call.write(b"more")
        assert info.value.code() is StatusCode.RESOURCE_EXHAUSTED
        assert drain(bidi(channel)(iter([b"x" * 1024]), timeout=TIMEOUT)) == [b"x" * 1024]


def test_client_send_limit(peer):
    """A request over grpc.max_send_message_length ends the call with RESOURCE_EXHAUSTED;
    the write raises it."""
    options = [("grpc.max_send_message_length", 1000)]
    with open_channel(peer, options) as channel:
        call = bidi(channel)(timeout=TIMEOUT)
        call.write(b"s" * 1000)
        assert next(call) == b"s" * 1000
        with pytest.raises(triple_py.RpcError) as info:
            call.write(b"s" * 1001)
        assert info.value.code() is StatusCode.RESOURCE_EXHAUSTED
        assert call.code() is StatusCode.RESOURCE_EXHAUSTED


# --- empty streams -------------------------------------------------------------------------

@WRITERS
def test_empty_stream(peer, writer):
    """No message at all: the request (HEADERS + END_STREAM) still reaches the server, which
    answers OK with its trailers (the echoed metadata proves it saw the request)."""
    with open_channel(peer, writer) as channel:
        call = bidi(channel)(iter([]), timeout=TIMEOUT, metadata=ECHO_MD)
        assert drain(call) == []
        assert call.code() is StatusCode.OK
        assert echoed(call.trailing_metadata()) == sorted(ECHO_MD)

        call = bidi(channel)(timeout=TIMEOUT, metadata=ECHO_MD)
        call.done_writing()
        assert drain(call) == []
        assert call.code() is StatusCode.OK
        assert echoed(call.trailing_metadata()) == sorted(ECHO_MD)


# --- flow control: 1 MiB messages both ways -----------------------------------------------

BIG = [tagged(i, MiB) for i in range(16)]


@WRITERS
def test_big_messages_write_all_then_read(peer, writer):
    """16 x 1 MiB written, half-closed, then read: nothing stalls."""
    with open_channel(peer, writer) as channel:
        start = time.monotonic()
        call = bidi(channel)(timeout=20)
        for message in BIG:
            call.write(message)
        call.done_writing()
        responses = drain(call)
        elapsed = time.monotonic() - start
    assert [untag(r) for r in responses] == [untag(m) for m in BIG]
    assert responses == BIG
    assert elapsed < 10


def test_big_messages_interleaved(channel):
    call = bidi(channel)(timeout=20)
    for message in BIG:
        call.write(message)
        assert next(call) == message
    call.done_writing()
    assert drain(call) == []
    assert call.code() is StatusCode.OK


def test_big_messages_pumped_while_reading(channel):
    """64 x 1 MiB from an iterator while the responses are read: more than every flow-control
    window on the path, in both directions at once."""
    count = 64

    def requests():
        for i in range(count):
            yield tagged(i, MiB)

    call = bidi(channel)(requests(), timeout=30)
    for i, response in enumerate(call):
        assert len(response) == MiB and untag(response) == (0, i)
    assert i == count - 1
    assert call.code() is StatusCode.OK


# --- a slow reader -------------------------------------------------------------------------

@pytest.mark.rss
def test_slow_reader_bounded_memory(channel):
    """10,000 echoes of 16 KiB (160 MiB) while the reader first waits, then pauses every
    1,000 messages: the process grows by far less than what was sent (receive side bounded
    by the withheld window, send side by the writer's bound)."""
    count, size = 10_000, 16 * KiB
    warm_up(channel)
    rss = RssSampler()

    def requests():
        for i in range(count):
            yield tagged(i, size)

    call = bidi(channel)(requests(), timeout=60)
    time.sleep(0.3)  # nobody reads: buffers fill up to their bounds
    rss.sample()
    n = 0
    for response in call:
        assert len(response) == size and untag(response) == (0, n)
        n += 1
        if n % 1000 == 0:
            rss.sample()
            time.sleep(0.02)
            rss.sample()
    rss.sample()
    assert n == count
    assert call.code() is StatusCode.OK
    assert rss.growth < 64 * MiB, f"RSS grew by {rss.growth / MiB:.1f} MiB"


# --- request iterators ---------------------------------------------------------------------

def test_requests_depending_on_responses(channel):
    """An iterator that waits for the previous echo before yielding the next request does
    not deadlock (requests are pumped from a helper thread)."""
    import queue
    echoes: "queue.Queue[bytes]" = queue.Queue()

    def requests():
        message = b"0"
        for i in range(1, 51):
            yield message
            assert echoes.get(timeout=TIMEOUT) == message
            message = str(i).encode()

    call = bidi(channel)(requests(), timeout=TIMEOUT)
    got = []
    for response in call:
        got.append(response)
        echoes.put(response)
    assert got == [str(i).encode() for i in range(50)]
    assert call.code() is StatusCode.OK


def test_failing_request_iterator(channel):
    """A request iterator that raises ends the call with UNKNOWN (as grpcio does)."""
    def requests():
        yield b"fine"
        raise RuntimeError("the application failed")

    call = bidi(channel)(requests(), timeout=TIMEOUT)
    got, error = drain_until_error(call)
    assert got in ([], [b"fine"])
    assert error.code() is StatusCode.UNKNOWN

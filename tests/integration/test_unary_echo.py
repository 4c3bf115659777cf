"""triple_py unary calls against the real peers (grpcio and grpc-go): echo of raw bytes
and of protobuf messages, metadata both ways, every status code, and futures."""
import os
import threading
import time

import pytest

import triple_py
from triple_py import _triple
from _helpers import MiB, TIMEOUT, benchmark_messages, echoed, rpc_error, unary

SIZES = [0, 1, 128, MiB, 4 * MiB]
NON_OK_CODES = [c for c in triple_py.StatusCode if c is not triple_py.StatusCode.OK]


@pytest.fixture
def channel(peer):
    with triple_py.insecure_channel(peer.address) as ch:
        yield ch


@pytest.fixture(scope="module")
def messages():
    return benchmark_messages()


# --- echo ----------------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}B")
def test_echo_raw_bytes(channel, size):
    request = os.urandom(size)
    response = unary(channel)(request, timeout=TIMEOUT)
    # bytes; a large one is received in place (a subclass of bytes, no second copy)
    assert type(response) is (_triple.ReceivedBytes if size >= _triple.RECEIVED_BYTES_MIN
                              else bytes)
    assert response == request


@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}B")
def test_echo_protobuf(peer, messages, size):
    request_type, response_type = messages
    # a 4 MiB payload makes a message a few bytes over the default 4 MiB receive limit
    options = [("grpc.max_receive_message_length", 5 * MiB)]
    with triple_py.insecure_channel(peer.address, options=options) as channel:
        call = unary(channel, request_serializer=request_type.SerializeToString,
                     response_deserializer=response_type.FromString)
        payload = os.urandom(size)
        response = call(request_type(payload=payload), timeout=TIMEOUT)
    assert isinstance(response, response_type)
    assert response.payload == payload


def test_protobuf_response_size(channel, messages):
    """A response that differs from the request (x-response-size) is deserialized."""
    request_type, response_type = messages
    call = unary(channel, request_serializer=request_type.SerializeToString,
                 response_deserializer=response_type.FromString)
    response, result = call.with_call(request_type(payload=b"ignored"), timeout=TIMEOUT,
                                      metadata=[("x-response-size", "300")])
    assert response.payload == b"a" * 300
    assert result.code() is triple_py.StatusCode.OK


def test_echo_on_one_channel_reuses_the_connection(channel):
    for size in SIZES:
        request = os.urandom(size)
        assert unary(channel)(request, timeout=TIMEOUT) == request
    stats = channel.stats()
    assert stats["connects"] == 1
    assert stats["calls"] == len(SIZES)


def test_bytes_like_requests(channel):
    data = os.urandom(1000)
    for request in (bytearray(data), memoryview(data)):
        assert unary(channel)(request, timeout=TIMEOUT) == data


# --- metadata ------------------------------------------------------------------------------

ECHO_METADATA = [("x-echo-text", "hello world"), ("x-echo-multi", "1"), ("x-echo-multi", "2"),
                 ("x-echo-data-bin", b"\x00\x01\xfe\xff"), ("x-echo-empty-bin", b""),
                 ("x-echo-long-bin", bytes(range(256)) * 4)]
NOT_ECHOED = [("x-other", "not echoed"), ("x-echoless", "no")]


def test_metadata_both_ways(channel):
    response, call = unary(channel).with_call(b"req", metadata=ECHO_METADATA + NOT_ECHOED,
                                              timeout=TIMEOUT)
    assert response == b"req"
    assert call.code() is triple_py.StatusCode.OK
    for received in (call.initial_metadata(), call.trailing_metadata()):
        assert echoed(received) == sorted(ECHO_METADATA)
        for key, value in received:
            assert isinstance(value, bytes if key.endswith("-bin") else str), (key, value)
        assert not {k for k, _ in received} & {k for k, _ in NOT_ECHOED}
        # transport headers are not metadata
        assert not {k for k, _ in received} & {":status", "content-type", "grpc-status",
                                               "grpc-message"}


def test_metadata_on_error(channel):
    error = rpc_error(unary(channel), b"req", metadata=ECHO_METADATA + [("x-status", "5")],
                      timeout=TIMEOUT)
    assert error.code() is triple_py.StatusCode.NOT_FOUND
    assert echoed(error.initial_metadata()) == sorted(ECHO_METADATA)
    assert echoed(error.trailing_metadata()) == sorted(ECHO_METADATA)


def test_metadata_as_lists_and_tuples(channel):
    metadata = (["x-echo-a", "1"], ("x-echo-b-bin", b"\x02"))
    _, call = unary(channel).with_call(b"req", metadata=metadata, timeout=TIMEOUT)
    assert echoed(call.trailing_metadata()) == [("x-echo-a", "1"), ("x-echo-b-bin", b"\x02")]


# --- status codes --------------------------------------------------------------------------

@pytest.mark.parametrize("code", NON_OK_CODES, ids=lambda c: c.name)
def test_status_code_with_message(channel, code):
    message = f"{code.name} on purpose"
    metadata = [("x-status", str(code.value[0])), ("x-message", message)]
    error = rpc_error(unary(channel), b"req", metadata=metadata, timeout=TIMEOUT)
    assert isinstance(error, triple_py.RpcError)
    assert (error.code(), error.details()) == (code, message)
    # the same through a future
    future = unary(channel).future(b"req", metadata=metadata, timeout=TIMEOUT)
    exception = future.exception(timeout=TIMEOUT)
    assert (exception.code(), exception.details()) == (code, message)
    assert (future.code(), future.details()) == (code, message)
    with pytest.raises(triple_py.RpcError):
        future.result(timeout=TIMEOUT)


def test_status_with_non_ascii_message(channel):
    text = "café ☕ 100% \"quoted\" ünïcode ✓"
    metadata = [("x-status", "9"), ("x-message", "ignored"), ("x-message-bin", text.encode())]
    error = rpc_error(unary(channel), b"req", metadata=metadata, timeout=TIMEOUT)
    assert (error.code(), error.details()) == (triple_py.StatusCode.FAILED_PRECONDITION, text)


def test_status_ok_sent_explicitly(channel):
    """x-status 0 on UnaryCall answers an empty message with OK."""
    response, call = unary(channel).with_call(b"req", metadata=[("x-status", "0")],
                                              timeout=TIMEOUT)
    assert response == b""
    assert call.code() is triple_py.StatusCode.OK


# --- futures -------------------------------------------------------------------------------

def test_future_result(channel):
    future = unary(channel).future(b"future", timeout=TIMEOUT)
    assert future.result(timeout=TIMEOUT) == b"future"
    assert future.done() and not future.running() and not future.cancelled()
    assert future.exception(timeout=TIMEOUT) is None
    assert future.code() is triple_py.StatusCode.OK


def test_future_with_serializers(channel, messages):
    request_type, response_type = messages
    call = unary(channel, request_serializer=request_type.SerializeToString,
                 response_deserializer=response_type.FromString)
    future = call.future(request_type(payload=b"pb"), timeout=TIMEOUT)
    assert future.result(timeout=TIMEOUT).payload == b"pb"


def test_future_result_timeout(channel):
    future = unary(channel).future(b"slow", metadata=[("x-delay-ms", "500")], timeout=TIMEOUT)
    with pytest.raises(triple_py.FutureTimeoutError):
        future.result(timeout=0.05)
    assert not future.done()
    assert future.result(timeout=TIMEOUT) == b"slow"


def test_done_callback_called_once_with_the_future(channel):
    calls = []
    called = threading.Event()

    def callback(fut):
        calls.append(fut)
        called.set()

    future = unary(channel).future(b"cb", metadata=[("x-delay-ms", "100")], timeout=TIMEOUT)
    future.add_done_callback(callback)
    assert called.wait(TIMEOUT)
    assert future.result(timeout=TIMEOUT) == b"cb"
    time.sleep(0.05)  # a second (wrong) invocation would come from the dispatcher thread
    assert len(calls) == 1 and calls[0] is future


def test_done_callback_after_completion_runs_at_once(channel):
    future = unary(channel).future(b"done", timeout=TIMEOUT)
    assert future.result(timeout=TIMEOUT) == b"done"
    calls = []
    future.add_done_callback(calls.append)
    assert calls == [future]


def test_done_callback_on_error(channel):
    called = threading.Event()
    future = unary(channel).future(b"x", metadata=[("x-status", "10")], timeout=TIMEOUT)
    future.add_done_callback(lambda fut: called.set())
    assert called.wait(TIMEOUT)
    assert future.code() is triple_py.StatusCode.ABORTED


def test_many_futures_each_callback_once(channel):
    counts = {}
    lock = threading.Lock()
    all_done = threading.Event()
    n = 200

    def callback(fut):
        with lock:
            counts[id(fut)] = counts.get(id(fut), 0) + 1
            if sum(counts.values()) == n:
                all_done.set()

    futures = [unary(channel).future(f"req-{i}".encode(), timeout=TIMEOUT) for i in range(n)]
    for fut in futures:
        fut.add_done_callback(callback)
    assert all_done.wait(TIMEOUT)
    assert [fut.result(timeout=TIMEOUT) for fut in futures] == \
        [f"req-{i}".encode() for i in range(n)]
    assert counts == {id(fut): 1 for fut in futures}


def test_future_cancel(channel):
    called = threading.Event()
    future = unary(channel).future(b"slow", metadata=[("x-delay-ms", "5000")], timeout=TIMEOUT)
    future.add_done_callback(lambda fut: called.set())
    assert not future.done()
    started = time.monotonic()
    assert future.cancel() is True
    with pytest.raises(triple_py.FutureCancelledError):
        future.result(timeout=TIMEOUT)
    assert time.monotonic() - started < 1
    assert future.cancelled() and future.done()
    assert future.code() is triple_py.StatusCode.CANCELLED
    assert called.wait(TIMEOUT)
    assert future.cancel() is False  # already finished
    assert unary(channel)(b"after", timeout=TIMEOUT) == b"after"


def test_cancel_after_completion(channel):
    future = unary(channel).future(b"x", timeout=TIMEOUT)
    assert future.result(timeout=TIMEOUT) == b"x"
    assert future.cancel() is False
    assert not future.cancelled()
    assert future.code() is triple_py.StatusCode.OK


# --- responses read in place -----------------------------------------------------------

def test_protobuf_parser_reads_the_response_in_place(messages):
    """A protobuf FromString may be handed the response as a buffer (no bytes copy);
    any other deserializer gets bytes, as in grpcio."""
    from triple_py._codec import reads_in_place

    _, response_type = messages

    class NotAMessage:
        @classmethod
        def FromString(cls, data):  # noqa: N802 - the protobuf spelling
            return data

    assert reads_in_place(response_type.FromString)
    assert not reads_in_place(NotAMessage.FromString)
    assert not reads_in_place(lambda data: data)
    assert not reads_in_place(None)


@pytest.mark.parametrize("size", [0, MiB], ids=lambda n: f"{n}B")
def test_core_call_exposes_its_response_as_a_buffer(channel, size):
    """memoryview(core call): the finished call's response, read-only, kept alive by
    the view after the call object is dropped."""
    request = os.urandom(size)
    core = channel._core.call(unary(channel)._method, request, wait=True)
    assert core.code() == 0
    view = memoryview(core)
    assert view.readonly
    del core
    assert view.tobytes() == request
    view.release()


def test_other_deserializers_get_bytes(channel):
    seen = []
    call = unary(channel, response_deserializer=lambda data: seen.append(type(data)) or data)
    assert call(b"\x0a\x01a", timeout=TIMEOUT) == b"\x0a\x01a"
    assert seen == [bytes]

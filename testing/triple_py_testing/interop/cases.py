"""The interop cases: one function per case, on triple_py's sync (grpcio-shaped) API.

The gRPC interop cases follow grpc/grpc's doc/interop-test-descriptions.md (sizes, messages,
assertions); triple_py's own cases come after them. A case function gets a ``Context`` (the
peer's address, the wire, the message classes), raises ``CaseFailed`` (or any exception) to
fail, and may return a short note for the report.

Each case declares the wires it applies to and the peer capabilities it needs
(``peers.EXPECT_COMPRESSED``, ``peers.RESPONSE_COMPRESSION``); the runner reports a cell
n/a, with the reason, when the wire or the peer does not fit. Streams on a ``wire="triple"``
channel are gRPC streams (the Triple wire is unary only, docs/triple-wire.md §2), so the
stream-only cases apply to the grpc wire; cases with a unary and a streaming step run both
on either wire.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import triple_py
from .intercept import Interception
from triple_py import Compression, StatusCode

from .peers import EXPECT_COMPRESSED, RESPONSE_COMPRESSION

TIMEOUT = 10.0  # seconds: the deadline of a call that should succeed (a shared, small machine)
LONG_TIMEOUT = 60.0  # for the 8 MiB messages, 1,000 calls and 10,000 messages
SERVICE = "/grpc.testing.TestService/"
UNIMPLEMENTED_SERVICE = "/grpc.testing.UnimplementedService/"
MAX_RECEIVE = "grpc.max_receive_message_length"
MAX_SEND = "grpc.max_send_message_length"
KiB, MiB = 1024, 1024 * 1024
WIRES = ("grpc", "triple")
GRPC_ONLY = ("grpc",)

ECHO_INITIAL_KEY = "x-grpc-test-echo-initial"
ECHO_INITIAL_VALUE = "test_initial_metadata_value"
ECHO_TRAILING_KEY = "x-grpc-test-echo-trailing-bin"
ECHO_TRAILING_VALUE = b"\xab\xab\xab"
SPECIAL_STATUS_MESSAGE = "\t\ntest with whitespace\r\nand Unicode BMP \u263a and non-BMP \U0001f608\t\n"


class CaseFailed(AssertionError):
    """A case's assertion did not hold."""


def check(condition: bool, message: str) -> None:
    """Fail the case with ``message`` unless ``condition`` holds (not stripped by -O)."""
    if not condition:
        raise CaseFailed(message)


# --- context and stub --------------------------------------------------------------------------

class Stub:
    """grpc.testing.TestService's multi-callables on one channel (what protoc's grpc plugin
    would generate for grpcio), with the messages of ``pb``."""

    def __init__(self, channel: triple_py.Channel, pb: ModuleType) -> None:
        m, e = pb.messages_pb2, pb.empty_pb2

        def method(kind: Callable, name: str, request: Any, response: Any,
                   prefix: str = SERVICE) -> Any:
            return kind(prefix + name, request_serializer=request.SerializeToString,
                        response_deserializer=response.FromString)

        self.EmptyCall = method(channel.unary_unary, "EmptyCall", e.Empty, e.Empty)
        self.UnaryCall = method(channel.unary_unary, "UnaryCall", m.SimpleRequest,
                                m.SimpleResponse)
        self.StreamingOutputCall = method(channel.unary_stream, "StreamingOutputCall",
                                          m.StreamingOutputCallRequest,
                                          m.StreamingOutputCallResponse)
        self.StreamingInputCall = method(channel.stream_unary, "StreamingInputCall",
                                         m.StreamingInputCallRequest,
                                         m.StreamingInputCallResponse)
        self.FullDuplexCall = method(channel.stream_stream, "FullDuplexCall",
                                     m.StreamingOutputCallRequest,
                                     m.StreamingOutputCallResponse)
        self.HalfDuplexCall = method(channel.stream_stream, "HalfDuplexCall",
                                     m.StreamingOutputCallRequest,
                                     m.StreamingOutputCallResponse)
        self.UnimplementedCall = method(channel.unary_unary, "UnimplementedCall",
                                        e.Empty, e.Empty)
        self.UnimplementedServiceCall = method(channel.unary_unary, "UnimplementedCall",
                                               e.Empty, e.Empty, UNIMPLEMENTED_SERVICE)


class Context:
    """What a case runs against: one peer address on one wire.

    ``channel()`` opens a channel on the cell's wire and tracks it; ``close()`` (called by
    the runner when the case ends or overruns its time) closes them all, which also ends
    every call still in flight.
    """

    def __init__(self, address: str, wire: str, pb: ModuleType, peer: str = "",
                 intercepted: bool = False) -> None:
        self.interception = Interception() if intercepted else None
        self.address = address
        self.wire = wire
        self.pb = pb
        self.m = pb.messages_pb2
        self.peer = peer
        self._channels: List[triple_py.Channel] = []
        self._lock = threading.Lock()
        self._closed = False

    def channel(self, options: Sequence[Tuple[str, Any]] = (),
                compression: Any = None) -> triple_py.Channel:
        """A new channel to the peer on this cell's wire."""
        channel = triple_py.insecure_channel(self.address, options=list(options),
                                             compression=compression, wire=self.wire)
        with self._lock:
            if self._closed:
                channel.close()
                raise CaseFailed("the case was stopped")
            self._channels.append(channel)
        return self.interception.wrap(channel) if self.interception else channel

    def stub(self, channel: Optional[triple_py.Channel] = None) -> Stub:
        """The TestService stub on ``channel`` (a new default channel when None)."""
        return Stub(channel if channel is not None else self.channel(), self.pb)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channels, self._channels = self._channels, []
        for channel in channels:
            channel.close()

    # message helpers
    def payload(self, size: int, body: Optional[bytes] = None) -> Any:
        return self.m.Payload(type=self.m.COMPRESSABLE,
                              body=bytes(size) if body is None else body)

    def simple_request(self, response_size: int = 0, payload_size: int = 0,
                       **fields: Any) -> Any:
        request = self.m.SimpleRequest(response_type=self.m.COMPRESSABLE,
                                       response_size=response_size, **fields)
        if payload_size:
            request.payload.CopyFrom(self.payload(payload_size))
        return request

    def output_request(self, sizes: Iterable[int] = (), payload_size: int = 0,
                       **fields: Any) -> Any:
        request = self.m.StreamingOutputCallRequest(
            response_type=self.m.COMPRESSABLE,
            response_parameters=[self.m.ResponseParameters(size=n) for n in sizes], **fields)
        if payload_size:
            request.payload.CopyFrom(self.payload(payload_size))
        return request

    def input_request(self, payload_size: int, expect_compressed: Optional[bool] = None) -> Any:
        request = self.m.StreamingInputCallRequest(payload=self.payload(payload_size))
        if expect_compressed is not None:
            request.expect_compressed.value = expect_compressed
        return request


def expect_error(fn: Callable[[], Any], code: StatusCode,
                 details: Optional[str] = None) -> triple_py.RpcError:
    """Run ``fn`` and return the RpcError it must raise, with ``code`` (and ``details``)."""
    try:
        result = fn()
    except triple_py.RpcError as error:
        check(error.code() is code,
              f"expected {code.name}, got {error.code().name}: {error.details()!r}")
        if details is not None:
            check(error.details() == details,
                  f"status message {error.details()!r}, expected {details!r}")
        return error
    raise CaseFailed(f"expected {code.name}, the call succeeded with {_short(result)}")


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check_body(body: bytes, size: int, what: str = "response payload") -> None:
    check(len(body) == size, f"{what} is {len(body)} bytes, expected {size}")
    check(body.count(0) == size, f"{what} is not all zeros")


def check_sizes(responses: Sequence[Any], sizes: Sequence[int]) -> None:
    got = [len(r.payload.body) for r in responses]
    check(got == list(sizes), f"response payload sizes {got}, expected {list(sizes)}")
    for response in responses:
        check(response.payload.body.count(0) == len(response.payload.body),
              "a response payload is not all zeros")


def check_metadata(metadata: Any, key: str, value: Any, where: str) -> None:
    values = [v for k, v in (metadata or ()) if k == key]
    check(values == [value], f"{where} metadata {key}: {values!r}, expected [{value!r}]")


def _bytes_read(channel: triple_py.Channel) -> int:
    return channel.stats()["bytes_read"]


def _bytes_written(channel: triple_py.Channel) -> int:
    return channel.stats()["bytes_written"]


# --- the registry ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One interop case: the function, the wires it applies to, what it needs from a peer."""

    name: str
    fn: Callable[[Context], Optional[str]]
    wires: Tuple[str, ...]
    needs: Tuple[str, ...]
    timeout: float  # seconds the whole case may take
    summary: str
    wire_reason: str  # why it does not apply on the other wires


STREAMS_ARE_GRPC = ("streaming only: streams on a Triple channel are gRPC streams "
                    "(the Triple wire is unary, docs/triple-wire.md §2); see the grpc wire")
CASES: Dict[str, Case] = {}


def case(wires: Tuple[str, ...] = WIRES, needs: Tuple[str, ...] = (), timeout: float = 30.0,
         wire_reason: str = STREAMS_ARE_GRPC) -> Callable:
    """Register a case function under its name, in definition order."""
    def register(fn: Callable[[Context], Optional[str]]) -> Callable:
        summary = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        CASES[fn.__name__] = Case(fn.__name__, fn, wires, needs, timeout, summary, wire_reason)
        return fn
    return register


# --- the gRPC interop cases ----------------------------------------------------------------

@case()
def empty_unary(ctx: Context) -> None:
    """EmptyCall with the default Empty: a zero-byte request and response."""
    stub = ctx.stub()
    response, call = stub.EmptyCall.with_call(ctx.pb.empty_pb2.Empty(), timeout=TIMEOUT)
    check(isinstance(response, ctx.pb.empty_pb2.Empty), f"response {_short(response)}")
    check(response.ByteSize() == 0, "the response is not empty")
    check(call.code() is StatusCode.OK, f"code {call.code()}")


@case()
def large_unary(ctx: Context) -> None:
    """UnaryCall: 271828 bytes of zeros in, 314159 out."""
    stub = ctx.stub()
    response = stub.UnaryCall(ctx.simple_request(314159, 271828), timeout=TIMEOUT)
    check_body(response.payload.body, 314159)


@case(needs=(EXPECT_COMPRESSED,))
def client_compressed_unary(ctx: Context) -> str:
    """Probe (plain, expect_compressed: INVALID_ARGUMENT), gzip request, plain request."""
    channel = ctx.channel()
    stub = ctx.stub(channel)

    def request(expect: bool) -> Any:
        r = ctx.simple_request(314159, 271828)
        r.expect_compressed.value = expect
        return r

    expect_error(lambda: stub.UnaryCall(request(True), timeout=TIMEOUT),
                 StatusCode.INVALID_ARGUMENT)
    before = _bytes_written(channel)
    response = stub.UnaryCall(request(True), timeout=TIMEOUT, compression=Compression.Gzip)
    written = _bytes_written(channel) - before
    check_body(response.payload.body, 314159)
    check(written < 271828 // 4, f"the gzip request took {written} bytes on the wire")
    response = stub.UnaryCall(request(False), timeout=TIMEOUT)
    check_body(response.payload.body, 314159)
    return f"gzip request: {written} bytes written"


@case(needs=(RESPONSE_COMPRESSION,))
def server_compressed_unary(ctx: Context) -> str:
    """response_compressed true, then false: compressed or not on the wire (bytes read)."""
    channel = ctx.channel()
    stub = ctx.stub(channel)
    seen = []
    for compressed in (True, False):
        r = ctx.simple_request(314159, 271828)
        r.response_compressed.value = compressed
        before = _bytes_read(channel)
        response = stub.UnaryCall(r, timeout=TIMEOUT)
        read = _bytes_read(channel) - before
        check_body(response.payload.body, 314159)
        if compressed:
            check(read < 314159 // 4, f"response_compressed: {read} bytes read: not compressed")
        else:
            check(read >= 314159, f"response_compressed false: only {read} bytes read")
        seen.append(read)
    return f"bytes read: {seen[0]} compressed, {seen[1]} not"


@case(wires=GRPC_ONLY)
def client_streaming(ctx: Context) -> None:
    """StreamingInputCall: 27182, 8, 1828, 45904 bytes; aggregated_payload_size 74922."""
    stub = ctx.stub()
    requests = [ctx.input_request(n) for n in (27182, 8, 1828, 45904)]
    response = stub.StreamingInputCall(iter(requests), timeout=TIMEOUT)
    check(response.aggregated_payload_size == 74922,
          f"aggregated_payload_size {response.aggregated_payload_size}, expected 74922")


@case(wires=GRPC_ONLY, needs=(EXPECT_COMPRESSED,))
def client_compressed_streaming(ctx: Context) -> str:
    """Probe (plain, expect_compressed: INVALID_ARGUMENT), gzip stream 27182+45904: 73086."""
    channel = ctx.channel()
    stub = ctx.stub(channel)
    expect_error(lambda: stub.StreamingInputCall(iter([ctx.input_request(27182, True)]),
                                                 timeout=TIMEOUT),
                 StatusCode.INVALID_ARGUMENT)
    # The public case sends the second message uncompressed (expect_compressed false);
    # triple_py, like grpcio's Python API, compresses per call, not per message.
    requests = [ctx.input_request(27182, True), ctx.input_request(45904, True)]
    before = _bytes_written(channel)
    response = stub.StreamingInputCall(iter(requests), timeout=TIMEOUT,
                                       compression=Compression.Gzip)
    written = _bytes_written(channel) - before
    check(response.aggregated_payload_size == 73086,
          f"aggregated_payload_size {response.aggregated_payload_size}, expected 73086")
    check(written < 73086 // 4, f"the gzip stream took {written} bytes on the wire")
    return ("both messages gzip (no per-message compression switch in triple_py's API); "
            f"{written} bytes written")


@case(wires=GRPC_ONLY)
def server_streaming(ctx: Context) -> None:
    """StreamingOutputCall: responses of 31415, 9, 2653, 58979 bytes, in order."""
    stub = ctx.stub()
    sizes = (31415, 9, 2653, 58979)
    call = stub.StreamingOutputCall(ctx.output_request(sizes), timeout=TIMEOUT)
    responses = list(call)
    check_sizes(responses, sizes)
    check(call.code() is StatusCode.OK, f"code {call.code()}")


@case(wires=GRPC_ONLY, needs=(RESPONSE_COMPRESSION,))
def server_compressed_streaming(ctx: Context) -> str:
    """StreamingOutputCall: 31415 bytes compressed, then 92653 not (bytes read)."""
    channel = ctx.channel()
    stub = ctx.stub(channel)
    request = ctx.m.StreamingOutputCallRequest(response_parameters=[
        ctx.m.ResponseParameters(size=31415, compressed=ctx.m.BoolValue(value=True)),
        ctx.m.ResponseParameters(size=92653, compressed=ctx.m.BoolValue(value=False)),
    ])
    before = _bytes_read(channel)
    call = stub.StreamingOutputCall(request, timeout=TIMEOUT)
    responses = list(call)
    read = _bytes_read(channel) - before
    check_sizes(responses, (31415, 92653))
    check(92653 <= read < 92653 + 31415 // 2,
          f"{read} bytes read: expected the 31415 bytes compressed and the 92653 not")
    return f"{read} bytes read"


@case(wires=GRPC_ONLY)
def ping_pong(ctx: Context) -> None:
    """FullDuplexCall: four request/response pairs, one at a time, then half-close."""
    stub = ctx.stub()
    call = stub.FullDuplexCall(timeout=TIMEOUT)
    for size, body in ((31415, 27182), (9, 8), (2653, 1828), (58979, 45904)):
        call.write(ctx.output_request([size], body))
        response = next(call)
        check_body(response.payload.body, size)
    call.done_writing()
    rest = list(call)
    check(rest == [], f"{len(rest)} responses after the half-close")
    check(call.code() is StatusCode.OK, f"code {call.code()}")


@case(wires=GRPC_ONLY)
def empty_stream(ctx: Context) -> None:
    """FullDuplexCall, half-closed at once: no responses, OK."""
    stub = ctx.stub()
    call = stub.FullDuplexCall(iter(()), timeout=TIMEOUT)
    responses = list(call)
    check(responses == [], f"{len(responses)} responses")
    check(call.code() is StatusCode.OK, f"code {call.code()}")


@case(wires=GRPC_ONLY)
def timeout_on_sleeping_server(ctx: Context) -> None:
    """FullDuplexCall with a 1 ms deadline and 27182 bytes: DEADLINE_EXCEEDED."""
    stub = ctx.stub()
    call = stub.FullDuplexCall(timeout=0.001)

    def run() -> Any:
        call.write(ctx.output_request((), 27182))
        return next(call)

    expect_error(run, StatusCode.DEADLINE_EXCEEDED)
    check(call.code() is StatusCode.DEADLINE_EXCEEDED, f"call code {call.code()}")


class _Pipe:
    """A request iterator that blocks until ``close()`` (grpc's interop client has one)."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[Any]" = queue.Queue()

    def __iter__(self) -> "_Pipe":
        return self

    def __next__(self) -> Any:
        item = self._queue.get()
        if item is None:
            raise StopIteration
        return item

    def close(self) -> None:
        self._queue.put(None)


@case(wires=GRPC_ONLY)
def cancel_after_begin(ctx: Context) -> None:
    """StreamingInputCall cancelled before any request is sent: CANCELLED."""
    stub = ctx.stub()
    pipe = _Pipe()
    future = stub.StreamingInputCall.future(pipe, timeout=TIMEOUT)
    try:
        check(future.cancel(), "cancel() returned False on a running call")
    finally:
        pipe.close()
    check(future.cancelled(), "cancelled() is False")
    check(future.code() is StatusCode.CANCELLED, f"code {future.code()}")
    try:
        future.result(timeout=TIMEOUT)
    except triple_py.FutureCancelledError:
        pass
    else:
        raise CaseFailed("result() of the cancelled call did not raise FutureCancelledError")


@case(wires=GRPC_ONLY)
def cancel_after_first_response(ctx: Context) -> None:
    """FullDuplexCall cancelled after the first response: CANCELLED."""
    stub = ctx.stub()
    call = stub.FullDuplexCall(timeout=TIMEOUT)
    call.write(ctx.output_request([31415], 27182))
    check_body(next(call).payload.body, 31415)
    check(call.cancel(), "cancel() returned False on a running call")
    expect_error(lambda: next(call), StatusCode.CANCELLED)
    check(call.code() is StatusCode.CANCELLED, f"code {call.code()}")


@case()
def status_code_and_message(ctx: Context) -> None:
    """response_status {2, "test status message"} on UnaryCall and FullDuplexCall."""
    stub = ctx.stub()
    message = "test status message"
    status = ctx.m.EchoStatus(code=2, message=message)
    expect_error(lambda: stub.UnaryCall(ctx.simple_request(response_status=status),
                                        timeout=TIMEOUT),
                 StatusCode.UNKNOWN, message)
    call = stub.FullDuplexCall(iter([ctx.output_request(response_status=status)]),
                               timeout=TIMEOUT)
    expect_error(lambda: list(call), StatusCode.UNKNOWN, message)


@case()
def special_status_message(ctx: Context) -> None:
    """A status message with tabs, CR/LF, BMP and non-BMP characters comes back intact."""
    stub = ctx.stub()
    status = ctx.m.EchoStatus(code=2, message=SPECIAL_STATUS_MESSAGE)
    expect_error(lambda: stub.UnaryCall(ctx.simple_request(response_status=status),
                                        timeout=TIMEOUT),
                 StatusCode.UNKNOWN, SPECIAL_STATUS_MESSAGE)


@case()
def custom_metadata(ctx: Context) -> None:
    """x-grpc-test-echo-initial / -trailing-bin echoed on UnaryCall and FullDuplexCall."""
    stub = ctx.stub()
    metadata = ((ECHO_INITIAL_KEY, ECHO_INITIAL_VALUE), (ECHO_TRAILING_KEY, ECHO_TRAILING_VALUE))
    response, call = stub.UnaryCall.with_call(ctx.simple_request(314159, 271828),
                                              metadata=metadata, timeout=TIMEOUT)
    check_body(response.payload.body, 314159)
    check_metadata(call.initial_metadata(), ECHO_INITIAL_KEY, ECHO_INITIAL_VALUE, "unary initial")
    check_metadata(call.trailing_metadata(), ECHO_TRAILING_KEY, ECHO_TRAILING_VALUE,
                   "unary trailing")
    stream = stub.FullDuplexCall(iter([ctx.output_request([314159], 271828)]),
                                 metadata=metadata, timeout=TIMEOUT)
    responses = list(stream)
    check_sizes(responses, [314159])
    check_metadata(stream.initial_metadata(), ECHO_INITIAL_KEY, ECHO_INITIAL_VALUE,
                   "stream initial")
    check_metadata(stream.trailing_metadata(), ECHO_TRAILING_KEY, ECHO_TRAILING_VALUE,
                   "stream trailing")


@case()
def unimplemented_method(ctx: Context) -> None:
    """grpc.testing.TestService/UnimplementedCall: UNIMPLEMENTED."""
    stub = ctx.stub()
    expect_error(lambda: stub.UnimplementedCall(ctx.pb.empty_pb2.Empty(), timeout=TIMEOUT),
                 StatusCode.UNIMPLEMENTED)


@case()
def unimplemented_service(ctx: Context) -> None:
    """grpc.testing.UnimplementedService/UnimplementedCall: UNIMPLEMENTED."""
    stub = ctx.stub()
    expect_error(lambda: stub.UnimplementedServiceCall(ctx.pb.empty_pb2.Empty(),
                                                       timeout=TIMEOUT),
                 StatusCode.UNIMPLEMENTED)


# --- triple_py's own cases -------------------------------------------------------------------

def _large_message(ctx: Context, size: int) -> str:
    """``size``-byte messages both ways, unary and on one stream, under the channel's
    max receive/send limits; then limits below the size fail with RESOURCE_EXHAUSTED."""
    limit = size + 64 * KiB  # room for the message's own fields
    options = [(MAX_RECEIVE, limit), (MAX_SEND, limit)]
    channel = ctx.channel(options)
    stub = ctx.stub(channel)
    body = os.urandom(size)  # incompressible: the request crosses the wire whole
    request = ctx.simple_request(size)
    request.payload.body = body
    started = time.monotonic()
    response = stub.UnaryCall(request, timeout=LONG_TIMEOUT)
    check_body(response.payload.body, size)
    unary_s = time.monotonic() - started
    # Two messages each way on one stream: more than one 16 MiB stream window for 8 MiB.
    call = stub.FullDuplexCall(timeout=LONG_TIMEOUT)
    for _ in range(2):
        r = ctx.output_request([size])
        r.payload.body = body
        call.write(r)
        check_body(next(call).payload.body, size, "stream response payload")
    call.done_writing()
    check(list(call) == [], "responses after the half-close")
    check(call.code() is StatusCode.OK, f"stream code {call.code()}")
    # Below the limits: the client refuses to receive / to send the message.
    small = ctx.stub(ctx.channel([(MAX_RECEIVE, size // 2), (MAX_SEND, limit)]))
    expect_error(lambda: small.UnaryCall(ctx.simple_request(size), timeout=LONG_TIMEOUT),
                 StatusCode.RESOURCE_EXHAUSTED)
    small = ctx.stub(ctx.channel([(MAX_RECEIVE, limit), (MAX_SEND, size // 2)]))
    expect_error(lambda: small.UnaryCall(request, timeout=LONG_TIMEOUT),
                 StatusCode.RESOURCE_EXHAUSTED)
    return f"unary round trip {unary_s * 1000:.0f} ms"


@case(timeout=60.0)
def large_message_1mib(ctx: Context) -> str:
    """1 MiB messages: unary, 2 each way on a stream, and max receive/send enforced."""
    return _large_message(ctx, 1 * MiB)


@case(timeout=120.0)
def large_message_8mib(ctx: Context) -> str:
    """8 MiB messages: unary, 2 each way on a stream (flow control), max receive/send."""
    return _large_message(ctx, 8 * MiB)


@case(timeout=90.0)
def concurrent_unary_1000(ctx: Context) -> str:
    """1,000 concurrent UnaryCall futures on one channel, every answer matched."""
    channel = ctx.channel()
    stub = ctx.stub(channel)
    count = 1000
    started = time.monotonic()
    futures = [stub.UnaryCall.future(ctx.simple_request(i + 1, 16), timeout=LONG_TIMEOUT)
               for i in range(count)]
    wrong: List[str] = []
    for i, future in enumerate(futures):
        try:
            size = len(future.result(timeout=LONG_TIMEOUT).payload.body)
            if size != i + 1:
                wrong.append(f"#{i}: {size} bytes")
        except Exception as exc:  # noqa: BLE001 - reported as the case's failure
            wrong.append(f"#{i}: {type(exc).__name__} {getattr(exc, 'code', lambda: '')()}")
    elapsed = time.monotonic() - started
    check(not wrong, f"{len(wrong)} of {count} calls wrong: {', '.join(wrong[:5])}")
    connects = channel.stats()["connects"]
    check(connects == 1, f"{connects} connections for one channel")
    return f"{count} calls in {elapsed * 1000:.0f} ms on one connection"


@case(wires=GRPC_ONLY, timeout=90.0)
def coalesced_stream_10k(ctx: Context) -> str:
    """10,000 small messages in one client stream through the coalescing writer."""
    channel = ctx.channel()
    stub = ctx.stub(channel)
    count = 10_000
    sizes = [i % 100 + 1 for i in range(count)]
    requests = [ctx.input_request(n) for n in sizes]
    before = channel.stats()
    response = stub.StreamingInputCall(iter(requests), timeout=LONG_TIMEOUT)
    after = channel.stats()
    check(response.aggregated_payload_size == sum(sizes),
          f"aggregated_payload_size {response.aggregated_payload_size}, expected {sum(sizes)}")
    writes = after["write_syscalls"] - before["write_syscalls"]
    check(writes < count // 4, f"{writes} write syscalls for {count} messages: not coalesced")
    return f"{count} messages in {writes} write syscalls"


@case(wires=("triple",), timeout=30.0,
      wire_reason="the JSON codec is a Triple-wire (Connect unary) feature: triple_py's gRPC "
                  "wire sends application/grpc (protobuf)")
def triple_json_unary(ctx: Context) -> None:
    """Triple wire with the JSON codec: a protojson SimpleRequest, a JSON SimpleResponse."""
    from google.protobuf import json_format
    channel = ctx.channel([("triple.codec", "json")])
    call = channel.unary_unary(SERVICE + "UnaryCall")
    request = json_format.MessageToJson(ctx.simple_request(1000, 100)).encode()
    raw = call(request, timeout=TIMEOUT)
    response = json_format.Parse(raw, ctx.m.SimpleResponse())
    check_body(response.payload.body, 1000)
    status = ctx.m.EchoStatus(code=2, message=SPECIAL_STATUS_MESSAGE)
    failing = json_format.MessageToJson(ctx.simple_request(response_status=status)).encode()
    expect_error(lambda: call(failing, timeout=TIMEOUT), StatusCode.UNKNOWN,
                 SPECIAL_STATUS_MESSAGE)

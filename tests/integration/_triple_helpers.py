"""Shared helpers of the Triple-wire integration tests (test_triple_wire.py).

The real peer is the Connect server of tests/peers/node/ (fixture `connect_server`): Connect's
unary protocol is what the Dubbo Triple unary wire derives from (docs/triple-wire.md §1), so
it answers triple_py's Triple-wire unary calls, and the same port serves gRPC too.

`RawH2Server` is a tiny in-process HTTP/2 (h2c, prior knowledge) server on the venv's `h2`
package: it records every request (headers in wire order, body) and answers with a scripted
status, headers and body, so a test can look at exactly what the client put on the wire and
feed it answers no real server gives (a 503 with an HTML body, a `code_17` error).

Every call made here carries a deadline and every thread is joined with a timeout, so a
stalled call fails a test instead of hanging the run.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import select
import socket
import threading
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

import h2.config
import h2.connection
import h2.events
import h2.exceptions

import triple_py
from peers import STREAM_METHOD, UNARY_METHOD

KiB = 1024
TIMEOUT = 10  # seconds: the deadline of every call that is expected to succeed
Code = triple_py.StatusCode
DETAILS_KEY = "grpc-status-details-bin"


# --- channels and calls --------------------------------------------------------------------

def triple_channel(address: str, options: Sequence[tuple] = (),
                   **kwargs) -> triple_py.Channel:
    """A Triple-wire channel (`wire="triple"`) to `address`; use it as a context manager."""
    return triple_py.insecure_channel(address, options=list(options), wire="triple", **kwargs)


def unary(channel: triple_py.Channel, **serializers):
    """The BenchmarkService UnaryCall multi-callable of `channel`."""
    return channel.unary_unary(UNARY_METHOD, **serializers)


def bidi(channel: triple_py.Channel):
    """The BenchmarkService StreamCall multi-callable (stream_stream, raw bytes)."""
    return channel.stream_stream(STREAM_METHOD)


def echoed(metadata) -> list:
    """The x-echo-* pairs of received metadata, sorted."""
    return sorted((k, v) for k, v in metadata if k.startswith("x-echo-"))


def header(metadata, key: str):
    """The value of the single `key` pair of `metadata` (AssertionError if absent/repeated)."""
    values = [v for k, v in metadata if k == key]
    assert len(values) == 1, f"{key}: {values} in {metadata}"
    return values[0]


# --- JSON codec ----------------------------------------------------------------------------

def json_request(payload: bytes) -> bytes:
    """A BenchmarkRequest in protobuf JSON: {"payload": "<base64>"} (bytes are base64)."""
    return json.dumps({"payload": base64.b64encode(payload).decode("ascii")}).encode()


def json_payload(body: bytes) -> bytes:
    """The payload of a BenchmarkResponse in protobuf JSON (an absent field is empty)."""
    return base64.b64decode(json.loads(body).get("payload", ""))


# --- google.rpc.Status (grpc-status-details-bin), decoded by hand --------------------------

@dataclasses.dataclass
class RpcStatus:
    """google.rpc.Status {int32 code = 1; string message = 2; repeated Any details = 3}."""

    code: int = 0
    message: str = ""
    details: List[Tuple[str, bytes]] = dataclasses.field(default_factory=list)  # (url, value)


def _fields(data: bytes) -> Iterable[Tuple[int, int, object]]:
    """(field number, wire type, value) of a protobuf message: varint or length-delimited."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    while pos < len(data):
        key = varint()
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            yield number, wire_type, varint()
        elif wire_type == 2:
            length = varint()
            yield number, wire_type, data[pos:pos + length]
            pos += length
        else:
            raise ValueError(f"unexpected wire type {wire_type} of field {number}")


def decode_rpc_status(data: bytes) -> RpcStatus:
    """Decode a google.rpc.Status protobuf."""
    status = RpcStatus()
    for number, _, value in _fields(data):
        if number == 1:
            status.code = value  # type: ignore[assignment]
        elif number == 2:
            status.message = bytes(value).decode("utf-8")  # type: ignore[arg-type]
        elif number == 3:
            any_fields = {n: bytes(v) for n, _, v in _fields(value)}  # type: ignore[arg-type]
            status.details.append((any_fields.get(1, b"").decode(), any_fields.get(2, b"")))
    return status


# --- a raw HTTP/2 server that records requests and answers from a script -------------------

@dataclasses.dataclass
class Request:
    """One request as the server saw it: header pairs in wire order, and the whole body."""

    headers: List[Tuple[str, str]]
    body: bytes = b""

    def get(self, key: str) -> Optional[str]:
        """The value of `key` (None if absent; AssertionError if repeated)."""
        values = [v for k, v in self.headers if k == key]
        assert len(values) <= 1, f"{key} repeated: {values}"
        return values[0] if values else None

    def keys(self) -> List[str]:
        return [k for k, _ in self.headers]


@dataclasses.dataclass
class Answer:
    """What RawH2Server sends back: `:status`, extra headers, body (omitted when empty)."""

    status: int = 200
    headers: Sequence[Tuple[str, str]] = ()
    body: bytes = b""


def json_error(code: str, message: str = "", http_status: int = 500, **extra) -> Answer:
    """A Triple/Connect unary error answer: `http_status` with a JSON body."""
    body = {"code": code, **({"message": message} if message else {}), **extra}
    return Answer(http_status, [("content-type", "application/json")], json.dumps(body).encode())


def proto_ok(body: bytes, headers: Sequence[Tuple[str, str]] = ()) -> Answer:
    """A Triple unary success: 200, application/proto, the bare message."""
    return Answer(200, [("content-type", "application/proto"), *headers], body)


class RawH2Server:
    """An h2c server on 127.0.0.1 run by threads of this process (context manager).

    `respond(request)` picks the answer to each complete request; `requests` lists every
    request received, in order of completion.
    """

    def __init__(self, respond: Callable[[Request], Answer] = lambda r: proto_ok(r.body)):
        self._respond = respond
        self.requests: List[Request] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self._threads: List[threading.Thread] = []
        self._start(self._accept_loop, "raw-h2-accept")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, target, name: str, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def __enter__(self) -> "RawH2Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(5)
            assert not thread.is_alive(), f"{thread.name} did not stop"

    def last(self) -> Request:
        with self._lock:
            assert self.requests, "the server received no complete request"
            return self.requests[-1]

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:  # close() may close the listener under this select
                readable, _, _ = select.select([self._listener], [], [], 0.05)
                if not readable:
                    continue
                sock, _ = self._listener.accept()
            except (OSError, ValueError):
                return
            self._start(self._serve, "raw-h2-conn", sock)

    def _serve(self, sock: socket.socket) -> None:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding="utf-8", validate_inbound_headers=False))
        conn.initiate_connection()
        partial: dict = {}
        with sock:
            try:
                sock.sendall(conn.data_to_send())
                while not self._stop.is_set():
                    readable, _, _ = select.select([sock], [], [], 0.05)
                    if not readable:
                        continue
                    data = sock.recv(65536)
                    if not data:
                        return
                    for event in conn.receive_data(data):
                        self._on_event(conn, event, partial)
                    sock.sendall(conn.data_to_send())
            except (OSError, h2.exceptions.ProtocolError):
                return

    def _on_event(self, conn: h2.connection.H2Connection, event, partial: dict) -> None:
        if isinstance(event, h2.events.RequestReceived):
            partial[event.stream_id] = Request([(k, v) for k, v in event.headers])
        elif isinstance(event, h2.events.DataReceived):
            partial[event.stream_id].body += event.data
            conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            request = partial.pop(event.stream_id)
            with self._lock:
                self.requests.append(request)
            try:
                self._answer(conn, event.stream_id, self._respond(request))
            except (h2.exceptions.StreamClosedError, h2.exceptions.StreamIDTooLowError):
                pass  # the client reset the stream (its deadline) in the same read

    @staticmethod
    def _answer(conn: h2.connection.H2Connection, stream_id: int, answer: Answer) -> None:
        headers = [(":status", str(answer.status)), *answer.headers]
        if answer.body:
            headers.append(("content-length", str(len(answer.body))))
        conn.send_headers(stream_id, headers, end_stream=not answer.body)
        # Bodies up to the client's stream window (no flow-control waits here), in frames
        # no larger than the 16 KiB every HTTP/2 peer accepts.
        chunks = [answer.body[i:i + 16 * KiB] for i in range(0, len(answer.body), 16 * KiB)]
        for i, chunk in enumerate(chunks):
            conn.send_data(stream_id, chunk, end_stream=i == len(chunks) - 1)


def b64_unpadded(data: bytes) -> str:
    """Standard base64 without `=` padding (how -bin metadata goes on the wire)."""
    return base64.b64encode(data).decode("ascii").rstrip("=")

"""The rogue test peer: a deliberately misbehaving HTTP/2 (h2c, prior knowledge) server.

Built on python3-h2 with one thread per connection. The last segment of the request's
`:path` picks the behaviour, e.g. `/rogue.Rogue/TrailersOnly`; the server answers once the
request is complete (END_STREAM), except where noted:

  MalformedFlags    200, one message whose prefix flag byte is 0x02, grpc-status 0
  TruncatedMessage  200, a prefix declaring 100 bytes followed by 10, grpc-status 0
  Http503           :status 503 with END_STREAM, no grpc-status
  Http404NoGrpc     :status 404, text/plain body, no grpc-status
  TrailersOnly      one HEADERS with END_STREAM: 200, grpc-status 7, grpc-message
                    TRAILERS_ONLY_WIRE (percent-encoded "café % done")
  PercentMessage    200, no message, grpc-status 3, grpc-message PERCENT_MESSAGE_WIRE
                    (escapes including the invalid `%zz`)
  StatusDetails     200, no message, grpc-status 3, grpc-message STATUS_DETAILS_MESSAGE,
                    grpc-status-details-bin = unpadded base64 of STATUS_DETAILS
                    (a google.rpc.Status encoded by hand)
  HugeResponse      200, a prefix declaring 100 MiB, then 64 KiB of data at a time (as the
                    client's flow-control window allows) until the client resets the stream;
                    the server resets it itself after 200 MiB
  DropConnection    closes the TCP connection abruptly (RST) without answering
  NeverAnswer       never answers; the stream stays open
  TwoMessages       two messages on one call, then grpc-status 0
  MissingStatus     200, one valid message, trailers without grpc-status
  Echo              a correct gRPC echo of the request messages, grpc-status 0
  AlteredEcho       an echo of the request messages with the last byte of each one
                    changed (every length right), grpc-status 0
  GzipBomb          200 with grpc-encoding: gzip, one message with flag 0x01 whose body is
                    the gzip of GZIP_BOMB_SIZE (64 MiB) zero bytes (about 64 KiB on the
                    wire), grpc-status 0
  GzipCorrupt       200 with grpc-encoding: gzip, one message with flag 0x01 whose body is
                    GZIP_CORRUPT (a gzip header followed by bytes that are not deflate
                    data), grpc-status 0
  CompressedNoEncoding  200 without grpc-encoding, one message with flag 0x01 whose body
                    is a valid gzip of an encoded payload, grpc-status 0
  HtmlPage          200 with content-type text/html and an HTML body, no grpc-status
  HtmlWithStatus    200 with content-type text/html, one valid message, grpc-status 0
  LargeHeaders      a correct echo whose response headers carry LARGE_FIELDS values
                    x-filler-<i> of LARGE_FIELD_SIZE bytes each (ignoring the client's
                    SETTINGS_MAX_HEADER_LIST_SIZE)
  LargeTrailers     the same values in the trailers instead
  HugeHeaderField   a correct echo whose response headers carry one value of
                    HUGE_FIELD_SIZE bytes, more than nghttp2's HPACK decoder takes
  RecordHeaders     a correct gRPC echo, like Echo; the request's header list (in the
                    order received, HPACK-decoded) is kept for Stats
  Stats             one message: JSON counters of this server (connections, streams,
                    resets, drops, huge_sent = bytes of each ended HugeResponse, modes =
                    complete requests per mode, headers = the header lists of the
                    RecordHeaders requests)
  anything else     trailers-only grpc-status 12 (UNIMPLEMENTED)

The server advertises 16 MiB stream windows and a 1 GiB connection window, and returns
received data to the window as it arrives, so large requests are never throttled.

Usage: /usr/bin/python3 h2_rogue_server.py [--port 0] [--host 127.0.0.1]
Prints `LISTENING <port>`, serves until SIGTERM or EOF on stdin.
"""
from __future__ import annotations

import argparse
import base64
import json
import select
import socket
import struct
import sys
import threading
import zlib
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Tuple

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from peers import encode_payload, frame, serve_until_stopped, unframe, varint  # noqa: E402

Headers = List[Tuple[bytes, bytes]]

TRAILERS_ONLY_WIRE = b"caf%C3%A9 %25 done"
TRAILERS_ONLY_MESSAGE = "café % done"
PERCENT_MESSAGE_WIRE = b"bad%20input%3A %zz 100%25 %E2%9C%93"
# What a client decoding by the gRPC rules gets: valid escapes decoded, `%zz` kept as is.
PERCENT_MESSAGE = "bad input: %zz 100% ✓"
STATUS_DETAILS_MESSAGE = "invalid payload"
BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest"

HUGE_DECLARED = 100 * 1024 * 1024
HUGE_LIMIT = 200 * 1024 * 1024
CHUNK = 64 * 1024
STREAM_WINDOW = 16 * 1024 * 1024
CONNECTION_WINDOW = 1 << 30

GRPC_200: Headers = [(b":status", b"200"), (b"content-type", b"application/grpc")]
GRPC_200_GZIP: Headers = GRPC_200 + [(b"grpc-encoding", b"gzip")]

LARGE_FIELDS = 10
LARGE_FIELD_SIZE = 30_000
HUGE_FIELD_SIZE = 120_000
HTML_PAGE = b"<html><body>502 Bad Gateway</body></html>\n"

GZIP_BOMB_SIZE = 64 * 1024 * 1024
# A gzip member header (magic, CM=8, no flags, mtime 0, XFL 0, OS 255), then bytes that
# are not a valid deflate stream (block type 3 is reserved).
GZIP_CORRUPT = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xff" * 16 + b"garbage!"


def _field(number: int, value: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(value)) + value


def _status_details() -> bytes:
    """google.rpc.Status{code: 3, message, details: [Any{BadRequest{field_violations}}]}."""
    violation = _field(1, b"payload") + _field(2, b"must not be empty")  # FieldViolation
    bad_request = _field(1, violation)  # BadRequest.field_violations
    any_detail = _field(1, BAD_REQUEST_TYPE_URL.encode()) + _field(2, bad_request)
    return (varint(1 << 3 | 0) + varint(3)  # code = 3 (INVALID_ARGUMENT)
            + _field(2, STATUS_DETAILS_MESSAGE.encode()) + _field(3, any_detail))


STATUS_DETAILS = _status_details()

# Outbox items of one stream, sent in order as flow control allows.
# ("headers", Headers, end_stream) | ("data", bytes, end_stream) | ("reset",) | ("drop",)
Item = Tuple


def trailers(status: int, *extra: Tuple[bytes, bytes]) -> Item:
    return ("headers", [(b"grpc-status", str(status).encode()), *extra], True)


def answer(*messages: bytes) -> Iterator[Item]:
    """A normal gRPC answer: headers, the framed messages, then grpc-status 0."""
    yield ("headers", GRPC_200, False)
    for message in messages:
        yield ("data", frame(message), False)
    yield trailers(0)


class Stats:
    """Server-wide counters, served by the Stats mode."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Dict[str, object] = {
            "connections": 0, "streams": 0, "resets": 0, "drops": 0, "huge_sent": [],
            "modes": {}, "headers": []}

    def add(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] += n

    def add_mode(self, mode: str) -> None:
        with self.lock:
            self.counts["modes"][mode] = self.counts["modes"].get(mode, 0) + 1

    def record_headers(self, headers: Headers) -> None:
        with self.lock:
            self.counts["headers"].append([[k.decode(), v.decode()] for k, v in headers])

    def record_huge(self, sent: int) -> None:
        with self.lock:
            self.counts["huge_sent"].append(sent)

    def snapshot(self) -> bytes:
        with self.lock:
            return json.dumps(self.counts).encode()


STATS = Stats()


def gzip_bytes(data: bytes) -> bytes:
    """A gzip member (RFC 1952) of data, as grpc-encoding: gzip carries it."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


_bomb_lock = threading.Lock()
_bomb: List[bytes] = []


def gzip_bomb() -> bytes:
    """The gzip of GZIP_BOMB_SIZE zero bytes, made once (fed in 1 MiB pieces)."""
    with _bomb_lock:
        if not _bomb:
            compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            zeros = bytes(1 << 20)
            parts = [compressor.compress(zeros) for _ in range(GZIP_BOMB_SIZE >> 20)]
            _bomb.append(b"".join(parts) + compressor.flush())
        return _bomb[0]


def compressed_answer(headers: Headers, body: bytes) -> Iterator[Item]:
    """headers, one message with the compressed flag (0x01) and body, grpc-status 0."""
    yield ("headers", headers, False)
    yield ("data", frame(body, flags=0x01), False)
    yield trailers(0)


def huge_response() -> Iterator[Item]:
    yield ("headers", GRPC_200, False)
    yield ("data", frame(b"", declared_length=HUGE_DECLARED), False)
    chunk = b"\x00" * CHUNK
    for _ in range(HUGE_LIMIT // CHUNK):
        yield ("data", chunk, False)
    yield ("reset",)


def echo(body: bytes) -> Iterator[Item]:
    try:
        messages = unframe(body)
    except ValueError as exc:
        error = (b"grpc-message", str(exc).encode())
        return iter([("headers", GRPC_200, False), trailers(13, error)])
    return answer(*messages)


def altered(message: bytes) -> bytes:
    """``message`` with its last byte changed (empty stays empty)."""
    return message[:-1] + bytes([message[-1] ^ 0xFF]) if message else message


def fillers(count: int, size: int) -> Headers:
    """`count` header fields x-filler-<i>, each a value of `size` bytes."""
    return [(b"x-filler-%d" % i, b"f" * size) for i in range(count)]


def echo_with(body: bytes, headers: Headers, trailer: Headers) -> Iterator[Item]:
    """A correct echo of the request messages with extra response headers and trailers."""
    return iter([("headers", GRPC_200 + headers, False),
                 *(("data", frame(m), False) for m in unframe(body)),
                 trailers(0, *trailer)])


MODES: Dict[str, Callable[[bytes], Iterator[Item]]] = {
    "MalformedFlags": lambda body: iter([
        ("headers", GRPC_200, False), ("data", frame(b"abc", flags=0x02), False), trailers(0)]),
    "TruncatedMessage": lambda body: iter([
        ("headers", GRPC_200, False),
        ("data", frame(b"0123456789", declared_length=100), False), trailers(0)]),
    "Http503": lambda body: iter([("headers", [(b":status", b"503")], True)]),
    "Http404NoGrpc": lambda body: iter([
        ("headers", [(b":status", b"404"), (b"content-type", b"text/plain")], False),
        ("data", b"not found\n", True)]),
    "TrailersOnly": lambda body: iter([("headers", GRPC_200 + [
        (b"grpc-status", b"7"), (b"grpc-message", TRAILERS_ONLY_WIRE)], True)]),
    "PercentMessage": lambda body: iter([
        ("headers", GRPC_200, False), trailers(3, (b"grpc-message", PERCENT_MESSAGE_WIRE))]),
    "StatusDetails": lambda body: iter([
        ("headers", GRPC_200, False),
        trailers(3, (b"grpc-message", STATUS_DETAILS_MESSAGE.encode()),
                 (b"grpc-status-details-bin", base64.b64encode(STATUS_DETAILS).rstrip(b"=")))]),
    "HugeResponse": lambda body: huge_response(),
    "DropConnection": lambda body: iter([("drop",)]),
    "NeverAnswer": lambda body: iter([]),
    "TwoMessages": lambda body: answer(encode_payload(b"one"), encode_payload(b"two")),
    "MissingStatus": lambda body: iter([
        ("headers", GRPC_200, False), ("data", frame(encode_payload(b"ok")), False),
        ("headers", [(b"x-note", b"no grpc-status")], True)]),
    "Echo": lambda body: echo(body),
    "AlteredEcho": lambda body: answer(*(altered(m) for m in unframe(body))),
    "HtmlPage": lambda body: iter([
        ("headers", [(b":status", b"200"), (b"content-type", b"text/html")], False),
        ("data", HTML_PAGE, True)]),
    "HtmlWithStatus": lambda body: iter([
        ("headers", [(b":status", b"200"), (b"content-type", b"text/html")], False),
        ("data", frame(encode_payload(b"ok")), False), trailers(0)]),
    "LargeHeaders": lambda body: echo_with(body, fillers(LARGE_FIELDS, LARGE_FIELD_SIZE), []),
    "LargeTrailers": lambda body: echo_with(body, [], fillers(LARGE_FIELDS, LARGE_FIELD_SIZE)),
    "HugeHeaderField": lambda body: echo_with(body, fillers(1, HUGE_FIELD_SIZE), []),
    "RecordHeaders": lambda body: echo(body),
    "GzipBomb": lambda body: compressed_answer(GRPC_200_GZIP, gzip_bomb()),
    "GzipCorrupt": lambda body: compressed_answer(GRPC_200_GZIP, GZIP_CORRUPT),
    "CompressedNoEncoding": lambda body: compressed_answer(
        GRPC_200, gzip_bytes(encode_payload(b"compressed"))),
    "Stats": lambda body: answer(STATS.snapshot()),
}


class DropConnection(Exception):
    """Raised by the outbox pump to close the connection abruptly."""


class PlainLargeValues(hpack.Encoder):
    """An HPACK encoder that sends a header list holding a value over 1 KiB without Huffman
    coding. hpack's Huffman coder is pure Python (0.8 s for one 120 KB value, over 10 s under
    AddressSanitizer on a loaded machine): the huge-header modes would otherwise measure the
    encoder instead of the client. Plain literals are as valid to the decoder."""

    def encode(self, headers, huffman=True):  # type: ignore[no-untyped-def]
        headers = list(headers.items() if isinstance(headers, dict) else headers)
        large = any(len(field[1]) > 1024 for field in headers)
        return super().encode(headers, huffman=huffman and not large)


class Connection:
    """One client connection: reads frames, runs modes, pumps each stream's outbox."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=False, header_encoding=None))
        self.h2.encoder = PlainLargeValues()
        self.h2.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000,
        })
        self.requests: Dict[int, Tuple[str, bytearray]] = {}  # stream id -> (mode, body)
        self.outbox: Dict[int, Iterator[Item]] = {}
        self.current: Dict[int, Item] = {}  # an item partly sent, waiting for window
        self.huge_sent: Dict[int, int] = {}

    def run(self) -> None:
        STATS.add("connections")
        try:
            self.h2.initiate_connection()
            self.h2.increment_flow_control_window(CONNECTION_WINDOW - 65535)
            self.flush()
            while True:
                busy = self.pump()
                self.flush()
                if not select.select([self.sock], [], [], 0 if busy else 1.0)[0]:
                    continue
                data = self.sock.recv(1 << 20)
                if not data:
                    return
                for event in self.h2.receive_data(data):
                    self.handle(event)
                self.flush()
        except DropConnection:
            STATS.add("drops")
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except (OSError, h2.exceptions.ProtocolError):
            pass
        finally:
            for sent in self.huge_sent.values():
                STATS.record_huge(sent)
            self.sock.close()

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            STATS.add("streams")
            path = dict(event.headers).get(b":path", b"")
            if path.endswith(b"/RecordHeaders"):
                STATS.record_headers(event.headers)
            self.requests[event.stream_id] = (path.rsplit(b"/", 1)[-1].decode(), bytearray())
        elif isinstance(event, h2.events.DataReceived):
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if event.stream_id in self.requests:
                self.requests[event.stream_id][1].extend(event.data)
        elif isinstance(event, h2.events.StreamEnded):
            mode, body = self.requests.pop(event.stream_id, ("", bytearray()))
            STATS.add_mode(mode)
            if mode == "HugeResponse":
                self.huge_sent[event.stream_id] = 0
            self.outbox[event.stream_id] = MODES.get(mode, unimplemented(mode))(bytes(body))
        elif isinstance(event, h2.events.StreamReset):
            STATS.add("resets")
            self.close_stream(event.stream_id)
        elif isinstance(event, h2.events.ConnectionTerminated):
            raise OSError("connection terminated by the client")

    def close_stream(self, stream_id: int) -> None:
        self.requests.pop(stream_id, None)
        self.outbox.pop(stream_id, None)
        self.current.pop(stream_id, None)
        if stream_id in self.huge_sent:
            STATS.record_huge(self.huge_sent.pop(stream_id))

    def pump(self) -> bool:
        """Send up to CHUNK bytes of each stream's outbox; True if more can go right away."""
        busy = False
        for stream_id in list(self.outbox):
            budget = CHUNK
            while budget > 0:
                item = self.current.pop(stream_id, None) or next(self.outbox[stream_id], None)
                if item is None:
                    self.close_stream(stream_id)
                    break
                if item[0] == "drop":
                    raise DropConnection
                if item[0] == "reset":
                    self.h2.reset_stream(stream_id, h2.errors.ErrorCodes.INTERNAL_ERROR)
                    self.close_stream(stream_id)
                    break
                if item[0] == "headers":
                    self.h2.send_headers(stream_id, item[1], end_stream=item[2])
                    continue
                data, end_stream = item[1], item[2]
                size = min(len(data), budget, self.h2.local_flow_control_window(stream_id),
                           self.h2.max_outbound_frame_size)
                if size < len(data):
                    self.current[stream_id] = ("data", data[size:], end_stream)
                if size == 0 and data:
                    break  # wait for a WINDOW_UPDATE
                last = size == len(data)
                self.h2.send_data(stream_id, data[:size], end_stream=end_stream and last)
                budget -= size
                if stream_id in self.huge_sent:
                    self.huge_sent[stream_id] += size
            else:
                busy = True
        return busy


def unimplemented(mode: str) -> Callable[[bytes], Iterator[Item]]:
    message = f"unknown rogue mode {mode!r}".encode()
    return lambda body: iter([("headers", GRPC_200 + [
        (b"grpc-status", b"12"), (b"grpc-message", message)], True)])


def accept_loop(listener: socket.socket) -> None:
    while True:
        try:
            sock, _ = listener.accept()
        except OSError:
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=Connection(sock).run, name="rogue-conn", daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    listener = socket.create_server((args.host, args.port), backlog=128)
    threading.Thread(target=accept_loop, args=(listener,), name="rogue-accept", daemon=True).start()
    serve_until_stopped(listener.getsockname()[1])
    listener.close()


if __name__ == "__main__":
    main()

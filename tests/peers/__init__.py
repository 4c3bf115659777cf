"""Test peers: real servers for triple_py's tests and benchmarks (see README.md here).

This package holds what the Python peers and their users share: the control-metadata
rules of README.md (`parse_control`), the BenchmarkRequest/Response encoding
(`encode_payload`, `decode_payload`), gRPC message framing (`frame`, `unframe`), and the
"LISTENING <port>, serve until SIGTERM or stdin EOF" convention (`serve_until_stopped`).
Starting peers is triple_py_testing.peers' job (`launch.py` here re-exports its
`start_peer`); it is not imported here, because the peers themselves run without triple_py.

Only the standard library is imported here, so any Python can import the package.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import struct
import threading
from typing import Iterable, List, Optional, Tuple, Union

MetadataValue = Union[str, bytes]

BENCHMARK_SERVICE = "benchmark.BenchmarkService"
UNARY_METHOD = f"/{BENCHMARK_SERVICE}/UnaryCall"
STREAM_METHOD = f"/{BENCHMARK_SERVICE}/StreamCall"
MAX_MESSAGE = 64 * 1024 * 1024
STATUS_CODES = range(0, 17)
MAX_DELAY_MS = 3_600_000


class ControlError(ValueError):
    """A control metadata value cannot be honoured (the peer answers INVALID_ARGUMENT)."""


@dataclasses.dataclass
class Control:
    """What a call's request metadata asks a peer to do (README.md, "Control metadata")."""

    echo: list = dataclasses.field(default_factory=list)  # x-echo-* (key, value) pairs
    status: Optional[int] = None  # x-status
    message: str = ""  # x-message-bin (utf-8) or x-message
    delay_ms: int = 0  # x-delay-ms
    response_size: Optional[int] = None  # x-response-size

    def response(self, request: bytes) -> bytes:
        """The answer to one request message: the echo, or for x-response-size: N the
        serialized BenchmarkResponse{payload: N x b"a"}."""
        if self.response_size is None:
            return request
        return encode_payload(b"a" * self.response_size)


def _int_value(key: str, value: MetadataValue, valid: range) -> int:
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
    try:
        number = int(text.strip())
    except ValueError:
        number = -1
    if number not in valid:
        raise ControlError(f"bad {key} {text!r}")
    return number


def parse_control(metadata: Iterable[Tuple[str, MetadataValue]]) -> Control:
    """Read the control keys from request metadata (keys lower-case, -bin values decoded).

    The last value of a repeated key wins, except x-echo-* pairs which are all kept in order.
    Raises ControlError for a value out of range.
    """
    control = Control()
    message = message_bin = None
    for key, value in metadata:
        if key.startswith("x-echo-"):
            control.echo.append((key, value))
        elif key == "x-status":
            control.status = _int_value(key, value, STATUS_CODES)
        elif key == "x-message":
            message = value
        elif key == "x-message-bin":
            message_bin = value
        elif key == "x-delay-ms":
            control.delay_ms = _int_value(key, value, range(0, MAX_DELAY_MS + 1))
        elif key == "x-response-size":
            control.response_size = _int_value(key, value, range(0, MAX_MESSAGE + 1))
    if message_bin is not None:
        control.message = bytes(message_bin).decode("utf-8", "replace")
    elif message is not None:
        control.message = message
    return control


def varint(n: int) -> bytes:
    """Protobuf base-128 varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_payload(payload: bytes) -> bytes:
    """Serialize BenchmarkRequest/BenchmarkResponse {bytes payload = 1} (proto3)."""
    if not payload:
        return b""
    return b"\x0a" + varint(len(payload)) + payload


def decode_payload(message: bytes) -> bytes:
    """The payload of a serialized BenchmarkRequest/Response made by `encode_payload`."""
    if not message:
        return b""
    if message[0] != 0x0A:
        raise ValueError(f"unexpected tag byte {message[0]:#x}")
    length = shift = 0
    pos = 1
    while True:
        byte = message[pos]
        length |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            break
        shift += 7
    if pos + length != len(message):
        raise ValueError("payload length does not match the message")
    return message[pos:]


def frame(message: bytes, flags: int = 0, declared_length: Optional[int] = None) -> bytes:
    """A gRPC length-prefixed message: flag byte, 4-byte big-endian length, bytes."""
    length = len(message) if declared_length is None else declared_length
    return struct.pack(">BI", flags, length) + message


def unframe(data: bytes) -> List[bytes]:
    """Split whole gRPC length-prefixed messages (uncompressed); ValueError if malformed."""
    messages, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 5:
            raise ValueError("truncated message prefix")
        flags, length = struct.unpack_from(">BI", data, pos)
        if flags != 0 or len(data) - pos - 5 < length:
            raise ValueError("bad flags or truncated message")
        messages.append(data[pos + 5:pos + 5 + length])
        pos += 5 + length
    return messages


def serve_until_stopped(port: int) -> None:
    """Announce `LISTENING <port>` and block until SIGTERM/SIGINT or EOF on stdin.

    Call from the main thread once the server accepts connections; stop the server after.
    """
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())

    def watch_stdin() -> None:
        try:  # a raw read: a daemon thread blocked in a buffered read aborts interpreter exit
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        stopped.set()

    threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
    print(f"LISTENING {port}", flush=True)
    while not stopped.wait(0.5):  # a timed wait lets the signal handler run promptly
        pass


__all__ = [
    "BENCHMARK_SERVICE", "UNARY_METHOD", "STREAM_METHOD", "MAX_MESSAGE", "Control",
    "ControlError", "parse_control", "varint", "encode_payload", "decode_payload", "frame",
    "unframe", "serve_until_stopped",
]

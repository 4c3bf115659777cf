"""What goes on the wire for the reference arms: BenchmarkService methods and messages.

The C load generator packs its own requests; the Python and h2load arms send the same
``BenchmarkRequest {bytes payload = 1}`` built here, so every arm moves the same bytes.
"""
from __future__ import annotations

import random
import struct
from typing import Tuple

from ..errors import ConfigError

__all__ = ["BENCHMARK_SERVICE", "UNARY_METHOD", "STREAM_METHOD", "encode_varint",
           "decode_varint", "encode_payload", "benchmark_request", "grpc_frame",
           "normalize_method"]

BENCHMARK_SERVICE = "benchmark.BenchmarkService"
UNARY_METHOD = f"/{BENCHMARK_SERVICE}/UnaryCall"
STREAM_METHOD = f"/{BENCHMARK_SERVICE}/StreamCall"


def encode_varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf base-128 varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_varint(data: bytes, pos: int = 0) -> Tuple[int, int]:
    """(value, position after it) of the protobuf varint at ``data[pos:]``; ValueError when
    it is truncated or longer than 64 bits."""
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def encode_payload(payload: bytes) -> bytes:
    """Serialized ``BenchmarkRequest``/``BenchmarkResponse {bytes payload = 1}`` (proto3)."""
    if not payload:
        return b""
    return b"\x0a" + encode_varint(len(payload)) + payload


def benchmark_request(payload_size: int) -> bytes:
    """A serialized BenchmarkRequest with ``payload_size`` pseudo-random (repeatable) bytes."""
    return encode_payload(random.Random(payload_size).randbytes(payload_size))


def grpc_frame(message: bytes) -> bytes:
    """One uncompressed gRPC length-prefixed message: flag 0, 4-byte big-endian length."""
    return struct.pack(">BI", 0, len(message)) + message


def normalize_method(method: str) -> str:
    """``/pkg.Service/Method`` from ghz's ``pkg.Service/Method`` or ``pkg.Service.Method``.

    Raises ConfigError when the string cannot name a method.
    """
    text = method.strip()
    if not text.startswith("/"):
        if "/" not in text and text.count(".") >= 1:  # ghz also accepts pkg.Svc.Method
            service, _, name = text.rpartition(".")
            text = f"{service}/{name}"
        text = "/" + text
    parts = text.split("/")
    if len(parts) != 3 or not parts[1] or not parts[2] or any(c.isspace() for c in text):
        raise ConfigError(f"bad method {method!r} (expected /package.Service/Method)")
    return text

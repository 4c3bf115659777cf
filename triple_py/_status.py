"""gRPC status codes and compression names, with grpcio's members and values."""
from __future__ import annotations

import enum


class StatusCode(enum.Enum):
    """Status codes of an RPC; ``value`` is ``(int code, lower-case name)`` as in grpcio."""

    OK = (0, "ok")
    CANCELLED = (1, "cancelled")
    UNKNOWN = (2, "unknown")
    INVALID_ARGUMENT = (3, "invalid argument")
    DEADLINE_EXCEEDED = (4, "deadline exceeded")
    NOT_FOUND = (5, "not found")
    ALREADY_EXISTS = (6, "already exists")
    PERMISSION_DENIED = (7, "permission denied")
    RESOURCE_EXHAUSTED = (8, "resource exhausted")
    FAILED_PRECONDITION = (9, "failed precondition")
    ABORTED = (10, "aborted")
    OUT_OF_RANGE = (11, "out of range")
    UNIMPLEMENTED = (12, "unimplemented")
    INTERNAL = (13, "internal")
    UNAVAILABLE = (14, "unavailable")
    DATA_LOSS = (15, "data loss")
    UNAUTHENTICATED = (16, "unauthenticated")


_BY_INT = {member.value[0]: member for member in StatusCode}


def code_from_int(code: int) -> StatusCode:
    """The StatusCode for a wire integer; codes outside 0-16 are UNKNOWN (gRPC spec)."""
    return _BY_INT.get(code, StatusCode.UNKNOWN)


class Compression(enum.IntEnum):
    """Compression algorithms, with grpcio's names and values.  Deflate is the zlib
    format, as grpc core sends ``grpc-encoding: deflate``."""

    NoCompression = 0
    Deflate = 1
    Gzip = 2


def compression_value(compression: object) -> int:
    """The int of a Compression member (or of its int value); ValueError for anything
    else, where grpcio raises a KeyError deep inside the call."""
    if isinstance(compression, bool) or not isinstance(compression, int):
        raise ValueError(f"compression must be a triple_py.Compression, not {compression!r}")
    try:
        return int(Compression(compression))
    except ValueError:
        raise ValueError(f"compression must be one of {[c.name for c in Compression]} "
                         f"(0, 1, 2), not {compression!r}") from None

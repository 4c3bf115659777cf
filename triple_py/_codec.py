"""Running the application's serializers: what they raise becomes an RpcError.

grpcio turns an exception of a request serializer or a response deserializer into an
RpcError with status INTERNAL ("Exception serializing request!" / "Exception deserializing
response!"), so ``except grpc.RpcError`` catches it; triple_py does the same and chains the
original exception as ``__cause__``.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

from ._errors import RpcError
from ._status import StatusCode

SERIALIZE_FAILED = "Exception serializing request!"
DESERIALIZE_FAILED = "Exception deserializing response!"

# Makes the error to raise from (code, details): the sync API's CodecError by default,
# triple_py.aio's AioRpcError there.
ErrorFactory = Callable[[StatusCode, str], RpcError]


class CodecError(RpcError):
    """An RPC that failed in the application's (de)serializer, before or after the wire."""

    def __init__(self, code: StatusCode, details: str) -> None:
        super().__init__(code, details)
        self._code = code
        self._details = details

    def code(self) -> StatusCode:
        """INTERNAL."""
        return self._code

    def details(self) -> str:
        """grpcio's message; the serializer's exception is ``__cause__``."""
        return self._details

    def initial_metadata(self) -> tuple:
        """Empty: nothing the server sent is reported with this error."""
        return ()

    def trailing_metadata(self) -> tuple:
        """Empty: nothing the server sent is reported with this error."""
        return ()

    def debug_error_string(self) -> str:
        """A one-line description for logs, with the cause."""
        return f"{self._code.name}: {self._details} ({self.__cause__!r})"


def _apply(codec: Callable[[Any], Any], value: Any, details: str,
           error: ErrorFactory) -> Any:
    try:
        return codec(value)
    except Exception as exc:
        raise error(StatusCode.INTERNAL, details) from exc


def serialize(serializer: Optional[Callable[[Any], Any]], request: Any,
              error: ErrorFactory = CodecError) -> Any:
    """``serializer(request)`` (the request itself when there is no serializer)."""
    if serializer is None:  # the common case, without a call to _apply
        return request
    return _apply(serializer, request, SERIALIZE_FAILED, error)


def reads_in_place(deserializer: Optional[Callable[[Any], Any]]) -> bool:
    """True when ``deserializer`` is a protobuf message class's ``FromString``, which
    parses any bytes-like object and keeps nothing of it: it may read a response in
    place (``memoryview`` of the finished core call) instead of a ``bytes`` copy.  Any
    other deserializer gets ``bytes``, as in grpcio."""
    owner = getattr(deserializer, "__self__", None)
    if getattr(deserializer, "__name__", None) != "FromString" or not isinstance(owner, type):
        return False
    message = sys.modules.get("google.protobuf.message")  # loaded if owner is a message
    return message is not None and issubclass(owner, message.Message)


def deserialize(deserializer: Optional[Callable[[bytes], Any]], raw: bytes,
                error: ErrorFactory = CodecError) -> Any:
    """``deserializer(raw)`` (the bytes themselves when there is no deserializer)."""
    if deserializer is None:  # the common case, without a call to _apply
        return raw
    return _apply(deserializer, raw, DESERIALIZE_FAILED, error)

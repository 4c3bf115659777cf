"""Exceptions of the public API, shaped like grpcio's."""
from __future__ import annotations

from typing import Any, Callable, Optional

from ._status import StatusCode
from ._types import Call

Metadata = tuple[tuple[str, Any], ...]


class RpcError(Exception):
    """Raised by a failed RPC (grpcio's ``grpc.RpcError``)."""


class FutureTimeoutError(Exception):
    """``Future.result(timeout)`` ran out of time before the RPC finished."""


class FutureCancelledError(Exception):
    """``Future.result()`` on an RPC that was cancelled."""


class CallResult(Call):
    """The finished state of an RPC (a ``Call``): status, details and metadata.

    Returned as the second item of ``with_call`` and carried by errors.  It reads the
    C call's results once; it never blocks.
    """

    def __init__(self, core_call: Any) -> None:
        from ._status import code_from_int
        self._code = code_from_int(core_call.code())
        self._details = core_call.details()
        self._initial, self._trailing = core_call.metadata()

    def code(self) -> StatusCode:
        """The final status code."""
        return self._code

    def details(self) -> Optional[str]:
        """The status message sent by the server (or set locally)."""
        return self._details

    def initial_metadata(self) -> Metadata:
        """Response headers as (key, value) pairs; ``-bin`` values are bytes."""
        return self._initial

    def trailing_metadata(self) -> Metadata:
        """Response trailers as (key, value) pairs; ``-bin`` values are bytes."""
        return self._trailing

    def is_active(self) -> bool:
        """Always False: the RPC has finished."""
        return False

    def time_remaining(self) -> Optional[float]:
        """None: a finished RPC has no deadline left."""
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        """Always False: the RPC has already terminated (grpcio semantics)."""
        return False

    def cancel(self) -> bool:
        """Always False: a finished RPC cannot be cancelled."""
        return False


class _InactiveRpcError(RpcError, CallResult):
    """An RpcError that is also the finished Call, as grpcio raises."""

    def __init__(self, core_call: Any) -> None:
        CallResult.__init__(self, core_call)
        RpcError.__init__(self, self._code, self._details)

    def debug_error_string(self) -> str:
        """A one-line description for logs."""
        return f"{self._code.name}: {self._details}"

    def __str__(self) -> str:
        return (f"<_InactiveRpcError of RPC that terminated with:\n"
                f"\tstatus = {self._code}\n\tdetails = \"{self._details}\"\n>")

    __repr__ = __str__

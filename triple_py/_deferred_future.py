"""The Future of a sync unary ``future()`` call that must wait before it starts (call
credentials, ``wait_for_ready``): returned at once, as grpcio's; a helper thread runs the
wait and starts the call, whose own UnaryFuture then answers everything.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from ._errors import FutureCancelledError, FutureTimeoutError
from ._status import StatusCode
from ._types import CallFuture


class DeferredFuture(CallFuture):
    """grpcio's ``grpc.Future`` and ``grpc.Call`` for a call that starts later.

    ``start()`` runs on a daemon thread and returns the started call's UnaryFuture (a
    call failed by its credentials or its wait is a finished one).  Cancelling before the
    start means the call never starts.
    """

    def __init__(self, start: Callable[[], Any]) -> None:
        self._cond = threading.Condition()
        self._future: Optional[Any] = None
        self._cancelled_early = False
        self._callbacks: list[Callable[["DeferredFuture"], None]] = []
        threading.Thread(target=self._run, args=(start,), daemon=True,
                         name="triple_py-preflight").start()

    def _run(self, start: Callable[[], Any]) -> None:
        try:
            future = start()
        except BaseException as exc:  # the core refused the call: result() raises it
            future = _Raised(exc)
        with self._cond:
            if self._cancelled_early:
                future.cancel()
                return
            self._future = future
            self._cond.notify_all()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            future.add_done_callback(lambda _f, fn=fn: fn(self))

    def _started(self, timeout: Optional[float]) -> Any:
        """The started call's future; raises FutureTimeoutError or FutureCancelledError."""
        with self._cond:
            if not self._cond.wait_for(
                    lambda: self._future is not None or self._cancelled_early, timeout):
                raise FutureTimeoutError()
            if self._cancelled_early:
                raise FutureCancelledError()
            return self._future

    # -- grpc.Future ------------------------------------------------------------
    def cancel(self) -> bool:
        """Cancels the call (before it started: it never will)."""
        with self._cond:
            future = self._future
            if future is None:
                if self._cancelled_early:
                    return False
                self._cancelled_early = True
                self._cond.notify_all()
                callbacks, self._callbacks = self._callbacks, []
        if future is not None:
            return future.cancel()
        for fn in callbacks:
            fn(self)
        return True

    def cancelled(self) -> bool:
        """True if ``cancel()`` stopped the call."""
        with self._cond:
            return self._cancelled_early or (self._future is not None
                                             and self._future.cancelled())

    def running(self) -> bool:
        """True until the call has finished or been cancelled."""
        return not self.done()

    def done(self) -> bool:
        """True once the call has finished (or was cancelled before it started)."""
        with self._cond:
            return self._cancelled_early or (self._future is not None and self._future.done())

    def result(self, timeout: Optional[float] = None) -> Any:
        """The response; raises the RpcError, FutureTimeoutError or FutureCancelledError.
        (``timeout`` bounds the wait for the start and again for the response.)"""
        return self._started(timeout).result(timeout)

    def exception(self, timeout: Optional[float] = None) -> Any:
        """The RpcError the call ended with, or None."""
        return self._started(timeout).exception(timeout)

    def traceback(self, timeout: Optional[float] = None) -> Any:
        """None: errors come from the call, not from Python code."""
        return self._started(timeout).traceback(timeout)

    def add_done_callback(self, fn: Callable[["DeferredFuture"], None]) -> None:
        """Calls ``fn(self)`` once the call has finished (at once if it has)."""
        with self._cond:
            future = self._future
            if future is None and not self._cancelled_early:
                self._callbacks.append(fn)
                return
        if future is None:
            fn(self)
        else:
            future.add_done_callback(lambda _f: fn(self))

    # -- grpc.Call --------------------------------------------------------------
    def is_active(self) -> bool:
        """True until the call has finished."""
        return not self.done()

    def time_remaining(self) -> Optional[float]:
        """Not tracked in Python."""
        return None

    def add_callback(self, callback: Callable[[], None]) -> bool:
        """Calls ``callback()`` once the call has ended; False if it already has."""
        if self.done():
            return False
        self.add_done_callback(lambda _future: callback())
        return True

    def code(self) -> StatusCode:
        """The status code (waits for the end of the call)."""
        try:
            return self._started(None).code()
        except FutureCancelledError:
            return StatusCode.CANCELLED

    def details(self) -> Optional[str]:
        """The status message (waits for the end of the call)."""
        try:
            return self._started(None).details()
        except FutureCancelledError:
            return "Locally cancelled by application!"

    def initial_metadata(self) -> Any:
        """Response headers (waits for the end of the call)."""
        return self._started(None).initial_metadata()

    def trailing_metadata(self) -> Any:
        """Response trailers (waits for the end of the call)."""
        return self._started(None).trailing_metadata()


class _Raised:
    """What ``start()`` raised, answering as a finished future that raises it."""

    def __init__(self, exc: BaseException) -> None:
        self._exc = exc

    def _raise(self, *args: Any) -> Any:
        raise self._exc

    result = exception = traceback = code = details = _raise
    initial_metadata = trailing_metadata = _raise

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        fn(self)

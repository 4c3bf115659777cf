"""The core call of a sync stream that must wait before it starts (call credentials,
``wait_for_ready``): returned at once, as grpcio returns its streams, so the caller may
cancel it while a plugin has not answered yet.

A daemon thread runs the wait (``_preflight``: within the call's deadline) and starts the
real core call.  Until then, every method but ``cancel``, ``done``, ``wait`` and
``time_left`` waits for that start and then acts on the real call (or on the EndedCall the
wait failed it with).  A cancel before the start ends the call CANCELLED at once; the real
call, if its start was already under way, is cancelled as soon as it exists.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

from ._preflight import EndedCall
from ._status import code_from_int

CANCELLED_DETAILS = "Locally cancelled by application!"  # the C core's words


class _Raising:
    """What a start that raised (the core refused the call) answers: the exception,
    from every method that reads the call."""

    def __init__(self, error: BaseException) -> None:
        self._error = error

    def __getattr__(self, name: str) -> Any:
        raise self._error

    def done(self) -> bool:
        return True

    def wait(self, timeout: Optional[float] = None) -> bool:
        return True

    def cancel(self, code: int = 1) -> bool:
        return False

    def time_left(self) -> Optional[float]:
        return None


class PendingCall:
    """A core call started later by ``start()`` on a daemon thread (see the module)."""

    def __init__(self, start: Callable[[], Any], timeout: Optional[float]) -> None:
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._cond = threading.Condition()
        self._call: Any = None  # the real call, an EndedCall or a _Raising, once known
        self._cancel_code: Optional[int] = None
        threading.Thread(target=self._run, args=(start,), daemon=True,
                         name="triple_py-preflight").start()

    def _run(self, start: Callable[[], Any]) -> None:
        try:
            call = start()
        except BaseException as exc:  # noqa: BLE001 - every later read raises it
            call = _Raising(exc)
        with self._cond:
            cancel_code = self._cancel_code
            if cancel_code is None:
                self._call = call
                self._cond.notify_all()
        if cancel_code is not None:
            call.cancel(cancel_code)  # cancelled while it was being started

    def _started(self, timeout: Optional[float] = None) -> Any:
        """The call once started (None if ``timeout`` seconds passed first)."""
        call = self._call
        if call is not None:
            return call
        with self._cond:
            self._cond.wait_for(lambda: self._call is not None, timeout)
            return self._call

    def __getattr__(self, name: str) -> Any:
        """Anything else (read, write, code, metadata...) waits for the start."""
        return getattr(self._started(), name)

    def cancel(self, code: int = 1) -> bool:
        """Cancels the call (before its start: it ends CANCELLED at once)."""
        with self._cond:
            call = self._call
            if call is None:
                self._cancel_code = code
                self._call = EndedCall(code_from_int(code), CANCELLED_DETAILS)
                self._cond.notify_all()
                return True
        return call.cancel(code)

    def done(self) -> bool:
        """True once the call has ended."""
        call = self._call
        return call is not None and call.done()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits for the end of the call; False if ``timeout`` seconds passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        call = self._started(timeout)
        if call is None:
            return False
        return call.wait(None if end is None else max(0.0, end - time.monotonic()))

    def time_left(self) -> Optional[float]:
        """Seconds left before the deadline (None without one)."""
        call = self._call
        if call is not None and hasattr(call, "time_left"):
            return call.time_left()
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

"""Futures for RPCs started with ``.future()``, and the per-channel thread that runs
their done-callbacks.

The C core queues every completed call that asked for notification; one dispatcher
thread per channel drains that queue (GIL released while it waits) and runs the
callbacks.  The thread exists only while futures are pending (and up to 0.5 s after the
last one ended), so an idle channel holds no thread and can be garbage collected.  Once
the channel object itself is gone (dropped without ``close()``), the thread ends as soon as
no future is pending, so the connection goes with the last call object.

A done-callback that raises is logged (logger ``triple_py``) and the next callbacks run,
as in grpcio; it never stops the dispatcher.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional

from ._codec import deserialize
from ._errors import (CallResult, FutureCancelledError, FutureTimeoutError,
                      _InactiveRpcError)
from ._status import StatusCode
from ._types import CallFuture

Deserializer = Optional[Callable[[bytes], Any]]
_LOG = logging.getLogger("triple_py")


class UnaryFuture(CallFuture):
    """A unary RPC in flight: grpcio's ``grpc.Future`` and ``grpc.Call`` in one object."""

    def __init__(self, core_call: Any, deserializer: Deserializer) -> None:
        self._core = core_call
        self._deserializer = deserializer
        self._lock = threading.Lock()
        self._callbacks: list[Callable[["UnaryFuture"], None]] = []
        self._callbacks_ran = False
        self._result: Optional[CallResult] = None
        self._cancelled = False

    # Transparent retry (A6) of a future without a retry policy, set when retries are on:
    # (multi-callable, request, metadata, compression); None once the outcome is final.
    # Class attributes: a future without them costs nothing.
    _again: Optional[tuple] = None
    _retries: Any = None  # its _retry.Retries, from the first refused attempt on

    def _settle(self) -> bool:
        """True when the current attempt is done and is the call's last: a refused one
        (no server processed it) is first started again, as grpc does for every call."""
        while True:
            with self._lock:
                core = self._core
                if not core.done():
                    return False
                again = self._again
                if again is None:
                    return True
                following = None
                if core.code() != 0 and not self._cancelled:
                    following = again[0]._transparent_attempt(self, core, again)
                if following is None:
                    self._again = None
                    return True
                self._core = following
            if following.notifying():
                again[0]._channel._dispatcher.track(following, self)
                return False
            # it ended inside call() (QUIET_START): look at it again

    # -- completion -------------------------------------------------------------
    def _finished(self) -> CallResult:
        if self._result is None:
            self._result = CallResult(self._core)
        return self._result

    def _run_callbacks(self) -> None:
        """Called by the dispatcher when the core reports completion: runs the
        callbacks once the outcome is final."""
        if self._again is not None and not self._settle():
            return  # a new attempt runs
        with self._lock:
            self._callbacks_ran = True
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb(self)
            except Exception:  # grpcio logs it and carries on with the next callback
                _LOG.exception("Exception calling done-callback %r", cb)

    def _wait(self, timeout: Optional[float]) -> CallResult:
        while True:
            if not self._core.wait(timeout):
                raise FutureTimeoutError()
            if self._again is None or self._settle():
                return self._finished()

    # -- grpc.Future ------------------------------------------------------------
    def cancel(self) -> bool:
        """Cancels the RPC (the stream is reset).  True if it was still running."""
        if self._core.cancel():
            self._cancelled = True
            return True
        return False

    def cancelled(self) -> bool:
        """True if ``cancel()`` stopped the RPC."""
        return self._cancelled

    def running(self) -> bool:
        """True while the RPC has not finished (or been cancelled)."""
        return not self._cancelled and not self.done()

    def done(self) -> bool:
        """True once the RPC has finished (in any way)."""
        return self._core.done() and (self._again is None or self._settle())

    def result(self, timeout: Optional[float] = None) -> Any:
        """The response; raises the RpcError, FutureTimeoutError or FutureCancelledError."""
        res = self._wait(timeout)
        if self._cancelled:
            raise FutureCancelledError()
        if res.code() is not StatusCode.OK:
            raise _InactiveRpcError(self._core)
        raw = self._core.response()
        return deserialize(self._deserializer, raw)

    def exception(self, timeout: Optional[float] = None) -> Optional[Exception]:
        """The RpcError the RPC ended with, or None on success."""
        res = self._wait(timeout)
        if self._cancelled:
            raise FutureCancelledError()
        return None if res.code() is StatusCode.OK else _InactiveRpcError(self._core)

    def traceback(self, timeout: Optional[float] = None) -> Any:
        """None: the error is raised by the C core, not by Python code."""
        self._wait(timeout)
        return None

    def _keep_callback(self, fn: Callable[["UnaryFuture"], None]) -> bool:
        """Keeps ``fn`` for the end of the RPC; False if it has already ended."""
        with self._lock:
            if not self._callbacks_ran and not self._core.done():
                self._callbacks.append(fn)
                return True
        if self._again is not None and not self._settle():  # a new attempt runs
            with self._lock:
                if not self._callbacks_ran:
                    self._callbacks.append(fn)
                    return True
        return False

    def add_done_callback(self, fn: Callable[["UnaryFuture"], None]) -> None:
        """Calls ``fn(self)`` when the RPC finishes (at once if it already has)."""
        if not self._keep_callback(fn):
            fn(self)

    # -- grpc.Call --------------------------------------------------------------
    def is_active(self) -> bool:
        """True while the RPC has not finished (or been cancelled)."""
        return self.running()

    def time_remaining(self) -> Optional[float]:
        """Seconds left before the deadline (None without one, or once it ended)."""
        core = self._core
        return None if core.done() else core.time_left()

    def add_callback(self, callback: Callable[[], None]) -> bool:
        """Calls ``callback()`` when the RPC ends, from the channel's completion thread;
        False if it has already ended."""
        return self._keep_callback(lambda _future: callback())

    def code(self) -> StatusCode:
        """The status code (blocks until the RPC finishes)."""
        return self._wait(None).code()

    def details(self) -> Optional[str]:
        """The status message (blocks until the RPC finishes)."""
        return self._wait(None).details()

    def initial_metadata(self) -> Any:
        """Response headers (blocks until the RPC finishes)."""
        return self._wait(None).initial_metadata()

    def trailing_metadata(self) -> Any:
        """Response trailers (blocks until the RPC finishes)."""
        return self._wait(None).trailing_metadata()


class CompletionDispatcher:
    """Runs done-callbacks of a channel's futures on one background thread."""

    def __init__(self, core_channel: Any) -> None:
        self._core = core_channel
        self._lock = threading.Lock()
        self._pending: dict[int, UnaryFuture] = {}
        # Calls that completed before track() registered them, kept by id.
        self._early: dict[int, Any] = {}
        self._thread: Optional[threading.Thread] = None
        self._orphaned = False  # the channel object is gone: no new futures will come

    def orphan(self) -> None:
        """The channel was dropped: end the thread once nothing is pending (at once if
        nothing is), so the core channel and its connection can be freed."""
        with self._lock:
            self._orphaned = True
            waiting = self._thread is not None
        if waiting:
            self._core.wake_pollers()

    def track(self, core_call: Any, future: UnaryFuture) -> None:
        """Registers a started call; its completion will reach ``future``."""
        with self._lock:
            if self._early.pop(id(core_call), None) is not None:
                ready = True
            else:
                ready = False
                self._pending[id(core_call)] = future
        if ready:
            future._run_callbacks()
            return
        with self._lock:
            if self._pending and self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="triple_py-completions")
                self._thread.start()

    def _loop(self) -> None:
        while True:
            calls = self._core.poll_completions(0.5)
            done = []
            with self._lock:
                for call in calls or ():
                    fut = self._pending.pop(id(call), None)
                    if fut is not None:
                        done.append(fut)
                    else:
                        self._early[id(call)] = call
                # Stop once a whole wait brought nothing and nothing is pending, not
                # as soon as the pending set empties: a burst of futures that end at
                # once would otherwise start and stop a thread each time.
                if calls is None or (not self._pending and (not calls or self._orphaned)):
                    self._thread = None
                    stop = True
                else:
                    stop = False
            for fut in done:
                fut._run_callbacks()
            # Let go of this batch before waiting again: otherwise up to 2 x 256 finished
            # calls (and their responses) stay alive for as long as the next poll waits.
            calls = done = fut = None
            if stop:
                return

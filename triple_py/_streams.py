"""Streaming calls (unary-stream, stream-unary, stream-stream) with grpcio's API.

Requests of client-streaming calls go through the C core's coalescing writer; the
``write`` / ``done_writing`` methods feed it directly, and a request iterator is
pumped into it by a helper thread, as grpcio does, so a bidi stream whose requests
depend on its responses never deadlocks.
"""
from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import Any, Callable, Iterator, Optional

from ._codec import deserialize, serialize
from ._errors import (CallResult, FutureCancelledError, FutureTimeoutError, RpcError,
                      _InactiveRpcError)
from ._status import StatusCode
from ._types import CallIterator

Serializer = Optional[Callable[[Any], bytes]]
Deserializer = Optional[Callable[[bytes], Any]]
_LOG = logging.getLogger("triple_py")
# Guards the done-callbacks of every StreamingCall: they are rare, a lock per call is not.
_CALLBACKS_LOCK = threading.Lock()


class StreamingCall(CallIterator):
    """A call with a response stream: an iterator of responses that is also a Call,
    and a Future of the call's end (as grpcio's).

    For client-streaming shapes it also has ``write(request)``, ``flush()`` and
    ``done_writing()``.  Iterating a failed call raises its ``RpcError``.
    """

    def __init__(self, core_call: Any, serializer: Serializer,
                 deserializer: Deserializer, replay: Any = None) -> None:
        self._core = core_call
        # Client streams with retries: the _replay.ReplayingCall that writes the requests
        # and starts the attempts (self._core follows its attempts as they fail).
        self._replay = replay
        self._writer = core_call if replay is None else replay
        self._serialize = serializer
        self._deserialize = deserializer
        self._cancelled = False
        # With retries: failed attempt -> the next one's core call (or None to end);
        # dropped at the first response message, which commits the call.
        self._again: Optional[Callable[[Any], Optional[Any]]] = \
            None if replay is None else replay.failed

    # -- request side -----------------------------------------------------------
    def write(self, request: Any) -> None:
        """Queues one request message (coalesced with its neighbours).

        Raises the call's RpcError if the call has already ended.
        """
        payload = serialize(self._serialize, request)
        if not self._writer.write(payload):
            self._raise_ended()

    def flush(self) -> None:
        """Sends queued request messages now instead of at the watermark or timer."""
        self._writer.flush()

    def done_writing(self) -> None:
        """Sends what is queued and half-closes the request stream."""
        self._writer.done_writing()

    def _raise_ended(self) -> None:
        core = self._core if self._replay is None else self._replay.core
        core.wait()
        raise _InactiveRpcError(core)

    # -- response side ----------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        raw = self._core.read()
        if raw is None:
            self._core.wait()
            if self._core.code() != 0:
                if self._again is not None and not self._cancelled:
                    following = self._again(self._core)
                    if following is not None:
                        self._core = following
                        return self.__next__()
                raise _InactiveRpcError(self._core)
            if self._replay is not None:
                self._replay.ended_ok()
            raise StopIteration
        if self._again is not None:
            self._again = None
            if self._replay is not None:  # committed: write straight to the last attempt
                self._replay.response_began()
                self._writer = self._replay.core
        try:
            return deserialize(self._deserialize, raw)
        except RpcError:
            self._core.cancel(StatusCode.INTERNAL.value[0])  # as grpcio: the RPC ends
            raise

    def next(self) -> Any:
        """The next response (grpcio's alias of ``__next__``)."""
        return self.__next__()

    # -- grpc.Call ----------------------------------------------------------------
    def cancel(self) -> bool:
        """Resets the stream (RST_STREAM CANCEL); True if this cancelled a running call."""
        if self._writer.cancel():
            self._cancelled = True
            return True
        return False

    def is_active(self) -> bool:
        """True while the call has not ended (or been cancelled)."""
        return not self._cancelled and not self._core.done()

    def done(self) -> bool:
        """True once the call has ended."""
        return self._core.done()

    def time_remaining(self) -> Optional[float]:
        """Seconds left before the deadline (None without one, or once it ended)."""
        core = self._core
        return None if core.done() else core.time_left()

    def initial_metadata(self) -> Any:
        """Response headers; blocks until they arrive (or the call ends)."""
        return self._core.initial_metadata()

    def _final_core(self) -> Any:
        """The core call the call ends with, once it has ended: the last attempt of a
        call with retries (waits)."""
        if self._replay is not None:
            return self._replay.finish()
        while True:
            core = self._core
            core.wait()
            if core is self._core:  # else the iteration moved on to another attempt
                return core

    def _result(self) -> CallResult:
        self._core = core = self._final_core()
        return CallResult(core)

    def trailing_metadata(self) -> Any:
        """Response trailers; blocks until the call ends."""
        return self._result().trailing_metadata()

    def code(self) -> StatusCode:
        """Final status code; blocks until the call ends."""
        return self._result().code()

    def details(self) -> Optional[str]:
        """Final status message; blocks until the call ends."""
        return self._result().details()

    # -- callbacks at the end of the call ------------------------------------------
    # Set on the first registration: the callbacks waiting, and whether they ran (class
    # attributes: a call nobody registers a callback with costs nothing).
    _done_callbacks: Optional[list[Callable[[], None]]] = None
    _callbacks_ran = False

    def _keep_callback(self, fn: Callable[[], None]) -> bool:
        """Keeps ``fn`` for the end of the call (a helper thread waits for it); False
        if the call has already ended."""
        with _CALLBACKS_LOCK:
            if self._callbacks_ran:
                return False
            if self._done_callbacks is not None:
                self._done_callbacks.append(fn)
                return True
            if self.done() and self._replay is None and self._again is None:
                return False
            self._done_callbacks = [fn]
        threading.Thread(target=self._run_callbacks, daemon=True,
                         name="triple_py-stream-end").start()
        return True

    def _run_callbacks(self) -> None:
        self._final_core()
        with _CALLBACKS_LOCK:
            self._callbacks_ran = True
            callbacks, self._done_callbacks = self._done_callbacks or [], []
        for fn in callbacks:
            try:
                fn()
            except Exception:  # as a future's done-callback: logged, the next ones run
                _LOG.exception("Exception calling callback %r", fn)

    def add_callback(self, callback: Callable[[], None]) -> bool:
        """Calls ``callback()`` when the call ends, from a helper thread; False if it
        has already ended."""
        return self._keep_callback(callback)

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        """Calls ``fn(self)`` when the call ends (at once if it has)."""
        if not self._keep_callback(lambda: fn(self)):
            fn(self)

    # -- grpc.Future (of the end of the call) -------------------------------------
    def _ended(self, timeout: Optional[float]) -> CallResult:
        """The outcome; FutureTimeoutError if the current attempt is still running
        after ``timeout`` seconds."""
        current = self._core if self._replay is None else self._replay.core
        if not current.wait(timeout):
            raise FutureTimeoutError()
        return self._result()

    def cancelled(self) -> bool:
        """True if ``cancel()`` stopped the call."""
        return self._cancelled

    def running(self) -> bool:
        """True until the call has ended."""
        return not self.done()

    def result(self, timeout: Optional[float] = None) -> Any:
        """None once the call ended OK (the responses are the iteration's); raises its
        RpcError, FutureCancelledError or FutureTimeoutError."""
        error = self.exception(timeout)
        if error is not None:
            raise error
        return None

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """The RpcError the call ended with, or None; raises FutureCancelledError or
        FutureTimeoutError."""
        outcome = self._ended(timeout)
        if self._cancelled:
            raise FutureCancelledError()
        return None if outcome.code() is StatusCode.OK else _InactiveRpcError(self._core)

    def traceback(self, timeout: Optional[float] = None) -> Optional[TracebackType]:
        """None: the error comes from the C core, not from Python code."""
        self._ended(timeout)
        return None


def pump_requests(core_call: Any, requests: Any, serializer: Serializer) -> None:
    """Writes every request of an iterator into the call, then half-closes.

    A failing iterator cancels the call (grpcio does the same); a call that ended
    stops the pump.
    """
    try:
        for request in requests:
            payload = serialize(serializer, request)
            if not core_call.write(payload):
                return
        core_call.done_writing()
    except RpcError:  # the serializer failed: INTERNAL, as grpcio
        core_call.cancel(StatusCode.INTERNAL.value[0])
    except Exception:  # the application's iterator failed: end the RPC
        core_call.cancel(StatusCode.UNKNOWN.value[0])


def start_pump(core_call: Any, requests: Any, serializer: Serializer) -> threading.Thread:
    """Runs ``pump_requests`` on a daemon thread and returns it."""
    t = threading.Thread(target=pump_requests, args=(core_call, requests, serializer),
                         daemon=True, name="triple_py-requests")
    t.start()
    return t

"""Connectivity with grpcio's API: ``ChannelConnectivity``, ``channel_ready_future``,
``Channel.subscribe`` / ``unsubscribe``, and the wait of ``wait_for_ready`` calls.

The C core reports the state on demand (``tri_channel_state``: READY once the
server's SETTINGS arrived, CONNECTING during an attempt, TRANSIENT_FAILURE during
the backoff after a failed one, IDLE with no connection, SHUTDOWN once closed).
Nothing is pushed: subscribers are served by one watcher thread per channel that
reads the state every ``POLL_S`` seconds while anyone is subscribed, and waits
poll the same way until their deadline.
"""
from __future__ import annotations

import enum
import threading
import time
from typing import Any, Callable, Optional

from ._errors import FutureCancelledError, FutureTimeoutError
from ._types import Future

POLL_S = 0.005  # how often a watcher or a wait reads the state


class ChannelConnectivity(enum.Enum):
    """A channel's connectivity state; ``value`` is ``(int, name)`` as in grpcio."""

    IDLE = (0, "idle")
    CONNECTING = (1, "connecting")
    READY = (2, "ready")
    TRANSIENT_FAILURE = (3, "transient failure")
    SHUTDOWN = (4, "shutdown")


_BY_INT = {member.value[0]: member for member in ChannelConnectivity}


def state_of(core: Any, try_to_connect: bool) -> ChannelConnectivity:
    """The state of a C channel now (closed channels are SHUTDOWN)."""
    if core.closed:
        return ChannelConnectivity.SHUTDOWN
    return _BY_INT[core.state(try_to_connect)]


def wait_until_ready(core: Any, deadline: Optional[float]) -> bool:
    """Connects and waits until the channel is READY (or SHUTDOWN: the call that
    follows then fails CANCELLED by itself).  False if ``deadline`` (a
    ``time.monotonic()`` instant, None for none) passed first."""
    while True:
        state = state_of(core, True)
        if state in (ChannelConnectivity.READY, ChannelConnectivity.SHUTDOWN):
            return True
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return False
        time.sleep(POLL_S if deadline is None else min(POLL_S, deadline - now))


_CONNECTABLE = (ChannelConnectivity.IDLE, ChannelConnectivity.TRANSIENT_FAILURE)
Subscriber = Callable[[ChannelConnectivity], None]


class ConnectivityWatcher:
    """The subscribers of one channel and the thread that tells them of changes."""

    def __init__(self, core: Any) -> None:
        self._core = core
        self._lock = threading.Lock()
        self._subscribers: list[list[Any]] = []  # [callback, try_to_connect, last seen]
        self._thread: Optional[threading.Thread] = None

    def subscribe(self, callback: Subscriber, try_to_connect: bool = False) -> None:
        """Calls ``callback(state)`` with the current state and on every change."""
        with self._lock:
            self._subscribers.append([callback, bool(try_to_connect), None])
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="triple_py-connectivity")
                self._thread.start()

    def unsubscribe(self, callback: Subscriber) -> None:
        """Stops calling ``callback`` (every subscription of it)."""
        with self._lock:
            self._subscribers = [s for s in self._subscribers if s[0] != callback]

    @staticmethod
    def _tell(subs: list[list[Any]], state: ChannelConnectivity) -> None:
        for sub in subs:
            if sub[2] is not state:
                sub[2] = state
                try:
                    sub[0](state)
                except Exception:  # a raising subscriber does not stop the others
                    pass

    def _loop(self) -> None:
        while True:
            with self._lock:
                subs = list(self._subscribers)
                if not subs:
                    self._thread = None
                    return
            state = state_of(self._core, False)
            self._tell(subs, state)
            if state in _CONNECTABLE and any(s[1] for s in subs):
                state = state_of(self._core, True)
                self._tell(subs, state)
            if state is ChannelConnectivity.SHUTDOWN:
                with self._lock:
                    self._subscribers.clear()
                    self._thread = None
                return
            time.sleep(POLL_S)


class ChannelReadyFuture(Future[None]):
    """The future of ``channel_ready_future``: done when the channel is READY."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self._cond = threading.Condition()
        self._ready = False
        self._cancelled = False
        self._callbacks: list[Callable[["ChannelReadyFuture"], None]] = []
        channel.subscribe(self._on_state, try_to_connect=True)

    def _on_state(self, state: ChannelConnectivity) -> None:
        if state is not ChannelConnectivity.READY:
            return
        self._finish(cancelled=False)

    def _finish(self, cancelled: bool) -> bool:
        with self._cond:
            if self._ready or self._cancelled:
                return False
            self._ready, self._cancelled = not cancelled, cancelled
            self._cond.notify_all()
            callbacks, self._callbacks = self._callbacks, []
        self._channel.unsubscribe(self._on_state)
        for cb in callbacks:
            cb(self)
        return True

    def cancel(self) -> bool:
        """Stops waiting; True unless the channel was already READY."""
        return self._finish(cancelled=True) or self._cancelled

    def cancelled(self) -> bool:
        """True if ``cancel()`` stopped the wait."""
        return self._cancelled

    def running(self) -> bool:
        """True while waiting."""
        return not self.done()

    def done(self) -> bool:
        """True once READY or cancelled."""
        with self._cond:
            return self._ready or self._cancelled

    def result(self, timeout: Optional[float] = None) -> None:
        """Returns None once READY; raises FutureTimeoutError or FutureCancelledError."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._ready or self._cancelled, timeout):
                raise FutureTimeoutError()
            if self._cancelled:
                raise FutureCancelledError()

    def exception(self, timeout: Optional[float] = None) -> None:
        """None once READY (a readiness wait has no error of its own)."""
        self.result(timeout)

    def traceback(self, timeout: Optional[float] = None) -> None:
        """None once READY."""
        self.result(timeout)

    def add_done_callback(self, fn: Callable[["ChannelReadyFuture"], None]) -> None:
        """Calls ``fn(self)`` when done (at once if it is)."""
        with self._cond:
            if not (self._ready or self._cancelled):
                self._callbacks.append(fn)
                return
        fn(self)


def channel_ready_future(channel: Any) -> ChannelReadyFuture:
    """A future that is done once ``channel`` is READY (it connects as needed)."""
    return ChannelReadyFuture(channel)


async def wait_for_change(core: Any, last_observed_state: ChannelConnectivity) -> None:
    """Returns once the state of ``core`` differs from ``last_observed_state``
    (asyncio; reads the state every POLL_S seconds)."""
    import asyncio
    while state_of(core, False) is last_observed_state:
        await asyncio.sleep(POLL_S)


async def wait_ready_async(core: Any) -> None:
    """Connects and returns once the channel is READY (asyncio)."""
    import asyncio
    while state_of(core, True) is not ChannelConnectivity.READY:
        await asyncio.sleep(POLL_S)

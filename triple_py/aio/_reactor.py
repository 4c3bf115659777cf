"""The bridge between a channel's C completion queue and an asyncio event loop.

The C core signals one eventfd when calls have events (done, message, headers,
writable).  The loop watches it with ``add_reader``; one callback drains every
queued call and wakes the Python objects waiting on them.  No thread hop, no Python
thread per call, and the C I/O thread never takes the GIL.
"""
from __future__ import annotations

import asyncio
import os
import threading
from typing import Any, Optional, Protocol

from .. import _triple

# How many times this process is a fork's child: a loop that seems to run on this
# thread after a fork ran in the parent (see Reactor.runs_here).
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))


class EventSink(Protocol):
    """What a call object registered with the reactor must provide."""

    def _on_event(self) -> None: ...

    def _on_channel_closed(self) -> None: ...


class Reactor:
    """Dispatches C call events of one channel on one event loop."""

    BATCH = 256  # poll_completions returns at most this many at a time

    def __init__(self, core_channel: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._core = core_channel
        self._loop = loop
        self._fd = core_channel.notify_fd()
        self._calls: dict[int, EventSink] = {}
        self._closed = False
        self._forks = _forks[0]
        loop.add_reader(self._fd, self._on_readable)

    def runs_here(self, _get_ident: Any = threading.get_ident) -> bool:
        """True when this reactor's loop is the one running on the calling thread, told
        without ``asyncio.get_running_loop()`` (whose fork check is a getpid syscall):
        asyncio's own loops record the thread running them (``_thread_id``), and a
        thread runs one loop at a time.  False (ask asyncio) for other loops, after a
        fork, or once closed."""
        return (getattr(self._loop, "_thread_id", None) == _get_ident()
                and self._forks == _forks[0] and not self._closed)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop this reactor runs on."""
        return self._loop

    def register(self, core_call: Any, sink: EventSink) -> None:
        """Routes ``core_call``'s events to ``sink`` until the call is done."""
        self._calls[id(core_call)] = sink

    def _on_readable(self) -> None:
        """The loop's reader callback: drains with tasks stepped at once (see
        ``_triple.Wakeup``).  A callback of the loop runs outside any task."""
        previous = _triple.wakeup_step_now(True)
        try:
            self._drain()
        finally:
            _triple.wakeup_step_now(previous)

    def _drain(self) -> None:
        while True:
            calls: Optional[list] = self._core.poll_completions(0)
            if calls is None:  # channel closed and every event delivered
                self.close()
                return
            self._deliver(calls)
            if len(calls) < self.BATCH:
                return

    def _deliver(self, calls: list) -> None:
        """Tells the sinks of ``calls`` (polled from the core) of their events.  A task
        stepped from here that raises past its step (SystemExit, KeyboardInterrupt)
        leaves the rest for the next turn of the loop, not lost."""
        for i, call in enumerate(calls):
            sink = self._calls.get(id(call))
            if sink is None:
                continue
            if call.done():
                del self._calls[id(call)]
            try:
                sink._on_event()
            except BaseException:
                if i + 1 < len(calls):
                    self._loop.call_soon(self._deliver, calls[i + 1:])
                raise

    def close(self) -> None:
        """Stops watching the channel; waiting calls learn the channel is gone.  When
        the loop itself has closed (a later loop takes the channel over), its calls
        are dropped silently: nothing can run on that loop any more, and waking their
        futures would raise "Event loop is closed"."""
        if self._closed:
            return
        self._closed = True
        calls, self._calls = self._calls, {}
        if self._loop.is_closed():
            return
        self._loop.remove_reader(self._fd)
        for sink in calls.values():
            sink._on_channel_closed()

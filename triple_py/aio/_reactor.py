"""The bridge between a channel's C completion queue and an asyncio event loop.

The C core signals one eventfd when calls have events (done, message, headers,
writable).  The loop watches it with ``add_reader``; one callback drains every
queued call and wakes the Python objects waiting on them.  No Python thread per
call, and the C core never takes the GIL.

A channel to one endpoint runs its connection on a driven ``_triple.IoLoop``
(``triple.io_on_event_loop``): no I/O thread, the event loop's own thread turns it.
The loop watches the IoLoop's descriptor too; a turn (GIL released) reads the
socket and completes calls without writing the eventfd, the drain that follows
wakes their tasks, and the calls those tasks start go out in one more turn at the
end, in one write: no thread hop anywhere between a response and the next request.
The connection's timed work (deadlines, keepalive) makes the IoLoop's descriptor
readable when it is due, so the reactor keeps no timers of its own.
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
    # Drains per callback while each one's closing turn completes more calls (a
    # stream's writes making room for its next): then the loop's other callbacks run.
    ROUNDS = 4

    def __init__(self, core_channel: Any, loop: asyncio.AbstractEventLoop,
                 io_loop: Optional[Any] = None) -> None:
        """``io_loop``: the channel's driven ``_triple.IoLoop``, turned here."""
        self._core = core_channel
        self._loop = loop
        self._fd = core_channel.notify_fd()
        self._calls: dict[int, EventSink] = {}
        self._closed = False
        self._forks = _forks[0]
        # In a fork child the IoLoop's connection is the parent's (its calls fail at
        # once): nothing to turn, and its descriptor (shared) is not watched.
        self._io = io_loop if io_loop is not None and not io_loop.inherited else None
        loop.add_reader(self._fd, self._on_readable)
        if self._io is not None:
            loop.add_reader(self._io.fileno(), self._on_io)

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
        ``_triple.Wakeup``).  A callback of the loop runs outside any task.  With a
        driven IoLoop, the calls the drain's tasks start go out in a turn at its end,
        and what that turn completes is drained in turn."""
        previous = _triple.wakeup_step_now(True)
        try:
            for _ in range(self.ROUNDS):
                if not self._drain_once():
                    return
            self._loop.call_soon(self._on_readable)  # the rest after others' turns
        finally:
            _triple.wakeup_step_now(previous)

    def _drain_once(self) -> bool:
        """One drain (holding the IoLoop) and the turn after it; True when that turn
        completed calls, which are not notified: the caller drains again."""
        io = self._io
        if io is None:
            self._drain()
            return False
        io.hold(True)
        try:
            self._drain()
        except BaseException:  # a stepped task raised past its step: send, drain later
            if self._closing_turn(io):
                self._loop.call_soon(self._on_readable)
            raise
        return self._closing_turn(io)

    def _closing_turn(self, io: Any) -> bool:
        """Lets go of ``io`` and turns it (the calls the drain started go out); True
        when that turn completed calls."""
        io.hold(False)
        return not self._closed and io.turn(False)

    def _on_io(self) -> None:
        """The IoLoop's reader callback: a turn, then the drain of what it completed
        (most turns of a large response's reads complete nothing: no drain then).
        Timed turns (deadlines, keepalive, reconnect backoff) need no timer here: the
        IoLoop's descriptor becomes readable when one is due."""
        if not self._closed and self._io.turn(True):
            self._on_readable()

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
        if self._io is not None:
            self._loop.remove_reader(self._io.fileno())
        for sink in calls.values():
            sink._on_channel_closed()

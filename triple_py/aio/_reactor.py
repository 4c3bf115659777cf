"""The bridge between a channel's C completion queue and an asyncio event loop.

The C core signals one eventfd when calls have events (done, message, headers,
writable).  The loop watches it with ``add_reader``; one callback drains every
queued call and wakes the Python objects waiting on them.  No thread hop, no Python
thread per call, and the C I/O thread never takes the GIL.
"""
from __future__ import annotations

import asyncio
from typing import Any, Optional, Protocol


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
        loop.add_reader(self._fd, self._drain)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop this reactor runs on."""
        return self._loop

    def register(self, core_call: Any, sink: EventSink) -> None:
        """Routes ``core_call``'s events to ``sink`` until the call is done."""
        self._calls[id(core_call)] = sink

    def _drain(self) -> None:
        while True:
            calls: Optional[list] = self._core.poll_completions(0)
            if calls is None:  # channel closed and every event delivered
                self.close()
                return
            for call in calls:
                sink = self._calls.get(id(call))
                if sink is None:
                    continue
                if call.done():
                    del self._calls[id(call)]
                sink._on_event()
            if len(calls) < self.BATCH:
                return

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

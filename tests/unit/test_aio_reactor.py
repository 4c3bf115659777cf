"""The asyncio reactor's use of a driven IoLoop's turns (triple_py/aio/_reactor.py),
with a scripted core channel and IoLoop: what a turn reports decides whether the
event loop drains; what the closing turn completes is never left behind; and the
loop's other callbacks are never starved."""
from __future__ import annotations

import asyncio
import os
from typing import Iterable, List

import pytest

from triple_py.aio._reactor import Reactor


class ScriptedLoop:
    """A driven IoLoop whose turns report what the script says (False once it ends)."""

    def __init__(self, closing_turns: Iterable[bool] = (), look_turns: Iterable[bool] = ()):
        self.closing = list(closing_turns)
        self.looks = list(look_turns)
        self.turns: List[bool] = []  # the `look` of every turn, in order
        self.holds: List[bool] = []
        self.fd = os.eventfd(0, os.EFD_NONBLOCK)
        self.inherited = False

    def fileno(self) -> int:
        return self.fd

    def turn(self, look: bool) -> bool:
        self.turns.append(look)
        script = self.looks if look else self.closing
        return script.pop(0) if script else False

    def hold(self, flag: bool) -> None:
        self.holds.append(flag)


class ScriptedCore:
    """A core channel whose completion queue hands out one call per drain."""

    def __init__(self) -> None:
        self.fd = os.eventfd(0, os.EFD_NONBLOCK)
        self.polls = 0
        self.pending: List["DoneCall"] = []

    def notify_fd(self) -> int:
        return self.fd

    def poll_completions(self, timeout: float) -> list:
        self.polls += 1
        out, self.pending = self.pending, []
        return out


class DoneCall:
    def done(self) -> bool:
        return True


class Sink:
    def __init__(self, log: List[str], name: str, error: BaseException = None):
        self.log, self.name, self.error = log, name, error

    def _on_event(self) -> None:
        self.log.append(self.name)
        if self.error is not None:
            raise self.error

    def _on_channel_closed(self) -> None:
        self.log.append(self.name + " closed")


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def make(loop, io: ScriptedLoop) -> tuple:
    core = ScriptedCore()
    reactor = Reactor(core, loop, io)
    return core, reactor


def test_a_turn_that_completes_nothing_runs_no_drain(loop):
    io = ScriptedLoop(look_turns=[False, False])
    core, reactor = make(loop, io)
    reactor._on_io()
    reactor._on_io()
    assert core.polls == 0
    assert io.turns == [True, True] and io.holds == []
    reactor.close()


def test_a_turn_that_completed_calls_is_drained_then_sends(loop):
    log: List[str] = []
    io = ScriptedLoop(look_turns=[True])
    core, reactor = make(loop, io)
    call = DoneCall()
    reactor.register(call, Sink(log, "a"))
    core.pending = [call]
    reactor._on_io()
    assert log == ["a"]
    assert io.holds == [True, False]  # the drain holds the loop ...
    assert io.turns == [True, False]  # ... and the calls it started go out after it
    reactor.close()


def test_what_the_closing_turn_completes_is_drained_at_once(loop):
    log: List[str] = []
    io = ScriptedLoop(look_turns=[True], closing_turns=[True, True])
    core, reactor = make(loop, io)
    calls = [DoneCall() for _ in range(3)]
    for i, call in enumerate(calls):
        reactor.register(call, Sink(log, str(i)))

    feed = iter(calls)
    real_turn = io.turn

    def turn(look: bool) -> bool:  # each turn that reports a completion queues one
        queued = real_turn(look)
        if queued:
            core.pending.append(next(feed))
        return queued

    io.turn = turn
    reactor._on_io()
    assert log == ["0", "1", "2"]
    assert io.turns == [True, False, False, False]
    reactor.close()


def test_a_loop_of_completing_turns_lets_other_callbacks_run(loop):
    io = ScriptedLoop(closing_turns=[True] * 100)
    core, reactor = make(loop, io)
    order: List[str] = []
    real_drain = reactor._drain

    def drain() -> None:
        order.append("drain")
        real_drain()

    reactor._drain = drain

    async def main() -> None:
        for _ in range(3):
            await asyncio.sleep(0)

    loop.call_soon(reactor._on_readable)  # as the notify fd's reader callback would
    loop.call_soon(order.append, "other")
    loop.run_until_complete(main())
    first = order.index("other")
    assert order[:first] == ["drain"] * Reactor.ROUNDS  # bounded, then the others
    assert order.count("drain") > Reactor.ROUNDS  # and the rest is not dropped
    reactor.close()


def test_a_sink_that_raises_leaves_the_closing_turns_completions_for_later(loop):
    log: List[str] = []
    io = ScriptedLoop(look_turns=[True], closing_turns=[True])
    core, reactor = make(loop, io)
    first, later = DoneCall(), DoneCall()
    reactor.register(first, Sink(log, "first", KeyboardInterrupt()))
    reactor.register(later, Sink(log, "later"))
    core.pending = [first]
    real_turn = io.turn

    def turn(look: bool) -> bool:
        queued = real_turn(look)
        if queued and not look:
            core.pending.append(later)
        return queued

    io.turn = turn
    with pytest.raises(KeyboardInterrupt):
        reactor._on_io()
    assert log == ["first"]
    assert io.holds == [True, False]  # let go and turned though it raised

    async def settle() -> None:
        await asyncio.sleep(0)

    loop.run_until_complete(settle())
    assert log == ["first", "later"]
    reactor.close()

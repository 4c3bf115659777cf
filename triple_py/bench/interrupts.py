"""Stopping a run early: SIGINT and SIGTERM end it the same way, keeping what was measured.

:class:`Interrupted` is a KeyboardInterrupt (so code that stops on Ctrl-C stops on it) that
carries the signal and, once an arm has stopped, its partial :class:`~.result.BenchResult`.
:func:`signals_interrupt` (the CLI) makes both signals raise it in the main thread; the C
load generator sees it between 50 ms slices, the thread arms in their sleep; the asyncio arms
take both signals on their loop for the run (:func:`loop_signals`) and end their tasks.
An arm that was stopped returns its result marked by :func:`mark`; :func:`raise_if_marked`
(run_spec) turns it into the Interrupted that the CLI and the matrix catch.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any, Callable, Iterator, List

__all__ = ["Interrupted", "signals_interrupt", "signal_of", "exit_code", "mark",
           "raise_if_marked", "loop_signals", "STOP_SIGNALS"]

#: The signals that stop a run (and their exit statuses: 128 + the number, 130 and 143).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by ``signum``; ``result``: what it measured until then (None: nothing,
    and ``why`` may say why).

    ``exit_code`` is the shell's convention, 128 + the signal (130 SIGINT, 143 SIGTERM).
    """

    def __init__(self, signum: int = signal.SIGINT, result: Any = None, why: str = "") -> None:
        super().__init__(signal.Signals(signum).name + (f": {why}" if why else ""))
        self.signum = int(signum)
        self.result = result
        self.parts: List[Any] = []  # a distributed run's workers' results until the stop

    @property
    def exit_code(self) -> int:
        """128 + the signal number."""
        return 128 + self.signum


def signal_of(exc: BaseException) -> int:
    """The signal behind a KeyboardInterrupt (SIGINT unless it says otherwise)."""
    return int(getattr(exc, "signum", signal.SIGINT))


def exit_code(exc: BaseException) -> int:
    """The exit status for a run ended by ``exc`` (a KeyboardInterrupt): 128 + its signal."""
    return 128 + signal_of(exc)


def _raise(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """For the block, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread
    (nothing is changed elsewhere); the previous handlers come back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, _raise)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def mark(result: Any, signum: int) -> Any:
    """Marks ``result`` (a BenchResult) as stopped by ``signum``; returns it."""
    result.extra["interrupted"] = signal.Signals(signum).name
    note = f"interrupted by {signal.Signals(signum).name}: the figures cover the run until then"
    if note not in result.notes:
        result.notes.append(note)
    return result


def raise_if_marked(result: Any) -> Any:
    """Raises :class:`Interrupted` carrying ``result`` when :func:`mark` marked it; else
    returns it."""
    name = result.extra.get("interrupted") if result is not None else None
    if name:
        raise Interrupted(signal.Signals[name], result)
    return result


@contextlib.contextmanager
def loop_signals(loop: Any, on_signal: Callable[[int], None]) -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM call ``on_signal(signum)`` on the asyncio
    ``loop`` instead of raising inside whatever coroutine runs (main thread only; elsewhere
    nothing changes). The Python handlers that were there before come back after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    installed = []
    try:
        for s in STOP_SIGNALS:
            try:
                loop.add_signal_handler(s, on_signal, int(s))
                installed.append(s)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        yield
    finally:
        for s in installed:
            loop.remove_signal_handler(s)
            handler = previous[s]
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


"""Daemon helper threads for work that may block for as long as user code likes: call
credential plugins, and what asyncio calls and channels must not do on the event loop
(the wait before a call starts, a resolver's first look-up).

Unlike ``concurrent.futures.ThreadPoolExecutor`` (and asyncio's default executor), whose
workers are joined at interpreter exit and at ``asyncio.run()``'s end, these threads are
daemons that nothing joins: a task stuck for ever (a plugin that never calls back) keeps
neither the process nor an event loop from finishing.  A task never waits behind stuck
ones either: an idle thread takes it, else a new thread is started (up to ``LIMIT``
threads; beyond that tasks queue).  Idle threads end after ``IDLE_S`` seconds.
"""
from __future__ import annotations

import asyncio
import collections
import os
import threading
from typing import Any, Callable, Optional, TypeVar

T = TypeVar("T")

#: Most threads alive at once: generous, as every task may be stuck (grpcio starts a
#: thread per plugin invocation, without a bound).
LIMIT = 1024
#: Seconds an idle thread waits for a task before it ends.
IDLE_S = 30.0


class _Worker:
    """One idle thread's hand-over slot: ``wake`` is released once ``task`` is set."""

    __slots__ = ("wake", "task")

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.task: Optional[Callable[[], None]] = None


class HelperThreads:
    """A growable set of daemon threads running ``submit``ted tasks (see the module)."""

    def __init__(self, name: str, limit: int = LIMIT, idle_s: float = IDLE_S) -> None:
        self._name = name
        self._limit = limit
        self._idle_s = idle_s
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        """Empty state (also in a forked child, where no helper thread exists)."""
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._queued: collections.deque[Callable[[], None]] = collections.deque()
        self._threads = 0

    @property
    def threads(self) -> int:
        """Helper threads alive now (busy or idle)."""
        return self._threads

    def submit(self, task: Callable[[], None]) -> None:
        """Runs ``task()`` on a helper thread; it must catch its own exceptions (any it
        lets through are dropped)."""
        with self._lock:
            if self._idle:
                worker = self._idle.pop()
                worker.task = task
                worker.wake.release()
                return
            if self._threads >= self._limit:
                self._queued.append(task)
                return
            self._threads += 1
        try:
            threading.Thread(target=self._work, args=(task,), daemon=True,
                             name=f"triple_py-{self._name}").start()
        except BaseException:
            with self._lock:
                self._threads -= 1
            raise

    def _work(self, task: Callable[[], None]) -> None:
        worker = _Worker()
        while True:
            try:
                task()
            except BaseException:  # noqa: BLE001 - a task reports its own failures
                pass
            task = None  # type: ignore[assignment]  # drop references while idle
            with self._lock:
                if self._queued:
                    task = self._queued.popleft()
                    continue
                self._idle.append(worker)
            if not worker.wake.acquire(timeout=self._idle_s):
                with self._lock:
                    if worker in self._idle:  # nobody handed a task over: end
                        self._idle.remove(worker)
                        self._threads -= 1
                        return
                worker.wake.acquire()  # handed over just as the wait ended
            task, worker.task = worker.task, None  # type: ignore[assignment]


#: The threads of triple_py's blocking helpers (plugins, asyncio preflight, resolvers).
helpers = HelperThreads("helper")


def settle(future: "asyncio.Future[T]", value: Any = None,
           error: Optional[BaseException] = None) -> None:
    """Sets ``future``'s outcome unless it is done (cancelled, say); on its loop's thread."""
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


async def off_loop(fn: Callable[[], T]) -> T:
    """``fn()`` run on a helper thread, awaited without blocking the running loop.

    Cancelling the awaiting task returns at once: ``fn`` keeps running on its daemon
    thread and its outcome is dropped (also if the loop has closed meanwhile)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            value, error = fn(), None
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, future, value, error)
        except RuntimeError:  # the loop has closed: nobody waits any more
            pass
    helpers.submit(run)
    return await future

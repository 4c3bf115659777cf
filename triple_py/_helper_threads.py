"""Daemon helper threads for work that may block for as long as user code likes: call
credential plugins, and what asyncio calls and channels must not do on the event loop
(the wait before a call starts, a resolver's first look-up).

Unlike ``concurrent.futures.ThreadPoolExecutor`` (and asyncio's default executor), whose
workers are joined at interpreter exit and at ``asyncio.run()``'s end, these threads are
daemons that nothing joins: a task stuck for ever (a plugin that never calls back) keeps
neither the process nor an event loop from finishing.

A task never waits long behind stuck ones either.  It goes to an idle thread if there is
one, else to a new thread while fewer than ``CORE`` run; else it queues.  When no thread
has taken a task off the queue for ``GRACE_S`` (they are all stuck, say), a watchdog
thread starts new threads for the tasks queued that long: as many as there are threads,
at most (the count doubles per ``GRACE_S`` while the stall lasts, up to ``LIMIT``).  So a
burst of quick tasks is served by a few threads, even on a machine so loaded that threads
wait for a CPU now and then, while stuck tasks end up costing a thread each, as grpcio's
thread per plugin invocation does.  Idle threads end after
``IDLE_S`` seconds.
"""
from __future__ import annotations

import asyncio
import collections
import os
import threading
import time
from typing import Any, Callable, Optional, TypeVar

T = TypeVar("T")
Task = Callable[[], None]

#: Threads started at once, without waiting, when no thread is idle.
CORE = 4
#: Seconds without a queued task taken before new threads start.
GRACE_S = 0.05
#: Most threads alive at once: generous, since every task may be stuck.
LIMIT = 1024
#: Seconds an idle thread waits for a task before it ends.
IDLE_S = 30.0


class _Worker:
    """One idle thread's hand-over slot: ``wake`` is released once ``task`` is set."""

    __slots__ = ("wake", "task")

    def __init__(self) -> None:
        self.wake = threading.Lock()
        self.wake.acquire()
        self.task: Optional[Task] = None


class HelperThreads:
    """A growable set of daemon threads running ``submit``ted tasks (see the module)."""

    def __init__(self, name: str, core: int = CORE, grace_s: float = GRACE_S,
                 limit: int = LIMIT, idle_s: float = IDLE_S) -> None:
        self._name = name
        self._core, self._grace_s, self._limit, self._idle_s = core, grace_s, limit, idle_s
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        """Empty state (also in a forked child, where no helper thread exists)."""
        self._lock = threading.Lock()
        self._queued_more = threading.Condition(self._lock)  # the watchdog waits on it
        self._idle: list[_Worker] = []
        self._queue: collections.deque[tuple[float, Task]] = collections.deque()
        self._threads = 0
        self._watchdog = False
        self._progress = 0.0  # time.monotonic() when a thread last took a queued task

    @property
    def threads(self) -> int:
        """Helper threads alive now (busy or idle)."""
        return self._threads

    def submit(self, task: Task) -> None:
        """Runs ``task()`` on a helper thread; it must catch its own exceptions (any it
        lets through are dropped)."""
        with self._lock:
            if self._idle:
                worker = self._idle.pop()
                worker.task = task
                worker.wake.release()
                return
            if self._threads >= self._core:
                self._queue.append((time.monotonic(), task))
                if not self._watchdog:
                    self._watchdog = True
                    threading.Thread(target=self._watch, daemon=True,
                                     name=f"triple_py-{self._name}-watchdog").start()
                elif len(self._queue) == 1:
                    self._queued_more.notify()
                return
            self._threads += 1
        self._start(task)

    def _start(self, task: Task) -> None:
        """A new thread for ``task`` (counted in ``_threads`` already)."""
        try:
            threading.Thread(target=self._work, args=(task,), daemon=True,
                             name=f"triple_py-{self._name}").start()
        except BaseException:
            with self._lock:
                self._threads -= 1
            raise

    def _work(self, task: Task) -> None:
        worker = _Worker()
        while True:
            try:
                task()
            except BaseException:  # noqa: BLE001 - a task reports its own failures
                pass
            task = None  # type: ignore[assignment]  # drop references while idle
            with self._lock:
                if self._queue:
                    task = self._queue.popleft()[1]
                    self._progress = time.monotonic()
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

    def _watch(self) -> None:
        """The watchdog: while no thread takes queued tasks, each one queued for
        ``grace_s`` gets a thread of its own."""
        while True:
            with self._lock:
                while not self._queue:
                    self._queued_more.wait()
                now = time.monotonic()
                late: list[Task] = []
                stalled = now - self._progress >= self._grace_s
                room = min(max(self._threads, 1), self._limit - self._threads) if stalled else 0
                while len(late) < room and self._queue and \
                        now - self._queue[0][0] >= self._grace_s:
                    late.append(self._queue.popleft()[1])
                if late:
                    self._threads += len(late)
                    self._progress = now  # the next ones wait for these to be stuck too
                wait = (self._grace_s - min(now - self._queue[0][0], now - self._progress)
                        if self._queue and not late else 0.0)
            for task in late:
                try:
                    self._start(task)
                except RuntimeError:  # no thread to be had now: it waits its turn
                    with self._lock:
                        self._queue.appendleft((now, task))
            time.sleep(max(wait, self._grace_s / 4))


#: The threads of triple_py's blocking helpers (plugins, asyncio preflight, resolvers).
helpers = HelperThreads("helper")


def wake_soon(loop: asyncio.AbstractEventLoop, future: "asyncio.Future[Any]",
              value: Any = None, error: Optional[BaseException] = None) -> None:
    """From any thread: ``settle(future, value, error)`` on ``loop``'s thread; nothing if
    the loop has closed (nobody waits any more)."""
    try:
        loop.call_soon_threadsafe(settle, future, value, error)
    except RuntimeError:
        pass


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
        wake_soon(loop, future, value, error)
    helpers.submit(run)
    return await future

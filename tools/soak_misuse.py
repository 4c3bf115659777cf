"""The soak's misuse load (issue 20), beside its fault-injected unary load: what an
ordinary but careless user does to the same process while it runs.

* a fork every ``fork_every`` seconds: the child calls on the inherited channel (which
  must fail at once with UNAVAILABLE), makes a channel of its own and calls on it, closes
  the inherited one and exits; a child that does not exit within CHILD_LIMIT seconds is
  killed and counted as hung;
* a done-callback that raises on every ``raise_every``-th future of the main load (the
  exceptions are logged to a counting handler; the load's own callbacks must keep running);
* a channel dropped without close() every ``drop_every`` seconds, after one future on it;
  the peak threads and fds of the process are sampled meanwhile.

``problems()`` lists what broke a bound; ``report()`` the figures for the soak's JSON.
"""
from __future__ import annotations

import logging
import os
import signal
import time
from typing import Any, Dict, List

import triple_py

UNARY_METHOD = "/benchmark.BenchmarkService/UnaryCall"
CHILD_LIMIT = 10.0  # seconds a forked child may take
DROPPED_THREADS_BOUND = 8  # threads beyond the start that dropped channels may hold at once
DROPPED_FDS_BOUND = 16


class _Counter(logging.Handler):
    """Counts records instead of printing them."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _raising_callback(future: Any) -> None:
    raise RuntimeError("soak: a done-callback that raises")


def _child(channel: triple_py.Channel, address: str) -> int:
    """The forked child's work; its exit status (0: as expected)."""
    try:
        channel.unary_unary(UNARY_METHOD)(b"inherited", timeout=5)
        return 3  # the inherited channel must not work
    except triple_py.RpcError as e:
        if e.code() is not triple_py.StatusCode.UNAVAILABLE:
            return 4
    with triple_py.insecure_channel(address) as own:
        try:
            own.unary_unary(UNARY_METHOD)(b"own", timeout=5)
        except triple_py.RpcError as e:
            # the fault proxy may be in a fault window: any status will do, but promptly
            if e.code() is triple_py.StatusCode.OK:
                return 5
    channel.close()
    return 0


class Misuse:
    """Runs the misuse load from the soak's tick (main thread)."""

    def __init__(self, channel: triple_py.Channel, address: str, fork_every: float,
                 drop_every: float, raise_every: int) -> None:
        self.channel = channel
        self.address = address
        self.fork_every = fork_every
        self.drop_every = drop_every
        self.raise_every = raise_every
        self.logged = _Counter()
        logging.getLogger("triple_py").addHandler(self.logged)
        self.forks = self.fork_failures = self.hung_children = 0
        self.dropped = 0
        self.raising_added = 0
        self.futures_seen = 0
        self.next_fork = fork_every
        self.next_drop = drop_every
        self.children: Dict[int, float] = {}  # pid -> started (monotonic)
        self.base_threads = self.base_fds = 0
        self.peak_threads = self.peak_fds = 0

    def begin(self) -> None:
        """Takes the thread and fd baseline (at the soak's quiet start point)."""
        self.base_threads, self.base_fds = _counts()
        self.peak_threads, self.peak_fds = self.base_threads, self.base_fds

    def on_future(self, future: Any) -> None:
        """Called for each future the main load starts: every raise_every-th gets a
        callback that raises, before the load's own."""
        self.futures_seen += 1
        if self.raise_every and self.futures_seen % self.raise_every == 0:
            try:
                future.add_done_callback(_raising_callback)
                self.raising_added += 1
            except RuntimeError:  # already done: ran (and raised) here, as in grpcio
                pass

    def tick(self, elapsed: float) -> None:
        if self.fork_every and elapsed >= self.next_fork:
            self.next_fork += self.fork_every
            self._fork()
        if self.drop_every and elapsed >= self.next_drop:
            self.next_drop += self.drop_every
            self._drop_one()
        self._reap(block=False)

    def finish(self) -> None:
        """Waits for the children still running (killing hung ones)."""
        self._reap(block=True)

    def _fork(self) -> None:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(self.channel, self.address)
            finally:
                os._exit(code)
        self.forks += 1
        self.children[pid] = time.monotonic()

    def _reap(self, block: bool) -> None:
        deadline = time.monotonic() + CHILD_LIMIT
        while self.children:
            for pid, started in list(self.children.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    del self.children[pid]
                    if os.waitstatus_to_exitcode(status) != 0:
                        self.fork_failures += 1
                elif time.monotonic() - started > CHILD_LIMIT:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    del self.children[pid]
                    self.hung_children += 1
            if not block or time.monotonic() > deadline + CHILD_LIMIT:
                return
            time.sleep(0.01)

    def _drop_one(self) -> None:
        ch = triple_py.insecure_channel(self.address)
        try:
            ch.unary_unary(UNARY_METHOD).future(b"dropped", timeout=2).result()
        except triple_py.RpcError:
            pass  # a fault window: the point is what the dropped channel leaves behind
        del ch
        self.dropped += 1
        threads, fds = _counts()
        self.peak_threads = max(self.peak_threads, threads)
        self.peak_fds = max(self.peak_fds, fds)

    def problems(self) -> List[str]:
        found = []
        if self.fork_failures or self.hung_children:
            found.append(f"forked children: {self.fork_failures} failed, "
                         f"{self.hung_children} hung")
        if self.raising_added and not self.logged.count:
            found.append("no raising done-callback was logged")
        if self.peak_threads > self.base_threads + DROPPED_THREADS_BOUND + 2:
            found.append(f"threads peaked at {self.peak_threads} (start {self.base_threads})")
        if self.peak_fds > self.base_fds + DROPPED_FDS_BOUND:
            found.append(f"fds peaked at {self.peak_fds} (start {self.base_fds})")
        return found

    def report(self) -> Dict[str, Any]:
        return {"forks": self.forks, "fork_failures": self.fork_failures,
                "hung_children": self.hung_children, "raising_callbacks": self.raising_added,
                "callback_exceptions_logged": self.logged.count,
                "dropped_channels": self.dropped, "base_threads": self.base_threads,
                "peak_threads": self.peak_threads, "base_fds": self.base_fds,
                "peak_fds": self.peak_fds}


def _counts() -> tuple[int, int]:
    return len(os.listdir("/proc/self/task")), len(os.listdir("/proc/self/fd"))

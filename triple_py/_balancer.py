"""Several backends behind one channel: pick_first and round_robin.

A ``Balancer`` takes the endpoint lists of a resolver (``_resolver``) and keeps one
backend per endpoint: a C core channel (``_triple.Channel``: one HTTP/2 connection,
one I/O thread, its own connection backoff).  It offers the core channel's interface
(``call``, ``generic``, ``state``, ``closed``, ``stats``, ``close``,
``poll_completions``, ``notify_fd``, ``wake_pollers``), so the channel, its futures'
dispatcher and the asyncio reactor use it as they use one core channel.

Connecting (grpc's rule): round_robin connects every backend as soon as it is added
and reconnects it whenever it falls IDLE (after its connection backoff); pick_first
connects its current backend when the endpoints change and moves on to the next when
a call finds it failing.  The core pushes no state changes (``tri_connectivity.h``),
so one watcher thread per round_robin balancer reads the backends' states: every
``POLL_S`` while a backend is connecting or a call waits, every ``IDLE_POLL_S``
otherwise, and at once when a call finds a backend unusable.  It keeps ``_ready``, the READY backends, as an
immutable tuple that it replaces whole when the set changes.

Picking (per call, no lock shared across backends): round_robin takes
``ready[next(counter) % len(ready)]`` (``itertools.count`` advances atomically under
the GIL; the tuple is read once).  With no READY backend the call waits, within its
deadline, until one is READY, or fails at once (UNAVAILABLE) when every backend is in
TRANSIENT_FAILURE; a call with ``wait_for_ready`` waited before it got here
(``_preflight``).  Sync calls wait on a condition variable; asyncio calls wait on a
helper thread before they start (``must_queue``, ``wait_ready``), never on the loop.
pick_first takes the current backend.  A call that ends at once without reaching a
server (``call.unprocessed()``: the backend is backing off after a failed connection,
or its connection is closing) is started again on the next backend, so a dead backend
is skipped while another works; the failure also asks the resolver to ``refresh()``.

Updates: a new endpoint gets a backend; a removed endpoint gets no new picks and its
backend is closed once every call started on it has ended (the call objects hold
their core channel; the balancer only drops its own reference, so the core closes
when the last call lets go of it).  Connectivity is grpc's aggregate: READY if any
backend is READY, else CONNECTING if any is, else IDLE if any is, else
TRANSIENT_FAILURE.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import select
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, Optional

from ._helper_threads import helpers
from ._preflight import EndedCall
from ._resolver import Endpoint, Resolver
from ._status import StatusCode

log = logging.getLogger(__name__)

PICK_FIRST = "pick_first"
ROUND_ROBIN = "round_robin"
POLICIES = (PICK_FIRST, ROUND_ROBIN)
_IDLE, _CONNECTING, _READY, _TRANSIENT_FAILURE = 0, 1, 2, 3
POLL_S = 0.005  # the watcher's period while a backend connects or a call waits
IDLE_POLL_S = 0.05  # its period while every backend is READY or backing off

CoreFactory = Callable[[Endpoint], Any]


class NoBackendError(Exception):
    """The resolver has reported no endpoint (yet)."""


class Balancer:
    """Backends for the endpoints of one resolver, picked by one policy."""

    def __init__(self, resolver: Resolver, make_core: CoreFactory, policy: str,
                 background: bool = False) -> None:
        """``background``: the resolver starts on a helper thread (an asyncio channel's
        balancer: a resolver's start may block, on ZooKeeper say, and the loop must not);
        until it has, calls queue (``must_queue``, ``wait_ready``)."""
        if policy not in POLICIES:
            raise ValueError(f"unknown load-balancing policy {policy!r}: one of {POLICIES}")
        self._resolver = resolver
        self._make_core = make_core
        self._policy = policy
        self._lock = threading.Lock()  # guards updates only; picks read self._cores
        self._by_endpoint: Dict[Endpoint, Any] = {}
        self._cores: tuple = ()  # the backends picks choose from, in endpoint order
        self._retiring: List[weakref.ref] = []
        self._counter = itertools.count()
        self._current = 0  # pick_first: index of the backend in use
        self._closed = False
        self._updated = threading.Event()
        self._epoll = select.epoll()
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake_fd, select.EPOLLIN)
        self._registered: Dict[int, int] = {}  # id(core) -> fd in the epoll set
        # The watcher's results; replaced whole under self._lock, read without it.
        self._ready: tuple = ()  # the READY backends, in endpoint order
        self._all_failed = False  # every backend is in TRANSIENT_FAILURE
        self._changed = threading.Condition(self._lock)  # _ready or _all_failed changed
        self._waiters = 0  # calls waiting for a READY backend
        self._poke = threading.Event()  # wakes the watcher now
        self._pid = os.getpid()  # a forked child has no watcher: its calls never wait
        self._resolver_started = False  # resolver.start() has returned (under _lock)
        if policy == ROUND_ROBIN:  # pick_first needs no states: calls move it on
            threading.Thread(target=_watch, args=(weakref.ref(self), self._poke),
                             daemon=True, name="triple_py-balancer").start()
        if background:
            helpers.submit(self._start_resolver_logged)
        else:
            self._start_resolver()

    def _start_resolver(self) -> None:
        """Starts the resolver (it delivers its first list before it returns, or gives
        up waiting for one); calls queued meanwhile go on."""
        try:
            self._resolver.start(self._on_update)
        finally:
            with self._lock:
                self._resolver_started = True
                self._changed.notify_all()
            self._poke.set()

    def _start_resolver_logged(self) -> None:
        """``_start_resolver`` on a helper thread: a failure is logged (calls then find
        no endpoint and fail UNAVAILABLE)."""
        try:
            self._start_resolver()
        except Exception:  # noqa: BLE001 - nobody to raise it to
            if not self._closed:
                log.warning("resolver %r failed to start", self._resolver, exc_info=True)

    # ---- resolver updates -------------------------------------------------------

    def _on_update(self, endpoints: List[Endpoint]) -> None:
        """The full endpoint list: add backends, retire the ones no longer listed."""
        drop, added = [], []
        with self._lock:
            if self._closed:
                return
            wanted = list(dict.fromkeys(endpoints))
            for ep in wanted:
                if ep not in self._by_endpoint:
                    core = self._make_core(ep)
                    added.append(core)
                    self._by_endpoint[ep] = core
                    fd = core.notify_fd()
                    self._epoll.register(fd, select.EPOLLIN)
                    self._registered[id(core)] = fd
            for ep in [e for e in self._by_endpoint if e not in wanted]:
                core = self._by_endpoint.pop(ep)
                drop.append(core)
            old = self._cores
            self._cores = tuple(self._by_endpoint[e] for e in wanted)
            if self._policy == PICK_FIRST and old and self._cores:
                current = old[self._current % len(old)]
                self._current = (self._cores.index(current) if current in self._cores else 0)
            for core in drop:
                self._retiring.append(weakref.ref(core, self._forget))
            self._ready = tuple(c for c in self._ready if c in self._cores)
            self._all_failed = False  # until the watcher has looked at the new set
            self._changed.notify_all()
        if self._policy == ROUND_ROBIN:
            for core in added:  # connect at once, as grpc's round_robin does
                core.state(True)
        elif self._cores:  # pick_first connects its current backend
            self._cores[self._current % len(self._cores)].state(True)
        self._updated.set()
        self._poke.set()
        os.eventfd_write(self._wake_fd, 1)  # pollers pick up the new set

    # ---- backend states (the watcher thread) ------------------------------------

    def _look(self) -> float:
        """round_robin: reads the backends' states, connecting the IDLE ones, and
        publishes the READY set; returns how long to wait before the next look."""
        cores = self._cores
        if self._closed:
            return 0
        states = [core.state(True) for core in cores]
        ready = tuple(c for c, st in zip(cores, states) if st == _READY)
        failed = bool(states) and all(st == _TRANSIENT_FAILURE for st in states)
        with self._lock:
            if self._cores is cores and (ready != self._ready or failed != self._all_failed):
                self._ready, self._all_failed = ready, failed
                self._changed.notify_all()
            waiting = self._waiters
        settled = all(st in (_READY, _TRANSIENT_FAILURE) for st in states)
        return POLL_S if waiting or not settled else IDLE_POLL_S

    @property
    def queues_calls(self) -> bool:
        """True if calls may wait here for a READY backend (round_robin) or for the
        resolver's start (``background``)."""
        return self._policy == ROUND_ROBIN or not self._resolver_started

    def must_queue(self) -> bool:
        """True if a call started now would wait: the resolver has not started yet, or
        a round_robin call would wait for a READY backend (asyncio calls then wait on
        a helper thread first: ``wait_ready``)."""
        if not self._resolver_started:
            return not self._closed and os.getpid() == self._pid
        return (self._policy == ROUND_ROBIN and not self._ready and not self._all_failed
                and bool(self._cores) and not self._closed and os.getpid() == self._pid)

    def wait_ready(self, deadline: Optional[float]) -> Optional[EndedCall]:
        """Blocks until a call may be picked (a READY backend, or every backend failed:
        the call then fails fast by itself); the DEADLINE_EXCEEDED EndedCall if
        ``deadline`` (``time.monotonic()``; None: none) passes first."""
        with self._lock:
            while self.must_queue():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return EndedCall(StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
                self._waiters += 1
                self._poke.set()
                try:
                    self._changed.wait(left)
                finally:
                    self._waiters -= 1
        return None

    def _forget(self, ref: weakref.ref) -> None:
        """A retired core is gone (its last call ended): stop watching it."""
        with self._lock:
            if ref in self._retiring:
                self._retiring.remove(ref)

    def endpoints(self) -> List[Endpoint]:
        """The endpoints that get new calls now."""
        with self._lock:
            return list(self._by_endpoint)

    def wait_for_endpoints(self, timeout: Optional[float]) -> bool:
        """True once the resolver has reported at least one endpoint."""
        return bool(self._cores) or self._updated.wait(timeout) and bool(self._cores)

    # ---- picking ------------------------------------------------------------------

    def _pick(self) -> Any:
        """One backend: round_robin's next READY one in turn (any, while none is READY),
        or pick_first's current."""
        cores = self._ready if self._policy == ROUND_ROBIN and self._ready else self._cores
        if not cores:
            raise NoBackendError("no endpoint resolved for this target")
        start = next(self._counter) if self._policy == ROUND_ROBIN else self._current
        return cores[start % len(cores)]

    def _failed(self, core: Any) -> None:
        """A call found ``core`` unusable: pick_first moves on; the watcher looks at
        the states now; the resolver is told."""
        cores = self._cores
        if self._policy == PICK_FIRST and cores and core in cores:
            self._current = (cores.index(core) + 1) % len(cores)
        self._poke.set()
        self._resolver.refresh()

    def call(self, path: str, request: Any = None, timeout: Optional[float] = None,
             metadata: Any = None, *, wait: bool = False, notify: int = 0, flags: int = 0,
             compression: int = -1) -> Any:
        """``_triple.Channel.call`` on a picked backend (see the module docstring); a
        call that ended at once without reaching a server is started on the next
        backend (each tried once)."""
        if self._policy == ROUND_ROBIN:
            ready = self._ready
            if ready:  # the common case: a READY backend in turn, nothing else read
                core = ready[next(self._counter) % len(ready)]
                result = core.call(path, request, timeout, metadata, wait=wait,
                                   notify=notify, flags=flags, compression=compression)
                if not result.unprocessed():
                    return result
                self._failed(core)
            return self._queued(path, request, timeout, metadata, wait, notify, flags,
                                compression)
        cores = self._cores  # pick_first: the current backend, then the next ones
        if not cores:
            return EndedCall(StatusCode.UNAVAILABLE, "no endpoint resolved for this target")
        start = self._current
        core = cores[start % len(cores)]
        result = core.call(path, request, timeout, metadata, wait=wait, notify=notify,
                           flags=flags, compression=compression)
        if not result.unprocessed() or len(cores) == 1:
            return result
        self._failed(core)
        return self._each(_rotated(cores, start + 1)[:-1], path, request, timeout, metadata,
                          wait, notify, flags, compression)  # the others, each once

    def _queued(self, path: str, request: Any, timeout: Optional[float], metadata: Any,
                wait: bool, notify: int, flags: int, compression: int) -> Any:
        """round_robin without a usable READY backend: waits for one within the
        deadline (not on an event loop's thread: asyncio calls waited before), then
        tries the READY ones in turn and the others after them."""
        if not self._cores:
            return EndedCall(StatusCode.UNAVAILABLE, "no endpoint resolved for this target")
        if asyncio._get_running_loop() is None:
            deadline = None if timeout is None else time.monotonic() + timeout
            ended = self.wait_ready(deadline)
            if ended is not None:
                return ended
            if deadline is not None:
                timeout = max(deadline - time.monotonic(), 0.0)
        ready, start = self._ready, next(self._counter)
        order = (*_rotated(ready, start),
                 *(core for core in _rotated(self._cores, start) if core not in ready))
        return self._each(order, path, request, timeout, metadata, wait, notify, flags,
                          compression)

    def _each(self, order: tuple, path: str, request: Any, timeout: Optional[float],
              metadata: Any, wait: bool, notify: int, flags: int, compression: int) -> Any:
        """The call on the first backend of ``order`` that takes it; the last
        backend's result if none does."""
        result = None
        for core in order:
            result = core.call(path, request, timeout, metadata, wait=wait, notify=notify,
                               flags=flags, compression=compression)
            if not result.unprocessed():
                return result
            self._failed(core)
        return result

    def generic(self, *args: Any, **kwargs: Any) -> Any:
        """``_triple.Channel.generic`` on a picked backend."""
        return self._pick().generic(*args, **kwargs)

    # ---- the core channel's other methods ---------------------------------------

    def _all(self) -> List[Any]:
        """The current backends and the retiring ones still alive."""
        with self._lock:
            retiring = [r() for r in self._retiring]
            return [*self._cores, *(c for c in retiring if c is not None)]

    @property
    def closed(self) -> bool:
        return self._closed

    def state(self, try_to_connect: bool = False) -> int:
        """grpc's aggregate of the backends' states (see the module docstring)."""
        states = {core.state(try_to_connect) for core in self._cores}
        for wanted in (_READY, _CONNECTING, _IDLE):
            if wanted in states:
                return wanted
        return _TRANSIENT_FAILURE if states else _IDLE

    def stats(self) -> Dict[str, int]:
        """The counters summed over the backends."""
        total: Dict[str, int] = {}
        for core in self._all():
            for key, value in core.stats().items():
                total[key] = total.get(key, 0) + value
        return total

    def notify_fd(self) -> int:
        """A descriptor readable while any backend has completions to poll."""
        return self._epoll.fileno()

    def wake_pollers(self) -> None:
        """Makes a ``poll_completions`` that waits return now."""
        for core in self._all():
            core.wake_pollers()
        os.eventfd_write(self._wake_fd, 1)

    def poll_completions(self, timeout: float = 0) -> Optional[list]:
        """Completed calls of every backend (as ``_triple.Channel.poll_completions``):
        waits up to ``timeout`` seconds for one; None once closed and drained."""
        out = self._drain()
        if out is None or out or timeout == 0:
            return out
        self._epoll.poll(timeout)
        return self._drain()

    def _drain(self) -> Optional[list]:
        try:  # reset the wake-up, so the epoll descriptor is readable only for work
            os.eventfd_read(self._wake_fd)
        except BlockingIOError:
            pass
        out: list = []
        ended = 0
        cores = self._all()
        for core in cores:
            got = core.poll_completions(0)
            if got is None:
                ended += 1
            else:
                out.extend(got)
        if self._closed and ended == len(cores) and not out:
            return None
        return out

    def close(self) -> None:
        """Closes every backend (their calls end CANCELLED) and the resolver."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._resolver.close()
        for core in self._all():
            core.close()
        with self._lock:
            self._changed.notify_all()  # waiting calls go on and end CANCELLED
        self._poke.set()
        os.eventfd_write(self._wake_fd, 1)

    def __del__(self) -> None:
        try:
            self._epoll.close()
            os.close(self._wake_fd)
        except (AttributeError, OSError):
            pass


def _rotated(cores: tuple, start: int) -> tuple:
    """``cores`` beginning at index ``start`` (modulo their number)."""
    if not cores:
        return cores
    start %= len(cores)
    return cores[start:] + cores[:start]


def _watch(balancer: "weakref.ref[Balancer]", poke: threading.Event) -> None:
    """The watcher thread of one balancer (see the module docstring): it holds the
    balancer only while it looks, and ends when the balancer is closed or gone."""
    while True:
        current = balancer()
        if current is None or current.closed:
            return
        period = current._look()
        del current
        poke.wait(period)
        poke.clear()

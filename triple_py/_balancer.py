"""Several backends behind one channel: pick_first and round_robin.

A ``Balancer`` takes the endpoint lists of a resolver (``_resolver``) and keeps one
backend per endpoint: a C core channel (``_triple.Channel``: one HTTP/2 connection,
one I/O thread, its own connection backoff).  It offers the core channel's interface
(``call``, ``generic``, ``state``, ``closed``, ``stats``, ``close``,
``poll_completions``, ``notify_fd``, ``wake_pollers``), so the channel, its futures'
dispatcher and the asyncio reactor use it as they use one core channel.

Picking (per call, no lock shared across backends): round_robin takes
``backends[next(counter) % n]`` (``itertools.count`` advances atomically under the
GIL); pick_first takes the current backend and moves on only when it fails.  A call
that ends at once without reaching a server (``call.unprocessed()``: the backend is
backing off after a failed connection, or its connection is closing) is started again
on the next backend, so a dead backend is skipped while another works; the failure
also asks the resolver to ``refresh()``.

Updates: a new endpoint gets a backend; a removed endpoint gets no new picks and its
backend is closed once every call started on it has ended (the call objects hold
their core channel; the balancer only drops its own reference, so the core closes
when the last call lets go of it).  Connectivity is grpc's aggregate: READY if any
backend is READY, else CONNECTING if any is, else IDLE if any is, else
TRANSIENT_FAILURE.
"""
from __future__ import annotations

import itertools
import os
import select
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional

from ._preflight import EndedCall
from ._resolver import Endpoint, Resolver
from ._status import StatusCode

PICK_FIRST = "pick_first"
ROUND_ROBIN = "round_robin"
POLICIES = (PICK_FIRST, ROUND_ROBIN)
_IDLE, _CONNECTING, _READY, _TRANSIENT_FAILURE = 0, 1, 2, 3

CoreFactory = Callable[[Endpoint], Any]


class NoBackendError(Exception):
    """The resolver has reported no endpoint (yet)."""


class Balancer:
    """Backends for the endpoints of one resolver, picked by one policy."""

    def __init__(self, resolver: Resolver, make_core: CoreFactory, policy: str) -> None:
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
        resolver.start(self._on_update)

    # ---- resolver updates -------------------------------------------------------

    def _on_update(self, endpoints: List[Endpoint]) -> None:
        """The full endpoint list: add backends, retire the ones no longer listed."""
        drop = []
        with self._lock:
            if self._closed:
                return
            wanted = list(dict.fromkeys(endpoints))
            for ep in wanted:
                if ep not in self._by_endpoint:
                    core = self._make_core(ep)
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
        self._updated.set()
        os.eventfd_write(self._wake_fd, 1)  # pollers pick up the new set

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

    def _start(self) -> int:
        """Where this call's search starts: the next in turn, or pick_first's current."""
        return next(self._counter) if self._policy == ROUND_ROBIN else self._current

    def _pick(self, start: int, skip: int) -> Any:
        cores = self._cores
        if not cores:
            raise NoBackendError("no endpoint resolved for this target")
        return cores[(start + skip) % len(cores)]

    def _failed(self, core: Any) -> None:
        """A call found ``core`` unusable: pick_first moves on; the resolver is told."""
        cores = self._cores
        if self._policy == PICK_FIRST and cores and core in cores:
            self._current = (cores.index(core) + 1) % len(cores)
        self._resolver.refresh()

    def call(self, path: str, request: Any = None, timeout: Optional[float] = None,
             metadata: Any = None, wait: bool = False, notify: int = 0, flags: int = 0,
             compression: int = -1) -> Any:
        """``_triple.Channel.call`` on a picked backend; a call that ended at once
        without reaching a server is started on the next backend (each tried once)."""
        cores = self._cores
        if not cores:
            return EndedCall(StatusCode.UNAVAILABLE, "no endpoint resolved for this target")
        start = next(self._counter) if self._policy == ROUND_ROBIN else self._current
        core = cores[start % len(cores)]
        result = core.call(path, request, timeout, metadata, wait, notify, flags, compression)
        if not result.unprocessed():
            return result
        for skip in range(1, len(cores)):
            self._failed(core)
            core = cores[(start + skip) % len(cores)]
            result = core.call(path, request, timeout, metadata, wait, notify, flags,
                               compression)
            if not result.unprocessed():
                return result
        self._failed(core)
        return result

    def generic(self, *args: Any, **kwargs: Any) -> Any:
        """``_triple.Channel.generic`` on a picked backend."""
        return self._pick(self._start(), 0).generic(*args, **kwargs)

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
        os.eventfd_write(self._wake_fd, 1)

    def __del__(self) -> None:
        try:
            self._epoll.close()
            os.close(self._wake_fd)
        except (AttributeError, OSError):
            pass

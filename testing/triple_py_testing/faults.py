"""A loopback TCP proxy with faults switched at run time, for failure tests of clients.

    from triple_py.testing import EchoServer
    from triple_py_testing.faults import FaultProxy

    with EchoServer() as server, FaultProxy(server.address) as proxy:
        with triple_py.insecure_channel(proxy.address) as channel:
            proxy.set_fault("stall")        # calls now end with DEADLINE_EXCEEDED
            proxy.clear()                   # and succeed again

Faults: reset, stall, truncate, delay, dribble, close after N bytes (``Fault``).  Only the
standard library and triple_py's target parser are used: the proxy knows nothing of HTTP/2.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import errno
import selectors
import socket
import struct
import threading
import time
from typing import Any, Callable, Deque, Iterator, Optional, Union

from triple_py._target import parse_target

__all__ = ["DIRECTIONS", "FAULT_KINDS", "Fault", "FaultProxy"]

FAULT_KINDS = ("pass", "reset", "stall", "truncate", "delay", "dribble", "close_after")
DIRECTIONS = ("request", "response", "both")
_CHUNK = 64 * 1024  # bytes read from a socket at a time
_HIGH_WATER = 1024 * 1024  # a direction holding this much unsent stops reading its source
_LINGER_RST = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST
# Parameters each fault takes: kind -> (takes nbytes, takes seconds, default direction,
# directions allowed).
_PARAMS = {
    "pass": (False, False, "both", ("both",)),
    "reset": (False, False, "both", ("both",)),
    "stall": (False, False, "both", DIRECTIONS),
    "truncate": (True, False, "response", ("response",)),
    "delay": (False, True, "both", DIRECTIONS),
    "dribble": (False, True, "response", DIRECTIONS),
    "close_after": (True, False, "both", DIRECTIONS),
}
_DEFAULT_SECONDS = {"delay": 0.05, "dribble": 0.001}


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault setting of a ``FaultProxy`` (made by ``FaultProxy.set_fault``).

    ``kind`` is one of ``FAULT_KINDS``:

    ``pass``
        Forward everything, both ways (no fault).
    ``reset``
        Reset every open connection at once (RST, by closing with ``SO_LINGER`` 0), and
        reset each new connection as soon as it is accepted.
    ``stall``
        Stop forwarding (and reading) in ``direction``, keeping the connections open; data
        that arrives waits in the kernel buffers.  Clearing the fault resumes forwarding,
        nothing lost, like a network path that comes back.
    ``truncate``
        Forward ``nbytes`` more bytes of the response direction (target to client) on each
        connection, then close it (FIN both ways).  ``nbytes`` counts from the moment the
        fault is set for open connections, from the accept for new ones.
    ``delay``
        Hold each chunk read in ``direction`` for ``seconds`` before forwarding it (added
        latency; chunks keep their order and are pipelined, so throughput is kept).
    ``dribble``
        Forward ``direction`` one byte at a time, ``seconds`` apart (TCP_NODELAY is on, so
        each byte leaves as a segment of its own when ``seconds`` > 0).
    ``close_after``
        Close the connection (FIN both ways) once ``nbytes`` bytes were forwarded in
        ``direction`` (``both``: in either direction), counted like ``truncate``'s.
    """

    kind: str = "pass"
    nbytes: Optional[int] = None
    seconds: Optional[float] = None
    direction: str = "both"

    def covers(self, direction: str) -> bool:
        """True if the fault acts on the ``direction`` ("request" or "response")."""
        return self.direction in ("both", direction)

    @classmethod
    def make(cls, kind: str, nbytes: Optional[int] = None, seconds: Optional[float] = None,
             direction: Optional[str] = None) -> "Fault":
        """A validated Fault; ValueError (TypeError for wrong types) for bad parameters."""
        if kind not in _PARAMS:
            raise ValueError(f"unknown fault {kind!r}; expected one of {FAULT_KINDS}")
        takes_nbytes, takes_seconds, default_direction, directions = _PARAMS[kind]
        if nbytes is not None and not takes_nbytes:
            raise ValueError(f"the {kind!r} fault takes no nbytes")
        if seconds is not None and not takes_seconds:
            raise ValueError(f"the {kind!r} fault takes no seconds")
        if takes_nbytes:
            if nbytes is None:
                raise ValueError(f"the {kind!r} fault needs nbytes")
            if isinstance(nbytes, bool) or not isinstance(nbytes, int):
                raise TypeError(f"nbytes must be an int, not {type(nbytes).__name__}")
            if nbytes < 0:
                raise ValueError(f"nbytes must be >= 0, not {nbytes}")
        if takes_seconds:
            seconds = _DEFAULT_SECONDS[kind] if seconds is None else seconds
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
                raise TypeError(f"seconds must be a number, not {type(seconds).__name__}")
            if not 0 <= seconds < float("inf"):
                raise ValueError(f"seconds must be finite and >= 0, not {seconds}")
            seconds = float(seconds)
        direction = default_direction if direction is None else direction
        if direction not in directions:
            raise ValueError(f"the {kind!r} fault takes direction in {directions}, "
                             f"not {direction!r}")
        return cls(kind, nbytes, seconds, direction)


class _Pipe:
    """One direction of a proxied connection: bytes read from ``src``, queued with the
    time they may leave, written to ``dst``."""

    __slots__ = ("direction", "src", "dst", "queue", "pending", "eof", "shut", "blocked",
                 "budget", "next_send")

    def __init__(self, direction: str, src: socket.socket, dst: socket.socket) -> None:
        self.direction = direction
        self.src = src
        self.dst = dst
        self.queue: Deque[tuple[float, memoryview]] = collections.deque()
        self.pending = 0  # bytes queued
        self.eof = False  # src sent FIN
        self.shut = False  # FIN forwarded to dst
        self.blocked = False  # the last send to dst would have blocked
        self.budget: Optional[int] = None  # bytes left before close (truncate, close_after)
        self.next_send = 0.0  # dribble: when the next byte may leave


class _Conn:
    """A proxied connection: the accepted client socket and its socket to the target."""

    __slots__ = ("client", "upstream", "connected", "request", "response", "events", "closed")

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.connected = False  # the connect to the target has completed
        self.request = _Pipe("request", client, upstream)
        self.response = _Pipe("response", upstream, client)
        self.events = {client: 0, upstream: 0}  # registered selector events per socket
        self.closed = False

    def pipes(self) -> tuple[_Pipe, _Pipe]:
        return self.request, self.response


def _split_target(target: Union[str, tuple[str, int]]) -> tuple[str, int]:
    if isinstance(target, tuple):
        host, port = target
        return str(host), int(port)
    if not isinstance(target, str):
        raise TypeError(f"target must be 'host:port' or (host, port), not {target!r}")
    host, port = parse_target(target)
    return host, int(port)


class FaultProxy:
    """A TCP proxy on the loopback interface in front of ``target``, with faults switched at
    run time; for failure tests of clients.  Use as a context manager, or call start() and
    stop().

    One thread runs every connection (a ``selectors`` loop); each accepted connection gets
    its own connection to ``target``.  ``set_fault()`` changes what the proxy does to open
    and new connections and returns once the change has taken effect; ``clear()`` goes back
    to plain forwarding.  ``stats()`` gives counters.  See ``Fault`` for the faults.

    ``target`` is ``"host:port"`` (``"[v6]:port"``) or ``(host, port)``; the proxy listens on
    ``host:port`` (an ephemeral port by default) and is meant for loopback tests only.
    """

    def __init__(self, target: Union[str, tuple[str, int]], host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.target = _split_target(target)
        self.host = host
        self._port = port
        self._fault = Fault()
        self._lock = threading.Lock()
        self._commands: list[tuple[Callable[[], None], threading.Event]] = []
        self._counters = dict.fromkeys(
            ("connections", "active", "resets", "closes", "aborts", "target_failures",
             "bytes_to_target", "bytes_to_client"), 0)
        self._conns: set[_Conn] = set()
        self._listener: Optional[socket.socket] = None
        self._selector: Optional[selectors.BaseSelector] = None
        self._wake_r: Optional[socket.socket] = None
        self._wake_w: Optional[socket.socket] = None
        self._thread: Optional[threading.Thread] = None
        self._stopping = False
        self._error: Optional[BaseException] = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "FaultProxy":
        """Bind, listen and start the proxy thread (OSError if the address cannot be bound).
        Idempotent."""
        if self._thread is not None:
            return self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self._port))
            listener.listen(512)
            listener.setblocking(False)
            self._wake_r, self._wake_w = socket.socketpair()
        except BaseException:
            listener.close()
            raise
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._listener = listener
        self._port = listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ, None)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread = threading.Thread(target=self._run, name="triple_py-fault-proxy",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close every connection and the listener, and join the proxy thread.
        Idempotent."""
        thread = self._thread
        if thread is None or self._stopping:
            return
        self._stopping = True
        self._wake()
        thread.join()
        for sock in (self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()

    def __enter__(self) -> "FaultProxy":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port the proxy listens on (the real one once started with port 0)."""
        return self._port

    @property
    def address(self) -> str:
        """"host:port" for clients to connect to (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self._port}"

    # -- faults ---------------------------------------------------------------------------
    @property
    def fault(self) -> Fault:
        """The fault in effect."""
        return self._fault

    def set_fault(self, kind: str = "pass", *, nbytes: Optional[int] = None,
                  seconds: Optional[float] = None, direction: Optional[str] = None,
                  timeout: float = 5.0) -> Fault:
        """Switches to fault ``kind`` (see ``Fault``) and returns once open connections
        are under it: after ``set_fault("reset")`` returns, every connection that was open
        has been reset.

        ``nbytes`` is for ``truncate`` and ``close_after``; ``seconds`` is ``delay``'s
        latency (default 0.05) or ``dribble``'s gap between bytes (default 0.001);
        ``direction`` is "request" (client to target), "response" or "both".
        """
        fault = Fault.make(kind, nbytes, seconds, direction)
        self._call(lambda: self._apply(fault), timeout)
        return fault

    def clear(self, timeout: float = 5.0) -> None:
        """Back to plain forwarding (stalled data starts flowing again)."""
        self.set_fault("pass", timeout=timeout)

    @contextlib.contextmanager
    def faulted(self, kind: str, **params: Any) -> Iterator[Fault]:
        """``with proxy.faulted("stall"):`` sets the fault for the block, then clears it."""
        fault = self.set_fault(kind, **params)
        try:
            yield fault
        finally:
            self.clear()

    def stats(self) -> dict[str, int]:
        """Counters: ``connections`` accepted, ``active`` (open now), ``resets`` (connections
        reset by the ``reset`` fault), ``closes`` (closed by ``truncate``/``close_after``),
        ``aborts`` (reset because one side failed or reset), ``target_failures`` (the
        target could not be reached), ``bytes_to_target`` and ``bytes_to_client``
        (forwarded)."""
        with self._lock:
            return dict(self._counters)

    def __repr__(self) -> str:
        state = "running" if self._thread is not None and not self._stopping else "stopped"
        target = f"{self.target[0]}:{self.target[1]}"
        return f"FaultProxy({self.address} -> {target}, {self._fault.kind}, {state})"

    # -- the proxy thread -----------------------------------------------------------------
    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # the loop has a wake-up pending already, or is gone

    def _call(self, fn: Callable[[], None], timeout: float) -> None:
        """Runs fn on the proxy thread and waits for it."""
        if self._thread is None or self._stopping or not self._thread.is_alive():
            raise RuntimeError("the proxy is not running")
        done = threading.Event()
        with self._lock:
            self._commands.append((fn, done))
        self._wake()
        if not done.wait(timeout):
            raise TimeoutError("the proxy thread did not answer")
        if self._error is not None:
            raise RuntimeError("the proxy thread failed") from self._error

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counters[key] += n

    def _run(self) -> None:
        try:
            while not self._stopping:
                self._step()
        except BaseException as exc:  # a bug here must not hang the callers of _call
            self._error = exc
            raise
        finally:
            for conn in list(self._conns):
                self._close(conn, rst=False)
            with self._lock:
                commands, self._commands = self._commands, []
            for _, done in commands:
                done.set()
            self._selector.close()
            self._listener.close()

    def _step(self) -> None:
        timeout = self._next_timer()
        for key, mask in self._selector.select(timeout):
            sock = key.fileobj
            if sock is self._listener:
                self._accept()
            elif sock is self._wake_r:
                self._drain_wake()
            else:
                conn = key.data
                if conn.closed:
                    continue
                if mask & selectors.EVENT_WRITE:
                    self._on_writable(conn, sock)
                if not conn.closed and mask & selectors.EVENT_READ:
                    self._on_readable(conn, sock)
        with self._lock:
            commands, self._commands = self._commands, []
        for fn, done in commands:
            try:
                fn()
            finally:
                done.set()
        now = time.monotonic()
        for conn in list(self._conns):
            if not conn.closed:
                for pipe in conn.pipes():
                    self._flush(conn, pipe, now)
            if not conn.closed:
                self._update_interest(conn)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _next_timer(self) -> Optional[float]:
        """Seconds until a delayed chunk or a dribbled byte is due (None: no timer)."""
        with self._lock:
            if self._commands:
                return 0.0
        now = time.monotonic()
        due = None
        for conn in self._conns:
            for pipe in conn.pipes():
                if not pipe.queue or pipe.blocked or self._stalled(pipe):
                    continue
                if pipe is conn.request and not conn.connected:
                    continue
                at = pipe.queue[0][0]
                if self._fault.kind == "dribble" and self._fault.covers(pipe.direction):
                    at = max(at, pipe.next_send)
                due = at if due is None else min(due, at)
        return None if due is None else max(0.0, due - now)

    def _stalled(self, pipe: _Pipe) -> bool:
        return self._fault.kind == "stall" and self._fault.covers(pipe.direction)

    def _apply(self, fault: Fault) -> None:
        self._fault = fault
        for conn in list(self._conns):
            if fault.kind == "reset":
                self._count("resets")  # counted before the peers can see it
                self._close(conn, rst=True)
            else:
                self._set_budgets(conn)

    def _set_budgets(self, conn: _Conn) -> None:
        fault = self._fault
        counted = fault.kind in ("truncate", "close_after")
        for pipe in conn.pipes():
            pipe.budget = fault.nbytes if counted and fault.covers(pipe.direction) else None
        if counted and fault.nbytes == 0:
            self._count("closes")
            self._close(conn, rst=False)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # EMFILE and friends: try again on the next readiness
                return
            self._count("connections")
            if self._fault.kind == "reset":
                self._count("resets")
                _close_socket(client, rst=True)
                continue
            client.setblocking(False)
            _nodelay(client)
            try:
                upstream = socket.socket(socket.AF_INET6 if ":" in self.target[0]
                                         else socket.AF_INET, socket.SOCK_STREAM)
            except OSError:
                self._count("target_failures")
                _close_socket(client, rst=True)
                continue
            upstream.setblocking(False)
            _nodelay(upstream)
            conn = _Conn(client, upstream)
            self._conns.add(conn)
            self._count("active")
            err = upstream.connect_ex(self.target)
            if err == 0:
                conn.connected = True
            elif err not in (errno.EINPROGRESS, errno.EAGAIN):
                self._count("target_failures")
                self._close(conn, rst=True)
                continue
            self._set_budgets(conn)
            if not conn.closed:
                self._update_interest(conn)

    def _on_writable(self, conn: _Conn, sock: socket.socket) -> None:
        if sock is conn.upstream and not conn.connected:
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._count("target_failures")
                self._close(conn, rst=True)
                return
            conn.connected = True
        for pipe in conn.pipes():
            if pipe.dst is sock:
                pipe.blocked = False

    def _on_readable(self, conn: _Conn, sock: socket.socket) -> None:
        pipe = conn.request if sock is conn.client else conn.response
        try:
            data = sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # the peer reset: pass the reset on
            self._count("aborts")
            self._close(conn, rst=True)
            return
        now = time.monotonic()
        if not data:
            pipe.eof = True
            return
        release = now
        fault = self._fault
        if fault.kind == "delay" and fault.covers(pipe.direction):
            release = now + fault.seconds
        if pipe.queue and pipe.queue[-1][0] > release:
            release = pipe.queue[-1][0]  # keep the byte order when the delay shrinks
        pipe.queue.append((release, memoryview(data)))
        pipe.pending += len(data)

    def _flush(self, conn: _Conn, pipe: _Pipe, now: float) -> None:
        """Writes what may leave now of one direction; handles budgets and FIN."""
        if conn.closed or (pipe is conn.request and not conn.connected):
            return
        fault = self._fault
        dribble = fault.kind == "dribble" and fault.covers(pipe.direction)
        while pipe.queue and not pipe.blocked and not self._stalled(pipe):
            release, data = pipe.queue[0]
            if release > now or (dribble and pipe.next_send > now):
                return
            limit = 1 if dribble else len(data)
            if pipe.budget is not None:
                limit = min(limit, pipe.budget)
            try:
                sent = pipe.dst.send(data[:limit])
            except (BlockingIOError, InterruptedError):
                pipe.blocked = True
                return
            except OSError:
                self._count("aborts")
                self._close(conn, rst=True)
                return
            if sent == len(data):
                pipe.queue.popleft()
            else:
                pipe.queue[0] = (release, data[sent:])
            pipe.pending -= sent
            self._count("bytes_to_target" if pipe is conn.request else "bytes_to_client", sent)
            if pipe.budget is not None:
                pipe.budget -= sent
                if pipe.budget <= 0:
                    self._count("closes")
                    self._close(conn, rst=False)
                    return
            if dribble:
                pipe.next_send = now + fault.seconds
                if fault.seconds > 0:
                    return
        if pipe.eof and not pipe.queue and not pipe.shut and not self._stalled(pipe):
            pipe.shut = True
            try:
                pipe.dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            if conn.request.shut and conn.response.shut:
                self._close(conn, rst=False)

    def _update_interest(self, conn: _Conn) -> None:
        wanted = {conn.client: 0, conn.upstream: 0}
        for pipe in conn.pipes():
            if pipe is conn.response and not conn.connected:
                continue
            if not pipe.eof and pipe.pending < _HIGH_WATER and not self._stalled(pipe):
                wanted[pipe.src] |= selectors.EVENT_READ
            if pipe.blocked:
                wanted[pipe.dst] |= selectors.EVENT_WRITE
        if not conn.connected:
            wanted[conn.upstream] |= selectors.EVENT_WRITE
        for sock, events in wanted.items():
            old = conn.events[sock]
            if events == old:
                continue
            if old == 0:
                self._selector.register(sock, events, conn)
            elif events == 0:
                self._selector.unregister(sock)
            else:
                self._selector.modify(sock, events, conn)
            conn.events[sock] = events

    def _close(self, conn: _Conn, rst: bool) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        self._count("active", -1)
        for sock in (conn.client, conn.upstream):
            if conn.events[sock]:
                self._selector.unregister(sock)
                conn.events[sock] = 0
            _close_socket(sock, rst)


def _nodelay(sock: socket.socket) -> None:
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


def _close_socket(sock: socket.socket, rst: bool) -> None:
    """Closes sock; with rst, as a reset (SO_LINGER 0) instead of a FIN."""
    if rst:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
        except OSError:
            pass
    sock.close()

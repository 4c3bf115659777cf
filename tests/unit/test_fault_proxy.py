"""triple_py_testing.faults.FaultProxy against a plain TCP echo server (stdlib sockets, no
HTTP/2): pass-through, each fault, switching at run time, counters, validation and cleanup.

Timing assertions are lower bounds (a delay is at least what was asked) or generous upper
bounds (several times the expected value), so a loaded machine does not fail them.
"""
from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from triple_py_testing.faults import FAULT_KINDS, Fault, FaultProxy

WAIT = 5.0  # seconds: how long anything that must happen may take


class EchoTcpServer:
    """A threaded TCP echo server: each connection's bytes are sent back as they come; on
    EOF it half-closes too.  Records, per connection, the size of every recv()."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.recv_sizes: list[list[int]] = []
        self.resets = 0
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._accept_loop, daemon=True, name="echo-tcp")
        self.thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            sizes: list[int] = []
            with self.lock:
                self.recv_sizes.append(sizes)
            t = threading.Thread(target=self._serve, args=(conn, sizes), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket, sizes: list) -> None:
        with conn:
            try:
                while True:
                    data = conn.recv(65536)
                    if not data:
                        conn.shutdown(socket.SHUT_WR)
                        return
                    sizes.append(len(data))
                    conn.sendall(data)
            except OSError:
                with self.lock:
                    self.resets += 1

    def received(self, index: int = -1) -> int:
        """Bytes received on connection `index` (the last one by default)."""
        with self.lock:
            return sum(self.recv_sizes[index]) if self.recv_sizes else 0

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close() does not)
        self.listener.close()
        self.thread.join(WAIT)
        for t in self.threads:
            t.join(WAIT)


@pytest.fixture
def echo():
    server = EchoTcpServer()
    yield server
    server.close()


@pytest.fixture
def proxy(echo):
    with FaultProxy(echo.address) as p:
        yield p


def connect(proxy: FaultProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=WAIT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def end_of_new_connection(proxy: FaultProxy) -> str:
    """Connects and reads until the end: "reset" or "eof" (a reset can come before the
    connect returns)."""
    try:
        sock = connect(proxy)
    except ConnectionResetError:
        return "reset"
    with sock:
        data, how = recv_until_end(sock)
    assert data == b""
    return how


def recv_exactly(sock: socket.socket, n: int, timeout: float = WAIT) -> bytes:
    """n bytes from sock; AssertionError if the connection ends or time runs out first."""
    sock.settimeout(timeout)
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"connection ended after {len(data)} of {n} bytes"
        data += chunk
    return data


def recv_until_end(sock: socket.socket, timeout: float = WAIT) -> tuple[bytes, str]:
    """Everything until the connection ends, and how it ended: "eof" or "reset"."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data, "reset"
        if not chunk:
            return data, "eof"
        data += chunk


def nothing_arrives(sock: socket.socket, seconds: float) -> bool:
    """True if sock stays open and silent for `seconds`."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) is None  # pragma: no cover (recv never returns None)
    except socket.timeout:
        return True
    except OSError:
        return False


def wait_for(predicate, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return predicate()
        time.sleep(0.005)
    return True


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


PAYLOAD = bytes(range(256)) * 4  # 1 KiB, every byte value


# --- pass-through -------------------------------------------------------------------------

def test_address_repr_and_lifecycle(echo):
    proxy = FaultProxy(echo.address)
    assert "stopped" in repr(proxy)
    with proxy:
        assert proxy.port > 0
        assert proxy.address == f"127.0.0.1:{proxy.port}"
        assert proxy.start() is proxy  # idempotent
        assert proxy.fault == Fault()
        assert "running" in repr(proxy) and echo.address in repr(proxy)
    proxy.stop()  # idempotent
    assert "stopped" in repr(proxy)
    with pytest.raises(RuntimeError):
        proxy.set_fault("stall")


def test_target_as_tuple(echo):
    host, port = echo.address.split(":")
    with FaultProxy((host, int(port))) as proxy, connect(proxy) as sock:
        sock.sendall(b"tuple")
        assert recv_exactly(sock, 5) == b"tuple"


@pytest.mark.parametrize("size", [1, 1000, 3 * 1024 * 1024])
def test_pass_through(proxy, size):
    data = os.urandom(size)
    with connect(proxy) as sock:
        sender = threading.Thread(target=sock.sendall, args=(data,))
        sender.start()
        assert recv_exactly(sock, size, timeout=30) == data
        sender.join(WAIT)
    # the counter follows the send(): it may lag the bytes' arrival by a moment
    assert wait_for(lambda: proxy.stats()["bytes_to_client"] == size)
    assert proxy.stats()["bytes_to_target"] == size
    assert proxy.stats()["connections"] == 1


def test_half_close_is_forwarded(proxy):
    with connect(proxy) as sock:
        sock.sendall(b"last words")
        sock.shutdown(socket.SHUT_WR)
        assert recv_until_end(sock) == (b"last words", "eof")
    assert wait_for(lambda: proxy.stats()["active"] == 0)


def test_many_connections_at_once(proxy, echo):
    socks = [connect(proxy) for _ in range(50)]
    try:
        for i, sock in enumerate(socks):
            sock.sendall(b"conn %d" % i)
        for i, sock in enumerate(socks):
            expected = b"conn %d" % i
            assert recv_exactly(sock, len(expected)) == expected
        assert proxy.stats()["active"] == 50
    finally:
        for sock in socks:
            sock.close()
    assert wait_for(lambda: proxy.stats()["active"] == 0)
    assert proxy.stats()["connections"] == 50


def test_client_reset_is_passed_to_the_target(proxy, echo):
    sock = connect(proxy)
    sock.sendall(b"x")
    assert recv_exactly(sock, 1) == b"x"
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    sock.close()
    assert wait_for(lambda: proxy.stats()["aborts"] == 1 and proxy.stats()["active"] == 0)


# --- reset ----------------------------------------------------------------------------------

def test_reset_open_and_new_connections(proxy):
    with connect(proxy) as open_sock:
        open_sock.sendall(b"before")
        assert recv_exactly(open_sock, 6) == b"before"
        proxy.set_fault("reset")
        assert recv_until_end(open_sock) == (b"", "reset")
    for _ in range(3):  # the kernel accepts; the proxy resets
        assert end_of_new_connection(proxy) == "reset"
    stats = proxy.stats()
    assert stats["resets"] == 4 and stats["active"] == 0
    proxy.clear()
    with connect(proxy) as sock:
        sock.sendall(b"after")
        assert recv_exactly(sock, 5) == b"after"


# --- stall ----------------------------------------------------------------------------------

def test_stall_keeps_the_connection_and_loses_nothing(proxy, echo):
    with connect(proxy) as sock:
        sock.sendall(b"one")
        assert recv_exactly(sock, 3) == b"one"
        proxy.set_fault("stall")
        sock.sendall(b"two")
        assert nothing_arrives(sock, 0.3)
        assert echo.received() == 3  # nothing reached the target either
        with connect(proxy) as new_sock:  # new connections stall too
            new_sock.sendall(b"new")
            assert nothing_arrives(new_sock, 0.1)
            proxy.clear()
            assert recv_exactly(new_sock, 3) == b"new"
        assert recv_exactly(sock, 3) == b"two"
    assert proxy.stats()["resets"] == 0


def test_stall_response_direction_only(proxy, echo):
    with connect(proxy) as sock:
        proxy.set_fault("stall", direction="response")
        sock.sendall(b"request")
        assert wait_for(lambda: echo.received() == 7)  # the request went through
        assert nothing_arrives(sock, 0.2)
        proxy.clear()
        assert recv_exactly(sock, 7) == b"request"


# --- truncate and close_after -----------------------------------------------------------------

def test_truncate_counts_from_when_it_is_set(proxy):
    with connect(proxy) as sock:
        sock.sendall(PAYLOAD)
        assert recv_exactly(sock, len(PAYLOAD)) == PAYLOAD
        proxy.set_fault("truncate", nbytes=100)
        sock.sendall(PAYLOAD)
        assert recv_until_end(sock) == (PAYLOAD[:100], "eof")
    assert proxy.stats()["closes"] == 1
    with connect(proxy) as sock:  # a new connection gets its own 100 bytes
        sock.sendall(PAYLOAD)
        assert recv_until_end(sock) == (PAYLOAD[:100], "eof")
    assert proxy.stats()["closes"] == 2


def test_truncate_zero_closes_open_connections_at_once(proxy):
    with connect(proxy) as sock:
        proxy.set_fault("truncate", nbytes=0)
        assert recv_until_end(sock) == (b"", "eof")


def test_close_after_request_bytes(proxy, echo):
    with connect(proxy) as sock:
        proxy.set_fault("close_after", nbytes=10, direction="request")
        sock.sendall(PAYLOAD)
        data, how = recv_until_end(sock)
        assert how == "eof" and PAYLOAD[:10].startswith(data)
    assert wait_for(lambda: echo.received() == 10)


def test_close_after_either_direction(proxy):
    with connect(proxy) as sock:
        proxy.set_fault("close_after", nbytes=5)
        sock.sendall(b"0123456789")
        data, how = recv_until_end(sock)
        assert how == "eof" and b"01234".startswith(data)
    assert proxy.stats()["closes"] == 1


# --- delay and dribble ------------------------------------------------------------------------

def test_delay_both_directions(proxy):
    with connect(proxy) as sock:
        proxy.set_fault("delay", seconds=0.2)
        started = time.monotonic()
        sock.sendall(PAYLOAD)
        assert recv_exactly(sock, len(PAYLOAD)) == PAYLOAD
        assert time.monotonic() - started >= 0.4


def test_delay_one_direction(proxy):
    with connect(proxy) as sock:
        proxy.set_fault("delay", seconds=0.2, direction="response")
        started = time.monotonic()
        sock.sendall(b"x")
        assert recv_exactly(sock, 1) == b"x"
        assert time.monotonic() - started >= 0.2


def test_delay_is_pipelined(proxy):
    """Ten chunks sent 20 ms apart each arrive delayed by 0.5 s, not by 0.5 s each in turn."""
    with connect(proxy) as sock:
        proxy.set_fault("delay", seconds=0.5, direction="request")
        started = time.monotonic()
        for i in range(10):
            sock.sendall(b"%d" % i)
            time.sleep(0.02)
        assert recv_exactly(sock, 10) == b"0123456789"
        elapsed = time.monotonic() - started
        assert 0.5 <= elapsed < 3.0


def test_dribble_one_byte_at_a_time(proxy, echo):
    data = b"dribbled bytes!!"
    with connect(proxy) as sock:
        proxy.set_fault("dribble", seconds=0.02, direction="request")
        started = time.monotonic()
        sock.sendall(data)
        assert recv_exactly(sock, len(data)) == data
        assert time.monotonic() - started >= (len(data) - 1) * 0.02
    sizes = echo.recv_sizes[-1]
    # each byte is its own segment, 20 ms apart: the target reads them one by one (a
    # scheduling hiccup may let it find two queued; most must come alone)
    assert sum(sizes) == len(data) and len(sizes) >= len(data) // 2


def test_dribble_without_gap(proxy):
    with connect(proxy) as sock:
        proxy.set_fault("dribble", seconds=0)
        sock.sendall(PAYLOAD)
        assert recv_exactly(sock, len(PAYLOAD)) == PAYLOAD


# --- switching at run time ------------------------------------------------------------------

def test_faults_switch_on_one_connection(proxy):
    with connect(proxy) as sock:
        for kind, params in [("pass", {}), ("delay", {"seconds": 0.01}), ("dribble", {}),
                             ("truncate", {"nbytes": 1000})]:
            proxy.set_fault(kind, **params)
            sock.sendall(kind.encode())
            assert recv_exactly(sock, len(kind)) == kind.encode()
        proxy.set_fault("stall")
        sock.sendall(b"held")
        assert nothing_arrives(sock, 0.1)
        proxy.clear()
        sock.sendall(b"free")
        assert recv_exactly(sock, 8) == b"heldfree"
    assert proxy.stats()["connections"] == 1 and proxy.stats()["closes"] == 0


def test_faulted_context_manager(proxy):
    with proxy.faulted("delay", seconds=0.01) as fault:
        assert fault == Fault("delay", None, 0.01, "both")
        assert proxy.fault == fault
    assert proxy.fault.kind == "pass"
    with pytest.raises(KeyError):
        with proxy.faulted("stall"):
            raise KeyError("boom")
    assert proxy.fault.kind == "pass"


# --- the target -------------------------------------------------------------------------------

def test_target_down_resets_the_client():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = "127.0.0.1:%d" % s.getsockname()[1]
    with FaultProxy(dead) as proxy:
        assert end_of_new_connection(proxy) == "reset"
        assert wait_for(lambda: proxy.stats()["target_failures"] == 1)
        assert proxy.stats()["active"] == 0


# --- validation -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, params, error", [
    ("explode", {}, ValueError),
    ("truncate", {}, ValueError),
    ("truncate", {"nbytes": -1}, ValueError),
    ("truncate", {"nbytes": "10"}, TypeError),
    ("truncate", {"nbytes": 10, "direction": "request"}, ValueError),
    ("close_after", {"nbytes": 1.5}, TypeError),
    ("close_after", {"nbytes": 1, "direction": "sideways"}, ValueError),
    ("reset", {"seconds": 1}, ValueError),
    ("reset", {"direction": "request"}, ValueError),
    ("stall", {"nbytes": 3}, ValueError),
    ("delay", {"seconds": -0.1}, ValueError),
    ("delay", {"seconds": float("nan")}, ValueError),
    ("delay", {"seconds": float("inf")}, ValueError),
    ("delay", {"seconds": "1"}, TypeError),
    ("dribble", {"nbytes": 1}, ValueError),
])
def test_bad_fault_parameters(proxy, kind, params, error):
    with pytest.raises(error):
        proxy.set_fault(kind, **params)
    assert proxy.fault.kind == "pass"


def test_every_kind_is_accepted_with_defaults(proxy):
    needs_bytes = {"truncate": 10, "close_after": 10}
    for kind in FAULT_KINDS:
        params = {"nbytes": needs_bytes[kind]} if kind in needs_bytes else {}
        assert proxy.set_fault(kind, **params).kind == kind
    proxy.clear()


def test_bad_target():
    with pytest.raises(ValueError):
        FaultProxy("127.0.0.1:http")
    with pytest.raises(TypeError):
        FaultProxy(8080)


# --- cleanup ----------------------------------------------------------------------------------

def test_stop_closes_everything(echo):
    threads = threading.active_count()
    fds = fd_count()
    proxy = FaultProxy(echo.address).start()
    socks = [connect(proxy) for _ in range(5)]
    for sock in socks:
        sock.sendall(b"x")
        assert recv_exactly(sock, 1) == b"x"
    proxy.set_fault("stall")
    proxy.stop()
    for sock in socks:
        assert recv_until_end(sock)[0] == b""
        sock.close()
    assert not any(t.name == "triple_py-fault-proxy" for t in threading.enumerate())
    # the echo server's connection threads end once they see the proxy's close
    assert wait_for(lambda: threading.active_count() == threads)
    assert wait_for(lambda: fd_count() <= fds)


def test_no_fds_left_after_many_resets(proxy):
    with connect(proxy) as sock:  # warm up
        sock.sendall(b"w")
        recv_exactly(sock, 1)
    assert wait_for(lambda: proxy.stats()["active"] == 0)
    fds = fd_count()
    proxy.set_fault("reset")
    for _ in range(200):
        assert end_of_new_connection(proxy) == "reset"
    proxy.clear()
    assert wait_for(lambda: proxy.stats()["active"] == 0)
    assert fd_count() <= fds
    assert proxy.stats()["resets"] == 200

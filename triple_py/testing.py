"""Test helpers: the embedded echo server, started and stopped in-process.

    from triple_py.testing import EchoServer
    with EchoServer() as server:                 # 127.0.0.1, an ephemeral port
        with triple_py.insecure_channel(server.address) as channel:
            ...

The server is ``benchmark.BenchmarkService`` (UnaryCall echoes the request message,
StreamCall echoes each message until the client half-closes) on the gRPC wire and the
Triple unary wire, over h2c. It honours the control metadata of tests/peers/README.md
(``x-echo-*``, ``x-status``, ``x-message``, ``x-message-bin``, ``x-delay-ms``,
``x-response-size``) plus ``x-reset: 1`` (RST_STREAM CANCEL instead of an answer). It runs
on C threads of its own (csrc/server/) and never takes the GIL, so a client in the
same process measures the client, not a Python server.

A loopback proxy with switchable faults for failure tests lives in the repository's test
distribution (``triple_py_testing.faults.FaultProxy``, testing/), not in this package.
"""
from __future__ import annotations

from typing import Optional

from . import _triple

__all__ = ["EchoServer"]


class EchoServer:
    """The embedded echo server. Use as a context manager, or call start() and stop().

    ``port=0`` binds an ephemeral port; ``threads`` is the number of I/O threads.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, threads: int = 1) -> None:
        self.host = host
        self._server: Optional[_triple.EchoServer] = _triple.EchoServer(
            host=host, port=port, threads=threads)
        self._started = False

    def start(self) -> "EchoServer":
        """Bind and start serving (OSError if the address cannot be bound). Idempotent."""
        if not self._started:
            self._server.start()
            self._started = True
        return self

    def stop(self) -> None:
        """Close every connection and join the server threads. Idempotent."""
        if self._server is not None:
            self._server.stop()

    @property
    def port(self) -> int:
        """The bound port (the real one when started with port 0); 0 before start()."""
        return self._server.port

    @property
    def address(self) -> str:
        """"host:port" to connect to (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def stats(self) -> dict[str, int]:
        """The server's counters: connects, calls, read/write syscalls, bytes, allocations."""
        return self._server.stats()

    def __enter__(self) -> "EchoServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._started else "stopped"
        return f"EchoServer({self.address}, {state})"

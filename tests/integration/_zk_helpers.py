"""Shared pieces of the ZooKeeper discovery tests (test_zookeeper_*.py).

- ``zk``: a module-scoped fixture, a real standalone ZooKeeper (Debian's package) on a free
  127.0.0.1 port in a temporary directory (the JVM takes a second or more to start);
- ``Updates``: collects what a resolver hands to on_update, and waits for a wanted list;
- ``server_bytes_received(port)``: how many bytes each established connection to a local
  server has received (from ``ss``), to see which providers get traffic without asking them.
"""
from __future__ import annotations

import queue
import re
import subprocess
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from triple_py.registry.zookeeper_server import LocalZookeeper, ZookeeperUnavailable

UPDATE_TIMEOUT = 15.0  # seconds: a change must reach on_update within this


@pytest.fixture(scope="module")
def zk() -> Iterator[LocalZookeeper]:
    """A started LocalZookeeper for the test module (tick 200 ms: sessions can expire
    within a second); fails the tests (never skips) when ZooKeeper is missing:
    tools/bootstrap.sh installs it.  Import it into a test module to use it."""
    server = LocalZookeeper(tick_ms=200, start_timeout=60.0)
    try:
        server.start()
    except ZookeeperUnavailable as exc:
        pytest.fail(f"ZooKeeper did not start: {exc}")
    try:
        yield server
    finally:
        server.stop()


class Updates:
    """The lists a resolver delivered, in order; use ``updates.deliver`` as on_update."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[list]" = queue.Queue()
        self.history: List[list] = []

    def deliver(self, endpoints: list) -> None:
        self._queue.put(list(endpoints))

    def wait_for(self, wanted: Callable[[list], bool], timeout: float = UPDATE_TIMEOUT) -> list:
        """The first delivered list (from now on) for which ``wanted`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                got = self._queue.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                last = self.history[-1] if self.history else None
                raise AssertionError(f"no wanted update within {timeout} s; last: {last}")
            self.history.append(got)
            if wanted(got):
                return got

    def wait_addresses(self, addresses: List[Tuple[str, int]],
                       timeout: float = UPDATE_TIMEOUT) -> list:
        """The first list whose (host, port) pairs are exactly ``addresses``."""
        want = sorted(addresses)
        return self.wait_for(lambda eps: sorted((e.host, e.port) for e in eps) == want,
                             timeout)

    def quiet(self, seconds: float) -> Optional[list]:
        """A list delivered within ``seconds``, or None."""
        try:
            got = self._queue.get(timeout=seconds)
        except queue.Empty:
            return None
        self.history.append(got)
        return got


_SOCKET = re.compile(r"\S+\s+\S+\s+(\S+)\s+(\S+)")  # Recv-Q Send-Q Local Peer
_RECEIVED = re.compile(r"bytes_received:(\d+)")


def server_bytes_received(port: int) -> Dict[str, int]:
    """{client address: bytes received} for each established TCP connection to the local
    server on ``port`` (``ss -tin``: tcp_info's bytes_received, so the server is not asked)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True, timeout=10).stdout
    result: Dict[str, int] = {}
    peer = None
    for line in out.splitlines():
        head = _SOCKET.match(line)
        if head and not line.startswith((" ", "\t")):
            peer = head.group(2)
            continue
        got = _RECEIVED.search(line)
        if peer is not None and got:
            result[peer] = int(got.group(1))
            peer = None
        elif peer is not None and "bytes_" in line:
            result[peer] = 0
            peer = None
    return result


def bytes_since(port: int, before: Dict[str, int]) -> int:
    """Bytes the server on ``port`` received since ``before`` (a server_bytes_received
    reading): growth on connections seen then, plus all of connections opened since.
    Connections closed meanwhile are not counted: measure while the client is open."""
    now = server_bytes_received(port)
    return sum(n - before.get(peer, 0) for peer, n in now.items())

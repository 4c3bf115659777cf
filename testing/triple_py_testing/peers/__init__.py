"""Starting and stopping the peer servers that tests, benchmarks and the interop grid run.

A peer is a real gRPC server in a subprocess that binds 127.0.0.1 on a free port, prints
``LISTENING <port>`` once it accepts connections, and serves until SIGTERM or EOF on its
stdin (tests/peers/README.md). One implementation of that convention lives here:

- ``process``: start a command, wait for ``LISTENING``, stop it (SIGTERM, then SIGKILL),
  keep its stderr log only when it did not exit cleanly (``start_process``, ``PeerProcess``).
- ``builds``: the repository root, the Python peers' interpreter (``peer_python``:
  $TRIPLE_PY_PEER_PYTHON or this one), the cross-process build lock, the Go echo peer's
  build and the Node peers' npm install, shared by both catalogues below.
- ``benchmark_peers``: the BenchmarkService echo peers of the tests and benchmarks
  (``start_peer("go")`` ...).
- ``triple_py_testing.interop.peers``: the grpc.testing.TestService peers of the interop grid.

The peers' sources live in the repository (tests/peers/, tests/interop/peers/), so these
modules work from a checkout (``pip install -e testing``), and are not in triple_py's wheel.
"""
from __future__ import annotations

from .benchmark_peers import PEER_NAMES, Peer, start_peer
from .process import PeerError, PeerProcess, RunningPeer, start_process

__all__ = ["PEER_NAMES", "Peer", "PeerError", "PeerProcess", "RunningPeer", "start_peer",
           "start_process"]

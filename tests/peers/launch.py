"""Starting the test peers: the one launcher (triple_py_testing.peers, in testing/), under the
name the tests import.

    from peers.launch import start_peer
    with start_peer("go") as peer:   # "grpcio", "go", "rogue", "connect", "dubbo-js", "embedded"
        channel = make_channel(peer.address)  # "127.0.0.1:PORT"

See testing/triple_py_testing/peers/benchmark_peers.py for the peers, their options and their
logs.

Against an installed wheel (TRIPLE_PY_INSTALLED=1, tests/conftest.py) only the "embedded"
peer (``python -m triple_py.server``, from the wheel) starts; every other peer is built from
the checkout's sources with the checkout's toolchain, so asking for one skips the test.
"""
from __future__ import annotations

import os

from triple_py_testing.peers import benchmark_peers
from triple_py_testing.peers.benchmark_peers import PEER_NAMES, Peer, peer_command
from triple_py_testing.peers.process import PeerError

__all__ = ["PEER_NAMES", "Peer", "PeerError", "peer_command", "start_peer"]

#: The peers that run from an installed wheel (TRIPLE_PY_INSTALLED=1).
INSTALLED_PEERS = ("embedded",)


def start_peer(name: str, **options: object) -> Peer:
    """triple_py_testing.peers.start_peer; against an installed wheel, a peer other than
    INSTALLED_PEERS skips the calling test (pytest.skip) instead."""
    if os.environ.get("TRIPLE_PY_INSTALLED") == "1" and name not in INSTALLED_PEERS:
        import pytest
        pytest.skip(f"needs the checkout: the {name} peer (tests/peers/)")
    return benchmark_peers.start_peer(name, **options)

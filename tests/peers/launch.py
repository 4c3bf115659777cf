"""Starting the test peers: the one launcher (triple_py_testing.peers, in testing/), under the
name the tests import.

    from peers.launch import start_peer
    with start_peer("go") as peer:   # "grpcio", "go", "rogue", "connect", "dubbo-js", "embedded"
        channel = make_channel(peer.address)  # "127.0.0.1:PORT"

See testing/triple_py_testing/peers/benchmark_peers.py for the peers, their options and their logs.
"""
from triple_py_testing.peers.benchmark_peers import PEER_NAMES, Peer, peer_command, start_peer
from triple_py_testing.peers.process import PeerError

__all__ = ["PEER_NAMES", "Peer", "PeerError", "peer_command", "start_peer"]

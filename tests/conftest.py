"""Shared pytest fixtures. Peer logic lives in tests/peers/launch.py."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # makes `peers` importable
from peers.launch import Peer, start_peer  # noqa: E402


@pytest.fixture(scope="session")
def grpcio_server():
    """The grpcio BenchmarkService peer, for the whole session."""
    with start_peer("grpcio") as peer:
        yield peer


@pytest.fixture(scope="session")
def go_server():
    """The grpc-go BenchmarkService peer (built into .build/peers/ on first use)."""
    with start_peer("go") as peer:
        yield peer


@pytest.fixture(scope="session")
def rogue_server():
    """The misbehaving HTTP/2 peer (tests/peers/h2_rogue_server.py)."""
    with start_peer("rogue") as peer:
        yield peer


@pytest.fixture(scope="session")
def connect_server():
    """The Connect (connect-node) BenchmarkService peer: Connect, gRPC and gRPC-Web protocols
    on one h2c port (npm packages installed into tests/peers/node/ on first use)."""
    with start_peer("connect") as peer:
        yield peer


@pytest.fixture(params=["grpcio", "go"])
def peer(request) -> Peer:
    """Each real BenchmarkService peer in turn."""
    return request.getfixturevalue(f"{request.param}_server")

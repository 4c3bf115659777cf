"""Shared pytest fixtures. Peer logic lives in triple_py/peers/ (tests/peers/launch.py re-exports it)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # makes `peers` importable
from peers.launch import Peer, start_peer  # noqa: E402

import os  # noqa: E402

# triple_py's pytest plugin (triple_server, triple_load) is opt-in, as for any user: no
# pytest11 entry point loads it into every run.
pytest_plugins = ["triple_py.pytest_plugin"]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "rss: asserts a bound on process memory (RSS); not meaningful under ASan")


def pytest_collection_modifyitems(config, items):
    """Under tools/test_asan.sh, memory-bound tests are skipped: ASan's quarantine keeps
    freed memory resident, so RSS says nothing there.  The plain run asserts them."""
    if os.environ.get("TRIPLE_PY_ASAN") != "1":
        return
    skip = pytest.mark.skip(reason="RSS bounds are not meaningful under AddressSanitizer "
                                   "(checked by the plain run)")
    for item in items:
        if "rss" in item.keywords:
            item.add_marker(skip)


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


@pytest.fixture(scope="session")
def dubbo_js_server():
    """Apache Dubbo's JavaScript server (@apachedubbo/dubbo-node) serving BenchmarkService on
    its Triple wire and gRPC on one h2c port (tests/peers/node/dubbo_server.mjs)."""
    with start_peer("dubbo-js") as peer:
        yield peer


@pytest.fixture(params=["grpcio", "go"])
def peer(request) -> Peer:
    """Each real BenchmarkService peer in turn."""
    return request.getfixturevalue(f"{request.param}_server")

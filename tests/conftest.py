"""Shared pytest fixtures, and which tests need the checkout.

The peers' launcher lives in the test tools' distribution (testing/: triple_py_testing.peers;
tests/peers/launch.py re-exports it).

Against an installed wheel (``TRIPLE_PY_INSTALLED=1``, e.g. ``make test-wheel``: the tests
copied to a directory of their own, run by the interpreter that has the wheel) the part of
the suite that needs a checkout is skipped, each with its reason, and the rest runs:

- a test, class or module marked ``@pytest.mark.checkout("reason")`` (a module:
  ``pytestmark = pytest.mark.checkout("reason")``) needs the repository's files (the peers
  built from tests/peers, notebooks/, benchmarks/, tools/, csrc/, the Makefile, a .git);
- a test that uses a peer fixture (PEER_FIXTURES) needs the checkout's peers;
- a test that starts a peer other than "embedded" (tests/peers/launch.py skips it).

The test tools (testing/: triple_py_testing, pure Python: the fault proxy, the PKI, the
peers' launcher; tests and their child processes import them) must be installed next to
the wheel, as grpcio's tests need grpcio-testing: ``pip wheel --no-deps --no-build-isolation
testing`` makes their wheel. The repository root the launcher reads data files from
($TRIPLE_PY_ROOT: tests/peers/proto/) defaults to the directory holding the copied tests/.

Every other test must pass against the wheel; the run fails at once when triple_py is
imported from a checkout instead of an installed package, or without the test tools
(``check_installed``).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # makes `peers` importable

# TRIPLE_PY_INSTALLED=1 (tools/test_wheel.sh): the suite's no-checkout part runs against an
# installed wheel, where the checkout's peers cannot run; the tests that use a peer fixture
# are skipped (PEER_FIXTURES).
INSTALLED = os.environ.get("TRIPLE_PY_INSTALLED") == "1"
if INSTALLED:  # tests/peers/proto/ and the peers' logs are under the copied tests/
    os.environ.setdefault("TRIPLE_PY_ROOT", str(Path(__file__).resolve().parents[1]))
PEER_FIXTURES = frozenset({"grpcio_server", "go_server", "rogue_server", "connect_server",
                           "dubbo_js_server", "peer"})
try:
    from peers.launch import Peer, start_peer  # noqa: E402
except ImportError:
    if not INSTALLED:
        raise

# triple_py's pytest plugin (triple_server, triple_load) is opt-in, as for any user: no
# pytest11 entry point loads it into every run.
pytest_plugins = ["triple_py.pytest_plugin"]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "rss: asserts a bound on process memory (RSS); not meaningful under ASan")
    config.addinivalue_line(
        "markers", "checkout(reason): needs the repository checkout; skipped when "
                   "TRIPLE_PY_INSTALLED=1 (tests against an installed wheel)")
    if INSTALLED:
        check_installed()


def check_installed() -> None:
    """Fails the run (pytest.UsageError) when triple_py is imported from a source checkout
    (a directory next to setup.py or csrc/, or inside a git work tree), not an installed
    package: the run would test the checkout, not the wheel; or when the test tools
    (triple_py_testing) are not installed."""
    import triple_py
    package = Path(triple_py.__file__).resolve().parent
    project = package.parent
    if (project / "setup.py").exists() or (project / "csrc").is_dir() or any(
            (d / ".git").exists() for d in package.parents):
        raise pytest.UsageError(f"TRIPLE_PY_INSTALLED=1 but triple_py is imported from a "
                                f"checkout: {package}")
    try:
        import triple_py_testing  # noqa: F401
    except ImportError:
        raise pytest.UsageError(
            "TRIPLE_PY_INSTALLED=1 needs the test tools installed next to the wheel: "
            "`pip wheel --no-deps --no-build-isolation testing` in the checkout makes "
            "triple_py_testing-*.whl; `pip install --no-index --no-deps` it") from None


def pytest_collection_modifyitems(config, items):
    """Under tools/test_asan.sh, memory-bound tests are skipped: ASan's quarantine keeps
    freed memory resident, so RSS says nothing there.  The plain run asserts them.
    Against an installed wheel (TRIPLE_PY_INSTALLED=1) the tests needing a peer are skipped."""
    if INSTALLED:
        no_peers = pytest.mark.skip(reason="needs the checkout's test peers "
                                           "(TRIPLE_PY_INSTALLED=1: an installed wheel)")
        for item in items:
            checkout = item.get_closest_marker("checkout")
            if checkout is not None:
                why = checkout.args[0] if checkout.args else "the repository's files"
                item.add_marker(pytest.mark.skip(reason=f"needs the checkout: {why}"))
            elif PEER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
                item.add_marker(no_peers)
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

"""Micro-benchmarks of the hot path (pytest-benchmark); not part of `make test`.

    make microbench          # -> results/microbench.json
    python -m triple_py.benchstat -col /impl results/microbench.json     # C vs Python...

Parametrized benchmarks are named ``test_x/param=value`` by benchstat, so ``-col /param``
puts the variants side by side (``/method`` for pooled vs copy, ``/client`` for
triple_py vs grpcio).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _core

pytest.importorskip("pytest_benchmark")


@pytest.fixture(scope="session")
def core():
    """The ctypes view of the C core (benchmarks/micro/_core.py)."""
    try:
        import _core
    except AttributeError as exc:  # a symbol the extension does not export
        pytest.skip(f"C core symbol not exported by triple_py._triple: {exc}")
    return _core


@pytest.fixture
def pool(core):
    """A fresh tri_pool + tri_gzip_pool (freed after the test)."""
    p = core.Pool()
    yield p
    p.close()


@pytest.fixture(scope="session")
def echo_server():
    """The embedded C echo server (never takes the GIL)."""
    from triple_py.testing import EchoServer

    with EchoServer() as server:
        yield server

"""pytest fixtures for code that talks gRPC: an embedded echo server and bounded load runs.

Opt-in (installing triple_py does not load it into every pytest run): ``pytest -p
triple_py.pytest_plugin``, or in the project's top conftest.py
``pytest_plugins = ["triple_py.pytest_plugin"]``; then::

    import triple_py

    def test_echo(triple_server):
        with triple_py.insecure_channel(triple_server.address) as ch:
            assert ch.unary_unary("/benchmark.BenchmarkService/UnaryCall")(b"") == b""

    def test_no_errors_under_load(triple_load):
        r = triple_load(payload_size=1024, concurrency=16, duration=0.5)
        assert r.errors == 0 and r.p99 < 50e6           # ns

``triple_server`` is one :class:`triple_py.testing.EchoServer` (benchmark.BenchmarkService on
127.0.0.1, an ephemeral port) for the whole session. ``triple_load`` is a callable taking
:func:`triple_py.bench.run`'s arguments that runs a load and returns the
:class:`~triple_py.bench.BenchResult`; without ``target`` the load goes to ``triple_server``.
"""
from __future__ import annotations

import json
from typing import Any, Iterator, List, Optional

import pytest

__all__ = ["triple_server", "triple_load", "TripleLoad"]

_MAX_SECONDS_INI = "triple_load_max_seconds"


def pytest_addoption(parser: Any) -> None:
    parser.addini(_MAX_SECONDS_INI, "triple_load: the longest run a test may ask for, in "
                  "seconds of warm-up plus measurement (default 60)", default="60")


@pytest.fixture(scope="session")
def triple_server() -> Iterator[Any]:
    """An embedded echo server (triple_py.testing.EchoServer) for the test session:
    ``.address`` ("127.0.0.1:<port>"), ``.port``, ``.stats()``. It answers
    /benchmark.BenchmarkService/UnaryCall and StreamCall by echoing, on the gRPC and the
    Triple wires, and honours the control metadata (``x-status``, ``x-delay-ms``...)."""
    from triple_py.testing import EchoServer

    with EchoServer() as server:
        yield server


class TripleLoad:
    """The ``triple_load`` fixture's value: call it to run one bounded load.

    ``triple_load(target=None, *, duration=1.0, warmup=0.2, check=True, **run_args)``
    runs :func:`triple_py.bench.run` (``mode`` "fastpath" by default; ``payload_size``,
    ``concurrency``, ``connections``, ``rate``, ``count``, ``stream_messages``, ``method``...
    as there) against ``target`` ("host:port") or, without one, the session's
    ``triple_server``, and returns the BenchResult (``qps``, ``p50``..``p99_99`` in ns,
    ``errors``, ``status_codes``, ``write_syscalls_per_call``...). Runs are bounded:
    ``duration`` (or ``count`` calls with ``duration=0``) and ``warmup`` are required to be
    finite and together at most the ``triple_load_max_seconds`` ini value (60 s).
    ``check`` raises :class:`triple_py.bench.RunFailed` when every call failed or none
    completed. Each result is kept in ``.results`` and added to the test's
    ``user_properties`` (so ``--junitxml`` reports carry it).
    """

    def __init__(self, request: Any, max_seconds: float) -> None:
        self._request = request
        self.max_seconds = max_seconds
        self.results: List[Any] = []

    def __call__(self, target: Optional[str] = None, *, duration: float = 1.0,
                 warmup: float = 0.2, check: bool = True, **run_args: Any) -> Any:
        from triple_py.bench import ConfigError, check_result, run

        count = int(run_args.get("count") or 0)
        if duration < 0 or warmup < 0 or (duration == 0 and count <= 0):
            raise ConfigError("triple_load needs a bound: duration > 0 seconds, or duration=0 "
                              "with count > 0 calls")
        if duration + warmup > self.max_seconds:
            raise ConfigError(f"triple_load: {duration + warmup:g} s of load is over the "
                              f"{self.max_seconds:g} s allowed ({_MAX_SECONDS_INI} ini option)")
        if target is None:
            target = self._request.getfixturevalue("triple_server").address
        result = run(target, duration=duration, warmup=warmup, **run_args)
        self.results.append(result)
        self._request.node.user_properties.append(("triple_load", json.dumps({
            "target": result.target, "mode": result.mode, "payload": result.payload_size,
            "concurrency": result.concurrency, "calls": result.calls,
            "errors": result.errors, "qps": round(result.qps, 1),
            "p50_ms": None if result.p50 is None else result.p50 / 1e6,
            "p99_ms": None if result.p99 is None else result.p99 / 1e6})))
        if check:
            check_result(result)
        return result


@pytest.fixture
def triple_load(request: Any) -> TripleLoad:
    """A callable running a bounded load and returning its BenchResult (see TripleLoad)."""
    try:
        max_seconds = float(request.config.getini(_MAX_SECONDS_INI))
    except (TypeError, ValueError):
        raise pytest.UsageError(f"{_MAX_SECONDS_INI} must be a number of seconds") from None
    return TripleLoad(request, max_seconds)

"""The bench harness and the C load generator on every kind of target (issue 25):
ipv4: pools spread over their servers, unix: sockets, and registry schemes resolved
once through their registered resolver."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent import futures

import grpc
import pytest

from _helpers import echo_servers
from triple_py._resolver import Endpoint, register_scheme
from triple_py.bench.errors import ConfigError, TargetError
from triple_py.bench.arms.loadgen import run_c_load
from triple_py.bench.spec.target import target_endpoints

LOAD = dict(arm="fastpath", mode="fastpath", method="/benchmark.BenchmarkService/UnaryCall",
            payload_size=64, concurrency=4, duration=0.3, warmup=0.0)


@pytest.fixture(scope="module")
def pool():
    with echo_servers(2) as servers:
        yield servers


def test_c_load_spreads_connections_over_a_pool(pool):
    target = "ipv4:" + ",".join(f"127.0.0.1:{s.port}" for s in pool)
    before = [s.stats()["calls"] for s in pool]
    result = run_c_load(target=target, connections=2, **LOAD)
    got = [s.stats()["calls"] - b for s, b in zip(pool, before)]
    assert result.errors == 0 and result.calls > 0
    assert all(n > 0 for n in got), got  # connection i -> server i % 2
    assert result.target == target


def test_fewer_connections_than_servers_is_a_config_error(pool):
    target = "ipv4:" + ",".join(f"127.0.0.1:{s.port}" for s in pool)
    with pytest.raises(ConfigError, match="fewer connections than endpoints"):
        run_c_load(target=target, connections=1, **LOAD)


def test_c_load_over_a_unix_socket():
    directory = tempfile.mkdtemp(prefix="tri25-bench-")
    path = os.path.join(directory, "s.sock")
    server = grpc.server(futures.ThreadPoolExecutor(4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "benchmark.BenchmarkService",
        {"UnaryCall": grpc.unary_unary_rpc_method_handler(lambda r, c: r)}),))
    server.add_insecure_port("unix:" + path)
    server.start()
    try:
        result = run_c_load(target="unix:" + path, connections=1, **LOAD)
        assert result.errors == 0 and result.calls > 0
    finally:
        server.stop(0)
        shutil.rmtree(directory, ignore_errors=True)


class OnceResolver:
    def __init__(self, endpoints):
        self.endpoints = endpoints
        self.closed = False

    def start(self, on_update):
        on_update(list(self.endpoints))

    def refresh(self):
        pass

    def close(self):
        self.closed = True


def test_a_registry_target_is_resolved_once(pool):
    made = []

    def factory(parsed):
        assert parsed.endpoint == "benchmark.BenchmarkService"
        made.append(OnceResolver([Endpoint("127.0.0.1", s.port) for s in pool]))
        return made[-1]
    register_scheme("test-registry-bench", factory)
    target = "test-registry-bench://127.0.0.1:2181/benchmark.BenchmarkService"
    assert target_endpoints(target) == [Endpoint("127.0.0.1", s.port) for s in pool]
    assert made[-1].closed
    result = run_c_load(target=target, connections=2, **LOAD)
    assert result.errors == 0 and result.calls > 0


def test_a_registry_without_providers_is_a_target_error():
    register_scheme("test-registry-empty", lambda parsed: OnceResolver([]))
    with pytest.raises(TargetError, match="no endpoint"):
        target_endpoints("test-registry-empty://zk/iface", wait=0.2)


@pytest.mark.parametrize("mode", ["fastpath", "triple-py-sync", "grpcio-sync"])
def test_cli_run_on_a_pool(pool, mode):
    target = "ipv4:" + ",".join(f"127.0.0.1:{s.port}" for s in pool)
    before = [s.stats()["calls"] for s in pool]
    run = subprocess.run([sys.executable, "-m", "triple_py.bench", "run", "--target", target,
                          "--mode", mode, "-z", "0.5s", "--connections", "2",
                          "--concurrency", "2", "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert all(s.stats()["calls"] > b for s, b in zip(pool, before))

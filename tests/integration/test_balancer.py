"""Several backends behind one channel (issue 25): ipv4:/ipv6:/unix:/dns: targets,
pick_first and round_robin, a dead backend skipped, connectivity aggregated, and endpoint
lists that change under load without failing a call."""
from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import tempfile
import threading
import time
import weakref
from concurrent import futures
from typing import Callable, List

import grpc
import pytest

import triple_py
import triple_py.aio
from _helpers import TIMEOUT, calls_of, closed_port, echo_servers, unary, wait_all_ready
from triple_py._resolver import DnsResolver, Endpoint, register_scheme
from triple_py.testing import EchoServer

ROUND_ROBIN = [("grpc.lb_policy_name", "round_robin")]


@pytest.fixture(scope="module")
def servers():
    with echo_servers(3) as started:
        yield started


def spread(servers, target: str, options, n: int = 30, ready: int = 0) -> List[int]:
    """Makes n calls on a new channel (after ``ready`` backends are READY); the calls
    each server got."""
    before = calls_of(servers)
    with triple_py.insecure_channel(target, options=options) as channel:
        if ready:
            triple_py.channel_ready_future(channel).result(timeout=TIMEOUT)
            wait_all_ready(channel._core, ready)
        call = unary(channel)
        for _ in range(n):
            assert call(b"x", timeout=TIMEOUT) == b"x"
    return [after - b for after, b in zip(calls_of(servers), before)]


def ipv4_list(servers) -> str:
    return "ipv4:" + ",".join(f"127.0.0.1:{s.port}" for s in servers)


def test_round_robin_spreads_calls_evenly(servers):
    assert spread(servers, ipv4_list(servers), ROUND_ROBIN, ready=3) == [10, 10, 10]


def test_round_robin_from_the_service_config(servers):
    config = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})
    assert spread(servers, ipv4_list(servers), [("grpc.service_config", config)],
                  ready=3) == [10, 10, 10]


def test_pick_first_is_the_default_and_sticks_to_one_backend(servers):
    assert spread(servers, ipv4_list(servers), None) == [30, 0, 0]


def test_a_dead_first_address_does_not_fail_calls(servers):
    target = f"ipv4:127.0.0.1:{closed_port()},127.0.0.1:{servers[1].port}"
    for options in (None, ROUND_ROBIN):
        assert spread(servers, target, options, 6) == [0, 6, 0]


def test_round_robin_skips_a_backend_that_stops():
    a, b = EchoServer().start(), EchoServer().start()
    try:
        with triple_py.insecure_channel(f"ipv4:127.0.0.1:{a.port},127.0.0.1:{b.port}",
                                        options=ROUND_ROBIN) as channel:
            call = unary(channel)
            for _ in range(4):
                call(b"x", timeout=TIMEOUT)
            b.stop()
            for _ in range(20):  # every one succeeds: b's calls move to a
                assert call(b"x", timeout=TIMEOUT) == b"x"
            assert channel._core.state() == 2  # READY: a is
    finally:
        a.stop()
        b.stop()


def test_ipv6_list(servers):
    server = EchoServer("::1").start()
    try:
        with triple_py.insecure_channel(f"ipv6:[::1]:{server.port}") as channel:
            assert unary(channel)(b"6", timeout=TIMEOUT) == b"6"
        assert server.stats()["calls"] == 1
    finally:
        server.stop()


def test_dns_name_with_a_dead_aaaa_address_round_robin(servers):
    """A name whose first address (::1) has no server: round robin over its addresses
    skips it; every call lands on 127.0.0.1."""
    port = servers[2].port
    register_scheme("test-dual", lambda parsed: DnsResolver(
        parsed.__class__(parsed.target, "dns", "", parsed.path),
        lambda host, p: ["::1", "127.0.0.1"]))
    assert spread(servers, f"test-dual:///dual.test:{port}", ROUND_ROBIN, 8) == [0, 0, 8]


@pytest.fixture(scope="module")
def unix_server():
    """A grpcio server on a unix socket path and an abstract name (echoes UnaryCall)."""
    directory = tempfile.mkdtemp(prefix="tri25-")
    path = os.path.join(directory, "echo.sock")
    name = f"triple-py-test-{os.getpid()}"
    server = grpc.server(futures.ThreadPoolExecutor(4))
    seen = []

    def echo(request, context):
        seen.append(dict(context.invocation_metadata()).get("user-agent", ""))
        return request
    handler = grpc.method_handlers_generic_handler(
        "benchmark.BenchmarkService", {"UnaryCall": grpc.unary_unary_rpc_method_handler(echo)})
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port("unix:" + path)
    server.add_insecure_port("unix-abstract:" + name)
    server.start()
    yield path, name, seen
    server.stop(0)
    shutil.rmtree(directory, ignore_errors=True)  # grpcio removes the socket itself


def test_unix_socket_targets(unix_server):
    path, name, seen = unix_server
    relative = os.path.relpath(path)
    for target in ("unix:" + path, "unix://" + path, "unix:" + relative,
                   "unix-abstract:" + name):
        with triple_py.insecure_channel(target) as channel:
            assert unary(channel)(b"u", timeout=TIMEOUT) == b"u", target
    assert len(seen) == 4


def test_unix_socket_path_too_long_is_unavailable():
    with triple_py.insecure_channel("unix:/" + "x" * 200) as channel:
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"u", timeout=TIMEOUT)
    assert info.value.code() is triple_py.StatusCode.UNAVAILABLE
    assert "unix socket path" in info.value.details()


def test_a_missing_unix_socket_is_unavailable_and_named():
    with triple_py.insecure_channel("unix:/nonexistent-tri25/x.sock") as channel:
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"u", timeout=TIMEOUT)
    assert info.value.code() is triple_py.StatusCode.UNAVAILABLE
    assert "failed to connect to unix:/nonexistent-tri25/x.sock" in info.value.details()


def test_futures_and_aio_over_round_robin(servers):
    target = ipv4_list(servers)
    before = calls_of(servers)
    with triple_py.insecure_channel(target, options=ROUND_ROBIN) as channel:
        wait_all_ready(channel._core, 3)
        results = [unary(channel).future(b"f") for _ in range(6)]
        assert [f.result(timeout=TIMEOUT) for f in results] == [b"f"] * 6

    async def run():
        async with triple_py.aio.insecure_channel(target, options=ROUND_ROBIN) as channel:
            await channel.channel_ready()
            wait_all_ready(channel._sync.core_channel, 3)
            call = channel.unary_unary("/benchmark.BenchmarkService/UnaryCall")
            return await asyncio.gather(*(call(b"a", timeout=TIMEOUT) for _ in range(6)))
    assert asyncio.run(run()) == [b"a"] * 6
    assert [after - b for after, b in zip(calls_of(servers), before)] == [4, 4, 4]


class ListResolver:
    """A resolver whose endpoint list the test sets."""

    instances: List["ListResolver"] = []

    def __init__(self, endpoints: List[Endpoint]) -> None:
        self.endpoints = endpoints
        self.on_update: Callable[[List[Endpoint]], None] = lambda eps: None
        ListResolver.instances.append(self)

    def start(self, on_update):
        self.on_update = on_update
        on_update(list(self.endpoints))

    def set(self, endpoints: List[Endpoint]) -> None:
        self.endpoints = endpoints
        self.on_update(list(endpoints))

    def refresh(self):
        pass

    def close(self):
        pass


def test_backends_added_and_removed_under_load_lose_no_call(servers):
    a, b, c = (Endpoint("127.0.0.1", s.port) for s in servers)
    register_scheme("test-list", lambda parsed: ListResolver([a, b]))
    failures: List[Exception] = []
    done = threading.Event()
    counts = [0] * 4

    with triple_py.insecure_channel("test-list:///svc", options=ROUND_ROBIN) as channel:
        resolver = ListResolver.instances[-1]
        call = unary(channel)

        def load(i: int) -> None:
            deadline = time.monotonic() + 20
            while not done.is_set() and time.monotonic() < deadline:
                try:
                    call(b"x" * 100, timeout=TIMEOUT)
                    counts[i] += 1
                except triple_py.RpcError as exc:
                    failures.append(exc)
        threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        removed = weakref.ref(channel._core._by_endpoint[b])
        resolver.set([a, b, c])  # added
        time.sleep(0.3)
        before_c = servers[2].stats()["calls"]
        resolver.set([a, c])  # b removed while calls are in flight on it
        time.sleep(0.3)
        resolver.set([c])
        time.sleep(0.3)
        done.set()
        for t in threads:
            t.join()
        assert not failures
        assert sum(counts) > 40
        assert servers[2].stats()["calls"] > before_c
        gc.collect()
        assert removed() is None  # the removed backend's core channel is gone


def test_no_endpoint_yet_is_unavailable():
    register_scheme("test-empty", lambda parsed: ListResolver([]))
    with triple_py.insecure_channel("test-empty:///svc") as channel:
        with pytest.raises(triple_py.RpcError) as info:
            unary(channel)(b"x", timeout=TIMEOUT)
        assert info.value.code() is triple_py.StatusCode.UNAVAILABLE
        assert channel._core.state() == 0  # IDLE: nothing to connect to

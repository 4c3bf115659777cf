"""zookeeper:// channels end to end: Dubbo-registered providers (the embedded echo server
and grpc-go peers, each in its own process on its own port) found in a real ZooKeeper,
added and removed while Python threads keep calling; no call may fail.

Which provider gets traffic is read from the kernel (bytes each server's connections
received, _zk_helpers.server_bytes_received), not from the providers or the client.
"""
from __future__ import annotations

import itertools
import threading
import time
from typing import Callable, List, Optional

import pytest

import triple_py
from _zk_helpers import bytes_since, server_bytes_received, zk  # noqa: F401  (fixture)
from peers import UNARY_METHOD
from peers.launch import Peer, start_peer
from triple_py.registry.zookeeper_provider import ZookeeperProvider, provider_url

SERVICE = "benchmark.BenchmarkService"
REQUEST = b"\n\x10" + b"z" * 16  # BenchmarkRequest{payload: 16 bytes}; echoed back
CALL_TIMEOUT = 10.0
SETTLE_TIMEOUT = 10.0  # seconds for a registry change to show in the traffic


@pytest.fixture(scope="module")
def peers():
    """Two embedded echo servers and two grpc-go peers, each on its own port."""
    started: List[Peer] = []
    try:
        for name in ("embedded", "go", "embedded", "go"):
            started.append(start_peer(name))
        yield started
    finally:
        for peer in started:
            peer.stop()


def register(zk, peer: Peer, service: str, **kw) -> ZookeeperProvider:
    """``peer`` registered as a Dubbo Triple provider would be, in a session of its own."""
    url = provider_url(peer.address, service, methods=("StreamCall", "UnaryCall"), **kw)
    return ZookeeperProvider(zk.address, url).start()


class Load:
    """``threads`` Python threads calling UnaryCall through ``channel`` until ``total``
    calls were made or ``stop()``; half of them ask for a 20 ms server delay, so that calls
    are in flight on every provider when one leaves."""

    def __init__(self, channel: triple_py.Channel, total: int, threads: int = 4,
                 time_limit: float = 120.0) -> None:
        self._call = channel.unary_unary(UNARY_METHOD)
        self._tickets = itertools.count()
        self.total = total
        self.done = 0
        self.failures: List[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + time_limit
        self._threads = [threading.Thread(target=self._run, args=(i % 2 == 0,), daemon=True,
                                          name=f"zk-load-{i}") for i in range(threads)]

    def __enter__(self) -> "Load":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(CALL_TIMEOUT + 5)

    def _run(self, slow: bool) -> None:
        metadata = (("x-delay-ms", "20"),) if slow else None
        while not self._stop.is_set() and time.monotonic() < self._deadline:
            if next(self._tickets) >= self.total:
                return
            try:
                reply = self._call(REQUEST, timeout=CALL_TIMEOUT, metadata=metadata)
                error = None if reply == REQUEST else f"wrong reply {reply[:20]!r}"
            except triple_py.RpcError as exc:
                error = f"{exc.code()}: {exc.details()}"
            with self._lock:
                self.done += 1
                if error is not None:
                    self.failures.append(error)

    def wait_calls(self, more: int, timeout: float = 60.0) -> None:
        """Returns once ``more`` further calls have ended."""
        target = self.done + more
        deadline = time.monotonic() + timeout
        while self.done < target:
            assert time.monotonic() < deadline, f"load stalled at {self.done} calls"
            assert any(t.is_alive() for t in self._threads), "load threads ended early"
            time.sleep(0.02)

    def finish(self, timeout: float = CALL_TIMEOUT + 5) -> None:
        """Stops the threads after their current call; fails if one does not end."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
        assert not any(t.is_alive() for t in self._threads), "load did not finish in time"


def wait_until(check: Callable[[], bool], what: str, load: Load,
               timeout: float = SETTLE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        assert not load.failures, load.failures[:5]
        load.wait_calls(20)


def gets_traffic(peer: Peer, load: Load) -> None:
    """Waits until ``peer`` receives bytes from this client."""
    before = server_bytes_received(peer.port)
    wait_until(lambda: bytes_since(peer.port, before) > 0, f"traffic to {peer}", load)


def gets_no_traffic(peer: Peer, load: Load, calls: int = 300) -> None:
    """Waits for a window of ``calls`` calls in which ``peer`` received nothing."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        before = server_bytes_received(peer.port)
        load.wait_calls(calls)
        if bytes_since(peer.port, before) == 0:
            return
        assert time.monotonic() < deadline, f"{peer} still gets calls after it left"


def channel(zk, service: str, policy: str, query: str = "",
            wire: str = "grpc") -> triple_py.Channel:
    return triple_py.insecure_channel(f"zookeeper://{zk.address}/{service}{query}",
                                      options=[("grpc.lb_policy_name", policy)], wire=wire)


def call_many(ch: triple_py.Channel, n: int) -> None:
    call = ch.unary_unary(UNARY_METHOD)
    for _ in range(n):
        assert call(REQUEST, timeout=CALL_TIMEOUT) == REQUEST


@pytest.mark.parametrize("wire", ["grpc", "triple"])
def test_round_robin_reaches_every_registered_provider(zk, peers, wire):
    """Every registered provider gets calls.  A Dubbo ``tri`` provider answers the Triple
    wire too: on it, the embedded servers (grpc-go speaks gRPC only)."""
    service = f"rr.{wire}.{SERVICE}"
    used = peers if wire == "grpc" else [p for p in peers if p.name == "embedded"]
    sessions = [register(zk, p, service) for p in used]
    try:
        before = {p.port: server_bytes_received(p.port) for p in used}
        with channel(zk, service, "round_robin", wire=wire) as ch:
            call_many(ch, 40)
            assert all(bytes_since(p.port, before[p.port]) > 0 for p in used)
    finally:
        for s in sessions:
            s.close()


def test_filters_pick_the_providers_of_one_group_and_version(zk, peers):
    service = f"gv.{SERVICE}"
    wanted, other_group, other_version, disabled = peers
    sessions = [register(zk, wanted, service, group="blue", version="2.0.0"),
                register(zk, other_group, service, group="green", version="2.0.0"),
                register(zk, other_version, service, group="blue", version="1.0.0"),
                register(zk, disabled, service, group="blue", version="2.0.0",
                         extra={"disabled": "true"})]
    try:
        before = {p.port: server_bytes_received(p.port) for p in peers}
        with channel(zk, service, "round_robin", "?group=blue&version=2.0.0") as ch:
            call_many(ch, 20)
            # measured before the channel closes its connections
            assert bytes_since(wanted.port, before[wanted.port]) > 0
            for p in (other_group, other_version, disabled):
                assert bytes_since(p.port, before[p.port]) == 0, p
    finally:
        for s in sessions:
            s.close()


def test_no_provider_fails_unavailable_then_one_registers(zk, peers):
    service = f"none.{SERVICE}"
    with channel(zk, service, "round_robin") as ch:
        call = ch.unary_unary(UNARY_METHOD)
        with pytest.raises(triple_py.RpcError) as info:
            call(REQUEST, timeout=CALL_TIMEOUT)
        assert info.value.code() == triple_py.StatusCode.UNAVAILABLE
        session = register(zk, peers[1], service)
        try:
            deadline = time.monotonic() + SETTLE_TIMEOUT
            while True:
                try:
                    assert call(REQUEST, timeout=CALL_TIMEOUT) == REQUEST
                    break
                except triple_py.RpcError as exc:
                    assert exc.code() == triple_py.StatusCode.UNAVAILABLE
                    assert time.monotonic() < deadline, "the new provider was never used"
                    time.sleep(0.05)
        finally:
            session.close()


@pytest.mark.parametrize("policy", ["round_robin", "pick_first"])
def test_providers_added_and_removed_under_load_fail_no_call(zk, peers, policy):
    """4 threads, at most 200000 calls or 120 s (a pass takes a few thousand; the bound
    only matters when a change never shows, and SETTLE_TIMEOUT fails first): start with
    two providers, then a third
    registers, the first
    leaves (its session ends, as when a Dubbo provider process shuts down), the second
    unexports (its node is deleted) while the fourth registers.  Every call succeeds;
    traffic reaches each new provider and stops reaching each removed one."""
    service = f"churn.{policy}.{SERVICE}"
    e1, g1, e2, g2 = peers
    live = {e1.port: register(zk, e1, service), g1.port: register(zk, g1, service)}
    try:
        with channel(zk, service, policy) as ch, Load(ch, total=200000) as load:
            load.wait_calls(200)
            if policy == "round_robin":
                gets_traffic(e1, load)
                gets_traffic(g1, load)
            live[e2.port] = register(zk, e2, service)
            if policy == "round_robin":
                gets_traffic(e2, load)
            first_in_use = e1 if policy == "round_robin" else _in_use(load, e1, g1, e2)
            live.pop(first_in_use.port).close()
            gets_no_traffic(first_in_use, load)
            remaining = [p for p in (e1, g1, e2) if p is not first_in_use]
            if policy == "pick_first":  # traffic moved to one of the others
                assert _in_use(load, *remaining) in remaining
            live[g2.port] = register(zk, g2, service)
            leaving = remaining[0]
            session = live.pop(leaving.port)
            session.unregister(session.urls[0])
            gets_no_traffic(leaving, load)
            if policy == "round_robin":
                gets_traffic(g2, load)
                gets_traffic(remaining[1], load)
            load.wait_calls(200)
            load.finish()
            assert load.failures == []
            assert load.done >= 1500
            print(f"{policy}: {load.done} calls, none failed")
    finally:
        for s in live.values():
            s.close()


def _in_use(load: Load, *candidates: Peer) -> Optional[Peer]:
    """The one candidate receiving traffic now (pick_first sends everything to one)."""
    before = {p.port: server_bytes_received(p.port) for p in candidates}
    load.wait_calls(100)
    busy = [p for p in candidates if bytes_since(p.port, before[p.port]) > 0]
    assert len(busy) == 1, f"pick_first spread over {busy}"
    return busy[0]


def test_bench_run_loads_a_zookeeper_target(zk, peers, tmp_path):
    """python -m triple_py.bench run --target zookeeper://...: the C load generator (its
    connections spread over the providers found at the start) and a Python arm (a
    zookeeper:// channel) load the registered providers with no failed call."""
    import json

    from triple_py.bench.cli import main

    service = f"bench.{SERVICE}"
    target = f"zookeeper://{zk.address}/{service}"
    sessions = [register(zk, p, service) for p in peers[:2]]
    try:
        common = ["run", "--target", target, "-z", "0.5s", "--warmup", "0.1s", "-c", "4",
                  "--connections", "2"]
        for mode in ("fastpath", "triple-py-sync"):
            out = tmp_path / f"{mode}.json"
            assert main([*common, "--mode", mode, "--json", str(out)]) == 0, mode
            result = json.loads(out.read_text())["results"][0]["result"]
            assert result["calls"] > 0 and result["errors"] == 0, (mode, result)
    finally:
        for s in sessions:
            s.close()


@pytest.mark.parametrize("wire", ["grpc", "triple"])
def test_calls_carry_the_providers_group_and_version(zk, wire):
    """dubbo-js (a Dubbo implementation) serves BenchmarkService twice on one port, plain
    and as group g version 1.0.0, and routes on tri-service-group/-version: a channel
    filtering g/1.0.0 must reach that one (the peer names the route that served it)."""
    service = SERVICE  # dubbo-js serves the real interface name
    with start_peer("dubbo-js") as peer:
        plain = provider_url(peer.address, service)
        grouped = provider_url(peer.address, service, group="g", version="1.0.0")
        with ZookeeperProvider(zk.address, plain, grouped):
            for query, route in (("", "/"), ("?group=g&version=1.0.0", "g/1.0.0"),
                                 ("?group=*&version=1.0.0", "g/1.0.0")):
                with triple_py.insecure_channel(f"zookeeper://{zk.address}/{service}{query}",
                                                wire=wire) as ch:
                    _, call = ch.unary_unary(UNARY_METHOD).with_call(REQUEST,
                                                                    timeout=CALL_TIMEOUT)
                    assert dict(call.initial_metadata())["x-peer-route"] == route, query

"""The h2load reference arm asks the server for the same work as the C load generator.

A server's cost per call depends on the request headers (grpc-go arms a timer for each
grpc-timeout and copies unknown headers into metadata), so a QPS ratio between the two arms
is only fair when their requests carry the same headers. The rogue peer records the header
list of each RecordHeaders request; one call from each arm is compared here. One difference
is h2load's own: it always declares the length of its data file (content-length), which a
gRPC request does not need and the generator leaves out.
"""
from __future__ import annotations

import json
import shutil

import pytest

import triple_py
from triple_py.bench import run
from triple_py.bench.workload.messages import benchmark_request

METHOD = "/rogue.Rogue/RecordHeaders"
ONE_CALL = dict(method=METHOD, payload_size=64, concurrency=1, duration=0, warmup=0, count=1)

pytestmark = pytest.mark.skipif(shutil.which("h2load") is None,
                                reason="h2load not installed (tools/bootstrap.sh installs it)")


def recorded(address: str) -> list:
    with triple_py.insecure_channel(address) as channel:
        stats = json.loads(channel.unary_unary("/rogue.Rogue/Stats")(b"", timeout=10))
    return stats["headers"]


def header_set(headers: list) -> dict:
    return {name: value for name, value in headers}


@pytest.mark.parametrize("timeout", [10.0, 2.5])
def test_h2load_sends_the_generators_headers(rogue_server, timeout):
    ours = run(rogue_server.address, mode="fastpath", timeout=timeout, **ONE_CALL)
    generator = recorded(rogue_server.address)[-1]  # (a priming call may come before it)
    before = len(recorded(rogue_server.address))
    reference = run(rogue_server.address, mode="h2load", timeout=timeout, **ONE_CALL)
    assert ours.calls == 1 and reference.calls == 1
    (h2load,) = recorded(rogue_server.address)[before:]
    h2load_headers = header_set(h2load)
    assert h2load_headers.pop("content-length") == str(5 + len(benchmark_request(ONE_CALL["payload_size"])))
    assert h2load_headers == header_set(generator)
    assert "content-length" not in header_set(generator)
    assert header_set(h2load)["grpc-timeout"] == {10.0: "10000000u", 2.5: "2500000u"}[timeout]


def test_minimal_headers_option(rogue_server):
    before = len(recorded(rogue_server.address))
    run(rogue_server.address, mode="h2load", options={"minimal_headers": True}, **ONE_CALL)
    (h2load,) = recorded(rogue_server.address)[before:]
    names = {name for name, _ in h2load}
    assert {"content-type", "te"} <= names
    assert not names & {"grpc-timeout", "grpc-accept-encoding"}

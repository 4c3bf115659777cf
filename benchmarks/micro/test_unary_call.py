"""Per-call cost of a blocking unary call from Python, one call in flight, 128 B, against
the embedded C echo server (which takes no GIL, so the figure is the client's): triple_py
vs grpcio. ``python -m triple_py.benchstat -col /client results/microbench.json``."""
from __future__ import annotations

import pytest

METHOD = "/benchmark.BenchmarkService/UnaryCall"
REQUEST = b"\x0a\x80\x01" + b"x" * 128  # BenchmarkRequest{payload: 128 B}


@pytest.mark.parametrize("client", ["triple_py", "grpcio"])
def test_unary_call(benchmark, echo_server, client):
    if client == "triple_py":
        import triple_py as lib
    else:
        lib = pytest.importorskip("grpc")
    with lib.insecure_channel(echo_server.address) as channel:
        call = channel.unary_unary(METHOD)
        assert call(REQUEST, timeout=5) == REQUEST  # connected, warmed up
        reply = benchmark(call, REQUEST, timeout=5)
    assert reply == REQUEST

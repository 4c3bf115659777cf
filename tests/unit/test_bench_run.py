"""triple_py.bench.run() against the embedded echo server: the result object's fields."""
from __future__ import annotations

import json
import shutil

import pytest

from triple_py.bench import BenchResult, ConfigError, TargetError, run
from triple_py.bench.arms.h2load import _result as h2load_result
from triple_py.bench.arms.h2load import parse_h2load_output
from triple_py.bench.spec.run_spec import RunSpec
from triple_py.testing import EchoServer

QUICK = dict(duration=0.3, warmup=0.1, concurrency=4)


@pytest.fixture(scope="module")
def server():
    with EchoServer() as s:
        yield s.address


def test_fastpath_result_fields(server):
    r = run(server, mode="fastpath", payload_size=256, **QUICK)
    assert isinstance(r, BenchResult)
    assert r.mode == "fastpath" and r.arm == "fastpath" and r.target == server
    assert r.method == "/benchmark.BenchmarkService/UnaryCall" and r.payload_size == 256
    assert r.calls > 0 and r.errors == 0 and r.qps > 0 and r.status_codes == {"OK": r.calls}
    lat = r.latency
    assert lat.count == r.calls
    assert 0 < lat.min <= lat.p50 <= lat.p90 <= lat.p99 <= lat.p99_9 <= lat.p99_99 <= lat.max
    assert r.latency_corrected.p50 == lat.p50  # closed loop: the same
    assert r.p99 == r.latency_corrected.p99 and r.max_latency == lat.max
    assert sum(n for _, n in r.histogram) == r.calls
    assert sum(r.series["calls"]) == r.calls and len(r.series["p99_ns"]) >= 1
    assert r.cpu["process_s"] > 0 and "driver_s" in r.cpu
    assert r.counters["write_syscalls"] > 0 and r.write_syscalls_per_call > 0
    assert r.allocations_per_call is not None and r.per_call["bytes_written"] > 256
    assert r.warmup["calls"] > 0
    d = r.to_dict()
    json.dumps(d)
    assert d["latency_ns"]["p99.9"] == lat.p99_9 and d["histogram"]
    back = BenchResult.from_dict(d)
    assert back.latency == r.latency and back.histogram == r.histogram


def test_stream_path_and_count(server):
    r = run(server, mode="stream_path", count=200, duration=0, warmup=0, concurrency=4)
    assert r.mode == "stream-path" and 200 <= r.calls <= 204 and r.errors == 0


def test_bidi_counts_streams_and_messages(server):
    r = run(server, mode="bidi", stream_messages=16, **QUICK)
    assert r.method.endswith("/StreamCall")
    assert r.streams == r.calls > 0
    assert r.messages_sent == r.messages_received == 16 * r.calls
    assert r.messages_per_s > r.qps
    assert r.write_syscalls_per_message is not None


def test_open_loop_keeps_corrected_and_uncorrected_latency(server):
    r = run(server, rate=400, **QUICK)
    assert r.rate == 400 and 80 <= r.calls <= 160
    assert r.latency_corrected.min >= r.latency.min


def test_unknown_method_fails_every_call(server):
    r = run(server, method="no.Such/Method", **QUICK)
    assert r.calls > 0 and r.errors == r.calls and r.first_error == "UNIMPLEMENTED"


def test_embedded_server_when_no_target():
    assert run(mode="fastpath", **QUICK).calls > 0


def test_grpcio_aio_reference_arm(server):
    r = run(server, mode="grpcio-aio", **QUICK)
    assert r.calls > 0 and r.errors == 0 and r.latency.p50 > 0
    assert r.write_syscalls_per_call is None  # not our client


@pytest.mark.skipif(shutil.which("h2load") is None, reason="h2load not installed")
def test_h2load_reference_arm(server):
    r = run(server, mode="h2load", **QUICK)
    assert r.calls > 0 and r.qps > 0 and r.latency.mean > 0 and r.latency.p99 is None
    assert r.status_codes.get("HTTP_2xx") == r.calls
    logged = run(server, mode="h2load", options={"latency_log": True}, **QUICK)
    assert logged.latency.p99 is not None and sum(logged.series["calls"]) == logged.calls


def test_h2load_cpu_per_call_counts_the_warmup_calls():
    """h2load's CPU time covers its warm-up, whose calls it does not report: per call, the
    warm-up is counted at the measured rate (0.4 s over 4 s of calls at 1,000/s)."""
    summary = parse_h2load_output(
        "finished in 3.00s, 1000.00 req/s, 1MB/s\n"
        "requests: 3000 total, 3000 started, 3000 done, 3000 succeeded, 0 failed, 0 errored, "
        "0 timeout\n"
        "time for request:      100us      2.00ms      1.00ms       50us    90.00%\n")
    spec = RunSpec(arm="h2load", mode="h2load", target="127.0.0.1:1", duration=3.0,
                   warmup=1.0)
    r = h2load_result(spec, summary, [], 0.4, ["h2load"])
    assert r.cpu["h2load_s"] == 0.4 and r.cpu_us_per_call == pytest.approx(100.0)
    counted = RunSpec(arm="h2load", mode="h2load", target="127.0.0.1:1", duration=0,
                      warmup=1.0, count=3000)
    assert h2load_result(counted, summary, [], 0.4, ["h2load"]).cpu_us_per_call == \
        pytest.approx(0.4e6 / 3000)


def test_bad_parameters_and_unreachable_target():
    with pytest.raises(ConfigError, match="multiple of connections"):
        run("127.0.0.1:9", concurrency=3, connections=2)
    with pytest.raises(ConfigError, match="unknown mode"):
        run("127.0.0.1:9", mode="warp")
    with pytest.raises(ConfigError, match="grpcio-aio-bidi arm speaks only the grpc wire"):
        run("127.0.0.1:9", mode="grpcio-aio-bidi", wire="triple")
    with pytest.raises(TargetError, match="cannot reach 127.0.0.1:1"):
        run("127.0.0.1:1", **QUICK)

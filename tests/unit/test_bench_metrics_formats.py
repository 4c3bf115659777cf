"""-O prometheus / influx-summary / influx-details of a known result."""
from __future__ import annotations

import re

from triple_py.bench.report.metrics_formats import (influx_details, influx_summary,
    prometheus_text)
from triple_py.bench.record.result import BenchResult, Latency


def _result() -> BenchResult:
    lat = Latency(count=6, min=1e6, mean=2e6, p50=2e6, p90=3e6, p99=3e6, p99_9=3e6,
                  p99_99=3e6, max=3e6)
    return BenchResult(arm="fastpath", mode="fastpath", target="127.0.0.1:1",
                       method='/a.B/C "x"', payload_size=10, concurrency=2, elapsed_s=2.0,
                       calls=6, errors=1, qps=3.0, status_codes={"OK": 5, "INTERNAL": 1},
                       latency=lat, latency_corrected=lat,
                       histogram=[(1_000_000, 2), (2_000_000, 2), (3_000_000, 2)],
                       series={"calls": [4, 2], "errors": [0, 1], "p99_ns": [3e6, 0]})


def test_prometheus_exposition():
    text = prometheus_text(_result())
    assert 'call="/a.B/C \\"x\\""' in text  # label values escaped
    assert re.search(r'^triple_py_run_count\{.*\} 6$', text, re.M)
    assert re.search(r'^triple_py_run_latency_seconds\{.*quantile="0.99"\} 0.003$', text, re.M)
    buckets = re.findall(r'^triple_py_run_histogram_seconds_bucket\{.*le="([^"]+)"\} (\d+)$',
                         text, re.M)
    assert buckets == [("0.001", "2"), ("0.002", "4"), ("0.003", "6"), ("+Inf", "6")]
    assert re.search(r'^triple_py_run_histogram_seconds_sum\{.*\} 0.012$', text, re.M)
    assert re.search(r'^triple_py_run_status\{.*status="INTERNAL"\} 1$', text, re.M)
    for line in text.splitlines():  # every sample line is "name{labels} number"
        assert line.startswith("#") or re.fullmatch(r'[a-z_]+\{.*\} [-+0-9.e]+|[a-z_]+\{.*\} \+?Inf', line)


def test_influx_lines():
    line = influx_summary(_result(), timestamp_ns=123)
    assert line.startswith("triple_py_run,arm=fastpath,mode=fastpath,call=/a.B/C\\ \"x\",")
    assert "count=6i" in line and "errors=1i" in line and "p99_ns=3000000i" in line
    assert line.endswith(" 123\n")
    details = influx_details(_result(), start_ns=1_000_000_000).splitlines()
    assert len(details) == 2
    assert details[0].endswith("calls=4i,errors=0i,p99_ns=3000000i 1000000000")
    assert details[1].endswith("calls=2i,errors=1i 2000000000") and ",second=1 " in details[1]

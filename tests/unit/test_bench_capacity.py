"""The capacity search on a simulated server (no network): ramp, bisect, verdict."""
from __future__ import annotations

import pytest

from triple_py.bench.report.capacity import capacity_plot, capacity_text
from triple_py.bench.running.capacity import find_capacity
from triple_py.bench.results.capacity import histogram_percentile
from triple_py.bench.spec.slo import parse_slo
from triple_py.bench.errors import ConfigError
from triple_py.bench.record.result import BenchResult


def _server(knee: float, errors_above: float = float("inf")):
    """A fake probe: p99 is 1 ms below `knee` calls/s and 50 ms above it."""
    rates = []

    def probe_at(rate: float) -> BenchResult:
        rates.append(rate)
        p99_ns = 1e6 if rate <= knee else 50e6
        # 100 calls: 98 at 0.5 ms, 2 at the p99 value (so p99 falls on it)
        hist = [(500_000, 98), (int(p99_ns), 2)]
        r = BenchResult(arm="fastpath", mode="fastpath", target="t", method="/a.B/C",
                        payload_size=1, concurrency=1, calls=100, qps=rate,
                        errors=5 if rate > errors_above else 0, histogram_corrected=hist,
                        status_codes={"UNAVAILABLE": 5} if rate > errors_above else {})
        return r
    return probe_at, rates


def test_ramps_then_bisects_to_the_knee():
    probe_at, rates = _server(knee=37_000)
    res = find_capacity(probe_at, parse_slo("p99=5ms"), start_rate=1000, max_rate=1e6,
                        precision=0.02)
    assert rates[:7] == [1000, 2000, 4000, 8000, 16000, 32000, 64000]
    assert 37_000 * 0.98 <= res.capacity <= 37_000
    assert all(p.passed == (p.rate <= 37_000) for p in res.probes)
    text = capacity_text(res)
    assert text.startswith(f"capacity: {res.capacity:,.0f} calls/s with p99 <= 5 ms")
    assert "FAIL: p99 50.000 ms over 5 ms" in text


def test_errors_fail_a_probe_and_a_failing_start_goes_down():
    probe_at, rates = _server(knee=1e9, errors_above=3000)
    res = find_capacity(probe_at, parse_slo("p99.9=5ms"), start_rate=10_000, max_rate=1e6,
                        precision=0.05)
    assert rates[:3] == [10_000, 5_000, 2_500]  # halved until one passes
    assert 2_500 <= res.capacity <= 3_000
    assert "errors" in res.probes[0].why


def test_ceiling_and_plot(tmp_path):
    probe_at, _ = _server(knee=1e9)
    res = find_capacity(probe_at, parse_slo("p50=1ms"), start_rate=100, max_rate=400)
    assert res.capacity == 400 and res.ceiling_reached
    assert "the capacity may be higher" in capacity_text(res)
    png = capacity_plot(res, tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_slo_and_percentile_parsing():
    assert parse_slo("p99.9=20ms").percentile == 99.9
    assert parse_slo("p99=5ms").limit_s == pytest.approx(0.005)
    for bad in ("99=5ms", "p100=1ms", "p99=fast", "p99=0ms"):
        with pytest.raises(ConfigError):
            parse_slo(bad)
    assert histogram_percentile([(1, 50), (2, 49), (9, 1)], 99) == 2
    assert histogram_percentile([(1, 50), (2, 49), (9, 1)], 99.5) == 9
    assert histogram_percentile([], 50) is None


def test_missed_calls_fail_a_probe_beyond_a_tenth_of_a_percent():
    from triple_py.bench.running.capacity import judge

    probe_at, _ = _server(knee=1e9)
    r = probe_at(1000)
    r.calls = 10_000
    r.extra["missed"] = 5
    assert judge(r, 1000, parse_slo("p99=5ms")).passed
    r.extra["missed"] = 50
    assert "never sent" in judge(r, 1000, parse_slo("p99=5ms")).why

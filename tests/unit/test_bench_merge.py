"""The exact merge of distributed parts (triple_py.bench.merge) and the load split
(triple_py.bench.distributed.split), without a cluster: synthetic raw latencies recorded
into the C histogram (_triple.Histogram) stand for the workers' results."""
import math
import random

import pytest

from triple_py import _triple
from triple_py.bench.distributed.cluster import split
from triple_py.bench.errors import ConfigError
from triple_py.bench.distributed.merge import (Part, merge_histograms, merge_latency,
    merge_parts, merge_series)
from triple_py.bench.record.result import PERCENTILES, BenchResult, Latency
from triple_py.bench.spec.run_spec import RunSpec


def c_latency(samples):
    """A Latency and histogram as the C load generator reports them for ``samples``."""
    h = _triple.Histogram(3)
    for v in samples:
        h.record(v)
    lat = Latency(count=h.count, min=h.min, max=h.max, mean=h.mean)
    for key, attr in PERCENTILES:
        setattr(lat, attr, h.percentile(float(key[1:])))
    return lat, list(h.pairs()), h


def raw_parts(seed, sizes):
    rng = random.Random(seed)
    return [[int(rng.lognormvariate(12, 1.2)) + 1000 for _ in range(n)] for n in sizes]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_merged_percentiles_equal_one_histogram_of_all_samples(seed):
    parts = raw_parts(seed, [5000, 1700])
    lats, hists = zip(*[c_latency(p)[:2] for p in parts])
    merged, pairs = merge_latency(lats, hists)
    whole_lat, whole_pairs, whole = c_latency([v for p in parts for v in p])
    assert pairs == whole_pairs  # bucket by bucket
    assert merged.count == whole.count == sum(map(len, parts))
    assert (merged.min, merged.max) == (min(map(min, parts)), max(map(max, parts)))
    assert merged.mean == pytest.approx(sum(map(sum, parts)) / merged.count, rel=1e-12)
    for key, attr in PERCENTILES:
        assert getattr(merged, attr) == getattr(whole_lat, attr), key


def test_merged_percentiles_match_nearest_rank_of_concatenated_samples():
    parts = raw_parts(7, [3000, 3000, 999])
    lats, hists = zip(*[c_latency(p)[:2] for p in parts])
    merged, _ = merge_latency(lats, hists)
    values = sorted(v for p in parts for v in p)
    for key, attr in PERCENTILES:
        exact = values[max(0, math.ceil(float(key[1:]) / 100 * len(values)) - 1)]
        got = getattr(merged, attr)
        assert exact <= got <= exact * (1 + 1 / 1024) + 1, key  # same bucket, 3 digits


def test_a_percentile_in_the_max_bucket_is_the_exact_max():
    a, b = [1000] * 99, [123_456_789]
    lats, hists = zip(*[c_latency(p)[:2] for p in (a, b)])
    merged, _ = merge_latency(lats, hists)
    assert merged.p99_99 == 123_456_789  # not the bucket's highest equivalent value


def test_histogram_add_refuses_itself_and_other_types():
    h = _triple.Histogram()
    with pytest.raises(ValueError):
        h.add(h)
    with pytest.raises(TypeError):
        h.add([(1000, 1)])
    with pytest.raises(ValueError):
        _triple.Histogram(9)


def test_merge_histograms_adds_counts():
    assert merge_histograms([[(1000, 2), (2000, 1)], [(1000, 3)]]) == [(1000, 5), (2000, 1)]


def test_series_aligned_by_shift_and_added():
    merged = merge_series([{"calls": [5, 6], "errors": [0, 1], "p99_ns": [10, 20]},
                           {"calls": [7, 8], "errors": [1, 0], "p99_ns": [30, 5]}], [0, 1])
    assert merged == {"calls": [5, 13, 8], "errors": [0, 2, 0], "p99_ns": [10, 30, 5]}


def result_of(samples, series, start_s, cpu_s):
    lat, pairs, _ = c_latency(samples)
    r = BenchResult(arm="fastpath", mode="fastpath", target="h:1", method="/m",
                    payload_size=8, concurrency=4, connections=1, elapsed_s=2.0,
                    calls=len(samples), errors=1, qps=len(samples) / 2.0,
                    status_codes={"OK": len(samples) - 1, "UNAVAILABLE": 1},
                    latency=lat, latency_corrected=lat, histogram=pairs,
                    histogram_corrected=pairs, series=series,
                    cpu={"process_s": cpu_s, "process_user_s": cpu_s},
                    counters={"write_syscalls": len(samples)},
                    warmup={"calls": 3, "errors": 0}, extra={"hist_digits": 3, "missed": 2})
    return r, start_s


def test_merge_parts_sums_and_keeps_every_worker():
    a = raw_parts(11, [400])[0]
    b = raw_parts(12, [600])[0]
    ra, _ = result_of(a, {"calls": [200, 200], "errors": [1, 0], "p99_ns": [1, 2]}, 0, 0.5)
    rb, _ = result_of(b, {"calls": [300, 300], "errors": [0, 1], "p99_ns": [3, 1]}, 0, 0.7)
    parts = [Part("w1", ra, 10 * 10**9, clock_offset_ns=1000),
             Part("w2", rb, 11 * 10**9, clock_offset_ns=-500)]
    m = merge_parts(parts)
    assert m.calls == 1000 and m.errors == 2
    assert m.status_codes == {"OK": 998, "UNAVAILABLE": 2}
    assert m.elapsed_s == pytest.approx(3.0)  # 10 s .. 13 s on the client's clock
    assert m.qps == pytest.approx(1000 / 3.0)
    assert m.series["calls"] == [200, 500, 300]
    assert sum(m.series["calls"]) == m.calls
    assert m.cpu["process_s"] == pytest.approx(1.2)
    assert m.cpu["process_us_per_call"] == pytest.approx(1.2e6 / 1000)
    assert m.counters == {"write_syscalls": 1000} and m.per_call == {"write_syscalls": 1.0}
    assert m.extra["missed"] == 4 and m.warmup["calls"] == 6
    assert [w["worker"] for w in m.extra["workers"]] == ["w1", "w2"]
    assert m.extra["workers"][1]["start_skew_ms"] == pytest.approx(1000.0)
    assert m.extra["imbalance"]["calls"] == pytest.approx(200 / 500)
    assert any("w1: 1 of 400 calls failed" in n for n in m.notes)
    again = BenchResult.from_dict(m.to_dict())  # the file schema round-trips
    assert again.p99 == m.p99 and again.extra["workers"] == m.extra["workers"]


def spec(**kw):
    base = dict(arm="fastpath", mode="fastpath", target="h:1", concurrency=12,
                connections=1)
    base.update(kw)
    return RunSpec(**base).validate()


def test_split_keeps_the_totals():
    for s, n in ((spec(concurrency=12, connections=4), 3), (spec(concurrency=12), 2),
                 (spec(concurrency=7), 3), (spec(concurrency=12, connections=3), 2),
                 (spec(concurrency=10, count=101), 4)):
        shares = split(s, n)
        assert len(shares) == n
        if s.connections >= n:
            assert sum(x.connections for x in shares) == s.connections
        assert sum(x.concurrency for x in shares) == s.concurrency
        assert all(x.concurrency % x.connections == 0 for x in shares)
        assert sum(x.count for x in shares) == s.count


def test_split_refuses_less_load_than_workers():
    with pytest.raises(ConfigError):
        split(spec(concurrency=1), 2)


@pytest.mark.parametrize("n,connections", [(2, 1), (3, 2), (4, 4)])
def test_open_loop_schedules_interleave_evenly(n, connections):
    """The C side sends thread j of a worker at t0 + phase + interval * (j / threads + k),
    interval = threads / worker rate: the union over the workers is evenly spaced."""
    rate = 1000.0
    s = spec(concurrency=8 * connections, connections=connections, rate=rate)
    times = []
    for share in split(s, n):
        interval = 1e9 * share.connections / share.rate
        for j in range(share.connections):
            first = share.phase_ns + interval * j / share.connections
            times += [first + interval * k for k in range(20)]
    times.sort()
    gaps = [b - a for a, b in zip(times, times[1:])][: 10 * n]
    assert gaps == pytest.approx([1e9 / rate] * len(gaps), abs=2)

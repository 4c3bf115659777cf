"""Capacity searches in matrix files ([capacity]): parsing, the harness's searches after
each scenario's rounds, and the files they write (a simulated server, no network)."""
from __future__ import annotations

import json

import pytest

from _bench_fakes import FakeServers
from triple_py.bench.errors import ConfigError
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix
from triple_py.bench.report.files import write_results
from triple_py.bench.record.result import BenchResult

MATRIX = """
name = "cap"
baseline = "stream-path"
rounds = 1
duration = 0.1
warmup = 0
arms = ["stream-path", "fastpath", "grpcio-sync"]
[scenarios]
payload = [128, "1KiB"]
concurrency = [64]
[capacity]
slo = "p99=5ms"
start_rate = 1000
max_rate = 100000
precision = 0.05
duration = "0.2s"
"""


class KneeRunner:
    """Closed-loop runs answer at once; an open-loop probe meets p99 1 ms up to a knee
    (higher for fastpath and for the small payload) and 50 ms above it."""

    KNEE = {("fastpath", 128): 40_000, ("stream-path", 128): 30_000,
            ("fastpath", 1024): 20_000, ("stream-path", 1024): 15_000}

    def __init__(self) -> None:
        self.specs = []

    def __call__(self, spec) -> BenchResult:
        self.specs.append(spec)
        rate = spec.rate or 0.0
        knee = self.KNEE.get((spec.arm, spec.payload_size), 1e9)
        p99 = 1e6 if rate <= knee else 50e6
        return BenchResult(arm=spec.arm, mode=spec.mode, target=spec.target,
                           method="/benchmark.BenchmarkService/UnaryCall",
                           payload_size=spec.payload_size, concurrency=spec.concurrency,
                           calls=100, qps=rate or 1000.0, duration_s=spec.duration,
                           histogram_corrected=[(500_000, 98), (int(p99), 2)])


def test_searches_run_per_scenario_and_open_loop_arm(tmp_path):
    matrix = parse_matrix(MATRIX)
    assert matrix.capacity is not None
    assert list(matrix.capacity.arms) == ["stream-path", "fastpath"]  # grpcio: no open loop
    runner = KneeRunner()
    out = run_matrix(matrix, server_factory=FakeServers(), runner=runner, check=False,
                     capture_environment=False)
    found = {(c.label, c.arm): c.result.capacity for c in out.capacities}
    assert set(found) == {("128B/c64", "stream-path"), ("128B/c64", "fastpath"),
                          ("1KiB/c64", "stream-path"), ("1KiB/c64", "fastpath")}
    for (label, arm), capacity in found.items():
        knee = KneeRunner.KNEE[(arm, 128 if label.startswith("128B") else 1024)]
        assert knee * 0.95 <= capacity <= knee
    probes = [s for s in runner.specs if s.rate]
    assert probes and all(s.duration == 0.2 for s in probes)  # the search's own duration
    # The rounds ran first, the searches after them, scenario by scenario.
    first_probe = next(i for i, s in enumerate(runner.specs) if s.rate)
    assert {s.payload_size for s in runner.specs[:first_probe]} == {128}

    paths = write_results(out, tmp_path)
    text = paths["capacity"].read_text()
    assert "== capacity: 128B/c64 fastpath ==" in text
    assert text.count("capacity: ") >= 4
    doc = json.loads((tmp_path / "capacity" / "128B_c64-fastpath.json").read_text())
    assert doc["arm"] == "fastpath" and 38_000 <= doc["capacity"] <= 40_000
    assert (tmp_path / "capacity" / "1KiB_c64-stream-path.png").read_bytes()[:4] == b"\x89PNG"
    results = json.loads(paths["json"].read_text())
    assert results["matrix"]["capacity"]["slo"] == "p99 <= 5 ms"
    assert len(results["capacities"]) == 4


@pytest.mark.parametrize("table, message", [
    ('[capacity]\nstart_rate = 10', "needs slo"),
    ('[capacity]\nslo = "p99"', "bad SLO"),
    ('[capacity]\nslo = "p99=5ms"\narms = ["grpcio-sync"]', "cannot run an open loop"),
    ('[capacity]\nslo = "p99=5ms"\narms = ["nope"]', "no arm 'nope'"),
    ('[capacity]\nslo = "p99=5ms"\nstart_rate = 0', "capacity.start_rate must be"),
    ('[capacity]\nslo = "p99=5ms"\nstart_rate = 10\nmax_rate = 5', "at most"),
    ('[capacity]\nslo = "p99=5ms"\nrate = 5', "unknown key capacity.rate"),
])
def test_bad_capacity_tables_are_refused(table, message):
    head = MATRIX.split("[capacity]")[0]
    with pytest.raises(ConfigError, match=message):
        parse_matrix(head + table)


def test_choosing_arms_drops_searches_of_the_others():
    matrix = parse_matrix(MATRIX).with_overrides(arms=["stream-path", "grpcio-sync"])
    assert list(matrix.capacity.arms) == ["stream-path"]
    assert parse_matrix(MATRIX).with_overrides(arms=["grpcio-sync"]).capacity is None

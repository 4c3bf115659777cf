"""triple_py.bench.distributed on a LocalCluster of two worker processes, against the
embedded server and grpc-go (each in a process of its own): the merged figures are the
exact merge of the workers', and faults are reported by worker.

The cluster runs in a child process (_distributed_child.py) with a hard timeout; these
tests check the JSON it prints.
"""
import json
import math
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from triple_py.bench.record.result import PERCENTILES

CHILD = Path(__file__).with_name("_distributed_child.py")
ROOT = Path(__file__).resolve().parents[2]
HARD_TIMEOUT = 240


def run_child(*args):
    proc = subprocess.run([sys.executable, str(CHILD), *args], capture_output=True,
                          text=True, timeout=HARD_TIMEOUT, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def embedded():
    return run_child("embedded", "--faults")


@pytest.fixture(scope="module")
def go(go_server):  # go_server: builds the Go peer once for the session
    return run_child("go")


def expanded_percentile(parts, key, q):
    """Nearest-rank percentile of the workers' latencies concatenated (every value of
    every worker's histogram, as many times as it was counted), within the workers'
    exact min..max, as the C side reports percentiles."""
    values = sorted(v for p in parts for v, n in p[key] for _ in range(n))
    # The rank in exact arithmetic, as the C side means it: 99.9 / 100 * 1000 is 999
    # there, not the 999.0000000000001 of floating point (one rank, maybe one bucket, on).
    exact = math.ceil(Fraction(str(q)) / 100 * len(values))
    rank = values[max(0, exact - 1)]
    low = min(p[key.replace("histogram", "latency") + "_ns"]["min"] for p in parts)
    high = max(p[key.replace("histogram", "latency") + "_ns"]["max"] for p in parts)
    return min(max(rank, low), high)


def check_exact_merge(run):
    parts, merged = run["parts"], run["merged"]
    assert len(parts) == 2 and all(p["calls"] > 0 for p in parts)
    assert merged["calls"] == sum(p["calls"] for p in parts)
    assert merged["errors"] == sum(p["errors"] for p in parts) == 0
    assert merged["status_codes"] == {"OK": merged["calls"]}
    for key in ("histogram", "histogram_corrected"):
        lat = merged[key.replace("histogram", "latency") + "_ns"]
        assert lat["count"] == merged["calls"]
        for name, _ in PERCENTILES:
            assert lat[name] == expanded_percentile(parts, key, float(name[1:])), (key, name)
    series = merged["series"]["calls"]
    assert sum(series) == merged["calls"]
    width = max(len(p["series"]["calls"]) for p in parts)
    assert series[:width] == [sum(p["series"]["calls"][i] for p in parts
                                  if i < len(p["series"]["calls"])) for i in range(width)]
    assert merged["counters"]["write_syscalls"] == sum(p["counters"]["write_syscalls"]
                                                       for p in parts)
    assert merged["cpu"]["process_s"] == pytest.approx(sum(p["cpu"]["process_s"]
                                                           for p in parts))
    rows = merged["extra"]["workers"]
    assert [r["calls"] for r in rows] == [p["calls"] for p in parts]
    assert len({r["pid"] for r in rows}) == 2  # two processes
    assert all(r["late_ms"] == 0 for r in rows)  # both started at the common start


def test_embedded_closed_loop_merges_exactly(embedded):
    check_exact_merge(embedded["closed"])


def test_embedded_open_loop_merges_exactly(embedded):
    run = embedded["open"]
    check_exact_merge(run)
    merged = run["merged"]
    assert merged["rate"] == pytest.approx(3000.0)
    assert [p["rate"] for p in run["parts"]] == [pytest.approx(1500.0)] * 2


def test_run_result_has_the_local_schema_and_breakdown(embedded):
    from triple_py.bench import run

    local = run(concurrency=2, duration=0.1, warmup=0.0).to_dict(histograms=False)
    distributed = embedded["run"]
    assert set(distributed) == set(local)
    workers = distributed["extra"]["workers"]
    assert len(workers) == 2
    for w in workers:
        assert {"qps", "p99_ns", "cpu_us_per_call", "clock_offset_ms", "clock_rtt_ms"} <= set(w)
    assert set(distributed["extra"]["imbalance"]) == {"qps", "calls"}
    assert distributed["qps"] > 0 and distributed["concurrency"] == 8


def test_killed_worker_is_reported(embedded):
    killed = embedded["killed"]
    assert killed is not None, "a run with a killed worker returned a merged result"
    assert killed["failures"] == [[killed["victim"],
                                   "the worker died or left the cluster during the run"]]
    assert killed["finished"] == [killed["other"]]
    assert killed["victim"] in killed["message"]


def test_unreachable_target_is_reported_by_worker(embedded):
    failures = embedded["unreachable"]["failures"]
    assert len(failures) == 2
    assert all(error.startswith("TargetError: cannot reach 127.0.0.1:1") for _, error in failures)


def test_other_build_refused_in_one_line(embedded):
    message = embedded["mismatch"]
    assert message is not None and "\n" not in message
    assert "build 000000000000" in message and "install the same build" in message


def test_grpc_go_merges_exactly(go):
    check_exact_merge(go["closed"])
    check_exact_merge(go["open"])


def test_cli_run_dask_writes_a_loadable_result(tmp_path):
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "triple_py.bench", "run", "--dask", "local:2",
                           "-z", "0.3s", "--warmup", "0.1s", "-c", "4", "--json", str(out)],
                          capture_output=True, text=True, timeout=HARD_TIMEOUT, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "imbalance between workers" in proc.stdout
    assert proc.stdout.count("tcp://127.0.0.1:") == 2  # one line per worker
    from triple_py.bench import load_results
    from triple_py.bench.distributed.workers_view import workers_frame

    res = load_results(out)
    assert len(res.runs) == 1 and res.runs["calls"][0] > 0
    frame = workers_frame(res)
    assert list(frame["worker"])[-1] == "merged"
    assert frame["calls"].iloc[:2].sum() == frame["calls"].iloc[2] == res.runs["calls"][0]


def test_cli_bad_dask_address_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "triple_py.bench", "run", "--dask", "local:x",
                           "-z", "0.1s"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "local:N" in proc.stderr

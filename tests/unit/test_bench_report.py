"""Outputs: Go benchmark format read back by triple_py.benchstat, CSV columns, JSON, tables."""
from __future__ import annotations

import csv
import json

import pytest

from _bench_fakes import FakeRunner, FakeServers
from triple_py import benchstat
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix
from triple_py.bench.report.tidy_csv import CSV_COLUMNS
from triple_py.bench.report.text import comparison, format_summary
from triple_py.bench.report.gobench import go_bench_text
from triple_py.bench.report.files import write_results

MATRIX = """
name = "t"
benchmark = "Unary"
baseline = "stream-path"
rounds = 4
duration = 0.1
warmup = 0
arms = ["stream-path", "fastpath", "grpcio-aio"]
[scenarios]
payload = [128, "1KiB"]
concurrency = [50]
"""


@pytest.fixture(scope="module")
def matrix_run():
    return run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=FakeRunner(),
                      check=False, capture_environment=False)


def test_go_format_lines_name_scenario_and_arm(matrix_run):
    text = go_bench_text(matrix_run)
    lines = [l for l in text.splitlines() if l.startswith("Benchmark")]
    assert len(lines) == 2 * 3 * 4
    name, iters, rest = lines[0].split("\t")
    assert name.startswith("BenchmarkUnary/128B/c50/stream-path-")
    assert int(iters) > 0
    assert " ns/op " in f" {rest} " and " ops/s " in f" {rest} " and "p99-ns" in rest
    assert "writes/op" in rest  # our arms report write syscalls
    assert " cpu-ns/op" in rest  # every arm that measured its CPU reports it per call
    ref = next(l for l in lines if "/grpcio-aio-" in l)
    assert "writes/op" not in ref  # reference arms do not
    assert text.startswith("goos: ")


def test_benchstat_parses_the_go_format(matrix_run):
    frame = benchstat.compare([("all", go_bench_text(matrix_run))])
    cells = frame[(frame.kind == "cell") & (frame.unit == "sec/op")]
    assert set(cells.row) == {f"Unary/{p}/c50/{a}-{n}" for p in ("128B", "1KiB")
                              for a in ("stream-path", "fastpath", "grpcio-aio")
                              for n in [cells.row.iloc[0].rsplit("-", 1)[1]]}
    assert (cells.n == 4).all()
    per_arm = benchstat.compare([("stream-path", go_bench_text(matrix_run, "stream-path")),
                                 ("fastpath", go_bench_text(matrix_run, "fastpath"))])
    ops = per_arm[(per_arm.kind == "cell") & (per_arm.unit == "ops/s") & ~per_arm.is_baseline]
    assert len(ops) == 2 and (ops.delta_pct > 0).all()  # fastpath is faster in the fake


def test_comparison_uses_benchstat_with_significance_marks(matrix_run):
    text = comparison(matrix_run)
    assert "benchstat: stream-path (base) vs fastpath" in text
    assert "benchstat: stream-path (base) vs grpcio-aio" in text
    assert "vs base" in text and "p=" in text
    assert "cpu-sec/op" in text
    assert "Unary/128B/c50-" in text
    assert text.count("goos:") == 1


def test_results_directory(matrix_run, tmp_path):
    paths = write_results(matrix_run, tmp_path, comparison(matrix_run))
    rows = list(csv.DictReader(open(paths["csv"])))
    assert list(rows[0]) == CSV_COLUMNS
    assert len(rows) == 2 * 3 * 4
    first = rows[0]
    assert (first["scenario"], first["arm"], first["round"], first["position"]) == (
        "128B/c50", "stream-path", "1", "0")
    assert first["is_baseline"] == "True" and float(first["qps"]) > 0
    assert rows[3]["arm"] == "grpcio-aio" and rows[3]["round"] == "2"  # reversed round
    doc = json.loads(paths["json"].read_text())
    assert {"config", "results", "matrix", "environment", "summary"} <= set(doc)
    entry = doc["results"][0]
    assert entry["name"] == "Unary/128B/c50" and entry["arm"] == "stream-path"
    assert entry["result"]["histogram"] == [[40000, 50], [100000, 50]]
    frame = benchstat.compare([str(paths["json"])], col="arm")
    ops = frame[(frame.kind == "cell") & (frame.unit == "ops/s")]
    assert set(ops.col) == {"stream-path", "fastpath", "grpcio-aio"}
    for arm in ("stream-path", "fastpath", "grpcio-aio"):
        text = (paths["benchstat"] / f"{arm}.txt").read_text()
        assert "BenchmarkUnary/1KiB/c50-" in text and f"/{arm}-" not in text
    assert "vs fastpath" in paths["comparison"].read_text()


def test_summary_table_has_ratio_range_and_writes(matrix_run):
    text = format_summary(matrix_run)
    assert "== Unary 128B/c50: median of 4 rounds" in text
    line = next(l for l in text.splitlines() if l.startswith("fastpath "))
    assert "x" in line and ".." in line and "0.250" in line
    base = next(l for l in text.splitlines() if l.startswith("stream-path "))
    assert " base " in base
    assert "overview" in text


@pytest.mark.parametrize("fail", ["fastpath", "stream-path"])
def test_failed_arms_still_give_tables_and_files(tmp_path, fail):
    run = run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(),
                     runner=FakeRunner(fail=fail), check=False, capture_environment=False)
    text = format_summary(run)
    line = next(l for l in text.splitlines() if l.startswith(fail + " "))
    assert "boom" in line
    compared = comparison(run)
    assert ("no results" in compared) or ("vs grpcio-aio" in compared)
    paths = write_results(run, tmp_path, compared)
    doc = json.loads(paths["json"].read_text())
    assert len(doc["failed"]) == 2 * 4 and doc["failed"][0]["failed"] == "RuntimeError: boom"
    rows = list(csv.DictReader(open(paths["csv"])))
    assert sum(1 for r in rows if r["failed"]) == 2 * 4

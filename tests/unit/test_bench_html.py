"""Jupyter's HTML views (_repr_html_) of a BenchResult, a loaded results directory,
benchstat's comparison and the paired table: the figures are there and the verdicts are
marked (the fake runner makes fastpath 1.5x and grpcio-aio 0.5x the baseline's QPS)."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("pandas")

from _bench_fakes import FakeRunner, FakeServers, two_arm_matrix  # noqa: E402
from triple_py.bench import load_results  # noqa: E402
from triple_py.bench.running.rounds import run_matrix  # noqa: E402
from triple_py.bench.spec.matrix import parse_matrix  # noqa: E402
from triple_py.bench.report.files import write_results  # noqa: E402
from triple_py.bench.spec.run_spec import RunSpec  # noqa: E402


class ErrorsForGrpcio(FakeRunner):
    """FakeRunner whose grpcio-aio arm has 3 UNAVAILABLE calls per run."""

    def __call__(self, spec):
        r = super().__call__(spec)
        if spec.mode == "grpcio-aio":
            r.errors = 3
            r.status_codes = {"OK": r.calls - 3, "UNAVAILABLE": 3}
        return r


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    text = two_arm_matrix(6).replace('"fastpath"]', '"fastpath", "grpcio-aio"]')
    run = run_matrix(parse_matrix(text), server_factory=FakeServers(),
                     runner=ErrorsForGrpcio(), check=False, capture_environment=False)
    out = tmp_path_factory.mktemp("html") / "res"
    write_results(run, out)
    return load_results(out)


def _cells(html_text: str, arm: str):
    """The verdict classes in the table row(s) naming ``arm``."""
    rows = [r for r in html_text.split("<tr>") if f"<td>{arm}</td>" in r]
    return [c for r in rows for c in re.findall(r'class="(tp-\w+)"', r)]


def test_bench_result_shows_its_figures():
    spec = RunSpec(arm="fastpath", mode="fastpath", target="127.0.0.1:1", payload_size=128,
                   concurrency=50, duration=1.0)
    r = FakeRunner()(spec)
    text = r._repr_html_()
    assert "<td>QPS</td><td>1,510</td>" in text
    assert "<td>p99 (ms)</td><td>0.1</td>" in text
    assert 'class="tp-better"' in text and "0 (0.00%)" in text  # no error
    r.errors = 2
    assert 'class="tp-worse"' in r._repr_html_()


def test_results_directory_lists_scenarios_and_arms_with_errors_marked(res):
    text = res._repr_html_()
    assert str(res.path) in text
    assert "<td>stream-path (baseline)</td><td>6</td>" in text
    assert _cells(text, "grpcio-aio") == ["tp-worse"]  # 18 errors
    assert _cells(text, "fastpath") == ["tp-same"]
    assert "<td>18</td>" not in text and ">18</td>" in text


def test_benchstat_comparison_marks_better_and_worse(res):
    comparison = res.comparison(units=["sec/op"])
    text = comparison._repr_html_()
    row = [r for r in text.split("<tr>") if "Unary/128B/c50" in r]
    assert len(row) == 1
    # fastpath: less time per op (better); grpcio-aio: more (worse); both significant
    assert re.findall(r'class="(tp-\w+)"', row[0]) == ["tp-better", "tp-worse"]
    assert "sec/op" in str(comparison) and "stream-path" in str(comparison)
    assert list(comparison.significant["better"]) == [True, False]


def test_paired_table_renders_every_field_and_marks_the_verdict(res):
    table = res.paired_table()
    text = table._repr_html_()
    for field in ("scenario", "arm", "rounds", "median", "geomean", "low", "high", "p",
                  "significant"):
        assert f"<th>{field}</th>" in text
    assert _cells(text, "fastpath") == ["tp-better"]
    assert _cells(text, "grpcio-aio") == ["tp-worse"]
    assert list(table.frame["significant"]) == [True, True]
    assert "fastpath" in str(table)

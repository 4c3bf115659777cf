"""triple_py.bench.load_results: the harness's JSON as tidy DataFrames (no network: the
matrix runs through a fake runner and report.write_results writes the real files)."""
from __future__ import annotations

import json
import math

import pytest

pd = pytest.importorskip("pandas")

from _bench_fakes import FakeRunner, FakeServers  # noqa: E402
from triple_py.bench import load_results  # noqa: E402
from triple_py.bench.running.rounds import run_matrix  # noqa: E402
from triple_py.bench.spec.matrix import parse_matrix  # noqa: E402
from triple_py.bench.report.files import write_results  # noqa: E402
from triple_py.bench.record.result import BenchResult, Latency  # noqa: E402
from triple_py.bench.results.frames import RUN_COLUMNS
from triple_py.bench.results.statistics import conclusions, interval, significant_changes

MATRIX = """
name = "t"
benchmark = "Unary"
baseline = "stream-path"
rounds = 4
duration = 2
warmup = 0
arms = ["stream-path", "fastpath", "grpcio-aio"]
[scenarios]
payload = [128, "1KiB"]
concurrency = [8, 16]
"""


class SeriesRunner(FakeRunner):
    """FakeRunner plus per-second series, a histogram per run and, for grpcio, errors."""

    def __call__(self, spec):
        r = super().__call__(spec)
        r.series = {"calls": [int(r.qps), int(r.qps) // 2], "errors": [0, 1],
                    "p99_ns": [1e5, 2e5]}
        r.elapsed_s = 1.5  # a last, half-second bucket
        r.histogram_corrected = [(10_000, 10), (20_000, 80), (1_000_000, 10)]
        r.histogram = [(10_000, 100)]
        r.cpu = {"process_s": 0.5, "process_cores": 0.25, "process_us_per_call": 3.0}
        if spec.mode == "grpcio-aio":
            r.errors = 2
            r.status_codes = {"OK": r.calls - 2, "UNAVAILABLE": 2}
        return r


def _write(tmp_path, text=MATRIX, runner=None, name="res"):
    run = run_matrix(parse_matrix(text), server_factory=FakeServers(),
                     runner=runner or SeriesRunner(), check=False, capture_environment=False)
    run.environment = {"cpu_model": "test", "commit": "abc", "cpu_count": 2}
    out = tmp_path / name
    write_results(run, out)
    return out


@pytest.fixture(scope="module")
def res_dir(tmp_path_factory):
    return _write(tmp_path_factory.mktemp("results"))


@pytest.fixture(scope="module")
def res(res_dir):
    return load_results(res_dir)


def test_directory_and_json_file_load_the_same(res_dir, res):
    other = load_results(res_dir / "results.json")
    pd.testing.assert_frame_equal(res.runs, other.runs)
    assert res.path == res_dir / "results.json" and res.directory == res_dir


def test_one_row_per_arm_scenario_and_round_in_matrix_order(res):
    runs = res.runs
    assert list(runs.columns) == RUN_COLUMNS
    assert len(runs) == 4 * 3 * 4
    assert not runs.duplicated(["scenario", "arm", "round"]).any()
    assert res.scenarios == ["128B/c8", "128B/c16", "1KiB/c8", "1KiB/c16"]
    assert res.arms == ["stream-path", "fastpath", "grpcio-aio"]
    assert res.baseline == "stream-path"
    assert runs["scenario"].drop_duplicates().tolist() == res.scenarios
    assert runs["order"].tolist() == list(range(len(runs)))
    assert (runs["is_baseline"] == (runs["arm"] == "stream-path")).all()
    assert runs.loc[runs["arm"] == "fastpath", "ours"].all()
    assert not runs.loc[runs["arm"] == "grpcio-aio", "ours"].any()


def test_figures_match_the_json(res_dir, res):
    doc = json.loads((res_dir / "results.json").read_text())
    entry = doc["results"][0]
    row = res.runs[(res.runs["scenario"] == entry["scenario"]["label"])
                   & (res.runs["arm"] == entry["arm"])
                   & (res.runs["round"] == entry["round"])].iloc[0]
    r = entry["result"]
    assert row["qps"] == pytest.approx(r["qps"])
    assert row["p99_ms"] == pytest.approx(r["latency_corrected_ns"]["p99"] / 1e6)
    assert row["p99_9_ms"] == pytest.approx(r["latency_corrected_ns"]["p99.9"] / 1e6)
    assert row["max_ms"] == pytest.approx(r["latency_corrected_ns"]["max"] / 1e6)
    assert row["payload"] == 128 and row["concurrency"] == 8
    assert row["write_syscalls_per_call"] == pytest.approx(0.25)
    assert row["cpu_cores"] == pytest.approx(0.25)
    assert row["calls"] == r["calls"] and row["errors"] == 0
    grpc = res.runs[res.runs["arm"] == "grpcio-aio"].iloc[0]
    assert grpc["errors"] == 2 and grpc["first_error"] == "UNAVAILABLE"
    assert grpc["error_rate"] == pytest.approx(2 / grpc["calls"])
    assert math.isnan(grpc["write_syscalls_per_call"])


def test_histograms_are_long_and_raw(res):
    h = res.histograms
    assert list(h.columns) == ["scenario", "arm", "round", "value_ns", "count"]
    assert len(h) == 48 * 3
    one = h[(h["scenario"] == "128B/c8") & (h["arm"] == "fastpath") & (h["round"] == 2)]
    assert one[["value_ns", "count"]].values.tolist() == [[10_000, 10], [20_000, 80],
                                                          [1_000_000, 10]]
    actual = res.histogram_frame(corrected=False)
    assert actual["value_ns"].unique().tolist() == [10_000]


def test_timeseries_per_second_with_a_partial_last_bucket(res):
    ts = res.timeseries
    assert len(ts) == 48 * 2
    run = ts[(ts["scenario"] == "1KiB/c16") & (ts["arm"] == "stream-path")
             & (ts["round"] == 1)].sort_values("second")
    assert run["second"].tolist() == [0, 1]
    assert run["width_s"].tolist() == pytest.approx([1.0, 0.5])
    calls = run["calls"].tolist()
    assert run["qps"].tolist() == pytest.approx([calls[0], calls[1] / 0.5])
    assert run["p99_ms"].tolist() == pytest.approx([0.1, 0.2])
    orders = res.runs.set_index(["scenario", "arm", "round"])["order"]
    assert run["order"].iloc[0] == orders[("1KiB/c16", "stream-path", 1)]


def test_aggregate_gives_the_t_interval_over_rounds(res):
    agg = res.aggregate("qps")
    assert len(agg) == 12
    assert agg[["scenario", "arm"]].values.tolist()[:3] == [
        ["128B/c8", "stream-path"], ["128B/c8", "fastpath"], ["128B/c8", "grpcio-aio"]]
    row = agg.iloc[1]
    values = res.runs[(res.runs["scenario"] == "128B/c8")
                      & (res.runs["arm"] == "fastpath")]["qps"].tolist()
    mean, lo, hi = interval(values)
    assert row["n"] == 4 and row["mean"] == pytest.approx(mean)
    assert (row["lo"], row["hi"]) == pytest.approx((lo, hi))
    assert row["lo"] < row["mean"] < row["hi"]
    assert row["payload"] == 128 and row["concurrency"] == 8 and not row["is_baseline"]
    by_arm = res.aggregate("p99_ms", by=["arm"])
    assert by_arm["arm"].tolist() == res.arms and (by_arm["n"] == 16).all()


def test_interval():
    mean, lo, hi = interval([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert hi - mean == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert mean - lo == pytest.approx(hi - mean)
    one = interval([5.0])
    assert one[0] == 5.0 and math.isnan(one[1]) and math.isnan(one[2])
    assert interval([2.0, 2.0]) == (2.0, 2.0, 2.0)


def test_latency_distribution_merges_rounds(res):
    d = res.latency_distribution()
    one = d[(d["scenario"] == "128B/c8") & (d["arm"] == "fastpath")]
    assert one["value_ns"].tolist() == [10_000, 20_000, 1_000_000]
    assert one["count"].tolist() == [40, 320, 40]  # 4 rounds merged
    assert one["cumulative"].tolist() == pytest.approx([0.1, 0.9, 1.0])
    assert one["percentile"].tolist() == pytest.approx([10, 90, 100])
    # 1/(1-p); the last point is capped at the resolution of the data (N calls)
    assert one["inverse_tail"].tolist() == pytest.approx([1 / 0.9, 10, 400])


def test_benchstat_frame_puts_the_baseline_first_and_finds_the_faster_arm(res):
    warnings = []
    bs = res.benchstat(units=["sec/op"], warnings=warnings)
    cells = bs[bs["kind"] == "cell"]
    assert cells["col"].drop_duplicates().tolist() == ["stream-path", "fastpath", "grpcio-aio"]
    assert cells[cells["is_baseline"]]["col"].unique().tolist() == ["stream-path"]
    assert set(cells["row"]) == {"Unary/128B/c8", "Unary/128B/c16", "Unary/1KiB/c8",
                                 "Unary/1KiB/c16"}
    fast = cells[cells["col"] == "fastpath"]
    assert fast["significant"].all() and (fast["delta_pct"] < 0).all()
    sig = significant_changes(bs)
    assert set(sig[sig["col"] == "fastpath"]["better"]) == {True}
    assert set(sig[sig["col"] == "grpcio-aio"]["better"]) == {False}
    text = res.benchstat_text(units=["sec/op"])
    assert "stream-path" in text and "fastpath" in text and "vs base" in text


def test_conclusions_cite_only_significant_rows(res):
    bs = res.benchstat(units=["sec/op", "p99-sec"])
    lines = conclusions(bs, res.baseline)
    sig = significant_changes(bs)
    assert len(lines) == len(sig) > 0
    for line, (_, row) in zip(lines, sig.iterrows()):
        assert line.startswith(f"{row['row']}: {row['col']}'s")
        assert row["annotation"] in line
    # p99 is the same for every arm in the fake: no p99 row may be cited
    assert not any("p99" in line for line in lines)


def test_conclusions_say_so_when_nothing_is_significant(tmp_path):
    res = load_results(_write(tmp_path, MATRIX.replace("rounds = 4", "rounds = 2")))
    lines = conclusions(res.benchstat(), res.baseline)
    assert len(lines) == 1 and lines[0].startswith("No change against stream-path")
    assert "2 round(s)" in lines[0]


def test_failed_runs_are_rows_without_figures(tmp_path):
    res = load_results(_write(tmp_path, runner=SeriesRunner(fail="fastpath")))
    failed = res.runs[res.runs["failed"].notna()]
    assert len(failed) == 16 and set(failed["arm"]) == {"fastpath"}
    assert failed["qps"].isna().all() and failed["failed"].str.contains("boom").all()
    assert len(res.measured) == 32
    problems = res.validate(min_rounds=3)
    assert any("failed" in p for p in problems)
    assert any("0 measured round(s)" in p for p in problems)


def test_validate(res):
    problems = res.validate(min_rounds=4, max_error_rate=0.0)
    assert len(problems) == 16 and all("grpcio-aio" in p and "UNAVAILABLE" in p
                                       for p in problems)
    assert res.validate(min_rounds=4, max_error_rate=0.5) == []
    assert len(res.validate(min_rounds=5, max_error_rate=0.5)) == 12


def test_baseline_override(res_dir):
    res = load_results(res_dir, baseline="fastpath")
    assert res.baseline == "fastpath"
    assert (res.runs["is_baseline"] == (res.runs["arm"] == "fastpath")).all()
    bs = res.benchstat(units=["sec/op"])
    assert bs[bs["kind"] == "cell"]["col"].iloc[0] == "fastpath"
    with pytest.raises(ValueError, match="not an arm"):
        load_results(res_dir, baseline="nope")


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results.json"):
        load_results(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_results(tmp_path / "missing")
    bench = tmp_path / "pytest-benchmark.json"
    bench.write_text(json.dumps({"benchmarks": []}))
    with pytest.raises(ValueError, match="not a triple_py.bench results document"):
        load_results(bench)


def test_a_single_run_document_loads(tmp_path):
    """``python -m triple_py.bench run --json`` writes the same schema (one arm, one run)."""
    lat = Latency(count=10, p50=1e5, p99=2e5, max=3e5)
    result = BenchResult(arm="fastpath", mode="fastpath", target="127.0.0.1:1", method="/m",
                         payload_size=64, concurrency=2, calls=10, qps=100.0,
                         latency=lat, latency_corrected=lat, histogram=[(100_000, 10)])
    doc = {"config": {}, "results": [{"name": "Run/64B/c2", "arm": "fastpath", "round": 1,
                                      "position": 0, "scenario": {"payload": 64,
                                                                  "concurrency": 2,
                                                                  "label": "64B/c2"},
                                      "kind": "fastpath", "iters": 10,
                                      "unit_values": {"ns/op": 1e7},
                                      "result": result.to_dict()}]}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc))
    res = load_results(path)
    assert res.arms == ["fastpath"] and res.scenarios == ["64B/c2"]
    assert res.runs["p99_ms"].tolist() == [0.2]
    assert res.histograms["count"].sum() == 10 and res.timeseries.empty


def test_plots_write_every_figure(res, tmp_path):
    pytest.importorskip("matplotlib")
    from triple_py.bench import plots

    figures = {
        "bars": plots.grouped_bars(res, "qps", x="payload", panel="concurrency", log_y=True),
        "bars-missing": plots.grouped_bars(res, "write_syscalls_per_message"),
        "lines": plots.line_vs(res, "p99_ms", x="concurrency", panel="payload"),
        "cdf": plots.latency_cdf(res), "spectrum": plots.percentile_spectrum(res),
        "timeseries": plots.timeseries(res), "tl": plots.throughput_latency(res),
        "errors": plots.errors(res)}
    import matplotlib.pyplot as plt

    for name, fig in figures.items():
        path = plots.save(fig, tmp_path / "figs", name)
        assert path.name == f"{name}.png" and path.stat().st_size > 1000
        plt.close(fig)


def test_inject_parameters_papermill_style():
    nbformat = pytest.importorskip("nbformat")
    from triple_py.bench.jupyter.notebook import inject_parameters

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("results = ''\nstrict = True")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), params, nbformat.v4.new_code_cell("x")]
    inject_parameters(nb, {"results": "/tmp/r", "strict": False})
    assert nb.cells[2].metadata["tags"] == ["injected-parameters"]
    assert "results = '/tmp/r'" in nb.cells[2].source and "strict = False" in nb.cells[2].source
    inject_parameters(nb, {"alpha": 0.01})  # replaces the previous injection
    assert len(nb.cells) == 4 and "alpha = 0.01" in nb.cells[2].source
    with pytest.raises(ValueError):
        inject_parameters(nb, {"not an identifier": 1})
    with pytest.raises(ValueError):
        inject_parameters(nb, {"x": object()})

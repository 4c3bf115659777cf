"""One run spec: a load keyword or a channel option is a row of the core's tables, and the
harness takes it from there.

A RunSpec is the harness's own settings plus ``channel`` (options by their names in
``_triple.CHANNEL_OPTIONS``) and ``load`` (keywords by their names in
``_triple.LOAD_OPTIONS``), checked against the rows (triple_py.bench.spec.knobs). The tests
add a row to each table that no file of the harness names, and follow its value from a
matrix file into the keywords ``run_load`` is called with and out into the CSV, the results
document and the pandas frames; then they do the same with the real load knob
``series_digits`` (a row added to the binding's table without an edit in the harness) and a
real channel option.
"""
from __future__ import annotations

import csv
import io
from typing import Any, Dict, List

import pytest

from _bench_fakes import named_in_code as _named_in_code
from triple_py import _load_options, _options, _triple
from triple_py.bench.arms.loadgen import run_c_spec
from triple_py.bench.errors import ConfigError
from triple_py.bench.report.tidy_csv import CSV_COLUMNS, csv_text
from triple_py.bench.results.document import results_doc
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.running.runner import spec_of
from triple_py.bench.spec.knobs import parse_assignment
from triple_py.bench.spec.matrix import parse_matrix
from triple_py.bench.spec.run_spec import RunSpec

class FakeLoad:
    """Stands in for ``_triple.run_load``: records its keywords, returns a small result."""

    def __init__(self) -> None:
        self.calls: List[Dict[str, Any]] = []

    def __call__(self, host: str, port: int, **kw: Any) -> Dict[str, Any]:
        self.calls.append(kw)
        latency = {"count": 10, "min": 1e5, "mean": 2e5, "p50": 2e5, "p90": 2e5, "p99": 3e5,
                   "p99.9": 3e5, "p99.99": 3e5, "max": 4e5}
        return {"path": kw["path"] or "/benchmark.BenchmarkService/UnaryCall",
                "mode": kw["mode"], "payload_size": kw["payload_size"],
                "concurrency": kw["concurrency"], "connections": kw["connections"],
                "calls": 10, "errors": 0, "qps": 100.0, "elapsed_s": 0.1,
                "latency_ns": latency, "latency_corrected_ns": latency,
                "histogram": [(200000, 10)], "histogram_corrected": [(200000, 10)],
                "status_codes": [10]}


@pytest.fixture
def fake_load(monkeypatch: pytest.MonkeyPatch) -> FakeLoad:
    fake = FakeLoad()
    monkeypatch.setattr(_triple, "run_load", fake)
    return fake


@pytest.fixture
def fake_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A channel option ``fake_window`` (0..1000, key ``triple.fake_window``) and a load
    keyword ``fake_depth`` (1..9) that the core does not have and the harness never names."""
    channel = _options.CoreOption("triple.fake_window", "fake_window", "int", 0, 1000, 10, (),
                                  False)
    load = _load_options.LoadOption("fake_depth", "int", 1, 9, 2, (), False, "",
                                    "a knob of the test")
    monkeypatch.setattr(_options, "CORE_OPTIONS", _options.CORE_OPTIONS + (channel,))
    monkeypatch.setattr(_load_options, "LOAD_OPTIONS", _load_options.LOAD_OPTIONS + (load,))


def _matrix(body: str) -> str:
    return f"""
name = "knobs"
rounds = 2
duration = 0.1
warmup = 0
arms = ["fastpath", "tuned", "grpcio-sync"]
[scenarios]
payload = [64]
concurrency = [2]
{body}
"""


FAKE_MATRIX = _matrix("""channel.fake_window = [100, 700]
[arm.tuned]
mode = "fastpath"
fake_depth = 4
channel.fake_window = 900
""")


def _run(text: str):
    return run_matrix(parse_matrix(text, source="m.toml"), target="127.0.0.1:1", check=False,
                      capture_environment=False)


def test_the_harness_names_neither_fake_row():
    assert _named_in_code("fake_window") == [] and _named_in_code("fake_depth") == []
    # and the finder finds what it looks for
    assert "spec/run_spec.py" in _named_in_code("write_buffer_size")


def test_new_rows_flow_from_a_matrix_file_to_run_load_and_out_to_every_table(
        fake_rows, fake_load, monkeypatch):
    """A channel option and a load keyword added to the tables only: an axis and arm keys
    of the matrix file, the keywords of run_load, columns of the CSV, knobs of each entry
    of results.json and columns of the frames."""
    runner_calls: List[RunSpec] = []
    from triple_py.bench.arms import runners

    original = runners.RUNNERS["fastpath"]
    monkeypatch.setitem(runners.RUNNERS, "fastpath",
                        lambda spec: runner_calls.append(spec) or original(spec))
    monkeypatch.setitem(runners.RUNNERS, "grpcio-sync", lambda spec: runner_calls.append(
        spec) or run_c_spec(spec, "fastpath"))  # no grpcio needed: the C arm's figures
    run = _run(FAKE_MATRIX)

    # the spec the arm was given
    by_arm = {(s.arm, s.channel.get("fake_window")): s for s in runner_calls}
    assert by_arm[("fastpath", 100)].load == {}
    assert by_arm[("tuned", 900)].load == {"fake_depth": 4}
    assert ("grpcio-sync", None) in by_arm  # not our client: the axis does not reach it
    # what run_load was called with
    sent = {(kw.get("fake_window"), kw.get("fake_depth")) for kw in fake_load.calls}
    assert sent == {(100, None), (700, None), (900, 4), (None, None)}  # None: grpcio-sync
    assert all(kw["write_buffer_size"] == RunSpec.write_buffer_size for kw in fake_load.calls
               if "write_buffer_size" in kw)

    rows = list(csv.DictReader(io.StringIO(csv_text(run))))
    header = list(rows[0])
    assert header[:len(CSV_COLUMNS)] == CSV_COLUMNS
    assert header[len(CSV_COLUMNS):] == ["channel.fake_window", "fake_depth"]
    got = {(r["scenario"], r["arm"], r["channel.fake_window"], r["fake_depth"]) for r in rows}
    assert got == {("64B/c2/fake_window=100", "fastpath", "100", ""),
                   ("64B/c2/fake_window=100", "tuned", "900", "4"),
                   ("64B/c2/fake_window=100", "grpcio-sync", "", ""),
                   ("64B/c2/fake_window=700", "fastpath", "700", ""),
                   ("64B/c2/fake_window=700", "tuned", "900", "4"),
                   ("64B/c2/fake_window=700", "grpcio-sync", "", "")}

    doc = results_doc(run)
    tuned = [e for e in doc["results"] if e["arm"] == "tuned"]
    assert {tuple(sorted(e["knobs"].items())) for e in tuned} == {
        (("channel.fake_window", 900), ("fake_depth", 4))}
    assert {e["scenario"]["channel.fake_window"] for e in doc["results"]} == {100, 700}
    assert [a.get("channel") for a in doc["matrix"]["arms"]] == [None, {"fake_window": 900},
                                                                 None]

    pd = pytest.importorskip("pandas")
    from triple_py.bench.results.frames import RUN_COLUMNS, results_from_run

    frame = results_from_run(run).runs
    assert list(frame.columns) == RUN_COLUMNS + ["channel.fake_window", "fake_depth"]
    tuned_rows = frame[frame["arm"] == "tuned"]
    assert set(tuned_rows["channel.fake_window"]) == {900}
    assert set(tuned_rows["fake_depth"]) == {4}
    assert frame[frame["arm"] == "grpcio-sync"]["fake_depth"].isna().all()
    assert isinstance(pd.DataFrame, type)


def test_the_fake_rows_ranges_and_names_are_the_tables(fake_rows):
    with pytest.raises(ConfigError, match=r"m.toml: scenarios.channel.fake_window must be "
                                          r"0..1000, not 1001"):
        parse_matrix(_matrix("channel.fake_window = [1001]"), source="m.toml")
    with pytest.raises(ConfigError, match=r"m.toml: arm 'tuned' key fake_depth must be 1..9, "
                                          r"not 0"):
        parse_matrix(_matrix('[arm.tuned]\nmode = "fastpath"\nfake_depth = 0'),
                     source="m.toml")
    with pytest.raises(ConfigError, match=r"fake_depth: a keyword of the C load generator; "
                                          r"the grpcio-sync arm does not take it"):
        parse_matrix(_matrix('[arm.tuned]\nmode = "grpcio-sync"\nfake_depth = 3'))
    with pytest.raises(ConfigError, match=r"--channel fake_window=-1: "
                                          r"channel.fake_window must be 0..1000, not -1"):
        parse_assignment("fake_window=-1", "--channel", True)
    assert parse_assignment("fake_depth=7", "--load", False) == ("fake_depth", 7)
    assert spec_of(fake_depth=3, channel={"fake_window": 5}).knobs() == {
        "channel.fake_window": 5, "fake_depth": 3}


def test_without_the_rows_the_names_are_unknown():
    with pytest.raises(ConfigError, match="channel.fake_window: the core has no such"):
        parse_matrix(_matrix("channel.fake_window = [1]"))
    with pytest.raises(TypeError, match="fake_depth"):
        spec_of(fake_depth=3)


def test_series_digits_the_real_new_knob_from_a_matrix_file_to_run_load(fake_load):
    """``series_digits`` was added to tri_load_config and the binding's table only; with a
    real channel option (``stream_window``) it goes from a matrix file to run_load."""
    assert _named_in_code("series_digits") == []
    text = _matrix("""channel.stream_window = ["64KiB", 1048576]
[arm.tuned]
mode = "fastpath"
series_digits = 3
""")
    run = _run(text.replace('"grpcio-sync"', '"stream-path"'))
    sent = {(kw["mode"], kw.get("stream_window"), kw.get("series_digits"))
            for kw in fake_load.calls}
    assert sent == {("unary", 65536, None), ("unary", 65536, 3), ("unary", 1048576, None),
                    ("unary", 1048576, 3), ("unary_stream_path", 65536, None),
                    ("unary_stream_path", 1048576, None)}
    rows = list(csv.DictReader(io.StringIO(csv_text(run))))
    assert {(r["arm"], r["channel.stream_window"], r["series_digits"]) for r in rows} == {
        ("fastpath", "65536", ""), ("fastpath", "1048576", ""), ("tuned", "65536", "3"),
        ("tuned", "1048576", "3"), ("stream-path", "65536", ""),
        ("stream-path", "1048576", "")}
    with pytest.raises(ConfigError, match="arm 'tuned' key series_digits must be 1..4, not 5"):
        parse_matrix(_matrix('[arm.tuned]\nmode = "fastpath"\nseries_digits = 5'))


def test_run_keywords_reach_run_load(fake_load):
    from triple_py.bench.arms.runners import run_spec

    spec = spec_of("127.0.0.1:1", concurrency=2, duration=0.1, warmup=0, series_digits=2,
                   channel={"stream_window": 70000, "max_frame_size": 32768})
    result = run_spec(spec)
    kw = fake_load.calls[-1]
    assert (kw["series_digits"], kw["stream_window"], kw["max_frame_size"]) == (2, 70000,
                                                                                 32768)
    assert result.extra["knobs"] == {"channel.stream_window": 70000,
                                     "channel.max_frame_size": 32768, "series_digits": 2}


def test_no_knob_no_change():
    """Without knobs, the CSV has its columns, results.json entries no ``knobs`` key and
    run_load the keywords it always had."""
    from _bench_fakes import FakeRunner, FakeServers, two_arm_matrix

    run = run_matrix(parse_matrix(two_arm_matrix(1)), server_factory=FakeServers(),
                     runner=FakeRunner(), check=False, capture_environment=False)
    assert csv_text(run).splitlines()[0].split(",") == CSV_COLUMNS
    assert all("knobs" not in e for e in results_doc(run)["results"])


@pytest.mark.parametrize("channel, message", [
    ({"write_buffer_size": 2**32}, "write buffer size (bytes) must be 0..2147483647"),
    ({"stream_window": 0}, "channel.stream_window must be 1..2147483647, not 0"),
    ({"wire": "http"}, "unknown wire 'http'"),
    ({"dialect": "java"}, "channel.dialect must be one of auto, go, spec, not 'java'"),
    ({"max_receive": -2}, "channel.max_receive must be 0..9223372036854775807 or -1"),
    ({"tls": "yes"}, "channel.tls must be true or false"),
])
def test_run_spec_checks_channel_options_by_the_core_rows(channel, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RunSpec(arm="a", mode="fastpath", target="h:1", channel=channel).validate()


def test_channel_options_and_arms():
    """Our Python-API arms take the channel options that have a key; grpcio takes none."""
    spec = RunSpec(arm="a", mode="triple-py-sync", target="h:1",
                   channel={"stream_window": 1 << 20}).validate()
    assert ("triple.stream_window", 1 << 20) in spec.channel_pairs()
    with pytest.raises(ConfigError, match="channel.compression: the triple-py-sync arm does "
                                          "not take it"):
        RunSpec(arm="a", mode="triple-py-sync", target="h:1",
                channel={"compression": 1}).validate()
    with pytest.raises(ConfigError, match="channel.stream_window: the grpcio-sync arm"):
        RunSpec(arm="a", mode="grpcio-sync", target="h:1",
                channel={"stream_window": 1 << 20}).validate()
    moved = RunSpec(arm="a", mode="fastpath", target="h:1", channel={"write_buffer_size": 0})
    assert (moved.write_buffer_size, moved.channel) == (0, {})


@pytest.mark.parametrize("args, message", [
    (["--channel", "stream_window=0"],
     "--channel stream_window=0: channel.stream_window must be 1..2147483647, not 0"),
    (["--channel", "nope=1"], "--channel nope=1: channel.nope: the core has no such"),
    (["--load", "series_digits=9"], "--load series_digits=9: series_digits must be 1..4"),
    (["--load", "concurrency=9"], "concurrency: a setting of the harness's own"),
    (["--load", "series_digits"], "--load 'series_digits': expected NAME=VALUE"),
])
def test_cli_knob_flags_check_by_the_tables(capsys, args, message):
    from triple_py.bench.cli import main

    assert main(["run", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_cli_knob_flags_reach_run_load_and_the_csv(capsys, tmp_path, fake_load):
    from triple_py.bench.cli import main

    out = tmp_path / "r.csv"
    assert main(["run", "--target", "127.0.0.1:1", "--no-check", "-z", "0.1", "--warmup",
                 "0", "-c", "2", "--load", "series_digits=3", "--channel",
                 "stream_window=64KiB", "--channel", "triple.max_frame_size=32768",
                 "--csv", str(out)]) == 0
    capsys.readouterr()
    kw = fake_load.calls[-1]
    assert (kw["series_digits"], kw["stream_window"], kw["max_frame_size"]) == (3, 65536,
                                                                                 32768)
    row = next(csv.DictReader(out.open()))
    assert (row["series_digits"], row["channel.stream_window"],
            row["channel.max_frame_size"]) == ("3", "65536", "32768")


def test_knobs_survive_results_json_and_its_reader(fake_rows, fake_load):
    """A saved run read back (what ``triple-bench report DIR`` does) gives the same CSV,
    knob columns included."""
    import json

    from triple_py.bench.results.reader import run_from_document

    run = _run(FAKE_MATRIX.replace('"grpcio-sync"', '"stream-path"'))
    again = run_from_document(json.loads(json.dumps(results_doc(run))), "results.json")
    assert csv_text(again) == csv_text(run)
    assert "channel.fake_window" in csv_text(again).splitlines()[0]

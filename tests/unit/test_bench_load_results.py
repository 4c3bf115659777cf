"""One result model: a figure of the C load generator is a row of the binding's result
table (``_triple.LOAD_RESULTS``), and the harness takes it from there.

The tests add a row that the core does not have and no file of the harness names, make a
fake ``run_load`` return it, and follow it into ``BenchResult.extra``, the CSV, the results
document (written and read back) and the pandas frames; a distributed run's merge adds it
up over the workers, as a counter. Without the row, the same key is left out: the harness
copies the table's figures, not whatever a result dict holds.
"""
from __future__ import annotations

import csv
import io
from typing import Any, Dict, List

import pytest

from _bench_fakes import named_in_code
from triple_py import _load_results, _triple
from triple_py.bench.distributed.merge import Part, merge_parts
from triple_py.bench.record.load_figures import CONVERTED, EXTRA_WITHOUT_COLUMN
from triple_py.bench.record.result import BenchResult
from triple_py.bench.report.files import write_results
from triple_py.bench.report.text import comparison
from triple_py.bench.report.tidy_csv import CSV_COLUMNS, csv_text
from triple_py.bench.results.document import results_doc
from triple_py.bench.results.reader import read_results
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix

FAKE = "fake_retries"

MATRIX = """
name = "figures"
rounds = 2
duration = 0.1
warmup = 0
arms = ["fastpath", "stream-path"]
[scenarios]
payload = [64]
concurrency = [2]
"""


class FakeLoad:
    """Stands in for ``_triple.run_load``: a small result with every modelled key, the
    figures that results kept in ``extra`` before, and the fake counter (7 per run)."""

    def __init__(self) -> None:
        self.calls: List[Dict[str, Any]] = []

    def __call__(self, host: str, port: int, **kw: Any) -> Dict[str, Any]:
        self.calls.append(kw)
        latency = {"count": 10, "min": 1e5, "mean": 2e5, "p50": 2e5, "p90": 2e5, "p99": 3e5,
                   "p99.9": 3e5, "p99.99": 3e5, "max": 4e5}
        return {"mode": kw["mode"], "target": f"{host}:{port}",
                "path": kw["path"] or "/benchmark.BenchmarkService/UnaryCall",
                "payload_size": kw["payload_size"], "concurrency": kw["concurrency"],
                "connections": kw["connections"], "missed": 0, "response_bytes": 640,
                "late_ns": 0, "calls": 10, "errors": 0, "qps": 100.0, "elapsed_s": 0.1,
                "latency_ns": latency, "latency_corrected_ns": latency,
                "histogram": [(200000, 10)], "histogram_corrected": [(200000, 10)],
                "status_codes": [10], "interrupted": False, FAKE: 7}


@pytest.fixture
def fake_load(monkeypatch: pytest.MonkeyPatch) -> FakeLoad:
    fake = FakeLoad()
    monkeypatch.setattr(_triple, "run_load", fake)
    return fake


@pytest.fixture
def fake_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """A counter ``fake_retries`` in the result table, which the core does not have."""
    row = _load_results.LoadResult(FAKE, "count", "calls", "a counter of the test")
    monkeypatch.setattr(_load_results, "LOAD_RESULTS", _load_results.LOAD_RESULTS + (row,))


def _run():
    return run_matrix(parse_matrix(MATRIX, source="m.toml"), target="127.0.0.1:1",
                      check=False, capture_environment=False)


def test_the_harness_does_not_name_the_fake_figure():
    assert named_in_code(FAKE) == []
    assert FAKE not in {r.name for r in _load_results.LOAD_RESULTS}


def test_a_new_row_reaches_extra_the_csv_the_document_and_the_frames(fake_row, fake_load,
                                                                     tmp_path):
    run = _run()
    assert len(fake_load.calls) == 4
    results = [r.result for r in run.runs]
    assert all(r.extra[FAKE] == 7 for r in results)
    # the figures extra had before are there as they were, the modelled keys are not
    assert all(r.extra["response_bytes"] == 640 and "path" not in r.extra
               and "interrupted" not in r.extra and "calls" not in r.extra for r in results)

    rows = list(csv.DictReader(io.StringIO(csv_text(run))))
    assert list(rows[0]) == CSV_COLUMNS + [FAKE]  # a column; response_bytes has none
    assert {r[FAKE] for r in rows} == {"7"}

    doc = results_doc(run)
    assert {e["result"]["extra"][FAKE] for e in doc["results"]} == {7}

    write_results(run, tmp_path, comparison(run))
    again = read_results(tmp_path)
    assert [r.result.extra[FAKE] for r in again.runs] == [7] * 4
    assert (tmp_path / "results.csv").read_text().splitlines()[0].endswith("," + FAKE)

    pytest.importorskip("pandas")
    from triple_py.bench.results.frames import RUN_COLUMNS, load_results, results_from_run

    for frame in (results_from_run(run).runs, load_results(tmp_path).runs):
        assert list(frame.columns) == RUN_COLUMNS + [FAKE]
        assert str(frame[FAKE].dtype) == "Int64" and list(frame[FAKE]) == [7] * 4


def test_a_counter_adds_up_over_the_workers_of_a_distributed_run(fake_row, fake_load):
    run = _run()
    parts = [Part(worker=f"w{i}", result=r.result, window_start_ns=0)
             for i, r in enumerate(run.runs[:2])]
    merged = merge_parts(parts)
    assert merged.extra[FAKE] == 14 and merged.extra["response_bytes"] == 1280


def test_without_the_row_the_key_is_left_out(fake_load):
    run = _run()
    assert all(FAKE not in r.result.extra for r in run.runs)
    assert csv_text(run).splitlines()[0].split(",") == CSV_COLUMNS


def test_the_interrupt_marker_and_run_loads_interrupted_are_one_figure(fake_load,
                                                                        monkeypatch):
    """``interrupted`` of run_load (a stop) is ``extra["stopped"]``; ``extra["interrupted"]``
    stays the signal's mark alone."""
    from triple_py.bench.arms.loadgen import result_from_load

    raw = FakeLoad()("127.0.0.1", 1, mode="unary", path=None, payload_size=1, concurrency=1,
                     connections=1)
    assert "interrupted" in CONVERTED
    assert "interrupted" not in result_from_load(raw, arm="a", mode="fastpath",
                                                 target="t").extra
    stopped = dict(raw, interrupted=True)
    monkeypatch.setattr(_triple, "run_load", lambda *a, **kw: stopped)
    from triple_py.bench.arms.loadgen import run_c_load

    result = run_c_load(arm="a", mode="fastpath", target="127.0.0.1:1", method="",
                        payload_size=1, concurrency=1, connections=1, duration=0.1,
                        warmup=0)
    assert result.extra["stopped"] is True and "interrupted" not in result.extra


def test_the_model_s_sets_name_rows_of_the_table():
    """Every name the record module keeps out of extra or out of the columns is a row (a
    renamed or removed row has to be followed there)."""
    names = {r.name for r in _load_results.LOAD_RESULTS}
    assert CONVERTED <= names and EXTRA_WITHOUT_COLUMN <= names
    fields = set(BenchResult.__dataclass_fields__)
    assert not (CONVERTED | EXTRA_WITHOUT_COLUMN) & fields

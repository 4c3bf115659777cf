"""The results document's format: versioned, read back into the one result model (the
records reports, frames and benchstat read), older versions converted, unknown ones refused;
``triple-bench report DIR`` makes a stored round's report files again, byte for byte."""
from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from _bench_fakes import FakeRunner, FakeServers
from triple_py import __version__
from triple_py.bench.cli import main
from triple_py.bench.report.files import write_reports, write_results
from triple_py.bench.report.text import comparison
from triple_py.bench.results.document import FORMAT, VERSION, results_doc
from triple_py.bench.results.frames import load_results, results_from_run
from triple_py.bench.results.reader import (KNOWN_VERSIONS, ResultsFormatError, read_results,
                                           run_from_document)
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix

STORED = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
#: Every stored results document (each made by a matrix run).
DOCUMENTS = sorted(p for p in STORED.rglob("results.json*"))
#: The stored rounds whose report files the current code must reproduce exactly.
LATEST = ["2026-12-04-headline", "2026-12-04-cpu-per-call-go",
          "2026-12-04-cpu-per-call-go-handoff"]
COMPARED = ["verdicts.txt", "summary.txt", "bench.txt", "results.csv", "paired.csv",
            "comparison.txt"]

MATRIX = """
name = "t"
benchmark = "Unary"
baseline = "stream-path"
rounds = 3
duration = 0.1
warmup = 0
arms = ["stream-path", "fastpath", "grpcio-aio"]
compare = [["fastpath", "stream-path"]]
[scenarios]
payload = [128, "1KiB"]
concurrency = [50]
"""


@pytest.fixture(scope="module")
def matrix_run():
    return run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=FakeRunner(),
                      check=False, capture_environment=False)


def _doc(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _plain(doc: dict) -> dict:
    return json.loads(json.dumps(doc, default=str))


def test_the_stored_documents_are_there():
    assert {p.parent.name for p in DOCUMENTS} >= set(LATEST) | {
        "2026-12-01-headline", "2026-12-01-headline-quiet"}


def test_a_document_carries_its_format_and_version(matrix_run):
    doc = results_doc(matrix_run)
    assert (doc["format"], doc["version"]) == (FORMAT, VERSION) == (
        "triple_py.bench/results", 2)
    assert doc["triple_py"] == __version__
    assert max(KNOWN_VERSIONS) == VERSION


def test_a_run_read_back_is_the_same_run(matrix_run, tmp_path):
    """Writing a run and reading it back gives the same model: the same document, and the
    same report files."""
    write_results(matrix_run, tmp_path / "live", comparison(matrix_run))
    again = read_results(tmp_path / "live")
    assert _plain(results_doc(again)) == _plain(results_doc(matrix_run))
    write_reports(again, tmp_path / "read", comparison(again))
    for name in COMPARED:
        assert (tmp_path / "read" / name).read_bytes() == (tmp_path / "live" / name).read_bytes()
    assert [(r.label, r.arm.name, r.round) for r in again.runs] == [
        (r.label, r.arm.name, r.round) for r in matrix_run.runs]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.parent.name)
def test_every_stored_document_reads_into_the_model(path):
    """Each stored document reads into the model.  A version 2 document written again is
    the same document; a version 1 one (no version key) converts, and written again it is
    the same document plus what version 2 adds."""
    stored = _doc(path)
    run = read_results(path)
    if "version" in stored:
        assert (stored["format"], stored["version"]) == (FORMAT, 2)
        assert _plain(results_doc(run)) == stored
        return
    assert len(run.runs) == len(stored["results"]) + len(stored["failed"])
    assert run.version == stored.get("triple_py", stored["environment"]["triple_py"])
    assert (run.goos, run.goarch, run.cpus) == (stored["config"]["goos"],
                                                stored["config"]["goarch"],
                                                stored["environment"]["cpu_count"])
    again = _plain(results_doc(run))
    added = {"format", "version", "target", "interrupted", "interrupt_signal", "triple_py",
             "capacities"}
    assert {k: v for k, v in again.items() if k not in added | {"results", "matrix"}} == {
        k: v for k, v in stored.items() if k not in added | {"results", "matrix"}}
    assert [{k: v for k, v in e.items() if k != "started"} for e in again["results"]] == \
        stored["results"]
    assert {k: v for k, v in again["matrix"].items() if k != "capacity"} == {
        k: v for k, v in stored["matrix"].items() if k != "capacity"}


@pytest.mark.parametrize("name", LATEST)
def test_report_regenerates_the_latest_stored_rounds_byte_for_byte(name, tmp_path, capsys):
    """``triple-bench report`` from the saved document: the same verdicts, summary, Go
    bench lines, CSVs and comparison as the round wrote, with the version line of the
    document."""
    assert main(["report", str(STORED / name), "--out", str(tmp_path)]) == 0
    for file in COMPARED:
        assert (tmp_path / file).read_bytes() == (STORED / name / file).read_bytes(), file
    assert (tmp_path / "report.html").is_file()
    assert sorted(p.name for p in (tmp_path / "benchstat").iterdir()) == sorted(
        f"{a['name']}.txt" for a in _doc(STORED / name / "results.json")["matrix"]["arms"])


# The rounds of 2026-12-01 were written by an earlier harness; the files differ from the
# regenerated ones in exactly these ways, each a later change of the writers, not of the
# figures:
# - summary.txt starts with "triple_py <version>" and a blank line, the Go header of
#   bench.txt and comparison.txt ends in "# triple_py <version>", and results.csv has a last column triple_py: the
#   writers record the version since the package metadata commit ("the version in every
#   results file"); the document has it in its environment.
# - verdicts.txt and comparison.txt: an inconclusive verdict whose estimate of the rounds
#   needed is capped reads "needs more than 1000 rounds" since the commit "Verdicts: a
#   capped estimate reads 'needs more than 1000 rounds'" (before: "needs more than 990
#   more rounds", the cap minus the rounds made).
# - comparison.txt of 2026-12-01-headline has the verdicts after benchstat's tables: it
#   predates the commit "The report starts with its verdicts (comparison.txt and the
#   terminal), the evidence after them"; the same blocks, in another order.
OLDER = ["2026-12-01-headline", "2026-12-01-headline-quiet"]
VERDICTS_LAST = {"2026-12-01-headline"}


def _as_written_then(name: str, text: str) -> str:
    if name == "summary.txt":
        head, rest = text.split("\n\n", 1)
        assert head == f"triple_py {__version__}"
        return rest
    if name in ("bench.txt", "comparison.txt"):
        text = text.replace(f"# triple_py {__version__}\n", "", 1)
    if name == "results.csv":
        lines = text.splitlines(keepends=True)
        assert lines[0].rstrip("\r\n").endswith(",triple_py")
        return "".join(line.rstrip("\r\n").rsplit(",", 1)[0] + line[len(line.rstrip("\r\n")):]
                       for line in lines)
    return text.replace("needs more than 1000 rounds", "needs more than 990 more rounds")


@pytest.mark.parametrize("name", OLDER)
def test_report_regenerates_the_older_rounds_but_for_the_documented_changes(name, tmp_path):
    assert main(["report", str(STORED / name), "--out", str(tmp_path)]) == 0
    for file in COMPARED:
        made = _as_written_then(file, (tmp_path / file).read_text(encoding="utf-8"))
        stored = (STORED / name / file).read_text(encoding="utf-8")
        if file == "comparison.txt" and name in VERDICTS_LAST:
            assert made != stored
            made, stored = (sorted(b.strip() for b in t.split("\n\n")) for t in (made, stored))
        assert made == stored, file


def test_report_leaves_differing_files_alone_unless_forced(tmp_path, capsys):
    source = STORED / "2026-12-04-cpu-per-call-go"
    (tmp_path / "results.json").write_bytes((source / "results.json").read_bytes())
    assert main(["report", str(tmp_path)]) == 0  # new files
    assert main(["report", str(tmp_path / "results.json")]) == 0  # unchanged
    assert "0 replaced, 13 unchanged" in capsys.readouterr().out
    (tmp_path / "verdicts.txt").write_text("edited\n")
    assert main(["report", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "verdicts.txt" in err and "--force" in err
    assert (tmp_path / "verdicts.txt").read_text() == "edited\n"
    assert main(["report", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "verdicts.txt").read_bytes() == (source / "verdicts.txt").read_bytes()


def test_report_names_a_missing_or_foreign_document(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no results.json" in capsys.readouterr().err
    (tmp_path / "results.json").write_text(json.dumps([{"size": 128}]))
    assert main(["report", str(tmp_path)]) == 2
    assert "not a triple_py.bench results document" in capsys.readouterr().err


def _v1(doc: dict) -> dict:
    """A document as the first harness wrote it: no format, version, triple_py,
    capacities, capacity spec or start times per entry."""
    old = copy.deepcopy(_plain(doc))
    for key in ("format", "version", "triple_py", "capacities", "target", "interrupted",
                "interrupt_signal"):
        old.pop(key, None)
    old["matrix"].pop("capacity", None)
    for e in old["results"] + old["failed"]:
        e.pop("started", None)
    return old


def test_a_synthetic_version_1_document_converts(matrix_run, tmp_path):
    live = tmp_path / "live"
    write_results(matrix_run, live, comparison(matrix_run))
    old = _v1(results_doc(matrix_run))
    run = run_from_document(old, "old.json")
    assert run.version == ""  # neither the top level nor the environment names it
    write_reports(run, tmp_path / "old", comparison(run))
    assert not (tmp_path / "old" / "summary.txt").read_text().startswith("triple_py")
    for file in ("verdicts.txt", "paired.csv"):
        assert (tmp_path / "old" / file).read_bytes() == (live / file).read_bytes()
    assert (tmp_path / "old" / "summary.txt").read_text() == (
        live / "summary.txt").read_text().split("\n\n", 1)[1]
    old["environment"]["triple_py"] = "0.0.9"
    assert run_from_document(old, "old.json").version == "0.0.9"
    frames = results_from_run(run)
    assert len(frames.measured) == len(matrix_run.runs)


def test_a_version_1_document_without_a_matrix_section_converts(matrix_run):
    old = _v1(results_doc(matrix_run))
    del old["matrix"]
    run = run_from_document(old, "old.json")
    assert run.matrix.benchmark == "Unary" and run.matrix.rounds == 3
    assert [a.name for a in run.matrix.arms] == ["stream-path", "fastpath", "grpcio-aio"]
    assert [run.matrix.label(s) for s in run.matrix.scenarios] == ["128B/c50", "1KiB/c50"]


def test_an_unknown_version_is_refused_naming_everything(matrix_run, tmp_path):
    doc = _plain(results_doc(matrix_run))
    doc["version"], doc["triple_py"] = 3, "9.0"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsFormatError) as info:
        read_results(tmp_path)
    message = str(info.value)
    assert str(path) in message and "version 3" in message and "1, 2" in message
    assert __version__ in message and "triple_py 9.0" in message
    with pytest.raises(ValueError, match="version 3"):
        load_results(path)
    doc["format"] = "something/else"
    with pytest.raises(ResultsFormatError, match="not a triple_py.bench results document"):
        run_from_document(doc, "x.json")


def test_frames_come_from_the_model(matrix_run, tmp_path):
    """load_results reads the document into the model and builds the frames from it: the
    same frames as from the live run."""
    write_results(matrix_run, tmp_path, comparison(matrix_run))
    loaded = load_results(tmp_path)
    live = results_from_run(matrix_run)
    assert loaded.runs.drop(columns=["target"]).equals(live.runs.drop(columns=["target"]))
    assert loaded.histograms.equals(live.histograms)
    assert loaded.document["version"] == VERSION


OTHER_JSON = sorted(p for p in STORED.rglob("*.json") if p.name != "results.json")


@pytest.mark.parametrize("path", OTHER_JSON, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_other_stored_json_files_are_refused_by_name(path):
    """The rest of benchmarks/results/ (instruction counts, micro-benchmarks...) is not a
    results document: the reader says so, naming the file."""
    with pytest.raises(ResultsFormatError, match="not a triple_py.bench results document"):
        read_results(path)


KNOB_MATRIX = """
name = "k"
benchmark = "K"
rounds = 2
duration = 0.1
warmup = 0
arms = ["stream-path", "fastpath", "tuned"]
[scenarios]
payload = [128]
concurrency = [50]
channel.stream_window = [65535, "1MiB"]
[arm.tuned]
mode = "fastpath"
series_digits = 3
channel.max_frame_size = 32768
"""


def test_a_run_with_knobs_reads_back_the_same(tmp_path):
    """Knob axes and an arm's knobs survive the document: the same document, CSV (a column
    per knob) and summary from the read-back run."""
    run = run_matrix(parse_matrix(KNOB_MATRIX), server_factory=FakeServers(),
                     runner=FakeRunner(), check=False, capture_environment=False)
    write_results(run, tmp_path / "live", comparison(run))
    again = read_results(tmp_path / "live")
    assert _plain(results_doc(again)) == _plain(results_doc(run))
    write_reports(again, tmp_path / "read", comparison(again))
    for name in COMPARED:
        assert (tmp_path / "read" / name).read_bytes() == (tmp_path / "live" / name).read_bytes()
    assert "channel.stream_window" in (tmp_path / "read" / "results.csv").read_text()

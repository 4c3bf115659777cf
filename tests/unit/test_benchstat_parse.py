"""Input parsing: Go benchmark text, harness JSON and pytest-benchmark JSON."""

from __future__ import annotations

import json
import math

import pytest

from test_benchstat_helpers import import_benchstat, run_cli

import_benchstat()
from triple_py.benchstat import parse  # noqa: E402
from triple_py.benchstat.json_inputs import read_json_results  # noqa: E402


def read(text: str, name: str = "f.txt", units=None):
    units = units if units is not None else parse.UnitMetadataMap()
    return list(parse.read_benchmark_text(text.encode(), name, name, units))


def errors_of(records):
    return [str(r) for r in records if isinstance(r, parse.BenchSyntaxError)]


def results_of(records):
    return [r for r in records if isinstance(r, parse.Result)]


@pytest.mark.parametrize("line, message", [
    ("BenchmarkX ", "missing iteration count"),
    ("BenchmarkX abc 1 ns/op", "parsing iteration count: invalid syntax"),
    ("BenchmarkX 99999999999999999999 1 ns/op", "parsing iteration count: value out of range"),
    ("BenchmarkX 10", "missing measurements"),
    ("BenchmarkX 10 5", "missing units"),
    ("BenchmarkX 10 5 ns/op 7", "missing units"),
    ("BenchmarkX 10 abc ns/op", "parsing measurement: invalid syntax"),
    ("BenchmarkX 10 1e999 ns/op", "parsing measurement: value out of range"),
    ("BenchmarkX 10 1__0 ns/op", "parsing measurement: invalid syntax"),
    ("BenchmarkX 10 0x10 ns/op", "parsing measurement: invalid syntax"),
    ("Unit", "missing unit"),
    ("Unit ns/op assume", "expected key=value"),
    ("Unit ns/op =exact", "expected key=value"),
])
def test_syntax_errors_use_reference_messages(line, message):
    records = read("goos: linux\n" + line + "\nBenchmarkOK 1 2 ns/op\n")
    assert errors_of(records) == ["f.txt:2: " + message]
    assert [r.name for r in results_of(records)] == ["OK"]


def test_conflicting_unit_metadata_across_files():
    units = parse.UnitMetadataMap()
    assert read("Unit ns/op assume=exact\n", "a.txt", units) == []
    records = read("Unit sec/op assume=nothing\nUnit ns/op assume=exact\n", "b.txt", units)
    assert errors_of(records) == ["b.txt:1: metadata assume of unit sec/op already set to exact"]
    assert units.assumption("sec/op") == "exact" and units.assumption("ns/op") == "exact"


def test_name_only_lines_are_skipped_silently():
    records = read("BenchmarkEncode/format=json-48\nBenchmarkEncode/format=json-48 10 1 ns/op\n")
    assert errors_of(records) == []
    assert len(results_of(records)) == 1


def test_values_are_tidied_and_keep_original_units():
    (res,) = read("BenchmarkX 10 1000.5 ns/op 100 MB/s 3 B/op 7 frobs\n")
    assert [(v.value, v.unit) for v in res.values] == [
        (1000.5 * 1e-9, "sec/op"), (1e8, "B/s"), (3.0, "B/op"), (7.0, "frobs")]
    assert res.values[0].orig_unit == "ns/op" and res.values[2].orig_unit == ""
    assert res.iters == 10


@pytest.mark.parametrize("text, value", [
    ("1e3", 1000.0), ("0x1p4", 16.0), ("1_000", 1000.0), ("+5", 5.0), (".5", 0.5),
    ("5.", 5.0), ("-2.5E-3", -0.0025), ("Inf", math.inf), ("-infinity", -math.inf),
    ("1e-400", 0.0),
])
def test_go_float_syntax(text, value):
    assert parse.parse_go_float(text) == value


def test_go_nan_is_accepted():
    assert math.isnan(parse.parse_go_float("NaN"))


@pytest.mark.parametrize("text", ["_1", "1_", "1e", "0x", "0x1.8", "+nan", "infin", "1,5", "١"])
def test_go_float_rejects(text):
    with pytest.raises(parse.GoNumberError, match="invalid syntax"):
        parse.parse_go_float(text)


def test_config_lines_order_deletion_and_validity():
    text = ("a: 1\nb: 2\nc: 3\na:\nKey: ignored\nkey:novalue-space\nk y: no\n"
            "tab:\tvalue with  spaces \nBenchmarkX 1 1 ns/op\n")
    (res,) = read(text)
    assert [(c.key, c.value, c.file) for c in res.config] == [
        (".file", "f.txt", False), ("c", "3", True), ("b", "2", True),
        ("tab", "value with  spaces ", True)]


def test_config_resets_per_file_but_units_do_not():
    units = parse.UnitMetadataMap()
    first = results_of(read("goos: linux\nUnit x assume=exact\nBenchmarkA 1 1 x\n", "a", units))
    second = results_of(read("BenchmarkA 1 1 x\n", "b", units))
    assert first[0].get_config("goos") == "linux"
    assert second[0].get_config("goos") is None
    assert units.assumption("x") == "exact"


def test_crlf_and_unicode_spaces():
    (res,) = read("goos: linux\r\nBenchmarkX\u00a010\u20031 ns/op\r\n")
    assert res.get_config("goos") == "linux" and res.name == "X" and res.values[0].unit == "sec/op"


def test_overlong_line_is_fatal_with_scanner_message():
    ok_line = "# " + "x" * (parse.MAX_LINE_BYTES - 3) + "\n"
    assert read(ok_line + "BenchmarkX 1 1 ns/op\n")
    too_long = "# " + "x" * (parse.MAX_LINE_BYTES - 2) + "\n"
    with pytest.raises(parse.FatalInputError, match=r"^f.txt:1: bufio.Scanner: token too long$"):
        read("goos: linux\n" + too_long)


@pytest.mark.parametrize("name, base, parts", [
    ("Encode/format=json-48", "Encode", ["/format=json", "-48"]),
    ("Hash/128B-8", "Hash", ["/128B", "-8"]),
    ("Sort-8", "Sort", ["-8"]),
    ("Sort-", "Sort-", []),
    ("A/b-c/d", "A", ["/b-c", "/d"]),
])
def test_benchmark_name_parts(name, base, parts):
    assert parse.name_parts(name) == (base, parts)
    assert parse.name_base(name) == base


def test_cli_reports_errors_and_still_prints_table():
    bad = b"BenchmarkX 10 abc ns/op\nBenchmarkX 10 5\nBenchmarkX 10 5 ns/op\nBenchmarkX 10 6 ns/op\n"
    proc = run_cli(["-"], stdin=bad)
    assert proc.returncode == 0
    assert proc.stderr.decode() == "-:1: parsing measurement: invalid syntax\n-:2: missing units\n"
    assert b"Traceback" not in proc.stderr
    assert proc.stdout.decode().splitlines()[2].startswith("X   5.500n")


@pytest.mark.parametrize("content", [
    b"\xff\xfe garbage \x00\n", b"{not json", b'{"results": 3}', b'{"results": [1, {"name": 2}]}',
    b'{"benchmarks": [{"name": "t", "stats": {}}]}', b"[1, 2]", b"Benchmark\n",
    b"BenchmarkX 1 1 ns/op\n" * 3 + b"Unit\nUnit x y z\n",
])
def test_malformed_inputs_never_produce_a_traceback(content, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(content)
    proc = run_cli([str(path)])
    assert proc.returncode == 0
    assert b"Traceback" not in proc.stderr


# --- JSON inputs ---------------------------------------------------------------------

HARNESS = {
    "config": {"goos": "linux", "runs": 3},
    "results": [
        {"name": "BenchmarkUnary/payload=128/conc=50", "arm": arm, "round": r,
         "unit_values": {"sec/op": sec, "ops/s": ops}}
        for r in range(1, 7)
        for arm, sec, ops in (("baseline", 1.2e-5 + r * 1e-7, 80000 - r * 100),
                              ("fastpath", 1.0e-5 + r * 1e-7, 95000 - r * 100))
    ],
}


def harness_as_text() -> str:
    lines = ["goos: linux", "runs: 3"]
    for entry in HARNESS["results"]:
        lines.append("arm: " + entry["arm"])
        values = " ".join("%r %s" % (v, u) for u, v in entry["unit_values"].items())
        lines.append("%s 1 %s" % (entry["name"], values))
    return "\n".join(lines) + "\n"


def test_harness_json_is_read_like_benchmark_text():
    records = list(read_json_results(json.dumps(HARNESS).encode(), "h.json", "h.json"))
    text_records = read(harness_as_text(), "h.json")
    assert errors_of(records) == []
    assert [(r.name, [(c.key, c.value) for c in r.config], [(v.value, v.unit) for v in r.values])
            for r in records] == \
        [(r.name, [(c.key, c.value) for c in r.config], [(v.value, v.unit) for v in r.values])
         for r in results_of(text_records)]


def test_harness_json_cli_output_equals_text_cli_output(tmp_path):
    (tmp_path / "h.json").write_text(json.dumps(HARNESS))
    (tmp_path / "h.txt").write_text(harness_as_text())
    from_json = run_cli(["-col", "arm", "h.json"], cwd=tmp_path)
    from_text = run_cli(["-col", "arm", "h.txt"], cwd=tmp_path)
    assert from_json.returncode == 0 and from_json.stderr == b""
    assert from_json.stdout == from_text.stdout
    assert "fastpath" in from_json.stdout.decode() and "ops/s" in from_json.stdout.decode()


def test_harness_json_errors_are_reported_per_entry():
    doc = {"results": [{"unit_values": {"sec/op": 1}}, {"name": "X", "unit_values": {"sec/op": "fast"}},
                       {"name": "X"}, {"name": "Y", "unit_values": {"ns/op": 5}, "iters": "many"},
                       {"name": "Z", "unit_values": {"ns/op": 5}}]}
    records = list(read_json_results(json.dumps(doc).encode(), "h.json", "h.json"))
    assert errors_of(records) == [
        "h.json:1: results[0]: missing name",
        "h.json:2: results[1]: parsing measurement: invalid syntax (sec/op)",
        "h.json:3: results[2]: missing measurements",
        "h.json:4: results[3]: parsing iteration count: invalid syntax",
    ]
    (ok,) = results_of(records)
    assert ok.name == "Z" and ok.values[0].unit == "sec/op" and ok.values[0].value == 5e-9


def pytest_benchmark_doc(data_by_param):
    return {"machine_info": {}, "commit_info": {}, "benchmarks": [
        {"group": None, "name": "test_encode[%s]" % fmt, "fullname": "t.py::test_encode[%s]" % fmt,
         "params": {"fmt": fmt}, "stats": {"data": data, "iterations": 1, "rounds": len(data)}}
        for fmt, data in data_by_param.items()]}


def test_pytest_benchmark_json_matches_equivalent_text(tmp_path):
    data = {"json": [1.0e-3, 1.1e-3, 0.9e-3, 1.05e-3, 0.95e-3, 1.02e-3],
            "gob": [2.0e-3, 2.1e-3, 1.9e-3, 2.05e-3, 1.95e-3, 2.02e-3]}
    (tmp_path / "pb.json").write_text(json.dumps(pytest_benchmark_doc(data)))
    text = "".join("Benchmarktest_encode/fmt=%s 1 %r sec/op\n" % (fmt, v)
                   for fmt, values in data.items() for v in values)
    (tmp_path / "pb.txt").write_text(text)
    from_json = run_cli(["-col", "/fmt", "pb.json"], cwd=tmp_path)
    from_text = run_cli(["-col", "/fmt", "pb.txt"], cwd=tmp_path)
    assert from_json.stderr == b"" and from_json.stdout == from_text.stdout
    assert from_json.stdout.decode().splitlines()[2] == \
        "test_encode   1.010m ± 11%   2.010m ± 5%  +99.01% (p=0.002 n=6)"


def test_pytest_benchmark_without_saved_data_explains_how_to_fix():
    doc = {"benchmarks": [{"name": "test_x", "stats": {"mean": 1.0}}]}
    records = list(read_json_results(json.dumps(doc).encode(), "pb.json", "pb.json"))
    assert errors_of(records) == ["pb.json:1: benchmarks[0] (test_x): no per-round timings; "
                                  "rerun pytest with --benchmark-save-data"]

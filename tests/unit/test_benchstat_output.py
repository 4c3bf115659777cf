"""Printed output, byte for byte, against the spec's worked examples and the
reference tool's golden files and documentation examples."""

from __future__ import annotations

import io
import shlex

import pytest

from test_benchstat_helpers import DATA, import_benchstat, run_cli

import_benchstat()
from triple_py.benchstat import cli  # noqa: E402

SPEC = DATA / "spec"
GOLANG = DATA / "golang-perf"


def run_in_process(args, cwd):
    """cli.main in this process (fast); returns (status, stdout, stderr)."""
    import os
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        status = cli.main(args, out, err)
    finally:
        os.chdir(old)
    return status, out.getvalue(), err.getvalue()


SPEC_CONFIG = ("goos: linux\ngoarch: amd64\npkg: example.com/foo\n"
               "cpu: Intel(R) Xeon(R) CPU @ 2.20GHz\n")


@pytest.mark.parametrize("expected, args, prefix", [
    ("example1-filter-ns-B.stdout", ["-filter", ".unit:(ns/op OR B/op)", "old.txt", "new.txt"], ""),
    ("example2-csv-ns.stdout", ["-format", "csv", "-filter", ".unit:ns/op", "old.txt", "new.txt"], ""),
    ("example3-col-note.stdout", ["-col", "note", "c.txt"], ""),
])
def test_spec_worked_examples_byte_for_byte(expected, args, prefix):
    status, out, err = run_in_process(args, SPEC)
    assert status == 0 and err == ""
    assert out == (SPEC / expected).read_text(encoding="utf-8")


def test_spec_csv_example_starts_with_config_records():
    _, out, _ = run_in_process(["-format", "csv", "-filter", ".unit:ns/op", "old.txt", "new.txt"], SPEC)
    assert out.startswith(SPEC_CONFIG + ",old.txt,,new.txt,,,\n")


# The reference's main_test.go: golden name -> command line.
GOLDEN = {
    "csvOldNew": "-format csv old.txt new.txt",
    "csvErrors": "-format csv -row .name new.txt",
    "crcOldNew": "crc-old.txt crc-new.txt",
    "crcIgnore": "-ignore note crc-old.txt crc-new.txt",
    "crcSizeVsPoly": "-filter /align:0 -row /size -col /poly crc-new.txt",
    "units": "-col note units.txt",
    "zero": "-col note zero.txt",
    "smallSample": "-col note smallSample.txt",
    "issue19565": "-col note issue19565.txt",
    "issue19634": "-col note issue19634.txt",
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_reference_golden_outputs(name):
    status, out, err = run_in_process(shlex.split(GOLDEN[name]), GOLANG)
    assert status == 0
    assert out == (GOLANG / (name + ".stdout")).read_text(encoding="utf-8")
    stderr_file = GOLANG / (name + ".stderr")
    assert err == (stderr_file.read_text(encoding="utf-8") if stderr_file.exists() else "")


def doc_examples():
    blocks = []
    for line in (GOLANG / "doc-examples.txt").read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("$ benchstat"):
            blocks.append([line[2:].strip(), ""])
        else:
            blocks[-1][1] += line
    return blocks


@pytest.mark.parametrize("command, expected", doc_examples(), ids=lambda v: v if v.startswith("benchstat") else "")
def test_reference_documentation_examples(command, expected):
    status, out, _ = run_in_process(shlex.split(command)[1:], GOLANG)
    assert status == 0 and out == expected


def test_cli_subprocess_prints_identical_bytes():
    proc = run_cli(["-col", "note", "c.txt"], cwd=SPEC)
    assert proc.returncode == 0 and proc.stderr == b""
    assert proc.stdout == (SPEC / "example3-col-note.stdout").read_bytes()


def test_tables_sort_by_config_values_as_strings(tmp_path):
    (tmp_path / "t.txt").write_text("BenchmarkA 1 1 ns/op\nnote: zzz\nBenchmarkA 1 2 ns/op\n"
                                    "note: aaa\nBenchmarkA 1 3 ns/op\n")
    _, out, _ = run_in_process(["t.txt"], tmp_path)
    headers = [line for line in out.splitlines() if line.startswith("note:")]
    assert headers == ["note: ", "note: aaa", "note: zzz"]
    blocks = out.split("\n\n")
    assert [b.splitlines()[3].split()[1] for b in blocks] == ["1.000n", "3.000n", "2.000n"]


def test_specific_table_key_sorts_by_first_appearance(tmp_path):
    (tmp_path / "t.txt").write_text("note: zzz\nBenchmarkA 1 2 ns/op\nnote: aaa\nBenchmarkA 1 3 ns/op\n")
    _, out, _ = run_in_process(["-table", "note", "t.txt"], tmp_path)
    assert [line for line in out.splitlines() if line.startswith("note:")] == ["note: zzz", "note: aaa"]


def test_within_a_config_tables_follow_unit_first_appearance(tmp_path):
    (tmp_path / "t.txt").write_text("BenchmarkA 1 2 B/op 3 ns/op\nBenchmarkB 1 4 ns/op 5 B/op\n")
    _, out, _ = run_in_process(["t.txt"], tmp_path)
    units = [line.split()[1] for line in out.splitlines() if "│" in line and "t.txt" not in line]
    assert units == ["B/op", "sec/op"]


def test_footnotes_number_per_table_and_share_messages(tmp_path):
    (tmp_path / "a.txt").write_text("BenchmarkA 1 1 ns/op\nBenchmarkB 1 2 ns/op\n")
    (tmp_path / "b.txt").write_text("BenchmarkA 1 1 ns/op\nBenchmarkB 1 3 ns/op\n")
    _, out, _ = run_in_process(["a.txt", "b.txt"], tmp_path)
    assert out.endswith("¹ need >= 6 samples for confidence interval at level 0.95\n"
                        "² all samples are equal\n"
                        "³ need >= 4 samples to detect a difference at alpha level 0.05\n")
    # A failed U test reports only its error; B's test ran but cannot reach alpha.
    assert "A         1.000n ± ∞ ¹   1.000n ± ∞ ¹        ~ (p=1.000 n=1) ²\n" in out
    assert "B         2.000n ± ∞ ¹   3.000n ± ∞ ¹        ~ (p=1.000 n=1) ³\n" in out


def test_geomean_warnings_for_differing_benchmark_sets(tmp_path):
    (tmp_path / "a.txt").write_text("".join("BenchmarkA 1 %d ns/op\nBenchmarkB 1 5 ns/op\n" % v
                                            for v in range(10, 16)))
    (tmp_path / "b.txt").write_text("".join("BenchmarkA 1 %d ns/op\n" % v for v in range(20, 26)))
    status, out, _ = run_in_process(["a.txt", "b.txt"], tmp_path)
    assert status == 0
    assert out.splitlines()[-2].startswith("geomean")
    assert out.splitlines()[-1] == "¹ benchmark set differs from baseline; geomeans may not be comparable"


def test_csv_quoting_and_warning_cell_references(tmp_path):
    (tmp_path / "a.txt").write_text("BenchmarkA/x=1,2 1 1 ns/op\n")
    status, out, err = run_in_process(["-format", "csv", "a.txt"], tmp_path)
    assert status == 0
    lines = out.splitlines()
    assert lines[:3] == [",a.txt,", ",sec/op,CI", '"A/x=1,2",1e-09,∞']
    assert lines[3].startswith("geomean,1") and lines[3].endswith(",") and len(lines) == 4
    assert err == "B3: need >= 6 samples for confidence interval at level 0.95\n"


def test_csv_record_quoting_rules():
    from triple_py.benchstat.format import csv_record as record
    assert record(["a", "", "b c"]) == "a,,b c\n"
    assert record([" lead", "x\"y", "\\.", "a\nb", ""]) == '" lead","x""y","\\.","a\nb",\n'
    assert record([""]) == "\n"


def test_csv_column_letters_quirk():
    from triple_py.benchstat.format import _column_letters
    assert [_column_letters(i) for i in (0, 1, 25, 26, 27)] == ["A", "B", "Z", "BA", "BB"]

"""Command-line flags, error messages, exit statuses and the regression gate."""

from __future__ import annotations

import io
import os

import pytest

from test_benchstat_helpers import DATA, import_benchstat, run_cli

import_benchstat()
from triple_py.benchstat import cli  # noqa: E402

SPEC = DATA / "spec"


def run(args, cwd=SPEC, stdin=None):
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        status = cli.main(args, out, err)
    finally:
        os.chdir(old)
    return status, out.getvalue(), err.getvalue()


def test_no_arguments_prints_usage_and_exits_2():
    proc = run_cli([])
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().startswith("Usage: benchstat [flags] inputs...\n")
    assert "  -alpha α\n    \tconsider change significant if p < α (default 0.05)\n" in proc.stderr.decode()


def test_help_exits_0():
    status, out, err = run(["-h"])
    assert status == 0 and out == "" and "-fail-on-regression pct" in err


@pytest.mark.parametrize("args, first_line", [
    (["-delta-test", "utest", "old.txt"], "flag provided but not defined: -delta-test"),
    (["-geomean", "old.txt"], "flag provided but not defined: -geomean"),
    (["-alpha", "x", "old.txt"], 'invalid value "x" for flag -alpha: parse error'),
    (["-alpha"], "flag needs an argument: -alpha"),
    (["---alpha=1", "old.txt"], "bad flag syntax: ---alpha=1"),
])
def test_flag_errors_exit_2(args, first_line):
    status, out, err = run(args)
    assert status == 2 and out == ""
    assert err.splitlines()[0] == first_line
    assert err.splitlines()[1] == "Usage: benchstat [flags] inputs..."


@pytest.mark.parametrize("args, message", [
    (["-alpha", "2", "old.txt"], "-alpha must be in range [0, 1]"),
    (["-confidence", "-0.5", "old.txt"], "-confidence must be in range [0, 1]"),
    (["-format", "html", "old.txt"], "-format must be text or csv"),
    (["missing.txt"], "open missing.txt: no such file or directory"),
    (["-filter", "a:(b c)", "old.txt"],
     "parsing -filter: syntax error: value list must be separated by OR\n\ta:(b c)\n\t     ^"),
    (["-filter", ".config:x", "old.txt"],
     "parsing -filter: syntax error: .config is only allowed in projections\n\t.config:x\n\t^"),
    (["-col", "a@", "old.txt"],
     "parsing -col: syntax error: expected named sort order or parenthesized list\n\ta@\n\t  ^"),
    (["-row", ".unit", "old.txt"],
     "parsing -row: syntax error: .unit is only allowed in filters\n\t.unit\n\t^"),
    (["-row", "x@sideways", "old.txt"],
     'parsing -row: syntax error: unknown order "sideways"\n\tx@sideways\n\t  ^'),
    (["-table", ".config@(a b)", "old.txt"],
     "parsing -table: syntax error: fixed order not allowed for .config\n\t.config@(a b)\n\t        ^"),
])
def test_fatal_errors_print_benchstat_prefix_and_exit_0(args, message):
    status, out, err = run(args)
    assert (status, out, err) == (0, "", "benchstat: %s\n" % message)


def test_fatal_error_with_gate_exits_2():
    status, _, err = run(["--fail-on-regression", "5", "missing.txt"])
    assert status == 2 and err.startswith("benchstat: open missing.txt")


def test_alpha_and_confidence_flags_change_the_verdicts():
    _, default, _ = run(["-filter", ".unit:ns/op", "old.txt", "new.txt"])
    assert "~ (p=0.087 n=10)" in default
    _, loose, _ = run(["-alpha", "0.1", "-filter", ".unit:ns/op", "old.txt", "new.txt"])
    assert "+1.96% (p=0.087 n=10)" in loose
    _, wide, _ = run(["-confidence", "0.99", "-filter", ".unit:ns/op", "old.txt", "new.txt"])
    assert "1000.5n ± 2%" in wide


def test_labels_stdin_and_repeated_paths():
    status, out, _ = run(["O=old.txt", "N=new.txt"])
    assert status == 0
    header = out.splitlines()[4]
    assert header.split("│")[1].strip() == "O" and header.split("│")[2].strip() == "N"
    _, twice, _ = run(["old.txt", "old.txt"])
    cols = [c.strip() for c in twice.splitlines()[4].split("│")[1:3]]
    assert cols == ["old.txt#0", "old.txt#1"]
    proc = run_cli(["base=-"], cwd=SPEC, stdin=(SPEC / "old.txt").read_bytes())
    assert proc.returncode == 0 and b" base " in proc.stdout.splitlines()[4]


def test_filter_on_name_and_negation():
    _, out, _ = run(["-filter", "-.name:Hash .unit:allocs/op", "old.txt", "new.txt"])
    assert [line.split()[0] for line in out.splitlines()[6:]] == ["Parse/size=1k-8", "¹"]
    _, out, _ = run(["-filter", "/size:/^1k$/", "old.txt"])
    assert "Hash" not in out and "Parse/size=1k-8" in out


def test_row_col_ignore_projections():
    _, out, _ = run(["-row", ".name", "-col", ".file", "-filter", ".unit:B/op", "old.txt", "new.txt"])
    assert [line.split()[0] for line in out.splitlines()[6:9]] == ["Parse", "Hash", "geomean"]
    _, out, _ = run(["-col", "/size", "-filter", ".name:Parse .unit:B/op", "old.txt"])
    # /size moved to the columns: it is removed from the row's full name.
    assert out.splitlines()[4].split("│")[1].strip() == "1k"
    assert out.splitlines()[6].startswith("Parse-8 ")


def test_sort_orders(tmp_path):
    (tmp_path / "s.txt").write_text("".join("BenchmarkS/size=%s 1 1 ns/op\n" % s
                                            for s in ("2k", "128", "1Mi", "64")))

    def row_order(order):
        _, out, _ = run(["-row", "/size" + order, "s.txt"], tmp_path)
        return [line.split()[0] for line in out.splitlines()[2:6]]
    assert row_order("") == ["2k", "128", "1Mi", "64"]
    assert row_order("@alpha") == ["128", "1Mi", "2k", "64"]
    assert row_order("@num") == ["64", "128", "2k", "1Mi"]
    _, out, _ = run(["-row", "/size@(1Mi 64)", "s.txt"], tmp_path)
    assert [line.split()[0] for line in out.splitlines()[2:4]] == ["1Mi", "64"]
    assert "2k" not in out


def test_table_projection_and_ignore():
    _, out, _ = run(["-table", "note", "-row", ".name", "c.txt"])
    assert [line for line in out.splitlines() if line.startswith("note:")] == ["note: before", "note: after"]
    _, out, _ = run(["-ignore", "note", "-row", ".name", "c.txt"])
    assert "benchmarks vary" not in out
    _, out, _ = run(["-row", ".name", "c.txt"])
    assert "note: before" in out


def test_csv_format_writes_warnings_to_stderr():
    status, out, err = run(["-format", "csv", "-col", "note", "c.txt"])
    assert status == 0
    assert out.splitlines()[0] == ",before,,after,,,"
    assert err == ("B3: need >= 6 samples for confidence interval at level 0.95\n"
                   "B4: need >= 6 samples for confidence interval at level 0.95\n"
                   "D4: need >= 6 samples for confidence interval at level 0.95\n"
                   "F4: need >= 4 samples to detect a difference at alpha level 0.05\n")


# --- --fail-on-regression -----------------------------------------------------------

def test_gate_passes_on_improvement_and_fails_on_regression():
    status, out, err = run(["--fail-on-regression", "3", "old.txt", "new.txt"])
    assert status == 0 and err == ""  # Parse got 3.20% faster and 33% smaller
    status, out, err = run(["--fail-on-regression", "3", "new.txt", "old.txt"])
    assert status == 1
    lines = err.splitlines()
    assert len(lines) == 2
    assert "Parse/size=1k-8 [old.txt]: +3.30% sec/op (p=0.000 n=10) exceeds 3%" in lines[0]
    assert "+50.00% B/op" in lines[1]
    assert out.startswith("goos: linux")  # the table is still printed


def test_gate_threshold_and_significance():
    status, _, _ = run(["-fail-on-regression=3.5", "new.txt", "old.txt"])
    assert status == 1  # B/op +50% still exceeds
    status, _, _ = run(["-fail-on-regression=60", "new.txt", "old.txt"])
    assert status == 0
    # Hash is +1.96% slower in new.txt but not significant at alpha 0.05.
    status, _, _ = run(["-fail-on-regression=1", "-filter", ".name:Hash", "old.txt", "new.txt"])
    assert status == 0
    status, _, _ = run(["-fail-on-regression=1", "-alpha", "0.1", "-filter", ".name:Hash",
                        "old.txt", "new.txt"])
    assert status == 1


def _rates(tmp_path, before, after, extra=""):
    (tmp_path / "a.txt").write_text(extra + "".join("BenchmarkR 1 %s ops/s %s MB/s\n" % (v, v)
                                                    for v in before))
    (tmp_path / "b.txt").write_text(extra + "".join("BenchmarkR 1 %s ops/s %s MB/s\n" % (v, v)
                                                    for v in after))


def test_gate_treats_rates_as_higher_is_better(tmp_path):
    high = [100, 101, 102, 103, 104, 105]
    low = [80, 81, 82, 83, 84, 85]
    _rates(tmp_path, high, low)
    status, _, err = run(["--fail-on-regression", "5", "a.txt", "b.txt"], tmp_path)
    assert status == 1 and "ops/s" in err and "B/s" in err
    _rates(tmp_path, low, high)
    status, _, err = run(["--fail-on-regression", "5", "a.txt", "b.txt"], tmp_path)
    assert status == 0 and err == ""


def test_gate_honours_better_metadata(tmp_path):
    _rates(tmp_path, [80, 81, 82, 83, 84, 85], [100, 101, 102, 103, 104, 105],
           extra="Unit ops/s better=lower\n")
    status, _, err = run(["--fail-on-regression", "5", "-filter", ".unit:ops/s", "a.txt", "b.txt"],
                         tmp_path)
    assert status == 1 and "ops/s" in err


def test_gate_exit_status_through_python_dash_m():
    proc = run_cli(["--fail-on-regression", "3", "new.txt", "old.txt"], cwd=SPEC)
    assert proc.returncode == 1
    proc = run_cli(["--fail-on-regression", "3", "old.txt", "new.txt"], cwd=SPEC)
    assert proc.returncode == 0

"""The Python API: compare() -> DataFrame, render(), regressions()."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from test_benchstat_helpers import DATA, import_benchstat

bs = import_benchstat()
SPEC = DATA / "spec"


def spec_inputs():
    return [str(SPEC / "old.txt"), str(SPEC / "new.txt")]


def test_compare_returns_one_row_per_cell_and_geomean():
    df = bs.compare(spec_inputs(), filter=".unit:ns/op")
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["table", "unit", "row", "col", "kind", "is_baseline", "n", "center",
                                "lo", "hi", "ci", "baseline_center", "delta_pct", "delta", "p",
                                "significant", "annotation", "warnings"]
    cells = df[df.kind == "cell"].set_index(["row", "is_baseline"])
    parse_new = cells.loc[("Parse/size=1k-8", False)]
    assert (parse_new.center, parse_new.lo, parse_new.hi) == (968.5 * 1e-9, 955 * 1e-9, 991 * 1e-9)
    assert parse_new.p == 0.0004871289701011064 and bool(parse_new.significant)
    assert parse_new.delta == "-3.20%" and parse_new.annotation == "p=0.000 n=10"
    assert parse_new.delta_pct == pytest.approx((968.5 / 1000.5 - 1) * 100)
    assert parse_new.n == 10 and parse_new.ci == "2%"
    hash_new = cells.loc[("Hash/128B-8", False)]
    assert hash_new.delta == "~" and not hash_new.significant and hash_new.p == 0.08732598670679166
    base = cells.loc[("Parse/size=1k-8", True)]
    assert math.isnan(base.p) and base.delta == "" and base.col.endswith("old.txt")
    geo = df[df.kind == "geomean"]
    assert list(geo.delta) == ["", "-0.65%"]
    assert geo.center.iloc[0] == 2.2588824670619782e-07
    assert df.table.iloc[0].startswith("goos:linux goarch:amd64")


def test_in_memory_inputs_and_labels():
    old = (SPEC / "old.txt").read_text()
    new = (SPEC / "new.txt").read_text()
    df = bs.compare({"before": old, "after": new}, filter=".unit:B/op")
    assert sorted(set(df.col)) == ["after", "before"]
    mixed = bs.compare([("before", old), "after=" + str(SPEC / "new.txt")], filter=".unit:B/op")
    pd.testing.assert_frame_equal(df, mixed)


def test_render_matches_cli_output():
    text = bs.render([("old.txt", (SPEC / "old.txt").read_bytes()),
                      ("new.txt", (SPEC / "new.txt").read_bytes())],
                     filter=".unit:(ns/op OR B/op)")
    assert text == (SPEC / "example1-filter-ns-B.stdout").read_text(encoding="utf-8")
    csv_warnings = []
    bs.render({"c.txt": (SPEC / "c.txt").read_text()}, format="csv", col="note",
              on_warning=csv_warnings.append)
    assert csv_warnings[0] == "B3: need >= 6 samples for confidence interval at level 0.95"


def test_malformed_lines_become_warnings():
    with pytest.warns(bs.BenchstatInputWarning, match="x.txt:1: missing units"):
        df = bs.compare([("x.txt", "BenchmarkA 1 5\nBenchmarkA 1 6 ns/op\n")])
    assert list(df[df.kind == "cell"].center) == [6 * 1e-9]
    seen = []
    bs.compare([("x.txt", "BenchmarkA 1 5\nBenchmarkA 1 6 ns/op\n")], on_warning=seen.append)
    assert seen == ["x.txt:1: missing units"]


def test_fatal_errors_raise():
    with pytest.raises(bs.BenchstatError, match="-alpha must be in range"):
        bs.compare(spec_inputs(), alpha=3)
    with pytest.raises(bs.BenchstatError, match="open /nonexistent/x.txt: no such file"):
        bs.compare(["/nonexistent/x.txt"])
    with pytest.raises(TypeError):
        bs.compare("old.txt")


def test_regressions_api():
    assert bs.regressions(spec_inputs(), 3) == []
    found = bs.regressions(list(reversed(spec_inputs())), 3)
    assert [(r.unit, r.row, round(r.change_pct, 2)) for r in found] == [
        ("sec/op", "Parse/size=1k-8", 3.30), ("B/op", "Parse/size=1k-8", 50.0)]

"""benchstat-compatible benchmark comparisons in pure Python.

A re-implementation of Go's ``golang.org/x/perf/cmd/benchstat`` (medians
with order-statistic confidence intervals, two-sided Mann-Whitney U
tests, geomeans) whose text and CSV output match the reference tool
byte for byte. Use it from the shell::

    python -m triple_py.benchstat [flags] [label=]old.txt [label=]new.txt ...
    python -m triple_py.benchstat -col arm --fail-on-regression 5 results.json

or from Python::

    from triple_py.benchstat import compare
    df = compare(["old.txt", "new.txt"])          # one row per table cell
    df[df.significant & (df.kind == "cell")]

Flags: ``-alpha`` (0.05), ``-confidence`` (0.95), ``-format text|csv``,
``-filter``, ``-row`` (``.fullname``), ``-col`` (``.file``), ``-table``
(``.config``), ``-ignore``, and ``--fail-on-regression PCT`` (exit 1 if
a significant change is worse than PCT percent; see :mod:`.gate`).

Inputs
------
Each input is detected by content:

*Go benchmark text* (``go test -bench`` output): ``key: value`` file
configuration lines, ``Unit <unit> assume=exact`` metadata lines and
``BenchmarkName/sub=x-8  <iterations>  <value> <unit> ...`` result lines.

*Load-harness JSON* (a top-level object with ``results``)::

    {
      "config": {"goos": "linux", "commit": "abc123"},
      "results": [
        {"name": "BenchmarkUnary/payload=128/conc=50",
         "arm": "fastpath",
         "round": 1,
         "iters": 1000,
         "unit_values": {"sec/op": 1.2e-5, "ops/s": 80000}},
        ...
      ]
    }

Each entry is read exactly like one benchmark result line: ``config``
entries are file configuration (like ``goos: linux`` lines; non-string
values are JSON-encoded), ``arm`` becomes the file configuration key
``arm`` (so ``-col arm`` compares arms and the default ``-table
.config`` puts each arm in its own table), ``name`` may omit the
``Benchmark`` prefix, ``unit_values`` maps units to values (``ns/op`` is
tidied to ``sec/op`` and ``MB/s`` to ``B/s`` as usual), ``iters``
defaults to 1 and ``round`` is informational only (the repeated rounds
of one name and arm form the sample). Malformed entries are reported
as ``file:N: message`` (N is the 1-based entry number) and skipped.

*pytest-benchmark JSON* (``--benchmark-json``; a top-level object with
``benchmarks``): the per-round timings in ``stats.data`` become
``sec/op`` samples, so record them with ``--benchmark-save-data``.
Parametrized tests are named ``test_name/param=value/...`` so that
``-col /param`` works.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .cli import main
from .format import geomean_ratio_text, render_csv, render_text
from .gate import Regression, find_regressions
from .inputs import InputSpec, parse_input_args
from .pipeline import BenchstatError, Options, build_tables
from .stats import format_delta, pct_range_string
from .tables import Tables

__all__ = [
    "compare",
    "render",
    "tables_to_frame",
    "load_tables",
    "regressions",
    "Options",
    "BenchstatError",
    "BenchstatInputWarning",
    "Regression",
    "main",
]

InputItem = Union[str, "os.PathLike[str]", Tuple[str, Union[str, bytes]]]
Inputs = Union[Sequence[InputItem], Mapping[str, Union[str, bytes]]]


class BenchstatInputWarning(UserWarning):
    """A malformed input line that was skipped (``file:line: message``)."""


def _specs(inputs: Inputs) -> List[InputSpec]:
    """Input specs in order: paths parsed like CLI arguments, pairs kept in memory."""
    if isinstance(inputs, Mapping):
        items: Sequence[InputItem] = list(inputs.items())
    elif isinstance(inputs, (str, bytes, os.PathLike)):
        raise TypeError("inputs must be a sequence of paths or (label, content) pairs, "
                        "or a mapping of label to content")
    else:
        items = inputs
    paths = [os.fspath(item) for item in items if not isinstance(item, tuple)]
    path_specs = iter(parse_input_args(paths))
    specs: List[InputSpec] = []
    for item in items:
        if isinstance(item, tuple):
            label, content = item
            data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
            specs.append(InputSpec(label, label, data))
        else:
            specs.append(next(path_specs))
    return specs


def _default_warn(message: str) -> None:
    warnings.warn(message, BenchstatInputWarning, stacklevel=3)


def load_tables(inputs: Inputs, options: Optional[Options] = None,
                on_warning: Optional[Callable[[str], None]] = None) -> Tables:
    """Read the inputs and compute all tables (the model behind the output).

    ``inputs`` is a sequence of paths (``"label=path"`` works as on the
    command line; ``"-"`` is stdin) and/or ``(label, content)`` pairs of
    in-memory benchmark text or JSON, or a mapping ``{label: content}``.
    Raises :class:`BenchstatError` for invalid options or unreadable files.
    """
    return build_tables(_specs(inputs), options or Options(), on_warning or _default_warn)


def render(inputs: Inputs, *, format: str = "text", alpha: float = 0.05,
           confidence: float = 0.95, filter: str = "*", table: str = ".config",
           row: str = ".fullname", col: str = ".file", ignore: str = "",
           on_warning: Optional[Callable[[str], None]] = None) -> str:
    """The text (or ``format="csv"``) output benchstat would print.

    In CSV mode, per-cell warnings go to ``on_warning`` as well.
    """
    options = Options(alpha, confidence, filter, table, row, col, ignore, format)
    warn = on_warning or _default_warn
    tables = load_tables(inputs, options, warn)
    if format == "csv":
        sink = _LineSink(warn)
        text = render_csv(tables, sink)
        sink.flush()
        return text
    return render_text(tables)


class _LineSink:
    """A minimal text stream that forwards complete lines to a callback."""

    def __init__(self, callback: Callable[[str], None]) -> None:
        self._callback = callback
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._callback(line)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._callback(self._pending)
            self._pending = ""


def _table_label(tables: Tables, table) -> str:
    fields = [f for f in tables.table_projection.flattened_fields() if f.name != ".unit"]
    return " ".join("%s:%s" % (f.name, table.key.get(f)) for f in fields if table.key.get(f))


def tables_to_frame(tables: Tables):
    """A pandas DataFrame with one row per table cell plus one per geomean entry.

    Columns: ``table`` (table key, ``field:value`` pairs), ``unit``,
    ``row``, ``col``, ``kind`` (``"cell"`` or ``"geomean"``),
    ``is_baseline``, ``n``, ``center``, ``lo``, ``hi``, ``ci`` (the
    ``± x%`` text), ``baseline_center``, ``delta_pct`` (new/old - 1, in
    percent, whether or not significant), ``delta`` (as printed: ``~``,
    ``-3.20%``...), ``p`` (NaN without a comparison), ``significant``,
    ``annotation`` (``p=0.000 n=10``) and ``warnings`` (``; ``-joined).
    """
    import pandas as pd

    records: List[Dict[str, Any]] = []
    for table in tables.tables:
        label = _table_label(tables, table)
        base_col = table.cols[0]
        for row in table.rows:
            for col in table.cols:
                cell = table.cell(row, col)
                if cell is None:
                    continue
                cmp = cell.comparison if cell.baseline is not None else None
                base_center = cell.baseline.summary.center if cell.baseline is not None else math.nan
                records.append({
                    "table": label, "unit": table.unit, "row": row.string_values(),
                    "col": col.string_values(), "kind": "cell", "is_baseline": col == base_col,
                    "n": len(cell.values), "center": cell.summary.center, "lo": cell.summary.lo,
                    "hi": cell.summary.hi, "ci": pct_range_string(cell.summary),
                    "baseline_center": base_center,
                    "delta_pct": _change_pct(base_center, cell.summary.center) if cmp else math.nan,
                    "delta": format_delta(cmp, base_center, cell.summary.center) if cmp else "",
                    "p": cmp.p if cmp else math.nan,
                    "significant": bool(cmp and cmp.significant),
                    "annotation": cmp.annotation() if cmp else "",
                    "warnings": "; ".join(cell.sample_warnings + cell.summary.warnings
                                          + (cmp.warnings if cmp else [])),
                })
        for i, col in enumerate(table.cols):
            summary = table.summaries[col]
            ratio = summary.ratio
            records.append({
                "table": label, "unit": table.unit, "row": "geomean", "col": col.string_values(),
                "kind": "geomean", "is_baseline": i == 0, "n": None,
                "center": summary.value if summary.value is not None else math.nan,
                "lo": math.nan, "hi": math.nan, "ci": "", "baseline_center": math.nan,
                "delta_pct": (ratio - 1) * 100 if ratio is not None else math.nan,
                "delta": "" if i == 0 else (geomean_ratio_text(ratio) if ratio is not None else "?"),
                "p": math.nan, "significant": False, "annotation": "",
                "warnings": "; ".join(summary.warnings),
            })
    frame = pd.DataFrame.from_records(records, columns=_FRAME_COLUMNS)
    frame["n"] = frame["n"].astype("Int64")
    return frame


_FRAME_COLUMNS = ["table", "unit", "row", "col", "kind", "is_baseline", "n", "center", "lo", "hi",
                  "ci", "baseline_center", "delta_pct", "delta", "p", "significant",
                  "annotation", "warnings"]


def _change_pct(old: float, new: float) -> float:
    if old == new:
        return 0.0
    if old == 0:
        return math.nan
    return (new / old - 1.0) * 100.0


def compare(inputs: Inputs, *, alpha: float = 0.05, confidence: float = 0.95,
            filter: str = "*", table: str = ".config", row: str = ".fullname",
            col: str = ".file", ignore: str = "",
            on_warning: Optional[Callable[[str], None]] = None):
    """Compare benchmark inputs; returns a pandas DataFrame (see :func:`tables_to_frame`).

    Arguments mirror the command-line flags. Malformed input lines are
    reported through ``on_warning`` (default: a :class:`BenchstatInputWarning`).
    """
    options = Options(alpha, confidence, filter, table, row, col, ignore)
    return tables_to_frame(load_tables(inputs, options, on_warning))


def regressions(inputs: Inputs, threshold_pct: float, **options: Any) -> List[Regression]:
    """Significant changes worse than ``threshold_pct`` percent (the CI gate)."""
    return find_regressions(load_tables(inputs, Options(**options)), threshold_pct)

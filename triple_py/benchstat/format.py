"""Text and CSV rendering of comparison tables, byte for byte as benchstat.

Text: before each table, the table-key fields that changed (``goos:
linux``); then a header per ``-col`` field, a unit row, one row per
benchmark (center ``±`` CI, footnotes, delta, ``(p=… n=…)``), a geomean
row when there is more than one benchmark, and numbered footnotes.

CSV: the same tables as comma-separated records (Go ``encoding/csv``
quoting) with full-precision numbers; warnings go to a separate stream,
prefixed with a spreadsheet cell reference.
"""

from __future__ import annotations

from typing import Callable, List, Sequence, TextIO

from .gofmt import format_fixed, format_v
from .projection import key_header
from .stats import format_delta, pct_range_string
from .tables import Table, Tables
from .textutil import is_go_space
from .texttab import CENTER, LEFT, RIGHT, TextTable
from .units import common_scale, is_binary_unit, scale

__all__ = ["render_text", "render_csv", "csv_record", "geomean_ratio_text", "superscript"]

_SUPERSCRIPT_DIGITS = "⁰¹²³⁴⁵⁶⁷⁸⁹"


def superscript(n: int) -> str:
    """``n`` in superscript digits (footnote markers)."""
    return "".join(_SUPERSCRIPT_DIGITS[int(d)] for d in str(n))


def geomean_ratio_text(ratio: float) -> str:
    """The geomean row's change column, e.g. ``-0.65%``."""
    return format_fixed((ratio - 1) * 100, 2, plus=True) + "%"


def _table_headers(tables: Tables, emit: Callable[[str], None], body: Callable[[Table], None]) -> None:
    """Emit the changed table-key lines and then each table, blank-line separated."""
    if not tables.tables:
        return
    fields = [f for f in tables.table_projection.flattened_fields() if f.name != ".unit"]
    prev = None
    for i, table in enumerate(tables.tables):
        if i > 0:
            emit("")
        for fld in fields:
            value = table.key.get(fld)
            if prev is None or value != prev.get(fld):
                emit("%s: %s" % (fld.name, value))
        prev = table.key
        body(table)


class _Footnotes:
    """Per-table footnote numbering by first occurrence."""

    def __init__(self) -> None:
        self.messages: List[str] = []

    def markers(self, *groups: Sequence[str]) -> str:
        marks = []
        for group in groups:
            for msg in group:
                if msg not in self.messages:
                    self.messages.append(msg)
                marks.append(superscript(self.messages.index(msg) + 1))
        return " ".join(marks)


_LABEL_COLS = 1
_CENTER_COLS = 3  # center, CI, footnotes
_DELTA_COLS = 3  # delta, annotation, footnotes


def _start_col(exp: int) -> int:
    if exp == 0:
        return _LABEL_COLS
    return _LABEL_COLS + _CENTER_COLS + (exp - 1) * (_CENTER_COLS + _DELTA_COLS)


def table_to_text(table: Table) -> str:
    """One table in benchstat's text layout, followed by its footnotes."""
    out = TextTable()
    notes = _Footnotes()
    right_edge = _start_col(len(table.cols) + 1)

    nodes = key_header(table.cols)
    while nodes:
        out.row()
        next_nodes = []
        for node in nodes:
            left = _start_col(node.start)
            right = _start_col(node.start + node.len)
            out.col(left).span(right - left, node.value, CENTER, " │ ")
            next_nodes.extend(node.children)
        out.col(right_edge).cell("", margin=" │")
        nodes = next_nodes

    out.row()
    for i in range(len(table.cols)):
        left = _start_col(i)
        out.col(left)
        out.span(_CENTER_COLS, table.unit, CENTER, " │ ")
        if i > 0:
            out.span(_DELTA_COLS, "vs base", LEFT, "  ")
        for j in range(left + 1, out.current_col):
            out.set_shrink(j)
    out.col(right_edge).cell("", margin=" │")

    binary = is_binary_unit(table.unit)
    for row in table.rows:
        out.row()
        out.cell(row.string_values())
        present = [c for c in (table.cell(row, col) for col in table.cols) if c is not None]
        scaler = common_scale([c.summary.center for c in present], binary)
        for exp, col in enumerate(table.cols):
            cell = table.cell(row, col)
            if cell is None:
                continue
            out.col(_start_col(exp))
            out.cell(scaler.format(cell.summary.center), RIGHT)
            out.cell(pct_range_string(cell.summary), RIGHT, " ± ")
            out.cell(notes.markers(cell.sample_warnings, cell.summary.warnings))
            if exp > 0 and cell.baseline is not None and cell.comparison is not None:
                out.cell(format_delta(cell.comparison, cell.baseline.summary.center,
                                      cell.summary.center), RIGHT)
                out.cell("(" + cell.comparison.annotation() + ")")
                out.cell(notes.markers(cell.comparison.warnings))

    if len(table.rows) > 1:
        out.row()
        out.cell("geomean")
        for exp, col in enumerate(table.cols):
            summary = table.summaries.get(col)
            if summary is None:
                continue
            if summary.value is not None:
                out.col(_start_col(exp))
                out.cell(scale(summary.value, binary), RIGHT)
            if exp > 0:
                out.col(_start_col(exp) + _CENTER_COLS)
                if summary.ratio is not None:
                    out.cell(geomean_ratio_text(summary.ratio), RIGHT)
                else:
                    out.cell("?")
            out.col(_start_col(exp + 1) - 1)
            out.cell(notes.markers(summary.warnings))

    text = out.render()
    for i, msg in enumerate(notes.messages):
        text += "%s %s\n" % (superscript(i + 1), msg)
    return text


def render_text(tables: Tables) -> str:
    """All tables as benchstat's default text output."""
    parts: List[str] = []
    _table_headers(tables, lambda line: parts.append(line + "\n"),
                   lambda table: parts.append(table_to_text(table)))
    return "".join(parts)


def csv_record(fields: Sequence[str]) -> str:
    """One CSV record as Go's ``encoding/csv`` writes it (``\\n`` terminated)."""
    out = []
    for f in fields:
        needs_quotes = f != "" and (f == "\\." or any(ch in f for ch in ',"\r\n')
                                    or is_go_space(f[0]))
        if needs_quotes:
            f = '"' + f.replace('"', '""') + '"'
        out.append(f)
    return ",".join(out) + "\n"


def _column_letters(index: int) -> str:
    """Spreadsheet column name as benchstat computes it (0=A, 26=BA)."""
    if index == 0:
        return "A"
    letters = ""
    while index > 0:
        letters = chr(ord("A") + index % 26) + letters
        index //= 26
    return letters


_CSV_CENTER_COLS = 2
_CSV_DELTA_COLS = 2


def _csv_start_col(exp: int) -> int:
    if exp == 0:
        return _LABEL_COLS
    return _LABEL_COLS + _CSV_CENTER_COLS + (exp - 1) * (_CSV_CENTER_COLS + _CSV_DELTA_COLS)


def table_to_csv(table: Table, start_row: int, records: List[List[str]], warnings: TextIO) -> None:
    """Append one table's CSV records; write warnings with cell references."""
    row: List[str] = []

    def clear_to(col: int) -> None:
        while len(row) < col:
            row.append("")

    def emit() -> None:
        records.append(list(row))
        row.clear()

    first_record = len(records)

    def record_number() -> int:
        return start_row + (len(records) - first_record)

    def warn_here(msgs: Sequence[str]) -> None:
        ref = "%s%d" % (_column_letters(len(row)), record_number())
        for msg in msgs:
            warnings.write("%s: %s\n" % (ref, msg))

    end_col = _csv_start_col(len(table.cols))
    for fld in table.cols[0].proj.flattened_fields():
        for exp, key in enumerate(table.cols):
            clear_to(_csv_start_col(exp))
            row.append(key.get(fld))
        clear_to(end_col)
        emit()

    for exp in range(len(table.cols)):
        clear_to(_csv_start_col(exp))
        row.extend([table.unit, "CI"])
        if exp > 0:
            row.extend(["vs base", "P"])
    emit()

    for row_key in table.rows:
        row.append(row_key.string_values())
        for exp, col in enumerate(table.cols):
            cell = table.cell(row_key, col)
            if cell is None:
                continue
            clear_to(_csv_start_col(exp))
            warn_here(cell.sample_warnings)
            warn_here(cell.summary.warnings)
            row.extend([format_v(cell.summary.center), pct_range_string(cell.summary)])
            if exp > 0 and cell.baseline is not None and cell.comparison is not None:
                warn_here(cell.comparison.warnings)
                row.extend([format_delta(cell.comparison, cell.baseline.summary.center,
                                         cell.summary.center), cell.comparison.annotation()])
        emit()

    row.append("geomean")
    for exp, col in enumerate(table.cols):
        summary = table.summaries.get(col)
        if summary is None:
            continue
        clear_to(_csv_start_col(exp))
        warn_here(summary.warnings)
        if summary.value is not None:
            row.append(format_v(summary.value))
        if exp > 0:
            clear_to(_csv_start_col(exp) + _CSV_CENTER_COLS)
            row.append(geomean_ratio_text(summary.ratio) if summary.ratio is not None else "?")
    clear_to(end_col)
    emit()


def render_csv(tables: Tables, warnings: TextIO) -> str:
    """All tables as benchstat's ``-format csv`` output; warnings to ``warnings``."""
    records: List[List[str]] = []

    def header(line: str) -> None:
        records.append([line])

    def body(table: Table) -> None:
        table_to_csv(table, len(records) + 1, records, warnings)

    _table_headers(tables, header, body)
    return "".join(csv_record(r) for r in records)

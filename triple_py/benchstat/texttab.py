"""Fixed-width text table layout (benchstat's ``texttab``).

Cells sit on a grid of columns; a cell may span several columns and
carries a left margin (printed right-justified within the widest margin
of its column). Column widths grow to fit single cells first, then
spanning cells, spreading any shortfall over the non-"shrink" columns,
widest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

__all__ = ["TextTable", "LEFT", "CENTER", "RIGHT"]

LEFT, CENTER, RIGHT = "left", "center", "right"


@dataclass
class _Cell:
    row: int
    col: int
    span: int
    value: str
    margin: str
    align: str


def _pad(value: str, width: int, align: str) -> str:
    if align == CENTER:
        return " " * max((width - len(value)) // 2, 0) + value
    if align == RIGHT:
        return value.rjust(width)
    return value


class TextTable:
    """Builder for a text table: move with :meth:`row`/:meth:`col`, add cells."""

    def __init__(self) -> None:
        self._cells: List[_Cell] = []
        self._ncols = 0
        self._shrink: set = set()
        self._row = 0
        self._col = 0

    def row(self) -> "TextTable":
        """Start a new row."""
        if self._cells:
            self._row += 1
        self._col = 0
        return self

    def col(self, col: int) -> "TextTable":
        """Move to grid column ``col`` of the current row."""
        if col < self._col:
            raise ValueError("cannot move from column %d to earlier column %d" % (self._col, col))
        self._col = col
        return self

    @property
    def current_col(self) -> int:
        return self._col

    def cell(self, value: str, align: str = LEFT, margin: Optional[str] = None) -> "TextTable":
        """Add a one-column cell."""
        return self.span(1, value, align, margin)

    def span(self, cols: int, value: str, align: str = LEFT, margin: Optional[str] = None) -> "TextTable":
        """Add a cell spanning ``cols`` grid columns."""
        if margin is None:
            margin = "" if self._col == 0 or value == "" else " "
        self._cells.append(_Cell(self._row, self._col, cols, value, margin, align))
        self._col += cols
        self._ncols = max(self._ncols, self._col)
        return self

    def set_shrink(self, col: int) -> None:
        """Mark a column as minimum-width when widening for spanning cells."""
        self._shrink.add(col)

    def _widths(self) -> tuple:
        margins = [0] * self._ncols
        for c in self._cells:
            margins[c.col] = max(margins[c.col], len(c.margin))
        widths = [0] * self._ncols
        for c in sorted(self._cells, key=lambda c: c.span):
            need = len(c.value) + margins[c.col]
            if c.span == 1:
                widths[c.col] = max(widths[c.col], need)
                continue
            cols = range(c.col, c.col + c.span)
            if sum(widths[i] for i in cols) >= need:
                continue
            growable = []
            for i in cols:
                if i in self._shrink:
                    need -= widths[i]
                else:
                    growable.append(i)
            growable.sort(key=lambda i: -widths[i])
            remaining = len(growable)
            for i in growable:
                average = (need + remaining - 1) // remaining
                widths[i] = max(widths[i], average)
                need -= widths[i]
                remaining -= 1
        return margins, widths

    def render(self) -> str:
        """The laid-out table, one line per row, without trailing spaces."""
        margins, widths = self._widths()
        offsets = [0]
        for w in widths:
            offsets.append(offsets[-1] + w)
        out: List[str] = []
        row, pos = 0, 0
        for c in sorted(self._cells, key=lambda c: (c.row, c.col)):
            if c.value.strip() == "" and c.margin.strip() == "":
                continue
            while c.row > row:
                out.append("\n")
                row += 1
                pos = 0
            spaces = offsets[c.col] - pos
            out.append(" " * spaces + c.margin.rjust(margins[c.col]))
            pos += spaces + margins[c.col]
            width = offsets[c.col + c.span] - offsets[c.col] - margins[c.col]
            text = _pad(c.value, width, c.align)
            out.append(text)
            pos += len(text)
        if self._cells:
            out.append("\n")
        return "".join(out)

"""The CI regression gate behind ``--fail-on-regression PCT``.

A cell is a regression when its comparison is significant (benchstat
prints a delta rather than ``~``) and the change goes the wrong way by
more than PCT percent. "Wrong way" comes from ``Unit ... better=``
metadata when present; otherwise rates (a time unit in the
denominator, e.g. ``ops/s``, ``B/s``) are better when higher and
everything else (``sec/op``, ``B/op``, ``allocs/op``, ...) is better
when lower.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

from .parse import UnitMetadataMap
from .tables import Tables
from .units import unit_tokens

__all__ = ["Regression", "higher_is_better", "find_regressions"]

_TIME_UNITS = frozenset({"s", "sec", "secs", "second", "seconds", "ns", "us", "µs", "μs", "ms",
                         "min", "minute", "minutes", "h", "hr", "hour", "hours"})


def higher_is_better(unit: str, units: UnitMetadataMap) -> bool:
    """Whether an increase in ``unit`` is an improvement."""
    better = units.get(unit, "better")
    if better == "higher":
        return True
    if better == "lower":
        return False
    return any(denom and tok in _TIME_UNITS for tok, _, denom in unit_tokens(unit))


@dataclass
class Regression:
    """A significant change that is worse than the threshold."""

    table: str
    unit: str
    row: str
    col: str
    change_pct: float
    annotation: str

    def describe(self) -> str:
        where = " ".join(part for part in (self.table, self.row, "[" + self.col + "]") if part)
        return "%s: %+.2f%% %s (%s)" % (where, self.change_pct, self.unit, self.annotation)


def find_regressions(tables: Tables, threshold_pct: float) -> List[Regression]:
    """All significant changes worse than ``threshold_pct`` percent."""
    found = []
    fields = [f for f in tables.table_projection.flattened_fields() if f.name != ".unit"]
    for table in tables.tables:
        up_is_good = higher_is_better(table.unit, tables.units)
        label = " ".join("%s=%s" % (f.name, table.key.get(f)) for f in fields if table.key.get(f))
        for (row, col), cell in table.cells.items():
            cmp = cell.comparison
            if cell.baseline is None or cmp is None or not cmp.significant:
                continue
            old, new = cell.baseline.summary.center, cell.summary.center
            if old == 0 or old == new:
                continue
            change = (new / old - 1.0) * 100.0
            worse_by = -change if up_is_good else change
            if worse_by > threshold_pct:
                found.append(Regression(label, table.unit, row.string_values(),
                                        col.string_values(), change, cmp.annotation()))
    return found

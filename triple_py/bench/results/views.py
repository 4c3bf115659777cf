"""Comparisons that display as marked HTML tables in Jupyter and as text elsewhere.

:meth:`Results.comparison <triple_py.bench.results.Results.comparison>` returns a
:class:`Comparison` (benchstat's), :meth:`Results.paired_table
<triple_py.bench.results.Results.paired_table>` a :class:`PairedTable`; a notebook shows
either by naming it last in a cell; ``print()`` gives the text, ``.frame`` the DataFrame.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Sequence

from ..record.html_tables import as_dicts, benchstat_html, dataclass_rows_html
from .statistics import higher_is_better, significant_changes

__all__ = ["Comparison", "PairedTable"]


@dataclasses.dataclass
class Comparison:
    """benchstat's comparison of the baseline with the other arms.

    ``frame``: one row per cell (see :meth:`Results.benchstat`); ``text``: as benchstat
    prints it; ``baseline``: the arm compared with.
    """

    frame: Any
    text: str
    baseline: str

    @property
    def significant(self):
        """The significant cells, with a ``better`` column (see
        :func:`~triple_py.bench.results.statistics.significant_changes`)."""
        return significant_changes(self.frame)

    def _repr_html_(self) -> str:
        better: Dict[str, bool] = {u: higher_is_better(u) for u in set(self.frame["unit"])}
        return (f"<div><b>benchstat: each arm against {self.baseline}</b></div>"
                + benchstat_html(self.frame, better))

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


@dataclasses.dataclass
class PairedTable:
    """The paired-by-round comparison (:mod:`.paired`): one row per scenario and arm,
    every field of the row's dataclass a column, ``significant`` marked (better when the
    ratio is above 1 for a rate such as QPS, below 1 for a latency or a cost)."""

    rows: List[Any]
    baseline: str
    value: str = "qps"

    @property
    def frame(self):
        """The rows as a DataFrame (every field, plus ``significant``)."""
        import pandas as pd

        return pd.DataFrame(as_dicts(self.rows, ["significant"]))

    def _better(self, row: Any) -> bool:
        higher = self.value in ("qps", "messages_per_s")
        return (row.geomean > 1) == higher

    def _repr_html_(self) -> str:
        return dataclass_rows_html(
            self.rows, caption=f"paired by round: {self.value} / {self.baseline}'s in the "
                               f"same round", better=self._better)

    def __str__(self) -> str:
        names: Sequence[str] = [f.name for f in dataclasses.fields(self.rows[0])] \
            if self.rows else []
        lines = ["  ".join(names) + "  significant"]
        for r in self.rows:
            lines.append("  ".join(f"{getattr(r, n):.4g}" if isinstance(getattr(r, n), float)
                                   else str(getattr(r, n)) for n in names)
                         + f"  {'yes' if r.significant else '~'}")
        return "\n".join(lines)

    __repr__ = __str__

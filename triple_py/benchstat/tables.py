"""Grouping of measurements into comparison tables (benchstat's ``benchtab``).

Every measurement lands in a cell addressed by (table key incl. unit,
row key, column key). Each table's first column is the baseline: a cell
whose row also has a baseline cell is compared against it. A final
geomean row summarizes each column.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from .parse import Result, UnitMetadataMap
from .projection import Key, Projection, non_singular_fields, sort_keys
from .stats import Comparison, Summary, compare_samples, geomean, summarize

__all__ = ["TableCell", "ColumnSummary", "Table", "Tables", "TableBuilder"]


@dataclass
class TableCell:
    """One cell: its sorted sample, summary and (if any) comparison."""

    values: List[float]
    summary: Summary
    sample_warnings: List[str] = field(default_factory=list)
    baseline: Optional["TableCell"] = None
    comparison: Optional[Comparison] = None


@dataclass
class ColumnSummary:
    """The geomean row entry of a column."""

    value: Optional[float] = None
    ratio: Optional[float] = None
    warnings: List[str] = field(default_factory=list)


@dataclass
class Table:
    """One comparison table: a unit, ordered rows and columns, and cells."""

    key: Key
    unit: str
    assumption: str
    rows: List[Key]
    cols: List[Key]
    cells: Dict[Tuple[Key, Key], TableCell]
    summaries: Dict[Key, ColumnSummary] = field(default_factory=dict)

    def cell(self, row: Key, col: Key) -> Optional[TableCell]:
        return self.cells.get((row, col))


@dataclass
class Tables:
    """All tables in print order, the table projection and the unit metadata."""

    tables: List[Table]
    table_projection: Projection
    units: UnitMetadataMap


class _PendingCell:
    def __init__(self) -> None:
        self.values: List[float] = []
        self.residues: Set[Key] = set()


class _PendingTable:
    def __init__(self) -> None:
        self.rows: Set[Key] = set()
        self.cols: Set[Key] = set()
        self.cells: Dict[Tuple[Key, Key], _PendingCell] = {}


class TableBuilder:
    """Collects results into cells; :meth:`build` computes the statistics."""

    def __init__(self, table_by: Projection, row_by: Projection, col_by: Projection,
                 residue: Projection) -> None:
        if table_by.unit_field is None:
            raise ValueError("table projection needs a .unit field")
        self.table_by = table_by
        self.row_by = row_by
        self.col_by = col_by
        self.residue = residue
        self._tables: Dict[Key, _PendingTable] = {}

    def add(self, res: Result) -> None:
        """Add every measurement of a (filtered) result."""
        table_keys = self.table_by.project_values(res)
        row = self.row_by.project(res)
        col = self.col_by.project(res)
        residue = self.residue.project(res)
        for value, table_key in zip(res.values, table_keys):
            table = self._tables.get(table_key)
            if table is None:
                table = self._tables[table_key] = _PendingTable()
            cell = table.cells.get((row, col))
            if cell is None:
                cell = table.cells[(row, col)] = _PendingCell()
                table.rows.add(row)
                table.cols.add(col)
            cell.values.append(value.value)
            cell.residues.add(residue)

    def build(self, confidence: float, alpha: float, units: UnitMetadataMap) -> Tables:
        """Summaries, comparisons and geomeans for every table."""
        unit_field = self.table_by.unit_field
        assert unit_field is not None
        out = []
        for table_key in sort_keys(list(self._tables)):
            pending = self._tables[table_key]
            unit = table_key.get(unit_field)
            assumption = units.assumption(unit)
            table = Table(table_key, unit, assumption, sort_keys(list(pending.rows)),
                          sort_keys(list(pending.cols)), {})
            for addr, pcell in pending.cells.items():
                values = sorted(pcell.values)
                table.cells[addr] = TableCell(values, summarize(values, confidence, assumption),
                                              _residue_warnings(pcell.residues))
            base_col = table.cols[0]
            for (row, col), cell in table.cells.items():
                if col == base_col:
                    continue
                base = table.cells.get((row, base_col))
                if base is not None:
                    cell.baseline = base
                    cell.comparison = compare_samples(base.values, cell.values, alpha, assumption)
            _summarize_columns(table)
            out.append(table)
        return Tables(out, self.table_by, units)


def _residue_warnings(residues: Set[Key]) -> List[str]:
    fields = non_singular_fields(sort_keys(list(residues)))
    if not fields:
        return []
    return ["benchmarks vary in " + ", ".join(f.name for f in fields)]


def _summarize_columns(table: Table) -> None:
    base_col = table.cols[0]
    n_base = sum(1 for row in table.rows if (row, base_col) in table.cells)
    for i, col in enumerate(table.cols):
        is_base = i == 0
        summary = ColumnSummary()
        centers: List[float] = []
        ratios: List[float] = []
        bad_ratio = False
        for row in table.rows:
            cell = table.cell(row, col)
            if cell is None:
                continue
            centers.append(cell.summary.center)
            if cell.baseline is not None:
                new, old = cell.summary.center, cell.baseline.summary.center
                if new == old:
                    ratios.append(1.0)
                elif old == 0:
                    bad_ratio = True
                    ratios.append(0.0)
                else:
                    ratios.append(new / old)
        if not is_base and n_base != len(ratios):
            summary.warnings.append("benchmark set differs from baseline; geomeans may not be comparable")
        center_mean = geomean(centers)
        if math.isnan(center_mean):
            summary.warnings.append("summaries must be >0 to compute geomean")
        else:
            summary.value = center_mean
        if not is_base and not bad_ratio:
            ratio_mean = geomean(ratios)
            if math.isnan(ratio_mean):
                summary.warnings.append("ratios must be >0 to compute geomean")
            else:
                summary.ratio = ratio_mean
        table.summaries[col] = summary

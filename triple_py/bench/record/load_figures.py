"""Where each figure of the C load generator goes, by ``_triple.LOAD_RESULTS``.

``run_load`` returns one key per row of the binding's result table
(:mod:`triple_py._load_results`). A :class:`~.result.BenchResult` models some of them as
its fields: those of the same name, and the few that :data:`CONVERTED` lists (renamed or
reshaped: the method path, the latency summaries, the warm-up's figures, the stop). Every
other row is kept in ``BenchResult.extra`` under its own name, so a figure added to the C
table reaches the results document without an edit in the harness.

The tidy CSV and the pandas frames give such a figure a column of its own
(:func:`figure_columns`), but for :data:`EXTRA_WITHOUT_COLUMN`: the figures results
documents kept in ``extra`` before the columns were drawn from the table, which stay
where the stored rounds' reports have them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, List, Mapping

from ... import _load_results
from .result import BenchResult

__all__ = ["CONVERTED", "EXTRA_WITHOUT_COLUMN", "extra_figures", "figure_columns",
           "figure_type", "summed_figures"]

#: ``run_load`` keys that a BenchResult holds under another name or shape (the rest of its
#: fields have the key's name): ``path`` is ``method``, the latency summaries are
#: ``latency`` and ``latency_corrected``, the warm-up's figures make ``warmup``, and
#: ``interrupted`` is ``extra["stopped"]`` (or the signal's mark, :mod:`..interrupts`).
CONVERTED = frozenset({"path", "latency_ns", "latency_corrected_ns", "warmup_calls",
                       "warmup_errors", "warmup_latency_ns", "warmup_latency_corrected_ns",
                       "warmup_histogram", "warmup_histogram_corrected", "interrupted"})

#: Figures kept in ``extra`` that have no column of the CSV or the frames.
EXTRA_WITHOUT_COLUMN = frozenset({"missed", "response_bytes", "short_streams", "mismatches",
                                  "verify",
                                  "shared_request", "hist_digits", "write_buffer_delay_us",
                                  "open_loop", "target_rate", "start_monotonic_ns",
                                  "late_ns"})

_FIELDS = frozenset(f.name for f in dataclasses.fields(BenchResult))


def _extra_rows() -> List[_load_results.LoadResult]:
    return [r for r in _load_results.LOAD_RESULTS
            if r.name not in _FIELDS and r.name not in CONVERTED]


def extra_figures(raw: Mapping[str, Any]) -> Dict[str, Any]:
    """The figures of a ``run_load`` result that a BenchResult keeps in ``extra``: every
    row of the table it has no field for, in the table's order."""
    return {r.name: raw[r.name] for r in _extra_rows() if r.name in raw}


def figure_columns(extras: Iterable[Mapping[str, Any]], known: Iterable[str] = ()
                   ) -> List[str]:
    """The figure columns of a table over results whose ``extra`` dicts are ``extras``:
    the table's rows with one number that some result has, in the table's order, but for
    :data:`EXTRA_WITHOUT_COLUMN` and the names in ``known`` (the table's other columns)."""
    seen = set()
    for extra in extras:
        seen.update(extra)
    skip = EXTRA_WITHOUT_COLUMN | set(known)
    return [r.name for r in _extra_rows() if r.type in _load_results.NUMBER_TYPES
            and r.name in seen and r.name not in skip]


def figure_type(name: str) -> str:
    """The LOAD_RESULTS type of the figure ``name``."""
    return next(r.type for r in _load_results.LOAD_RESULTS if r.name == name)


def summed_figures() -> List[str]:
    """The figures in ``extra`` that add up over loads run side by side (``count`` rows)."""
    return [r.name for r in _extra_rows() if r.type == "count"]

"""The C load generator's figures: the keys of ``_triple.run_load``'s result.

The rows are the binding's table of result keys (``csrc/binding/load_results.c``, exported
as ``_triple.LOAD_RESULTS``), which ``run_load`` itself walks to build its result dict: a
new figure is a field of ``tri_load_result`` and one row there, and what carries the
figures into results, files and frames reads them from here instead of a list of names.
"""
from __future__ import annotations

from typing import NamedTuple

from . import _triple

__all__ = ["LoadResult", "LOAD_RESULTS", "NUMBER_TYPES"]


class LoadResult(NamedTuple):
    """One row of ``_triple.LOAD_RESULTS``: a key of ``run_load``'s result.

    ``type``: ``count`` (a counter: the figures of loads run side by side add up),
    ``int``, ``float``, ``bool``, ``str``, or a structured figure: ``latency`` (a summary
    dict in ns), ``histogram`` (``[(value_ns, count), ...]``), ``series``, ``codes`` (calls
    by status code), ``cpu``, ``counters``, ``ratios``.
    """

    name: str
    type: str
    unit: str
    doc: str


LOAD_RESULTS: tuple[LoadResult, ...] = tuple(LoadResult(*row) for row in _triple.LOAD_RESULTS)

#: The types of the rows whose value is one number.
NUMBER_TYPES = frozenset({"count", "int", "float"})

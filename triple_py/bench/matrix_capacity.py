"""Moved: the code of ``triple_py.bench.matrix_capacity`` now lives in
:mod:`triple_py.bench.running.capacity`, :mod:`triple_py.bench.report.capacity`,
:mod:`triple_py.bench.results.capacity` and :mod:`triple_py.bench.spec.capacity`.

This module keeps the old import path for one release: it re-exports the public names."""
from .report.capacity import format_capacities, write_capacities
from .results.capacity import CapacityRun
from .running.capacity import run_capacity
from .spec.capacity import CapacitySpec, parse_capacity

__all__ = ["CapacitySpec", "CapacityRun", "parse_capacity", "run_capacity",
           "format_capacities", "write_capacities"]

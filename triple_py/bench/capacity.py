"""Moved: the code of ``triple_py.bench.capacity`` now lives in
:mod:`triple_py.bench.running.capacity`, :mod:`triple_py.bench.report.capacity`,
:mod:`triple_py.bench.results.capacity` and :mod:`triple_py.bench.spec.slo`.

This module keeps the old import path for one release: it re-exports the public names."""
from .report.capacity import capacity_text, capacity_plot
from .results.capacity import Probe, CapacityResult, histogram_percentile
from .running.capacity import find_capacity
from .spec.slo import Slo, parse_slo

__all__ = ["Slo", "Probe", "CapacityResult", "parse_slo", "histogram_percentile",
           "find_capacity", "capacity_text", "capacity_plot"]

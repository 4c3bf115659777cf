"""Moved: the code of ``triple_py.bench.plots`` now lives in
:mod:`triple_py.bench.report.plots` (the charts themselves in
:mod:`triple_py.bench.report.charts`).

This module keeps the old import path for one release: it re-exports the public names."""
from .report.plots import (SPECTRUM_TICKS, arm_colors, errors, grouped_bars, latency_cdf,
                           line_vs, percentile_spectrum, save, standard, throughput_latency,
                           timeseries)

__all__ = ["arm_colors", "save", "standard", "grouped_bars", "line_vs", "latency_cdf",
           "percentile_spectrum", "timeseries", "throughput_latency", "errors",
           "SPECTRUM_TICKS"]

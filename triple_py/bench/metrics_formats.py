"""Moved: the code of ``triple_py.bench.metrics_formats`` now lives in
:mod:`triple_py.bench.report.metrics_formats`.

This module keeps the old import path for one release: it re-exports the public names."""
from .report.metrics_formats import prometheus_text, influx_summary, influx_details

__all__ = ["prometheus_text", "influx_summary", "influx_details"]

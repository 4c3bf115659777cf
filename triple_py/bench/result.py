"""Moved: the code of ``triple_py.bench.result`` now lives in
:mod:`triple_py.bench.record.result`.

This module keeps the old import path for one release: it re-exports the public names."""
from .record.result import (Latency, BenchResult, STATUS_NAMES, status_name,
                            histogram_from_samples, series_from_completions)

__all__ = ["Latency", "BenchResult", "STATUS_NAMES", "status_name",
           "histogram_from_samples", "series_from_completions"]

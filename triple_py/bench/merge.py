"""Moved: the code of ``triple_py.bench.merge`` now lives in
:mod:`triple_py.bench.distributed.merge`.

This module keeps the old import path for one release: it re-exports the public names."""
from .distributed.merge import (Part, merge_histograms, merge_latency, merge_series,
                                merge_parts, worker_row, imbalance)

__all__ = ["Part", "merge_histograms", "merge_latency", "merge_series", "merge_parts",
           "worker_row", "imbalance"]

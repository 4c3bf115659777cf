"""Moved: the code of ``triple_py.bench.workers_view`` now lives in
:mod:`triple_py.bench.distributed.workers_view`.

This module keeps the old import path for one release: it re-exports the public names."""
from .distributed.workers_view import (worker_rows, format_workers, format_failed_run,
                                       workers_frame, plot_workers)

__all__ = ["worker_rows", "format_workers", "format_failed_run", "workers_frame",
           "plot_workers"]

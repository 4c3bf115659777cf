"""Moved: the code of ``triple_py.bench.dask_tasks`` now lives in
:mod:`triple_py.bench.distributed.dask_tasks`.

This module keeps the old import path for one release: it re-exports the public names."""
from .distributed.dask_tasks import build_identity, wall_clock_ns, run_share, stop_share

__all__ = ["build_identity", "wall_clock_ns", "run_share", "stop_share"]

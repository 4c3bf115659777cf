"""Moved: the code of ``triple_py.bench.progress`` now lives in
:mod:`triple_py.bench.running.progress`.

This module keeps the old import path for one release: it re-exports the public names."""
from .running.progress import Progress, progress_enabled

__all__ = ["Progress", "progress_enabled"]

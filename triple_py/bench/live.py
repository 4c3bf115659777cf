"""Moved: the code of ``triple_py.bench.live`` now lives in :mod:`triple_py.bench.running.live`
and :mod:`triple_py.bench.ipython`.

This module keeps the old import path for one release: it re-exports the public names."""
from .ipython import in_notebook
from .running.live import NotebookProgress, auto_progress, LIVE_CSS_CLASS

__all__ = ["NotebookProgress", "auto_progress", "in_notebook", "LIVE_CSS_CLASS"]

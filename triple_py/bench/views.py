"""Moved: the code of ``triple_py.bench.views`` now lives in
:mod:`triple_py.bench.results.views`.

This module keeps the old import path for one release: it re-exports the public names."""
from .results.views import Comparison, PairedTable

__all__ = ["Comparison", "PairedTable"]

"""Moved: the code of ``triple_py.bench.standard_figures`` now lives in
:mod:`triple_py.bench.report.plots`.

This module keeps the old import path for one release: it re-exports the public names."""
from .report.plots import MATRIX_FIGURES, RUN_FIGURES, as_results, draw_standard

__all__ = ["as_results", "draw_standard", "MATRIX_FIGURES", "RUN_FIGURES"]

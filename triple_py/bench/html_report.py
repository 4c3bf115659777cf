"""Moved: the code of ``triple_py.bench.html_report`` now lives in
:mod:`triple_py.bench.report.html`.

This module keeps the old import path for one release: it re-exports the public names."""
from .report.html import run_html, matrix_html

__all__ = ["run_html", "matrix_html"]

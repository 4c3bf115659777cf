"""Moved: the code of ``triple_py.bench.html_tables`` now lives in
:mod:`triple_py.bench.record.html_tables`.

This module keeps the old import path for one release: it re-exports the public names."""
from .record.html_tables import (html_table, bench_result_html, results_html, benchstat_html,
                                 dataclass_rows_html, VERDICT_STYLE)

__all__ = ["html_table", "bench_result_html", "results_html", "benchstat_html",
           "dataclass_rows_html", "VERDICT_STYLE"]

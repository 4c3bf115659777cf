"""Outputs of a matrix (and of a single run), read from results only: the files of a
results directory (:mod:`.files`), text (:mod:`.text`), the tidy CSV (:mod:`.tidy_csv`),
the Go benchmark format (:mod:`.gobench`), HTML (:mod:`.html`), Prometheus and Influx
lines (:mod:`.metrics_formats`), capacity searches (:mod:`.capacity`), figures
(:mod:`.plots`, :mod:`.charts`).

This package also keeps the names of the former module ``triple_py.bench.report``."""
from ..results.benchmark_units import unit_values
from ..results.document import results_doc
from ..results.summary import ArmSummary, summarize
from .files import write_results
from .gobench import go_bench_text, go_header, go_line
from .text import (NOTE_FEW_ROUNDS, comparison, format_run_summary, format_scenario_table,
                   format_summary)
from .tidy_csv import CSV_COLUMNS, csv_rows, csv_text, write_csv, write_paired_csv

__all__ = ["CSV_COLUMNS", "ArmSummary", "summarize", "format_scenario_table",
           "format_summary", "unit_values", "go_line", "go_bench_text", "go_header",
           "csv_rows", "csv_text", "write_csv", "write_paired_csv", "results_doc",
           "write_results", "comparison", "format_run_summary", "NOTE_FEW_ROUNDS"]

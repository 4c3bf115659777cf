"""The one result model and what reads it: the record of one arm run
(:mod:`~triple_py.bench.record.result`:
BenchResult, Latency), a matrix run (:mod:`.model`: MatrixRun, ArmRun; capacity searches
in :mod:`.capacity`), the environment it ran in (:mod:`.environment`), the results
document (:mod:`.document`, ``results.json``, versioned; :mod:`.reader` reads any known
version back into the model) and its frames (:mod:`.frames`: pandas
``Results``, ``load_results``), the summaries (:mod:`.summary`, :mod:`.benchmark_units`),
the paired comparison (:mod:`.paired`), the statistics (:mod:`.statistics`) and the HTML
views of notebooks (:mod:`.views`, :mod:`~triple_py.bench.record.html_tables`).

This package also keeps the names of the former module ``triple_py.bench.results`` (see
:mod:`.frames`)."""
from .frames import (RUN_COLUMNS, SUCCESS_CODES, Results, load_results, percentile_spectrum,
                     results_from_document, results_from_run)
from .statistics import conclusions, higher_is_better, interval, significant_changes

__all__ = ["Results", "load_results", "results_from_document", "results_from_run",
           "RUN_COLUMNS", "SUCCESS_CODES", "percentile_spectrum", "interval",
           "higher_is_better", "significant_changes", "conclusions"]

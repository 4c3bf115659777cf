"""The standard figures in one call (:func:`triple_py.bench.plots.standard`), from whatever
a notebook holds: a results directory or its JSON, a loaded :class:`~.results.Results`, a
:class:`~.harness.MatrixRun` just run, or a single :class:`~.result.BenchResult`.

In Jupyter each figure is displayed inline as it is drawn (and closed, so it does not show
twice); elsewhere the figures are only returned.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Union

from .results import Results, load_results, results_from_document

__all__ = ["as_results", "draw_standard", "MATRIX_FIGURES", "RUN_FIGURES"]

#: The figures of a matrix, in the order drawn (names as in the notebooks' PNG files).
MATRIX_FIGURES = ("qps", "p99-vs-concurrency", "latency-cdf", "percentile-spectrum",
                  "throughput-latency", "timeseries", "errors")
#: The figures of a single run (one arm, one scenario: nothing to compare).
RUN_FIGURES = ("latency-cdf", "percentile-spectrum", "timeseries")

Show = Union[str, None, Callable[[Any], Any]]


def as_results(source: Any) -> Results:
    """``source`` as Results: a Results as is, a path loaded, a MatrixRun or BenchResult
    converted in memory (through the same document the harness writes)."""
    from .harness import MatrixRun, single_run
    from .report import results_doc
    from .result import BenchResult

    if isinstance(source, Results):
        return source
    if isinstance(source, (str, Path)):
        return load_results(source)
    if isinstance(source, BenchResult):
        source = single_run(source, capture_environment=False)
    if isinstance(source, MatrixRun):
        doc = json.loads(json.dumps(results_doc(source), default=str))
        return results_from_document(doc, Path(f"{source.matrix.name}.json"))
    raise TypeError(f"cannot draw figures of a {type(source).__name__} (give a results "
                    f"directory, Results, a MatrixRun or a BenchResult)")


def _draw(res: Results, name: str):
    from . import plots

    rate = "streams/s" if res.streaming else "calls/s"
    drawers = {
        "qps": lambda: plots.grouped_bars(res, "qps", x="payload", panel="concurrency",
                                          ylabel=rate, title=f"{rate} per arm", log_y=True),
        "p99-vs-concurrency": lambda: plots.line_vs(res, "p99_ms", x="concurrency",
                                                    panel="payload", ylabel="p99 (ms)",
                                                    title="p99 vs concurrency"),
        "latency-cdf": lambda: plots.latency_cdf(res),
        "percentile-spectrum": lambda: plots.percentile_spectrum(res),
        "throughput-latency": lambda: plots.throughput_latency(res, panel="payload"),
        "timeseries": lambda: plots.timeseries(res),
        "errors": lambda: plots.errors(res),
    }
    return drawers[name]()


def _shower(show: Show) -> Optional[Callable[[Any], Any]]:
    if show != "auto":
        return show if callable(show) else None
    from .live import in_notebook

    if not in_notebook():
        return None
    from IPython.display import display
    import matplotlib.pyplot as plt

    def inline(fig: Any) -> None:
        display(fig)
        plt.close(fig)  # shown once, here, not again at the end of the cell
    return inline


def draw_standard(source: Any, show: Show = "auto") -> Dict[str, Any]:
    """Draws the standard figures of ``source`` (see :func:`as_results`): for a matrix
    :data:`MATRIX_FIGURES`, for a single run :data:`RUN_FIGURES`. Returns {name: Figure}.
    ``show``: "auto" displays each inline in Jupyter (nothing elsewhere), a callable is
    called with each figure, None shows nothing."""
    res = as_results(source)
    single = len(res.scenarios) <= 1 and len(res.arms) <= 1 and res.rounds <= 1
    shower = _shower(show)
    figures = {}
    for name in RUN_FIGURES if single else MATRIX_FIGURES:
        figures[name] = _draw(res, name)
        if shower is not None:
            shower(figures[name])
    return figures

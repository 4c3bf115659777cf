"""The figures of notebooks, in one namespace (``from triple_py.bench import plots``): the
charts of :mod:`.charts` (grouped bars, lines, latency CDF and percentile spectrum, time
series, errors; :func:`save`), and the standard set in one call (:func:`standard`) from
whatever a notebook holds: a results directory or its JSON, a loaded
:class:`~triple_py.bench.results.frames.Results`, a
:class:`~triple_py.bench.results.model.MatrixRun` just run, or a single
:class:`~triple_py.bench.record.result.BenchResult`.

In Jupyter each figure of the standard set is displayed inline as it is drawn (and closed,
so it does not show twice); elsewhere the figures are only returned.

::

    from triple_py.bench import load_results, plots
    res = load_results("results/seed-unary-20261130-120000")
    fig = plots.grouped_bars(res, "qps", x="payload", panel="concurrency")
    plots.save(fig, res.directory, "unary-qps-vs-payload")
    plots.standard(res)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Optional, Union

from ..ipython import in_notebook
from ..record.result import BenchResult
from ..results.frames import Results, load_results, results_from_run
from ..results.model import MatrixRun, single_run
from . import charts
from .charts import (SPECTRUM_TICKS, arm_colors, errors, grouped_bars, latency_cdf, line_vs,
                     percentile_spectrum, save, throughput_latency, timeseries)

__all__ = ["arm_colors", "save", "standard", "grouped_bars", "line_vs", "latency_cdf",
           "percentile_spectrum", "timeseries", "throughput_latency", "errors", "SPECTRUM_TICKS",
           "as_results", "draw_standard", "MATRIX_FIGURES", "RUN_FIGURES"]

#: The figures of a matrix, in the order drawn (names as in the notebooks' PNG files).
MATRIX_FIGURES = ("qps", "p99-vs-concurrency", "latency-cdf", "percentile-spectrum",
                  "throughput-latency", "timeseries", "errors")
#: The figures of a single run (one arm, one scenario: nothing to compare).
RUN_FIGURES = ("latency-cdf", "percentile-spectrum", "timeseries")

Show = Union[str, None, Callable[[Any], Any]]


def as_results(source: Any) -> Results:
    """``source`` as Results: a Results as is, a path loaded, a MatrixRun or BenchResult
    built from their records (:func:`~triple_py.bench.results.frames.results_from_run`)."""
    if isinstance(source, Results):
        return source
    if isinstance(source, (str, Path)):
        return load_results(source)
    if isinstance(source, BenchResult):
        source = single_run(source, capture_environment=False)
    if isinstance(source, MatrixRun):
        return results_from_run(source)
    raise TypeError(f"cannot draw figures of a {type(source).__name__} (give a results "
                    f"directory, Results, a MatrixRun or a BenchResult)")


def _draw(res: Results, name: str):
    rate = "streams/s" if res.streaming else "calls/s"
    drawers = {
        "qps": lambda: charts.grouped_bars(res, "qps", x="payload", panel="concurrency",
                                          ylabel=rate, title=f"{rate} per arm", log_y=True),
        "p99-vs-concurrency": lambda: charts.line_vs(res, "p99_ms", x="concurrency",
                                                    panel="payload", ylabel="p99 (ms)",
                                                    title="p99 vs concurrency"),
        "latency-cdf": lambda: charts.latency_cdf(res),
        "percentile-spectrum": lambda: charts.percentile_spectrum(res),
        "throughput-latency": lambda: charts.throughput_latency(res, panel="payload"),
        "timeseries": lambda: charts.timeseries(res),
        "errors": lambda: charts.errors(res),
    }
    return drawers[name]()


def _shower(show: Show) -> Optional[Callable[[Any], Any]]:
    if show != "auto":
        return show if callable(show) else None

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


def standard(source: Any, show: Any = "auto") -> Dict[str, Any]:
    """The standard figures in one call: a results directory (or its JSON), Results, a
    MatrixRun or a single BenchResult; inline in Jupyter. See
    :func:`draw_standard`."""
    return draw_standard(source, show)

"""Per-worker views of distributed runs (:mod:`~triple_py.bench.distributed`): a text table
for the CLI, a
tidy DataFrame and a figure for notebooks.

A merged result keeps each worker's own figures in ``extra["workers"]`` (see
:func:`.merge.worker_row`); these functions read them from a
:class:`~triple_py.bench.record.result.BenchResult` or from every run of a loaded results document.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from ..record.result import BenchResult
from .merge import worker_row

__all__ = ["worker_rows", "format_workers", "format_failed_run", "workers_frame",
           "plot_workers"]


def worker_rows(result: BenchResult) -> List[Dict[str, Any]]:
    """The per-worker rows of a merged result ([] for a local run)."""
    return list(result.extra.get("workers") or [])


def _ms(ns: Optional[float]) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def format_workers(result: BenchResult) -> str:
    """A table: one line per worker, then the merged figures and the imbalance."""
    rows = worker_rows(result)
    if not rows:
        return ""
    lines = _table(rows)
    cpu = result.cpu_us_per_call
    lines.append(f"{'merged':<28} {result.concurrency:>5} {result.connections:>4} "
                 f"{result.calls:>9} {result.qps:>10.0f} {_ms(result.p50):>8} "
                 f"{_ms(result.p99):>8} {'-' if cpu is None else f'{cpu:.2f}':>11}")
    imbalance = (result.extra.get("imbalance") or {}).get("qps")
    if imbalance is not None:
        lines.append(f"imbalance between workers (qps max-min over mean): {imbalance:.1%}")
    return "\n".join(lines) + "\n"


def _table(rows: Sequence[Mapping[str, Any]]) -> List[str]:
    """The header and one line per worker row."""
    lines = [f"{'worker':<28} {'c':>5} {'conn':>4} {'calls':>9} {'qps':>10} {'p50 ms':>8} "
             f"{'p99 ms':>8} {'cpu us/call':>11} {'offset ms':>9} {'rtt ms':>7}"]
    for r in rows:
        cpu = r.get("cpu_us_per_call")
        lines.append(f"{r['worker']:<28} {r['concurrency']:>5} {r['connections']:>4} "
                     f"{r['calls']:>9} {r['qps']:>10.0f} {_ms(r['p50_ns']):>8} "
                     f"{_ms(r['p99_ns']):>8} {'-' if cpu is None else f'{cpu:.2f}':>11} "
                     f"{r['clock_offset_ms']:>9.3f} {r['clock_rtt_ms']:>7.3f}")
    return lines


def format_failed_run(parts: Sequence[Any], failures: Sequence[Any]) -> str:
    """A distributed run that failed (:class:`~triple_py.bench.distributed.WorkersFailed`):
    the figures
    of the workers that finished (``parts``), one line each, then each failed worker
    and why (``failures``); nothing is merged."""
    if not parts and not failures:
        return ""

    start = min((p.window_start_ns for p in parts), default=0)
    table = _table([worker_row(p, start) for p in parts]) if parts else []
    lines = [f"the workers that finished ({len(parts)}; not merged):"] + table
    lines += [f"{f.worker:<28} FAILED: {f.error}" for f in failures]
    return "\n".join(lines) + "\n"


def _entry_rows(entry: Mapping[str, Any]) -> List[Dict[str, Any]]:
    result = entry.get("result") or {}
    base = {"scenario": (entry.get("scenario") or {}).get("label") or entry.get("name"),
            "arm": entry.get("arm"), "round": entry.get("round")}
    rows = [dict(base, **{k: w.get(k) for k in (
        "worker", "concurrency", "connections", "calls", "errors", "qps", "p50_ns",
        "p99_ns", "cpu_us_per_call", "clock_offset_ms", "clock_rtt_ms", "start_skew_ms")})
        for w in (result.get("extra") or {}).get("workers") or []]
    if rows:
        latency = result.get("latency_corrected_ns") or {}
        cpu = result.get("cpu") or {}
        rows.append(dict(base, worker="merged", concurrency=result.get("concurrency"),
                         connections=result.get("connections"), calls=result.get("calls"),
                         errors=result.get("errors"), qps=result.get("qps"),
                         p50_ns=latency.get("p50"), p99_ns=latency.get("p99"),
                         cpu_us_per_call=cpu.get("process_us_per_call")))
    return rows


def workers_frame(results: Any):
    """A DataFrame of every distributed run in ``results`` (a
    :class:`~triple_py.bench.results.frames.Results`): one row per run and worker, plus a
    ``merged`` row per
    run; latencies also in ms (``p50_ms``, ``p99_ms``)."""
    import pandas as pd

    rows = [row for entry in results.document.get("results", []) for row in _entry_rows(entry)]
    frame = pd.DataFrame.from_records(rows, columns=[
        "scenario", "arm", "round", "worker", "concurrency", "connections", "calls",
        "errors", "qps", "p50_ns", "p99_ns", "cpu_us_per_call", "clock_offset_ms",
        "clock_rtt_ms", "start_skew_ms"])
    for col in ("p50", "p99"):
        frame[f"{col}_ms"] = pd.to_numeric(frame[f"{col}_ns"], errors="coerce") / 1e6
    return frame


def plot_workers(results: Any, scenario: Optional[str] = None, axes: Any = None):
    """Per-worker and merged QPS and p99 (mean over rounds), one group of bars per arm,
    for one scenario (default: the first). Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    frame = workers_frame(results)
    if frame.empty:
        raise ValueError("no distributed runs in these results")
    scenario = scenario or frame["scenario"].iloc[0]
    frame = frame[frame["scenario"] == scenario]
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    else:
        fig = axes[0].figure
    means = frame.groupby(["arm", "worker"], sort=False)[["qps", "p99_ms"]].mean()
    table = means.unstack("worker")
    for ax, column, label in ((axes[0], "qps", "calls/s"), (axes[1], "p99_ms", "p99 (ms)")):
        table[column].plot.bar(ax=ax, rot=0)
        ax.set_ylabel(label)
        ax.set_title(f"{scenario}: {label} per worker and merged")
        ax.legend(fontsize="small")
    fig.tight_layout()
    return fig

"""The charts of a harness output (:class:`~triple_py.bench.results.frames.Results`), as
used by ``notebooks/`` (through :mod:`.plots`).

Each function takes the loaded results and returns a matplotlib Figure; :func:`save`
writes it as PNG. Colours are fixed per arm (the matrix's order), so an arm looks the same
in every figure. Error bars are the 95 % Student-t interval of the mean over the rounds
(:meth:`Results.aggregate`); with a single round there are none.

::

    from triple_py.bench import load_results, plots
    res = load_results("results/seed-unary-20261130-120000")
    fig = plots.grouped_bars(res, "qps", x="payload", panel="concurrency")
    plots.save(fig, res.directory, "unary-qps-vs-payload")

matplotlib is imported on first use (``python3-matplotlib``).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..results.frames import SUCCESS_CODES, Results
from ..units import format_size

__all__ = ["arm_colors", "save", "grouped_bars", "line_vs", "latency_cdf",
           "percentile_spectrum", "timeseries", "throughput_latency", "errors",
           "SPECTRUM_TICKS"]

#: x positions (1 / (1 - p)) and labels of the percentile-spectrum axis.
SPECTRUM_TICKS = ((1, "0"), (10, "90"), (100, "99"), (1000, "99.9"),
                  (10000, "99.99"), (100000, "99.999"), (1000000, "99.9999"))

_AXIS_NAMES = {"payload": "payload", "concurrency": "concurrency (in flight)",
               "stream_messages": "messages per stream (K)", "connections": "connections",
               "rate": "offered rate (calls/s)", "scenario": "scenario"}


def _plt():
    import matplotlib.pyplot as plt  # headless: matplotlib falls back on Agg by itself
    return plt


def arm_colors(res: Results) -> Dict[str, Any]:
    """{arm: colour}: tab10 in the matrix's arm order (the baseline grey-blue first)."""
    plt = _plt()
    cycle = plt.get_cmap("tab10").colors
    return {arm: cycle[i % len(cycle)] for i, arm in enumerate(res.arms)}


def save(fig, out_dir: Union[str, Path], name: str, dpi: int = 110) -> Path:
    """Writes ``fig`` as ``<out_dir>/<name>.png`` (directory created); returns the path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / (name if name.endswith(".png") else name + ".png")
    fig.savefig(path, dpi=dpi)  # the layout is already tight (_finish)
    return path


def _label(axis: str, value: Any) -> str:
    if axis == "payload":
        return format_size(int(value))
    if axis == "concurrency":
        return f"c{int(value)}"
    if axis == "stream_messages":
        return f"K={int(value)}"
    if axis == "rate":
        return "closed loop" if not value else f"{value:g}/s"
    return str(value)


def _grid(n: int, max_cols: int = 4, size: Tuple[float, float] = (4.2, 3.2),
          sharey: bool = False):
    plt = _plt()
    cols = max(1, min(max_cols, n))
    rows = max(1, math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows),
                             squeeze=False, sharey=sharey)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _yerr(agg) -> List[List[float]]:
    lo = (agg["mean"] - agg["lo"]).clip(lower=0).fillna(0.0)
    hi = (agg["hi"] - agg["mean"]).clip(lower=0).fillna(0.0)
    # the lower whisker stops at zero: a negative rate or latency means nothing
    lo = lo.where(agg["mean"] - lo >= 0, agg["mean"])
    return [lo.tolist(), hi.tolist()]


def _finish(fig, title: str, colors: Dict[str, Any], arms: Sequence[str]) -> None:
    """Title and one legend (arm colours) above the panels, then a tight layout."""
    from matplotlib.patches import Patch

    height = fig.get_size_inches()[1]
    fig.suptitle(title, y=1 - 0.08 / height, va="top", fontsize=11)
    handles = [Patch(color=colors[a], label=a) for a in arms]
    if handles:
        fig.legend(handles=handles, loc="upper center", ncol=min(6, len(handles)),
                   bbox_to_anchor=(0.5, 1 - 0.34 / height), frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.62 if handles else 0.36) / height))


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def grouped_bars(res: Results, value: str = "qps", x: str = "payload",
                 panel: Optional[str] = "concurrency", ylabel: Optional[str] = None,
                 title: Optional[str] = None, log_y: bool = False,
                 arms: Optional[Sequence[str]] = None):
    """Grouped bars of ``value`` (mean over rounds, 95 % CI whiskers): groups along ``x``
    (a scenario axis: payload sizes give a log-spaced axis), one bar per arm, one panel
    per value of ``panel``. Arms without the measurement (NaN) are left out."""
    import numpy as np

    agg = res.aggregate(value)
    colors = arm_colors(res)
    arms = [a for a in (arms or res.arms) if a in set(agg.get("arm", []))]
    panels = sorted(agg[panel].unique()) if panel and len(agg) else [None]
    fig, axes = _grid(len(panels), max_cols=3, size=(5.2, 3.6))
    for ax, pv in zip(axes, panels):
        sub = agg if pv is None else agg[agg[panel] == pv]
        px = x
        if len(sub) and sub.duplicated(["arm", x]).any():
            px = "scenario"  # another axis varies too: one group per scenario
        xs = (sorted(sub[px].unique(), key=res.scenarios.index) if px == "scenario" else
              sorted(sub[px].unique())) if len(sub) else []
        if not xs:
            _empty(ax, f"no {value}")
            continue
        width = 0.8 / max(1, len(arms))
        for i, arm in enumerate(arms):
            a = sub[sub["arm"] == arm].set_index(px).reindex(xs)
            pos = np.arange(len(xs)) + (i - (len(arms) - 1) / 2) * width
            ax.bar(pos, a["mean"].fillna(0.0), width, color=colors[arm], label=arm,
                   yerr=_yerr(a), capsize=3, error_kw={"elinewidth": 1})
        ax.set_xticks(np.arange(len(xs)), [_label(px, v) for v in xs])
        ax.set_xlabel(_AXIS_NAMES.get(px, px))
        ax.set_ylabel(ylabel or value)
        if log_y:
            ax.set_yscale("log")
        if pv is not None:
            ax.set_title(f"{_AXIS_NAMES.get(panel, panel)}: {_label(panel, pv)}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    rounds = int(agg["n"].max()) if len(agg) else 0
    _finish(fig, (title or f"{ylabel or value}") + f"  (mean of {rounds} rounds, 95% CI)",
            colors, arms)
    return fig


def line_vs(res: Results, value: str = "p99_ms", x: str = "concurrency",
            panel: Optional[str] = "payload", ylabel: Optional[str] = None,
            title: Optional[str] = None, log_y: bool = True, log_x: bool = True):
    """``value`` (mean over rounds, 95 % CI) against a scenario axis ``x``, one line per
    arm, one panel per value of ``panel`` (e.g. p99 against concurrency per payload)."""
    agg = res.aggregate(value)
    colors = arm_colors(res)
    panels = sorted(agg[panel].unique()) if panel and len(agg) else [None]
    fig, axes = _grid(len(panels), max_cols=4, size=(4.2, 3.4))
    shown = []
    for ax, pv in zip(axes, panels):
        sub = agg if pv is None else agg[agg[panel] == pv]
        if sub.empty:
            _empty(ax, f"no {value}")
            continue
        for arm in res.arms:
            a = sub[sub["arm"] == arm].sort_values(x)
            if a.empty:
                continue
            shown.append(arm)
            ax.errorbar(a[x], a["mean"], yerr=_yerr(a), color=colors[arm], marker="o",
                        ms=4, capsize=3, label=arm)
        xs = sorted(sub[x].unique())
        if log_x and len(xs) > 1 and min(xs) > 0:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [_label(x, v) for v in xs])
        ax.minorticks_off()
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel(_AXIS_NAMES.get(x, x))
        ax.set_ylabel(ylabel or value)
        if pv is not None:
            ax.set_title(f"{_AXIS_NAMES.get(panel, panel)}: {_label(panel, pv)}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    rounds = int(agg["n"].max()) if len(agg) else 0
    _finish(fig, (title or f"{ylabel or value} vs {_AXIS_NAMES.get(x, x)}")
            + f"  (mean of {rounds} rounds, 95% CI)", colors,
            [a for a in res.arms if a in shown])
    return fig


def _scenario_grid(res: Results, dist, draw, empty_text: str):
    colors = arm_colors(res)
    scenarios = [s for s in res.scenarios if s in set(dist.get("scenario", []))] or \
        res.scenarios[:1]
    fig, axes = _grid(len(scenarios), max_cols=4, size=(4.2, 3.3))
    shown = set()
    for ax, scenario in zip(axes, scenarios):
        sub = dist[dist["scenario"] == scenario] if len(dist) else dist
        if sub.empty:
            _empty(ax, empty_text)
            ax.set_title(scenario, fontsize=10)
            continue
        for arm in res.arms:
            a = sub[sub["arm"] == arm]
            if a.empty:
                continue
            shown.add(arm)
            draw(ax, a, colors[arm], arm)
        ax.set_title(scenario, fontsize=10)
        ax.grid(alpha=0.3, which="both")
    return fig, [a for a in res.arms if a in shown]


def _thin(a, key: str, points: int = 400, geometric: bool = False):
    """At most about ``points`` rows of ``a`` (ascending in ``key``), evenly spread along
    ``key`` (geometrically when ``geometric``); the first and last rows always stay. A
    line through thousands of distinct histogram values looks the same and draws faster."""
    import numpy as np

    if len(a) <= points:
        return a
    values = a[key].to_numpy(dtype=float)
    lo, hi = values[0], values[-1]
    grid = (np.geomspace(max(lo, 1e-12), hi, points) if geometric and lo > 0 else
            np.linspace(lo, hi, points))
    idx = np.unique(np.concatenate([[0, len(a) - 1],
                                    np.clip(np.searchsorted(values, grid), 0, len(a) - 1)]))
    return a.iloc[idx]


def latency_cdf(res: Results, corrected: bool = True):
    """The latency ECDF per scenario (one panel each), one line per arm, rounds merged;
    log latency axis."""
    dist = res.latency_distribution(corrected=corrected)

    def draw(ax, a, color, arm):
        a = _thin(a, "cumulative")
        ax.step(a["value_ms"], a["cumulative"], where="post", color=color, label=arm, lw=1.3)
        ax.set_xscale("log")
        ax.set_xlabel("latency (ms)")
        ax.set_ylabel("fraction of calls ≤ x")
        ax.set_ylim(0, 1.01)

    fig, shown = _scenario_grid(res, dist, draw, "no latency histogram")
    _finish(fig, "Latency ECDF (rounds merged)", arm_colors(res), shown)
    return fig


def percentile_spectrum(res: Results, corrected: bool = True):
    """HdrHistogram's percentile spectrum per scenario: latency against percentile on a
    log axis over 1 / (1 - p), ticks at 90 / 99 / 99.9 / 99.99 %; one line per arm."""
    dist = res.latency_distribution(corrected=corrected)
    top = float(dist["inverse_tail"].max()) if len(dist) else 10.0

    def draw(ax, a, color, arm):
        a = _thin(a, "inverse_tail", geometric=True)
        ax.step(a["inverse_tail"], a["value_ms"], where="post", color=color, label=arm,
                lw=1.3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticks = [(x, l) for x, l in SPECTRUM_TICKS if x <= max(top, 10)]
        # a decade per tick leaves less room than "99.999" needs beyond five ticks: slant
        ax.set_xticks([x for x, _ in ticks], [l for _, l in ticks],
                      **({"rotation": 50, "ha": "right", "rotation_mode": "anchor", "fontsize": 8}
                         if len(ticks) > 5 else {}))
        ax.minorticks_off()
        ax.set_xlim(1, max(top, 10) * 1.2)
        ax.set_xlabel("percentile (%)")
        ax.set_ylabel("latency (ms)")

    fig, shown = _scenario_grid(res, dist, draw, "no latency histogram")
    _finish(fig, "Latency by percentile (HDR spectrum, rounds merged)", arm_colors(res),
            shown)
    return fig


def timeseries(res: Results):
    """Per-second QPS (top) and p99 (bottom) of every run on one timeline, in the order the
    runs ran (each run's measured window after the previous one's); colour = arm, dotted
    lines between scenarios. Spots warm-up, GC pauses, reconnects and drift."""
    plt = _plt()
    ts = res.timeseries
    colors = arm_colors(res)
    fig, (ax_q, ax_p) = plt.subplots(2, 1, figsize=(12, 6), sharex=True)
    if ts.empty:
        _empty(ax_q, "no per-second series")
        _empty(ax_p, "no per-second series")
        return fig
    offset = 0.0
    boundaries: List[Tuple[float, str]] = []
    last_scenario = None
    shown = set()
    for order, run in ts.sort_values(["order", "second"]).groupby("order", sort=True):
        scenario = run["scenario"].iloc[0]
        arm = run["arm"].iloc[0]
        if scenario != last_scenario:
            boundaries.append((offset, scenario))
            last_scenario = scenario
        starts = offset + run["second"].astype(float)
        mids = starts + run["width_s"] / 2
        ax_q.plot(mids, run["qps"], color=colors.get(arm), marker="o", ms=3, lw=1.2)
        ax_p.plot(mids, run["p99_ms"], color=colors.get(arm), marker="o", ms=3, lw=1.2)
        shown.add(arm)
        offset += float(run["width_s"].sum())
    for ax in (ax_q, ax_p):
        for x, _ in boundaries[1:]:
            ax.axvline(x, color="grey", ls=":", lw=0.8)
        ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both")
    for x, label in boundaries:
        ax_q.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                      rotation=90, va="top", ha="left", color="grey")
    ax_q.set_ylabel("calls/s (streams/s)")
    ax_p.set_ylabel("p99 in the second (ms)")
    ax_p.set_xlabel("measured time, runs back to back in execution order (s)")
    _finish(fig, "Per-second throughput and p99", colors, [a for a in res.arms if a in shown])
    return fig


def throughput_latency(res: Results, panel: Optional[str] = "payload"):
    """p50 (dashed) and p99 (solid) against throughput, one line per arm through its
    scenarios (the load levels), one panel per ``panel`` value: against the offered rate
    when the matrix has an open-loop rate axis, otherwise against the achieved QPS of the
    closed-loop concurrency levels. The knee is where latency turns up."""
    m = res.measured
    open_loop = bool((m["rate"].fillna(0) > 0).any())
    x = "rate" if open_loop else "qps"
    group_axis = "rate" if open_loop else "concurrency"
    colors = arm_colors(res)
    panels = sorted(m[panel].dropna().unique()) if panel and len(m) else [None]
    fig, axes = _grid(len(panels), max_cols=4, size=(4.4, 3.4))
    shown = set()
    for ax, pv in zip(axes, panels):
        sub = m if pv is None else m[m[panel] == pv]
        for arm in res.arms:
            a = sub[sub["arm"] == arm]
            if a.empty:
                continue
            g = a.groupby(group_axis).agg(x=(x, "mean"), p50=("p50_ms", "mean"),
                                          p99=("p99_ms", "mean")).sort_values("x")
            if g["p99"].isna().all():
                continue
            shown.add(arm)
            ax.plot(g["x"], g["p99"], color=colors[arm], marker="o", ms=4, lw=1.4)
            ax.plot(g["x"], g["p50"], color=colors[arm], marker=".", ms=3, lw=1, ls="--")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("offered rate (calls/s)" if open_loop else "achieved calls/s")
        ax.set_ylabel("latency (ms)")
        if pv is not None:
            ax.set_title(f"{_AXIS_NAMES.get(panel, panel)}: {_label(panel, pv)}", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    _finish(fig, "Throughput vs latency: p99 solid, p50 dashed" + (
        " (open loop)" if open_loop else " (closed loop: one point per concurrency)"),
            colors, [a for a in res.arms if a in shown])
    return fig


def errors(res: Results):
    """Failed calls per scenario and arm (all rounds), stacked by status code; failed runs
    (the arm raised) are marked with ✗. Says so when there is nothing to show."""
    import numpy as np
    import pandas as pd

    plt = _plt()
    runs = res.runs
    colors = arm_colors(res)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(res.scenarios) * max(1, len(res.arms))
                                        / 2), 3.6))
    codes: Dict[Tuple[str, str], Dict[str, int]] = {}
    for _, r in runs.iterrows():
        bad = {c: int(n) for c, n in (r["status_codes"] or {}).items()
               if c not in SUCCESS_CODES and n}
        if not bad and r["errors"] is not pd.NA and (r["errors"] or 0) > 0:
            bad = {"errors": int(r["errors"])}
        for code, n in bad.items():
            d = codes.setdefault((r["scenario"], r["arm"]), {})
            d[code] = d.get(code, 0) + n
    failed = runs[runs["failed"].notna()].groupby(["scenario", "arm"]).size()
    all_codes = sorted({c for d in codes.values() for c in d})
    total_calls = int(runs["calls"].fillna(0).sum())
    if not all_codes and failed.empty:
        _empty(ax, f"no failed call in {total_calls:,} calls and no failed run")
        ax.set_title("Errors and status codes", fontsize=11)
        return fig
    width = 0.8 / max(1, len(res.arms))
    hatches = ["", "//", "xx", "..", "\\\\", "oo", "++"]
    xs = np.arange(len(res.scenarios))
    for i, arm in enumerate(res.arms):
        pos = xs + (i - (len(res.arms) - 1) / 2) * width
        bottom = np.zeros(len(xs))
        for j, code in enumerate(all_codes):
            h = np.array([codes.get((s, arm), {}).get(code, 0) for s in res.scenarios])
            ax.bar(pos, h, width, bottom=bottom, color=colors[arm], hatch=hatches[j % 7],
                   edgecolor="white", label=f"{arm} {code}" if h.any() else None)
            bottom += h
        for k, s in enumerate(res.scenarios):
            if failed.get((s, arm), 0):
                ax.annotate("✗", (pos[k], bottom[k]), ha="center", va="bottom",
                            color=colors[arm], fontsize=12)
    ax.set_xticks(xs, res.scenarios, rotation=30, ha="right")
    ax.set_ylabel("failed calls (all rounds)")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Errors by status code (✗: a run that failed outright)", fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


"""One run as a self-contained HTML file (``run -O html``): summary, latency histogram,
percentile spectrum, per-second series, status codes, the run's options and environment;
and a matrix run's ``report.html`` (the same for each scenario and arm).

The charts are inline SVG drawn here: no script, no external file, no network.
"""
from __future__ import annotations

import html
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..record.result import BenchResult

__all__ = ["run_html", "matrix_html"]

W, H, PAD = 640, 240, 44
BLUE, ORANGE, GREY = "#1f77b4", "#ff7f0e", "#999999"


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _ms(ns: Optional[float]) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def _svg(title: str, body: List[str], x_label: str, y_label: str) -> str:
    return (f'<figure><figcaption>{_esc(title)}</figcaption>'
            f'<svg class="chart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{_esc(title)}">'
            f'<line x1="{PAD}" y1="{H - PAD}" x2="{W - 10}" y2="{H - PAD}" stroke="#333"/>'
            f'<line x1="{PAD}" y1="10" x2="{PAD}" y2="{H - PAD}" stroke="#333"/>'
            + "".join(body)
            + f'<text x="{W / 2}" y="{H - 8}" text-anchor="middle">{_esc(x_label)}</text>'
            f'<text x="12" y="{H / 2}" transform="rotate(-90 12 {H / 2})" '
            f'text-anchor="middle">{_esc(y_label)}</text></svg></figure>')


def _scale(lo: float, hi: float, out_lo: float, out_hi: float):
    span = (hi - lo) or 1.0
    return lambda v: out_lo + (v - lo) / span * (out_hi - out_lo)


def _tick(x: float, y: float, text: str, anchor: str = "middle") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="10" text-anchor="{anchor}">{_esc(text)}</text>'


def _histogram_chart(hist: Sequence[Tuple[float, int]]) -> str:
    if not hist:
        return "<p>No latency recorded.</p>"
    lo, hi = math.log10(max(hist[0][0], 1)), math.log10(max(hist[-1][0], 2))
    bins = 40
    counts = [0] * bins
    for value, count in hist:
        i = int((math.log10(max(value, 1)) - lo) / ((hi - lo) or 1) * (bins - 1))
        counts[min(max(i, 0), bins - 1)] += count
    top = max(counts) or 1
    x = _scale(0, bins, PAD, W - 10)
    y = _scale(0, top, H - PAD, 14)
    body = [f'<rect class="bar" x="{x(i):.1f}" y="{y(c):.1f}" width="{x(1) - x(0) - 1:.1f}" '
            f'height="{H - PAD - y(c):.1f}" fill="{BLUE}"/>' for i, c in enumerate(counts) if c]
    body += [_tick(PAD, H - PAD + 14, f"{10 ** lo / 1e6:.3g} ms", "start"),
             _tick(W - 10, H - PAD + 14, f"{10 ** hi / 1e6:.3g} ms", "end"),
             _tick(PAD - 4, 18, f"{top:,}", "end")]
    return _svg("Latency histogram (log-spaced buckets)", body, "latency", "calls")


def _spectrum_chart(hist: Sequence[Tuple[float, int]]) -> str:
    total = sum(c for _, c in hist)
    if not total:
        return ""
    points, seen = [], 0
    for value, count in hist:
        seen += count
        tail = max(1 - seen / total, 1 / total / 10)
        points.append((math.log10(1 / tail), value / 1e6))
    x_hi = max(p[0] for p in points) or 1
    y_hi = max(p[1] for p in points) or 1
    x = _scale(0, x_hi, PAD, W - 10)
    y = _scale(0, y_hi, H - PAD, 14)
    path = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in points)
    body = [f'<polyline class="line" points="{path}" fill="none" stroke="{ORANGE}" '
            f'stroke-width="2"/>']
    for nines, label in ((1, "p90"), (2, "p99"), (3, "p99.9"), (4, "p99.99")):
        if nines <= x_hi:
            body.append(f'<line x1="{x(nines):.1f}" y1="{H - PAD}" x2="{x(nines):.1f}" y2="14" '
                        f'stroke="{GREY}" stroke-dasharray="3,3"/>')
            body.append(_tick(x(nines), H - PAD + 14, label))
    body.append(_tick(PAD - 4, 18, f"{y_hi:.3g} ms", "end"))
    return _svg("Percentile spectrum", body, "percentile (log of 1 / tail)", "latency (ms)")


def _series_chart(series: Mapping[str, Sequence[float]]) -> str:
    calls = list(series.get("calls", []))
    if not calls:
        return "<p>No per-second series.</p>"
    p99 = [v / 1e6 for v in series.get("p99_ns", [])]
    n, top = len(calls), max(calls) or 1
    x = _scale(0, n, PAD, W - 10)
    y = _scale(0, top, H - PAD, 14)
    body = [f'<rect class="bar" x="{x(i):.1f}" y="{y(c):.1f}" width="{x(1) - x(0) - 2:.1f}" '
            f'height="{H - PAD - y(c):.1f}" fill="{BLUE}"/>' for i, c in enumerate(calls)]
    if any(p99):
        yp = _scale(0, max(p99), H - PAD, 14)
        pts = " ".join(f"{x(i + 0.5):.1f},{yp(v):.1f}" for i, v in enumerate(p99))
        body.append(f'<polyline class="line" points="{pts}" fill="none" stroke="{ORANGE}" '
                    f'stroke-width="2"/>')
        body.append(_tick(W - 12, 18, f"p99 max {max(p99):.3g} ms", "end"))
    body += [_tick(PAD - 4, 18, f"{top:,.0f}", "end"), _tick(PAD, H - PAD + 14, "0", "start"),
             _tick(W - 10, H - PAD + 14, f"{n} s", "end")]
    return _svg("Per second: calls (bars) and p99 (line)", body, "second", "calls")


def _table(rows: Sequence[Tuple[str, Any]], cls: str) -> str:
    return (f'<table class="{cls}">' + "".join(
        f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in rows) + "</table>")


_STYLE = """
body { font: 14px/1.4 sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f4f4f4; }
figure { margin: 8px 0 24px; } figcaption { font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
pre { background: #f8f8f8; padding: 8px; overflow-x: auto; }
"""


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{_esc(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
            f"{body}\n</body></html>\n")


def _run_section(result: BenchResult) -> str:
    """A run's summary table, its three charts and its status codes."""
    lat = result.latency_corrected if result.latency_corrected.count else result.latency
    hist = result.histogram_corrected or result.histogram
    summary = [("call", result.method), ("target", result.target), ("arm", result.arm),
               ("calls", f"{result.calls:,}"), ("errors", f"{result.errors:,}"),
               ("elapsed", f"{result.elapsed_s:.3f} s"), ("requests/s", f"{result.qps:,.1f}"),
               ("fastest", _ms(lat.min)), ("average", _ms(lat.mean)), ("p50", _ms(lat.p50)),
               ("p90", _ms(lat.p90)), ("p99", _ms(lat.p99)), ("p99.9", _ms(lat.p99_9)),
               ("slowest", _ms(lat.max)), ("request bytes", result.payload_size)]
    codes = sorted(result.status_codes.items(), key=lambda kv: -kv[1])
    return (f'{_table(summary, "summary")}\n<div class="charts">\n{_histogram_chart(hist)}\n'
            f'{_spectrum_chart(hist)}\n{_series_chart(result.series)}\n</div>\n'
            f'<h3>Status codes</h3>\n'
            f'{_table(codes, "status") if codes else "<p>No call.</p>"}')


def _environment_table(environment: Mapping[str, Any]) -> str:
    env = {k: v for k, v in environment.items() if isinstance(v, (str, int, float, bool))}
    return _table(sorted(env.items()), "environment")


def run_html(result: BenchResult, options: Mapping[str, Any],
             environment: Mapping[str, Any]) -> str:
    """The report page of one run; ``options`` are the run's settings as given."""
    shown = sorted((k, v) for k, v in options.items() if v not in (None, False, [], ""))
    return _page(f"triple_py run: {result.method}",
                 f"<h1>triple_py run report</h1>\n<h2>Summary</h2>\n{_run_section(result)}\n"
                 f'<h2>Options</h2>\n{_table(shown, "options")}\n'
                 f"<h2>Environment</h2>\n{_environment_table(environment)}")


def matrix_html(run: Any, summary_text: str) -> str:
    """The report page of a matrix run (a harness.MatrixRun): its summary text, then for
    every scenario and arm the round with the median QPS, then the matrix and the
    environment."""
    sections = []
    by_key: Dict[Tuple[str, str], List[Any]] = {}
    for arm_run in run.runs:
        if arm_run.result is not None:
            by_key.setdefault((arm_run.label, arm_run.arm.name), []).append(arm_run)
    for (label, arm), runs in by_key.items():
        runs = sorted(runs, key=lambda r: r.result.qps)
        median = runs[len(runs) // 2]
        sections.append(f'<section class="arm-run"><h2>{_esc(label)} / {_esc(arm)} '
                        f"(round {median.round} of {len(runs)}: the median QPS)</h2>\n"
                        f"{_run_section(median.result)}</section>")
    matrix = sorted((k, v) for k, v in run.matrix.to_dict().items()
                    if isinstance(v, (str, int, float, bool)))
    return _page(f"triple_py matrix: {run.matrix.name}",
                 f"<h1>triple_py matrix report: {_esc(run.matrix.name)}</h1>\n"
                 f"<pre>{_esc(summary_text)}</pre>\n" + "\n".join(sections) +
                 f'\n<h2>Matrix</h2>\n{_table(matrix, "options")}\n'
                 f"<h2>Environment</h2>\n{_environment_table(run.environment)}")

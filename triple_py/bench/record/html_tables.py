"""HTML tables for Jupyter: what ``_repr_html_`` of a BenchResult, a loaded results
directory, a benchstat comparison and the paired table return.

Verdicts are marked with a CSS class and a colour: ``tp-better`` (a significant
improvement, green), ``tp-worse`` (a significant regression, red), ``tp-same`` (not
significant: ``~``). Nothing here needs pandas or IPython; the frames handed in only need
``itertuples``/``iterrows`` and column access.
"""
from __future__ import annotations

import dataclasses
import html
import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

__all__ = ["html_table", "bench_result_html", "results_html", "benchstat_html",
           "dataclass_rows_html", "VERDICT_STYLE"]

#: CSS class -> inline style of the verdict marks.
VERDICT_STYLE = {"tp-better": "background:#d9f2d9;color:#0b5d0b;font-weight:bold",
                 "tp-worse": "background:#f9d6d5;color:#8a1111;font-weight:bold",
                 "tp-same": "color:#666"}


def _text(value: Any) -> str:
    """A cell's text: floats to 4 significant digits, None and NaN as ``–``."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:,.0f}" if abs(value) >= 1e3 else f"{value:.4g}"
    return str(value)


def verdict_cell(text: str, verdict: str) -> str:
    """A ``<td>`` marked with a verdict class (see :data:`VERDICT_STYLE`)."""
    return (f'<td class="{verdict}" style="{VERDICT_STYLE[verdict]}">'
            f"{html.escape(text)}</td>")


def html_table(header: Sequence[str], rows: Iterable[Sequence[Any]],
               caption: str = "") -> str:
    """A plain table; a cell already starting with ``<td`` is kept as given (a verdict)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(c if isinstance(c, str) and c.startswith("<td") else
                        f"<td>{html.escape(_text(c))}</td>" for c in row)
        body.append(f"<tr>{cells}</tr>")
    cap = f"<caption style='caption-side:top;text-align:left'>{html.escape(caption)}" \
          f"</caption>" if caption else ""
    return (f"<table class='tp-table'>{cap}<thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>")


def _ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


def bench_result_html(result: Any) -> str:
    """One BenchResult: what ran, then its figures (latencies in ms from the intended
    send), status codes and costs, as two-column tables."""
    what = [("arm", result.arm), ("mode", result.mode), ("target", result.target),
            ("method", result.method), ("payload", f"{result.payload_size} B"),
            ("in flight", result.concurrency), ("connections", result.connections)]
    if result.rate:
        what.append(("offered rate", f"{result.rate:g} calls/s"))
    verdict = "tp-worse" if result.errors else "tp-better"
    figures: List[Tuple[str, Any]] = [
        ("measured", f"{result.elapsed_s:.2f} s"), ("calls", result.calls),
        ("QPS", result.qps),
        ("errors", verdict_cell(f"{result.errors} ({result.error_rate:.2%})", verdict))]
    for name, ns in (("p50", result.p50), ("p90", result.p90), ("p99", result.p99),
                     ("p99.9", result.p99_9), ("max", result.max_latency)):
        figures.append((f"{name} (ms)", _ms(ns)))
    for name, value in (("write syscalls / call", result.write_syscalls_per_call),
                        ("client CPU µs / call", result.cpu_us_per_call),
                        ("server CPU µs / call", result.server_cpu_us_per_call)):
        if value is not None:
            figures.append((name, value))
    codes = ", ".join(f"{k}: {v:,}" for k, v in sorted(result.status_codes.items()))
    figures.append(("status codes", codes or "–"))
    return ("<div class='tp-result' style='display:flex;gap:2em;align-items:flex-start'>"
            + html_table(["", ""], what, caption=f"BenchResult {result.arm}")
            + html_table(["", ""], figures, caption="figures")
            + "</div>")


def results_html(res: Any) -> str:
    """A loaded results directory: where and what, problems, then per scenario and arm
    the measured rounds, median QPS, median p99 and errors (baseline marked)."""
    m = res.matrix
    problems = res.validate(min_rounds=1)
    about = [("results", str(res.path)),
             ("matrix", f"{m.get('name', '')}: {m.get('description', '')}"),
             ("rounds x measured", f"{m.get('rounds')} x {m.get('duration')} s"),
             ("baseline", res.baseline),
             ("runs", f"{len(res.runs)} ({len(res.measured)} measured)"),
             ("problems", verdict_cell(f"{len(problems)}" + (f": {problems[0]}" if problems
                                                              else ""),
                                       "tp-worse" if problems else "tp-better"))]
    measured = res.measured
    rows = []
    for scenario in res.scenarios:
        for arm in res.arms:
            sub = measured[(measured["scenario"] == scenario) & (measured["arm"] == arm)]
            if not len(sub):
                continue
            errors = int(sub["errors"].fillna(0).sum())
            rows.append([scenario, arm + (" (baseline)" if arm == res.baseline else ""),
                         len(sub), float(sub["qps"].median()),
                         float(sub["p99_ms"].median()) if sub["p99_ms"].notna().any()
                         else None,
                         verdict_cell(str(errors), "tp-worse" if errors else "tp-same")])
    return ("<div class='tp-results'>" + html_table(["", ""], about, caption="Results")
            + html_table(["scenario", "arm", "rounds", "median QPS", "median p99 (ms)",
                          "errors"], rows, caption="per scenario and arm") + "</div>")


def _verdict(significant: bool, better: Optional[bool]) -> str:
    if not significant:
        return "tp-same"
    return "tp-better" if better else "tp-worse"


def benchstat_html(frame: Any, better: Mapping[str, bool]) -> str:
    """benchstat's comparison (the frame of :meth:`Results.benchstat`), one table per unit:
    per benchmark the baseline's center ± CI, then per other arm its center, the change
    and its p-value, marked better / worse / ``~``. ``better[unit]`` is True when a higher
    value is better for that unit."""
    tables = []
    for unit in dict.fromkeys(frame["unit"]):
        sub = frame[(frame["unit"] == unit) & (frame["kind"] == "cell")]
        cols = list(dict.fromkeys(sub["col"]))
        header = ["benchmark"]
        for i, col in enumerate(cols):
            header += [col] if i == 0 else [col, "vs base"]
        rows = []
        for name in dict.fromkeys(sub["row"]):
            cells: List[Any] = [name]
            for i, col in enumerate(cols):
                hit = sub[(sub["row"] == name) & (sub["col"] == col)]
                if not len(hit):
                    cells += ["–"] if i == 0 else ["–", "–"]
                    continue
                r = hit.iloc[0]
                ci = str(r["ci"] or "")
                cells.append(f"{_text(float(r['center']))}"
                             + (f" ± {ci.lstrip('± ')}" if ci else ""))
                if i:
                    change = r["delta_pct"]
                    improved = None if change != change else (change > 0) == better.get(
                        unit, False)
                    text = f"{r['delta']} ({r['annotation']})" if r["annotation"] else \
                        str(r["delta"])
                    cells.append(verdict_cell(text, _verdict(bool(r["significant"]),
                                                             improved)))
            rows.append(cells)
        tables.append(html_table(header, rows, caption=f"{unit}"))
    legend = ("<div style='font-size:90%'>"
              + " ".join(f"<span class='{k}' style='{v};padding:0 .4em'>{w}</span>"
                         for (k, v), w in zip(VERDICT_STYLE.items(),
                                              ("better (significant)", "worse (significant)",
                                               "~ not significant")))
              + "</div>")
    return "<div class='tp-benchstat'>" + legend + "".join(tables) + "</div>"


def dataclass_rows_html(rows: Sequence[Any], caption: str = "", mark: str = "significant",
                        better: Optional[Any] = None) -> str:
    """Rows of one dataclass (e.g. the paired table's PairedRatio), every field a column,
    each row's ``mark`` property added as the last column and marked: better / worse
    (``better(row)``, default True) when it holds, ``~`` otherwise."""
    if not rows:
        return html_table(["(no rows)"], [], caption=caption)
    names = [f.name for f in dataclasses.fields(rows[0])]
    body = []
    for row in rows:
        values: List[Any] = [getattr(row, n) for n in names]
        flagged = bool(getattr(row, mark))
        improved = better(row) if better is not None else True
        values.append(verdict_cell("yes" if flagged else "~",
                                   _verdict(flagged, improved)))
        body.append(values)
    return html_table(names + [mark], body, caption=caption)


def as_dicts(rows: Sequence[Any], extra: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """Each dataclass row as a dict of its fields plus the ``extra`` properties."""
    return [dict(dataclasses.asdict(r), **{e: getattr(r, e) for e in extra}) for r in rows]

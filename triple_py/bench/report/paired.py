"""The paired comparison as text: the paired-by-round table and the verdicts (the
report's conclusion), from :mod:`triple_py.bench.results.paired`'s ratios."""
from __future__ import annotations

from typing import Sequence

from ..results.model import MatrixRun
from ..results.paired import PairedRatio, headline_ratios, paired_ratios
from ..results.statistics import ALPHA, MARGIN, MIN_PAIRS

__all__ = ["format_paired", "format_verdicts", "verdict_block"]


def _what(run: MatrixRun) -> str:
    return "streams/s" if run.matrix.streaming else "QPS"


def format_paired(run: MatrixRun) -> str:
    """The paired table: per scenario and arm, the per-round QPS ratios to the baseline,
    with the Hodges-Lehmann estimate, its exact 95 % interval and the signed-rank p."""
    rows = paired_ratios(run)
    if not rows:
        return ""
    head = (f"{'scenario':<18} {'arm':<16} {'rounds':>6} {'median':>8} {'range':>13} "
            f"{'estimate':>9} {'95% CI':>15} {'p':>7}  change")
    lines = [f"== paired by round: each arm's {_what(run)} / {run.matrix.baseline}'s in the "
             f"same round (Wilcoxon signed-rank; Hodges-Lehmann estimate, exact CI) ==", head,
             "-" * len(head)]
    for r in rows:
        change = f"{(r.geomean - 1) * 100:+.2f}%" if r.significant else "~"
        lines.append(f"{r.scenario:<18} {r.arm:<16} {r.rounds:>6} {r.median:>7.3f}x "
                     f"{r.low:>6.2f}..{r.high:<5.2f} {r.estimate:>8.3f}x "
                     f"{r.ci_low:>6.3f}..{r.ci_high:<6.3f} {r.p:>7.3f}  {change}")
    if max(r.rounds for r in rows) < MIN_PAIRS:
        lines.append(f"note: with fewer than {MIN_PAIRS} paired rounds the signed-rank test "
                     f"cannot reach p < {ALPHA} (its smallest p is 2 / 2^rounds)")
    return "\n".join(lines)


def format_verdicts(run: MatrixRun, margin: float = MARGIN) -> str:
    """The report's conclusion: for each headline comparison and scenario, a significant
    change with its interval, equivalence within ``margin``, or the rounds still needed;
    first for the throughput, then for the client's CPU time per call (the arms that
    measured it)."""
    blocks = [verdict_block(headline_ratios(run), _what(run), "", margin),
              verdict_block(headline_ratios(run, "cpu"), "CPU/call",
                             " (client CPU time per call: lower is cheaper)", margin)]
    return "\n\n".join(b for b in blocks if b)


def verdict_block(rows: Sequence[PairedRatio], what: str, note: str = "",
                  margin: float = MARGIN) -> str:
    """One verdict line per paired comparison of ``rows`` (of ``what``: "QPS", "CPU/call"),
    and a count of the verdicts; "" without rows."""
    if not rows:
        return ""
    width = max(len(f"{r.arm} vs {r.baseline}") for r in rows)
    scen = max(len(r.scenario) for r in rows)
    lines = [f"== verdicts: {what}{note}, paired by round; change [exact 95% CI]; p: "
             f"Wilcoxon signed-rank; equivalent: CI within ±{margin * 100:g}% =="]
    for r in rows:
        name = f"{r.arm} vs {r.baseline}"
        lines.append(f"{name:<{width}}  {r.scenario:<{scen}}  {r.rounds:>2} rounds  "
                     f"p={r.p:<6.3g} {r.conclusion(what, margin)}")
    counts = {v: sum(r.verdict == v for r in rows)
              for v in ("higher", "lower", "equivalent", "inconclusive")}
    lines.append(f"{len(rows)} comparisons: {counts['higher'] + counts['lower']} significant "
                 f"({counts['higher']} higher, {counts['lower']} lower), "
                 f"{counts['equivalent']} equivalent, {counts['inconclusive']} inconclusive")
    return "\n".join(lines)

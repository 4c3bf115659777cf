"""Paired comparison of a matrix's arms: each arm's QPS over the baseline's in the same round.

A matrix runs every arm once per round, back to back, against the same server, so two arms of
one round saw the same machine: the same neighbours, the same server state, the same minute of
the hypervisor's schedule. On a shared VM that drift moves a whole round by 10-30 %, and an
unpaired test (benchstat's Mann-Whitney U over all rounds) counts it as noise. Dividing each
arm's QPS by the baseline's QPS *of the same round* cancels what the two runs shared; what
is left is the difference between the arms plus the noise within a round.

For each scenario and arm this reports, over the rounds where both have a result:

- the median and the geometric mean of the per-round ratios, and their range;
- the two-sided p-value of Wilcoxon's signed-rank test on the log ratios (H0: the ratio's
  distribution is symmetric about 1), computed exactly from the sign-flip distribution of
  the observed ranks (ties get average ranks, zero differences are dropped), so it holds for
  any number of rounds.

As in benchstat, a change is only printed when p < alpha (0.05); otherwise ``~``.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from typing import List, Mapping, Sequence, Tuple

from .harness import MatrixRun

__all__ = ["PairedRatio", "signed_rank_p", "compare_rounds", "paired_ratios", "format_paired"]

ALPHA = 0.05
MIN_PAIRS = 6  # 2 / 2**5 = 0.0625: five pairs can never be significant


@dataclasses.dataclass
class PairedRatio:
    """One arm against the baseline in one scenario, paired by round."""

    scenario: str
    arm: str
    rounds: int  # rounds where both arms have a result
    median: float  # median of the per-round ratios (arm QPS / baseline QPS)
    geomean: float
    low: float
    high: float
    p: float  # two-sided signed-rank p-value; 1.0 when it cannot be computed

    @property
    def significant(self) -> bool:
        """Whether p < 0.05."""
        return self.p < ALPHA


def _ranks(values: Sequence[float]) -> List[float]:
    """1-based ranks of ``values``, ties getting the average of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def signed_rank_p(differences: Sequence[float]) -> float:
    """Two-sided p-value of Wilcoxon's signed-rank test that ``differences`` are symmetric
    about 0, exact under random signs of the observed ranks (zeros dropped). 1.0 when no
    difference is non-zero."""
    d = [x for x in differences if x != 0 and not math.isnan(x)]
    if not d:
        return 1.0
    # Doubled ranks are integers even with ties (average ranks end in .5).
    ranks = [int(round(2 * r)) for r in _ranks([abs(x) for x in d])]
    observed = sum(r for r, x in zip(ranks, d) if x > 0)
    total = sum(ranks)
    # counts[s]: sign assignments whose positive ranks sum to s.
    counts = [0] * (total + 1)
    counts[0] = 1
    for r in ranks:
        for s in range(total, r - 1, -1):
            counts[s] += counts[s - r]
    outcomes = 2 ** len(ranks)
    below = sum(counts[:observed + 1]) / outcomes
    above = sum(counts[observed:]) / outcomes
    return min(1.0, 2 * min(below, above))


def compare_rounds(qps: Mapping[Tuple[str, str, int], float], baseline: str,
                   scenarios: Sequence[str], arms: Sequence[str]) -> List[PairedRatio]:
    """The paired ratios from ``qps[(scenario, arm, round)]`` (measured runs only), for
    every scenario and every arm but ``baseline``, in the given orders."""
    rows = []
    for scenario in scenarios:
        runs = {(a, rnd): v for (sc, a, rnd), v in qps.items() if sc == scenario and v > 0}
        base = {rnd: v for (a, rnd), v in runs.items() if a == baseline}
        for arm in arms:
            if arm == baseline:
                continue
            ratios = [v / base[rnd] for (a, rnd), v in runs.items()
                      if a == arm and rnd in base]
            if not ratios:
                continue
            logs = [math.log(x) for x in ratios]
            rows.append(PairedRatio(
                scenario=scenario, arm=arm, rounds=len(ratios),
                median=statistics.median(ratios), geomean=math.exp(statistics.fmean(logs)),
                low=min(ratios), high=max(ratios), p=signed_rank_p(logs)))
    return rows


def paired_ratios(run: MatrixRun) -> List[PairedRatio]:
    """Every non-baseline arm of every scenario of a matrix run against the baseline,
    paired by round."""
    matrix = run.matrix
    qps = {(r.label, r.arm.name, r.round): r.result.qps for r in run.runs
           if r.result is not None}
    return compare_rounds(qps, matrix.baseline, [matrix.label(s) for s in matrix.scenarios],
                          [a.name for a in matrix.arms])


def format_paired(run: MatrixRun) -> str:
    """The paired table: per scenario and arm, the per-round QPS ratios to the baseline."""
    rows = paired_ratios(run)
    if not rows:
        return ""
    what = "streams/s" if run.matrix.streaming else "QPS"
    head = (f"{'scenario':<18} {'arm':<16} {'rounds':>6} {'median':>8} {'geomean':>8} "
            f"{'range':>13} {'p':>7}  change")
    lines = [f"== paired by round: each arm's {what} / {run.matrix.baseline}'s in the same "
             f"round (Wilcoxon signed-rank) ==", head, "-" * len(head)]
    for r in rows:
        change = f"{(r.geomean - 1) * 100:+.2f}%" if r.significant else "~"
        lines.append(f"{r.scenario:<18} {r.arm:<16} {r.rounds:>6} {r.median:>7.3f}x "
                     f"{r.geomean:>7.3f}x {r.low:>6.2f}..{r.high:<5.2f} {r.p:>7.3f}  {change}")
    if max(r.rounds for r in rows) < MIN_PAIRS:
        lines.append(f"note: with fewer than {MIN_PAIRS} paired rounds the signed-rank test "
                     f"cannot reach p < {ALPHA} (its smallest p is 2 / 2^rounds)")
    return "\n".join(lines)

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

- the Hodges-Lehmann estimate of the ratio (the median of the Walsh averages of the log
  ratios) and its exact distribution-free confidence interval: the Walsh averages between
  the order statistics that the signed-rank distribution puts at alpha/2 in each tail, so
  the interval excludes 1 exactly when the test rejects at that level (ties aside). Below
  six rounds no interval reaches 95 %; the widest one is given with its real coverage;
- a verdict: a significant change (p < alpha), or *equivalent* when the whole interval lies
  within the margin (default ±5 %; the interval-inclusion form of an equivalence test), or
  *inconclusive* with the rounds still needed, from the spread of the observed log ratios:
  enough rounds for an interval narrow enough to either exclude 1 or fit in the margin,
  whichever comes first (a normal approximation, divided by the signed-rank test's
  efficiency of 3/pi against the t-test).

As in benchstat, a change is only printed when p < alpha (0.05); otherwise ``~``.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Iterable, List, Mapping, Optional, Sequence, Tuple

from .model import MatrixRun
from .statistics import (ALPHA, MARGIN, MAX_ROUNDS, MIN_PAIRS, rounds_needed, signed_rank_p,
                         walsh_interval)

__all__ = ["PairedRatio", "signed_rank_p", "walsh_interval", "rounds_needed", "compare_pairs",
           "compare_rounds", "paired_ratios", "headline_ratios", "PAIRED_COLUMNS", "ALPHA",
           "MIN_PAIRS", "MARGIN", "MAX_ROUNDS", "VALUES"]


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
    baseline: str = ""  # the arm the ratio is over
    estimate: float = math.nan  # Hodges-Lehmann estimate of the ratio
    ci_low: float = math.nan  # its exact confidence interval...
    ci_high: float = math.nan
    confidence: float = 0.0  # ...and that interval's real coverage (>= 0.95 from 6 rounds)
    verdict: str = "inconclusive"  # "higher", "lower", "equivalent" or "inconclusive"
    more_rounds: Optional[int] = None  # inconclusive: rounds still needed (estimated)

    @property
    def significant(self) -> bool:
        """Whether p < 0.05."""
        return self.p < ALPHA

    def conclusion(self, what: str = "QPS", margin: float = MARGIN) -> str:
        """The verdict as a sentence: ``+31.2% QPS [+28.0%, +34.1%]``, ``equivalent within
        ±5% [-1.2%, +2.0%]``, ``inconclusive: needs 4 more rounds [-3.0%, +9.1%]``."""
        ci = f"[{_pct(self.ci_low)}, {_pct(self.ci_high)}]"
        if self.verdict in ("higher", "lower"):
            return f"{_pct(self.estimate)} {what} {ci}"
        if self.verdict == "equivalent":
            return f"equivalent within ±{margin * 100:g}% {ci}"
        if self.more_rounds is None:
            return f"inconclusive {ci}"
        if self.rounds + self.more_rounds >= MAX_ROUNDS:
            return f"inconclusive: needs more than {MAX_ROUNDS} rounds {ci}"
        rounds = "round" if self.more_rounds == 1 else "rounds"
        return f"inconclusive: needs {self.more_rounds} more {rounds} {ci}"


#: The columns of the paired table (CSV, ``load_results().paired()``).
PAIRED_COLUMNS = ["scenario", "arm", "baseline", "rounds", "median", "geomean", "low", "high",
                  "estimate", "ci_low", "ci_high", "confidence", "p", "significant", "verdict",
                  "more_rounds"]


def _pct(ratio: float) -> str:
    return "?" if math.isnan(ratio) else f"{(ratio - 1) * 100:+.1f}%"


def _paired_row(scenario: str, arm: str, baseline: str, ratios: Sequence[float],
                margin: float) -> PairedRatio:
    logs = [math.log(x) for x in ratios]
    estimate, low, high, coverage = walsh_interval(logs)
    p = signed_rank_p(logs)
    row = PairedRatio(scenario=scenario, arm=arm, rounds=len(ratios),
                      median=statistics.median(ratios),
                      geomean=math.exp(statistics.fmean(logs)), low=min(ratios),
                      high=max(ratios), p=p, baseline=baseline, estimate=math.exp(estimate),
                      ci_low=math.exp(low), ci_high=math.exp(high), confidence=coverage)
    bound = math.log1p(margin)
    if row.significant:
        row.verdict = "higher" if estimate > 0 else "lower"
    elif coverage >= 1 - ALPHA and -bound < low and high < bound:
        row.verdict = "equivalent"
    else:
        needed = rounds_needed(logs, margin)
        row.more_rounds = None if needed is None else max(1, needed - len(ratios))
    return row


def compare_pairs(qps: Mapping[Tuple[str, str, int], float],
                  pairs: Iterable[Tuple[str, str]], scenarios: Sequence[str],
                  margin: float = MARGIN) -> List[PairedRatio]:
    """Paired ratios from ``qps[(scenario, arm, round)]`` (measured runs only) for each
    ``(arm, baseline)`` of ``pairs`` in every scenario (pairs first, then scenarios)."""
    rows = []
    pairs = list(pairs)
    for arm, baseline in pairs:
        for scenario in scenarios:
            base = {rnd: v for (sc, a, rnd), v in qps.items()
                    if sc == scenario and a == baseline and v > 0}
            ratios = [v / base[rnd] for (sc, a, rnd), v in sorted(qps.items())
                      if sc == scenario and a == arm and v > 0 and rnd in base]
            if ratios:
                rows.append(_paired_row(scenario, arm, baseline, ratios, margin))
    return rows


def compare_rounds(qps: Mapping[Tuple[str, str, int], float], baseline: str,
                   scenarios: Sequence[str], arms: Sequence[str],
                   margin: float = MARGIN) -> List[PairedRatio]:
    """The paired ratios from ``qps[(scenario, arm, round)]`` (measured runs only), for
    every scenario and every arm but ``baseline``, in the given orders."""
    rows = []
    for scenario in scenarios:
        rows += compare_pairs(qps, [(a, baseline) for a in arms if a != baseline], [scenario],
                              margin)
    return rows


#: What a paired comparison can divide: a BenchResult attribute per name.
VALUES = {"qps": "qps", "cpu": "cpu_us_per_call"}


def _values(run: MatrixRun, value: str = "qps") -> dict:
    """``{(scenario, arm, round): figure}`` of the measured runs that have the figure."""
    attribute = VALUES[value]
    return {(r.label, r.arm.name, r.round): getattr(r.result, attribute) for r in run.runs
            if r.result is not None and getattr(r.result, attribute)}


def _labels(run: MatrixRun) -> List[str]:
    return [run.matrix.label(s) for s in run.matrix.scenarios]


def paired_ratios(run: MatrixRun) -> List[PairedRatio]:
    """Every non-baseline arm of every scenario of a matrix run against the baseline,
    paired by round."""
    matrix = run.matrix
    return compare_rounds(_values(run), matrix.baseline, _labels(run),
                          [a.name for a in matrix.arms])


def headline_ratios(run: MatrixRun, value: str = "qps") -> List[PairedRatio]:
    """The matrix's headline comparisons (its ``compare`` pairs; without them, every arm
    against the baseline), pair by pair, each in every scenario, of ``value`` (``qps``, or
    ``cpu``: the client's CPU time per call, where both arms measured it)."""
    matrix = run.matrix
    pairs = list(matrix.compare) or [(a.name, matrix.baseline) for a in matrix.arms
                                      if a.name != matrix.baseline]
    return compare_pairs(_values(run, value), pairs, _labels(run))


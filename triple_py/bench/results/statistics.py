"""The harness's statistics, in one place: the paired tests of :mod:`.paired` (Wilcoxon's
signed-rank test, exact under sign flips; the Hodges-Lehmann estimate and its exact
Walsh-average interval; the rounds still needed), the Student-t interval of the frames,
and the reading of a benchstat frame (which changes are significant, which are better).
benchstat's own statistics (Mann-Whitney U, medians and their intervals) are
:mod:`triple_py.benchstat`'s, called through it, not re-implemented here."""
from __future__ import annotations

import math
import statistics
from typing import List, Optional, Sequence, Tuple

__all__ = ["ALPHA", "MIN_PAIRS", "MARGIN", "MAX_ROUNDS", "signed_rank_p", "walsh_interval",
           "rounds_needed", "interval", "higher_is_better", "significant_changes",
           "conclusions"]


ALPHA = 0.05


MIN_PAIRS = 6  # 2 / 2**5 = 0.0625: five pairs can never be significant


MARGIN = 0.05  # equivalence: the whole interval within ±5 % (on the log scale)


MAX_ROUNDS = 1000  # the most a matrix runs; "needs more" is capped there


_Z = 1.959963984540054  # the standard normal's 97.5 % point


_EFFICIENCY = 3 / math.pi  # signed-rank test vs t-test, asymptotically, under normality


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


def _sign_flip_counts(ranks: Sequence[int]) -> List[int]:
    """``counts[s]``: how many of the 2**n sign assignments give positive ranks summing to s."""
    total = sum(ranks)
    counts = [0] * (total + 1)
    counts[0] = 1
    for r in ranks:
        for s in range(total, r - 1, -1):
            counts[s] += counts[s - r]
    return counts


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
    counts = _sign_flip_counts(ranks)
    outcomes = 2 ** len(ranks)
    below = sum(counts[:observed + 1]) / outcomes
    above = sum(counts[observed:]) / outcomes
    return min(1.0, 2 * min(below, above))


def walsh_interval(logs: Sequence[float], alpha: float = ALPHA) -> Tuple[float, float, float,
                                                                          float]:
    """``(estimate, low, high, coverage)`` for the centre of the symmetric distribution of
    ``logs``: the Hodges-Lehmann estimate (median of the n(n+1)/2 Walsh averages) and the
    exact interval between the k-th smallest and k-th largest Walsh averages, k the largest
    with P(T < k) <= alpha/2 under the signed-rank null distribution of T. With too few
    values for that (n < 6 at alpha 0.05) the widest interval, k = 1, with its coverage."""
    x = [v for v in logs if not math.isnan(v)]
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan, 0.0
    walsh = sorted((x[i] + x[j]) / 2 for i in range(n) for j in range(i, n))
    counts = _sign_flip_counts(list(range(1, n + 1)))
    outcomes = 2 ** n
    k, tail = 1, counts[0]  # tail: P(T <= k-1) * outcomes
    while tail + counts[k] <= alpha / 2 * outcomes:
        tail += counts[k]
        k += 1
    coverage = 1 - 2 * tail / outcomes
    return statistics.median(walsh), walsh[k - 1], walsh[len(walsh) - k], coverage


def rounds_needed(logs: Sequence[float], margin: float = MARGIN) -> Optional[int]:
    """Paired rounds (in all) for an interval that excludes 0 or lies within ±log(1+margin),
    from the spread of the observed ``logs`` (at least MIN_PAIRS, at most MAX_ROUNDS); None
    with fewer than two values."""
    if len(logs) < 2:
        return None
    centre, spread = statistics.fmean(logs), statistics.stdev(logs)
    if spread == 0:
        return MIN_PAIRS
    bound = math.log1p(margin)
    half_widths = [abs(centre)] + ([bound - abs(centre)] if abs(centre) < bound else [])
    needed = min((_Z * spread / h) ** 2 / _EFFICIENCY if h > 0 else math.inf
                 for h in half_widths)
    return int(min(MAX_ROUNDS, max(MIN_PAIRS, math.ceil(needed))))


def interval(values: Sequence[float], confidence: float = 0.95) -> Tuple[float, float, float]:
    """(mean, lo, hi): the Student-t ``confidence`` interval of the mean of ``values``
    (lo = hi = NaN with fewer than two values; lo = hi = mean when they are all equal)."""
    n = len(values)
    if not n:
        return math.nan, math.nan, math.nan
    mean = math.fsum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(var / n)
    return mean, mean - half, mean + half


def higher_is_better(unit: str) -> bool:
    """True for throughput units (``ops/s``, ``msgs/s``, ``B/s``: a rate), False for costs
    and latencies (``sec/op``, ``p99-sec``, ``writes/msg``, ``errors``...)."""
    return unit.endswith("/s")


def significant_changes(frame, alpha: Optional[float] = None):
    """The rows of a benchstat frame (:meth:`Results.benchstat`) that are significant
    changes against the baseline: cells, not geomeans, with ``significant`` set, plus a
    ``better`` column (True when the change is an improvement for that unit)."""
    rows = frame[(frame["kind"] == "cell") & ~frame["is_baseline"] & frame["significant"]]
    if alpha is not None:
        rows = rows[rows["p"] < alpha]
    rows = rows.copy()
    rows["better"] = [(d > 0) == higher_is_better(u) if d == d and d != 0 else False
                      for d, u in zip(rows["delta_pct"], rows["unit"])]
    return rows.reset_index(drop=True)


_UNIT_WORDS = {"sec/op": "time per op (1/QPS)", "p99-sec": "p99 latency",
               "p50-sec": "p50 latency", "p90-sec": "p90 latency", "p99.9-sec": "p99.9 latency",
               "ops/s": "throughput", "msgs/s": "messages/s", "writes/msg":
               "write syscalls per message", "writes/op": "write syscalls per call",
               "allocs/op": "allocations per call"}


def conclusions(frame, baseline: str, alpha: float = 0.05) -> List[str]:
    """Sentences for the significant rows of a benchstat frame only, one per row, e.g.
    ``Unary/1MiB/c50: fastpath's time per op (1/QPS) is 64.0% lower than stream-path's
    (better; p=0.002 n=10)`` (``is 3.2x stream-path's`` from +100 % on); a single sentence
    saying so when nothing is significant."""
    rows = significant_changes(frame)
    cells = frame[(frame["kind"] == "cell") & ~frame["is_baseline"]]
    if rows.empty:
        ns = sorted({int(n) for n in cells["n"].dropna()}) if len(cells) else []
        hint = ""
        if ns and max(ns) < 4:
            hint = (f" With {max(ns)} round(s) per arm the Mann-Whitney U test cannot reach "
                    f"p < {alpha:g}: run 6 or more rounds (benchstat recommends 10).")
        return [f"No change against {baseline} is significant at alpha = {alpha:g} "
                f"({len(cells)} comparisons).{hint}"]
    out = []
    for _, r in rows.iterrows():
        what = _UNIT_WORDS.get(r["unit"], r["unit"])
        verdict = "better" if r["better"] else "worse"
        if r["delta_pct"] >= 100:
            change = f"{1 + r['delta_pct'] / 100:.1f}x"
        else:
            change = (f"{abs(r['delta_pct']):.1f}% "
                      f"{'higher' if r['delta_pct'] > 0 else 'lower'} than")
        out.append(f"{r['row']}: {r['col']}'s {what} is {change} {baseline}'s ({verdict}; "
                   f"{r['annotation']})")
    return out

"""Summaries and comparisons of benchmark samples, as benchstat computes them.

* :func:`quantile` is the R8 sample quantile used for the median.
* :func:`median_ci_orders` gives the order statistics bounding the
  confidence interval of the median (exact binomial for n <= 30, normal
  approximation above).
* :func:`mann_whitney_u` is the two-sided Mann-Whitney U test: exact
  (with ties, the exact conditional distribution) for small samples,
  normal approximation with tie and continuity corrections otherwise.
* :func:`summarize` / :func:`compare_samples` apply the per-unit
  assumption (``nothing``: median + U test; ``exact``: mode, no test)
  and attach the warnings benchstat prints as footnotes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import List, Sequence, Tuple

from .gofmt import format_fixed, format_v
from .gomath import choose, go_exp, go_log
from .udist import u_cdf

__all__ = [
    "Summary",
    "Comparison",
    "UTestError",
    "quantile",
    "median_ci_orders",
    "min_samples_for_ci",
    "min_samples_for_utest",
    "mann_whitney_u",
    "summarize",
    "compare_samples",
    "geomean",
    "pct_range_string",
    "format_delta",
]

ASSUME_NOTHING = "nothing"
ASSUME_EXACT = "exact"

#: Sample sizes up to which the exact U distribution is used.
EXACT_LIMIT = 50
EXACT_LIMIT_WITH_TIES = 25
#: Sample sizes up to which the median CI uses the exact binomial.
QUANTILE_CI_EXACT_LIMIT = 30


class UTestError(Exception):
    """The U test cannot be computed (message is the reference tool's)."""


@dataclass
class Summary:
    """Center of a sample with its confidence interval and warnings."""

    center: float
    lo: float
    hi: float
    warnings: List[str] = field(default_factory=list)


@dataclass
class Comparison:
    """Result of comparing a sample against its baseline."""

    p: float
    n1: int
    n2: int
    alpha: float
    warnings: List[str] = field(default_factory=list)

    def annotation(self) -> str:
        """``p=0.PPP n=N`` (or ``n=N1+N2``), as benchstat prints it."""
        text = "p=%0.3f " % self.p if self.p != 0 else ""
        if self.n1 == self.n2:
            return text + "n=%d" % self.n1
        return text + "n=%d+%d" % (self.n1, self.n2)

    @property
    def significant(self) -> bool:
        """True when the change is reported (delta shown, not ``~``)."""
        return not self.p > self.alpha


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """R8 quantile of an ascending sequence (go-moremath ``Sample.Quantile``)."""
    if not sorted_values:
        return math.nan
    if q <= 0:
        return sorted_values[0]
    if q >= 1:
        return sorted_values[-1]
    n = float(len(sorted_values))
    h = 1 / 3.0 + q * (n + 1 / 3.0)
    k = int(h)
    frac = h - k
    if k <= 0:
        return sorted_values[0]
    if k >= len(sorted_values):
        return sorted_values[-1]
    lo = sorted_values[k - 1]
    return lo + frac * (sorted_values[k] - lo)


def _binomial_half_pmf(n: int, k: int) -> float:
    if k < 0 or k > n:
        return 0.0
    return choose(n, k) * math.pow(0.5, k) * math.pow(0.5, n - k)


def normal_cdf(x: float, mu: float = 0.0, sigma: float = 1.0) -> float:
    """CDF of N(mu, sigma) at x."""
    return math.erfc(-(x - mu) / (sigma * math.sqrt(2))) / 2


_ACKLAM_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
             1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
_ACKLAM_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
             6.680131188771972e01, -1.328068155288572e01)
_ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
             -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
_ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00,
             3.754408661907416e00)


def normal_inv_cdf(p: float, mu: float = 0.0, sigma: float = 1.0) -> float:
    """Inverse normal CDF: Acklam's approximation plus one Halley refinement."""
    if p < 0 or p > 1:
        return math.nan
    if p == 0:
        return -math.inf
    if p == 1:
        return math.inf
    a, b, c, d = _ACKLAM_A, _ACKLAM_B, _ACKLAM_C, _ACKLAM_D
    plow = 0.02425
    if p < plow or 1 - plow < p:
        q = math.sqrt(-2 * go_log(p if p < plow else 1 - p))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        if p >= plow:
            x = -x
    else:
        q = p - 0.5
        r = q * q
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    e = 0.5 * math.erfc(-x / math.sqrt(2)) - p
    u = e * math.sqrt(2 * math.pi) * go_exp(x * x / 2)
    x = x - u / (1 + x * u / 2)
    return x * sigma + mu


@functools.lru_cache(maxsize=None)
def median_ci_orders(n: int, confidence: float) -> Tuple[int, int]:
    """1-based order statistics (lo, hi) bounding the median's CI.

    ``lo < 1`` means the lower bound is -inf; ``hi > n`` means +inf.
    """
    if confidence >= 1:
        return 0, n + 1
    if n <= QUANTILE_CI_EXACT_LIMIT:
        left = int(math.ceil(float(n + 1) * 0.5) - 1)
        accum = _binomial_half_pmf(n, left)
        right = left + 1
        left_p = _binomial_half_pmf(n, left - 1)
        right_p = _binomial_half_pmf(n, right)
        while accum < confidence and (left_p > 0 or right_p > 0):
            if left_p >= right_p:
                accum += left_p
                left -= 1
                left_p = _binomial_half_pmf(n, left - 1)
            else:
                accum += right_p
                right += 1
                right_p = _binomial_half_pmf(n, right)
    else:
        mu = n * 0.5
        sigma = math.sqrt(n * 0.5 * 0.5)
        l1 = normal_inv_cdf((1 - confidence) / 2, mu, sigma)
        r1 = 2 * mu - l1
        left = int(math.floor(math.floor(l1 - 0.5) + 0.5)) + 1
        right = int(math.floor(math.ceil(r1 - 0.5) + 0.5)) + 1

        def coverage(lo: int, hi: int) -> float:
            return normal_cdf(hi - 0.5, mu, sigma) - normal_cdf(lo - 0.5, mu, sigma)

        biased = coverage(left, right - 1)
        if confidence <= biased < coverage(left, right):
            right -= 1
    return max(left, 0), min(right, n + 1)


@functools.lru_cache(maxsize=None)
def min_samples_for_ci(confidence: float) -> Tuple[str, int]:
    """(op, n): the smallest sample giving a finite CI, as ``>=`` or ``> 50``."""
    limit = 50
    for n in range(2, limit + 1):
        lo, hi = median_ci_orders(n, confidence)
        if 0 < lo and hi <= n:
            return ">=", n
    return ">", limit


def _min_p_equal_sizes(n: int) -> float:
    """Smallest two-sided exact U-test p-value for two samples of size n."""
    return 2.0 / choose(2 * n, n)


def min_samples_for_utest(alpha: float) -> Tuple[str, int]:
    """(op, n): the smallest equal sample size that can reach ``alpha``."""
    sizes = range(1, 10)
    for n in sizes:
        if _min_p_equal_sizes(n) <= alpha:
            return ">=", n
    return ">", 10


def _ranks_and_ties(x1: Sequence[float], x2: Sequence[float]) -> Tuple[float, List[int]]:
    """Sum of the first sample's mid-ranks in the pooled sample, and tie counts."""
    merged = sorted([(v, 1) for v in x1] + [(v, 2) for v in x2], key=lambda t: t[0])
    rank_sum = 0.0
    ties: List[int] = []
    i = 0
    while i < len(merged):
        first_rank = i + 1
        value = merged[i][0]
        from_first = 0
        while i < len(merged) and merged[i][0] == value:
            if merged[i][1] == 1:
                from_first += 1
            i += 1
        if from_first:
            rank_sum += float(i + first_rank) / 2 * from_first
        ties.append(i - first_rank + 1)
    return rank_sum, ties


def mann_whitney_u(x1: Sequence[float], x2: Sequence[float]) -> float:
    """Two-sided Mann-Whitney U test p-value (x1 is the baseline).

    Raises :class:`UTestError` with benchstat's message when the test is
    meaningless (all values equal, or an empty sample).
    """
    n1, n2 = len(x1), len(x2)
    if n1 == 0 or n2 == 0:
        raise UTestError("sample is too small")
    rank_sum, ties = _ranks_and_ties(x1, x2)
    has_ties = any(t > 1 for t in ties)
    u1 = rank_sum - float(n1 * (n1 + 1)) / 2
    u2 = float(n1 * n2) - u1
    u_small = min(u1, u2)
    exact = (n1 <= EXACT_LIMIT and n2 <= EXACT_LIMIT) if not has_ties else \
        (n1 <= EXACT_LIMIT_WITH_TIES and n2 <= EXACT_LIMIT_WITH_TIES)
    if exact:
        if len(ties) == 1:
            raise UTestError("all samples are equal")
        if u1 == u2:
            return 1.0
        return u_cdf(n1, n2, ties, u_small) * 2
    n = float(n1 + n2)
    tie_sum = float(sum(t * t * t - t for t in ties))
    sigma = math.sqrt(float(n1 * n2) * ((n + 1) - tie_sum / (n * (n - 1))) / 12)
    if sigma == 0:
        raise UTestError("all samples are equal")
    numer = u1 - float(n1 * n2) / 2
    if numer != 0:
        numer -= math.copysign(0.5, numer)
    z = numer / sigma
    return 2 * min(normal_cdf(z), 1 - normal_cdf(z))


def summarize(sorted_values: Sequence[float], confidence: float, assumption: str) -> Summary:
    """Center, CI and warnings for an ascending, non-empty sample."""
    if assumption == ASSUME_EXACT:
        return _summarize_exact(sorted_values)
    n = len(sorted_values)
    lo_order, hi_order = median_ci_orders(n, confidence)
    center = quantile(sorted_values, 0.5)
    lo = sorted_values[lo_order - 1] if lo_order >= 1 else -math.inf
    hi = sorted_values[hi_order - 1] if hi_order - 1 < n else math.inf
    warnings = []
    if math.isinf(lo) or math.isinf(hi):
        op, need = min_samples_for_ci(confidence)
        warnings.append("need %s %d samples for confidence interval at level %s"
                        % (op, need, format_v(confidence)))
    return Summary(center, lo, hi, warnings)


def _summarize_exact(sorted_values: Sequence[float]) -> Summary:
    mode, mode_count = sorted_values[0], 1
    current, count = sorted_values[0], 1
    for v in sorted_values[1:]:
        if v == current:
            count += 1
            if count > mode_count:
                mode, mode_count = current, count
        else:
            current, count = v, 1
    summary = Summary(mode, sorted_values[0], sorted_values[-1])
    if mode_count != len(sorted_values):
        summary.warnings.append("exact distribution expected, but values range from %s to %s"
                                % (format_v(sorted_values[0]), format_v(sorted_values[-1])))
    return summary


def compare_samples(base: Sequence[float], other: Sequence[float], alpha: float,
                    assumption: str) -> Comparison:
    """Compare ``other`` against ``base`` under the unit's assumption."""
    n1, n2 = len(base), len(other)
    if assumption == ASSUME_EXACT:
        return Comparison(0.0, n1, n2, 0.0)
    try:
        p = mann_whitney_u(base, other)
    except UTestError as err:
        return Comparison(1.0, n1, n2, alpha, [str(err)])
    cmp = Comparison(p, n1, n2, alpha)
    if cmp.p > cmp.alpha:
        op, need = min_samples_for_utest(alpha)
        if n1 < need and n2 < need:
            cmp.warnings.append("need %s %d samples to detect a difference at alpha level %s"
                                % (op, need, format_v(alpha)))
    return cmp


def geomean(values: Sequence[float]) -> float:
    """Geometric mean by a running mean of logs; NaN if empty or any x <= 0."""
    if not values:
        return math.nan
    m = 0.0
    for i, x in enumerate(values):
        if not x > 0:
            return math.nan
        m += (go_log(x) - m) / float(i + 1)
    return go_exp(m)


def _sign(x: float) -> float:
    if x == 0:
        return 0.0
    if x < 0:
        return -1.0
    if x > 0:
        return 1.0
    return math.nan


def pct_range_string(summary: Summary) -> str:
    """The ``± x%`` text: ``∞``, ``?``, ``0%`` or a rounded percentage."""
    if math.isinf(summary.lo) or math.isinf(summary.hi):
        return "∞"
    sign = _sign(summary.center)
    if not (sign == _sign(summary.lo) and sign == _sign(summary.hi)):
        return "?"
    if summary.center == 0:
        return "0%"
    spread = max(summary.hi / summary.center - 1, 1 - summary.lo / summary.center)
    return format_fixed(100 * spread, 0) + "%"


def format_delta(cmp: Comparison, old: float, new: float) -> str:
    """``~`` when not significant, else the signed percent change."""
    if cmp.p > cmp.alpha:
        return "~"
    if old == new:
        return "0.00%"
    if old == 0:
        return "?"
    return format_fixed((new / old - 1.0) * 100.0, 2, plus=True) + "%"

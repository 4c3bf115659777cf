"""Statistics of the benchstat re-implementation against the spec's worked examples,
scipy (untied samples) and brute-force enumeration (tied samples)."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest
import scipy.stats

from test_benchstat_helpers import import_benchstat

import_benchstat()
from triple_py.benchstat import gomath, stats  # noqa: E402

OLD_PARSE = [1000, 1012, 987, 1003, 995, 1021, 992, 1008, 1001, 998]
NEW_PARSE = [960, 975, 958, 991, 949, 967, 981, 1002, 955, 970]
OLD_HASH = [50, 51, 51, 52, 50, 53, 51, 50, 52, 51]
NEW_HASH = [51, 52, 52, 53, 51, 54, 52, 52, 50, 53]
SORT_BEFORE = [120, 118, 125, 119, 121]
SORT_AFTER = [115, 117, 114, 116, 122, 113, 119.5]
TINY_BEFORE = [10, 11, 12]
TINY_AFTER = [13, 14, 15]


def summary_of(values, confidence=0.95):
    return stats.summarize(sorted(float(v) for v in values), confidence, "nothing")


# --- Section 10 worked examples -------------------------------------------------------

@pytest.mark.parametrize("values, center, lo, hi, pct", [
    (OLD_PARSE, 1000.5, 992, 1012, "1%"),
    (NEW_PARSE, 968.5, 955, 991, "2%"),
    (OLD_HASH, 51, 50, 52, "2%"),
    (NEW_HASH, 52, 51, 53, "2%"),
    (SORT_AFTER, 116, 113, 122, "5%"),
])
def test_worked_example_medians_and_intervals(values, center, lo, hi, pct):
    s = summary_of(values)
    assert (s.center, s.lo, s.hi) == (center, lo, hi)
    assert stats.pct_range_string(s) == pct
    assert s.warnings == []


def test_example1_interval_spread_is_1_149_percent():
    s = summary_of(OLD_PARSE)
    spread = max(s.hi / s.center - 1, 1 - s.lo / s.center)
    assert round(100 * spread, 3) == 1.149


def test_small_sample_interval_is_infinite_with_footnote():
    s = summary_of(SORT_BEFORE)
    assert s.center == 120 and s.lo == -math.inf and s.hi == 125
    assert stats.pct_range_string(s) == "∞"
    assert s.warnings == ["need >= 6 samples for confidence interval at level 0.95"]


@pytest.mark.parametrize("x1, x2, go_p, rational", [
    (OLD_PARSE, NEW_PARSE, 0.0004871289701011064, Fraction(45, 92378)),
    (OLD_HASH, NEW_HASH, 0.08732598670679166, Fraction(8067, 92378)),
    (SORT_BEFORE, SORT_AFTER, 0.07323232323232325, Fraction(29, 396)),
    (TINY_BEFORE, TINY_AFTER, 0.10000000000000002, Fraction(1, 10)),
])
def test_worked_example_p_values_match_go_bit_for_bit(x1, x2, go_p, rational):
    p = stats.mann_whitney_u(x1, x2)
    assert p == go_p
    assert abs(p - float(rational)) <= 1e-15


def test_example1_alpha_at_rationals_ulp_shows_go_rounding():
    # Go's p is one ulp above the exact rational; -alpha equal to the
    # rational makes the change insignificant.
    cmp = stats.compare_samples(sorted(OLD_PARSE), sorted(NEW_PARSE), 0.0004871289701011063, "nothing")
    assert stats.format_delta(cmp, 1000.5, 968.5) == "~"
    cmp = stats.compare_samples(sorted(OLD_PARSE), sorted(NEW_PARSE), 0.0004871289701011064, "nothing")
    assert stats.format_delta(cmp, 1000.5, 968.5) == "-3.20%"


def test_wrong_oracles_differ_for_tied_example():
    scipy_exact = scipy.stats.mannwhitneyu(OLD_HASH, NEW_HASH, method="exact").pvalue
    scipy_asym = scipy.stats.mannwhitneyu(OLD_HASH, NEW_HASH, method="asymptotic").pvalue
    assert round(scipy_exact, 5) == 0.10512 and round(scipy_asym, 5) == 0.08576
    assert stats.mann_whitney_u(OLD_HASH, NEW_HASH) not in (scipy_exact, scipy_asym)


def test_comparison_annotations_and_deltas():
    cmp = stats.compare_samples(sorted(OLD_PARSE), sorted(NEW_PARSE), 0.05, "nothing")
    assert cmp.annotation() == "p=0.000 n=10"
    assert stats.format_delta(cmp, 1000.5, 968.5) == "-3.20%"
    cmp = stats.compare_samples(sorted(SORT_BEFORE), sorted(SORT_AFTER), 0.05, "nothing")
    assert cmp.annotation() == "p=0.073 n=5+7" and cmp.warnings == []
    cmp = stats.compare_samples(sorted(TINY_BEFORE), sorted(TINY_AFTER), 0.05, "nothing")
    assert cmp.annotation() == "p=0.100 n=3"
    assert cmp.warnings == ["need >= 4 samples to detect a difference at alpha level 0.05"]


def test_geomean_of_example3():
    assert "%.2f" % stats.geomean([120.0, 11.0]) == "36.33"
    ratio = stats.geomean([116 / 120, 14 / 11])
    assert "%+.2f" % ((ratio - 1) * 100) == "+10.92"


# --- Confidence interval orders -------------------------------------------------------

SPEC_ORDERS_95 = {
    1: (0, 2), 2: (0, 3), 3: (0, 4), 4: (0, 5), 5: (0, 5), 6: (1, 6), 7: (1, 7), 8: (1, 7),
    9: (2, 8), 10: (2, 9), 11: (2, 9), 12: (3, 10), 13: (3, 11), 14: (3, 11), 15: (4, 12),
    16: (4, 12), 17: (5, 13), 18: (5, 14), 19: (5, 14), 20: (6, 15), 21: (6, 16), 22: (6, 16),
    23: (7, 17), 24: (8, 18), 25: (8, 18), 26: (8, 19), 27: (8, 19), 28: (9, 20), 29: (9, 20),
    30: (10, 21), 31: (10, 22), 40: (14, 27), 50: (18, 32), 100: (40, 60),
}


@pytest.mark.parametrize("n", sorted(SPEC_ORDERS_95))
def test_median_ci_orders_match_go_table(n):
    assert stats.median_ci_orders(n, 0.95) == SPEC_ORDERS_95[n]


def _naive_python_orders(n, confidence):
    """The same search with math.lgamma/exp: what a straightforward port computes."""
    def pmf(k):
        if k < 0 or k > n:
            return 0.0
        c = float(math.comb(n, k)) if n <= 20 else math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1))
        return c * 0.5 ** k * 0.5 ** (n - k)
    left = math.ceil((n + 1) / 2) - 1
    acc, right = pmf(left), left + 1
    while acc < confidence and (pmf(left - 1) > 0 or pmf(right) > 0):
        if pmf(left - 1) >= pmf(right):
            acc += pmf(left - 1)
            left -= 1
        else:
            acc += pmf(right)
            right += 1
    return left, right


@pytest.mark.parametrize("confidence, differing", [
    (0.95, [24, 29]), (0.99, [28]), (0.90, [22, 27, 29]),
])
def test_go_float_noise_tie_breaks_reproduced(confidence, differing):
    # The spec lists where a Python port's left/right tie-breaks differ
    # from Go's for 21 <= n <= 30; we emulate Go, so we differ exactly there.
    got = [n for n in range(21, 31)
           if stats.median_ci_orders(n, confidence) != _naive_python_orders(n, confidence)]
    assert got == differing


def test_full_confidence_covers_everything():
    assert stats.median_ci_orders(10, 1.0) == (0, 11)
    s = summary_of(OLD_PARSE, confidence=1.0)
    assert stats.pct_range_string(s) == "∞"
    assert s.warnings == ["need > 50 samples for confidence interval at level 1"]


@pytest.mark.parametrize("confidence, need", [(0.95, 6), (0.99, 8), (0.90, 5)])
def test_minimum_samples_for_finite_interval(confidence, need):
    assert stats.min_samples_for_ci(confidence) == (">=", need)


def test_minimum_samples_for_utest():
    assert stats.min_samples_for_utest(0.05) == (">=", 4)
    assert stats.min_samples_for_utest(1e-9) == (">", 10)
    mins = [2 / gomath.choose(2 * n, n) for n in range(1, 6)]
    assert [round(m, 5) for m in mins] == [1.0, 0.33333, 0.1, 0.02857, 0.00794]


# --- Center -----------------------------------------------------------------------------

def test_quantile_r8_and_even_median_formula():
    assert stats.quantile([1.0, 2.0, 3.0], 0.5) == 2.0
    lo, hi = 0.1, 0.7
    assert stats.quantile([lo, hi], 0.5) == lo + 0.5 * (hi - lo)
    assert stats.quantile([5.0], 0.5) == 5.0


def test_exact_assumption_uses_mode_and_range():
    s = stats.summarize([1.0, 2.0, 2.0, 3.0, 3.0], 0.95, "exact")
    assert (s.center, s.lo, s.hi) == (2.0, 1.0, 3.0)
    assert s.warnings == ["exact distribution expected, but values range from 1 to 3"]
    s = stats.summarize([4.0, 4.0], 0.95, "exact")
    assert stats.pct_range_string(s) == "0%" and s.warnings == []
    cmp = stats.compare_samples([4.0], [5.0], 0.05, "exact")
    assert cmp.p == 0 and cmp.annotation() == "n=1"
    assert stats.format_delta(cmp, 4.0, 5.0) == "+25.00%"


# --- Exact U distribution ---------------------------------------------------------------

def test_exact_u_matches_scipy_without_ties():
    rng = random.Random(1234)
    for _ in range(150):
        n1, n2 = rng.randint(1, 14), rng.randint(1, 14)
        pool = rng.sample(range(1000), n1 + n2)
        x1, x2 = pool[:n1], pool[n1:]
        ours = stats.mann_whitney_u(x1, x2)
        theirs = scipy.stats.mannwhitneyu(x1, x2, method="exact").pvalue
        assert ours == pytest.approx(theirs, rel=1e-12)


def _brute_force_p(x1, x2):
    """Two-sided p by enumerating every assignment of pooled mid-ranks to sample 1."""
    pooled = sorted(x1 + x2)
    ranks = {}
    for value in set(pooled):
        positions = [i + 1 for i, v in enumerate(pooled) if v == value]
        ranks[value] = Fraction(sum(positions), len(positions))
    n1, n2 = len(x1), len(x2)
    all_ranks = [ranks[v] for v in pooled]
    offset = Fraction(n1 * (n1 + 1), 2)
    u1 = sum(ranks[v] for v in x1) - offset
    u_small = min(u1, n1 * n2 - u1)
    if u1 == n1 * n2 - u1:
        return 1.0
    count = sum(1 for chosen in itertools.combinations(all_ranks, n1)
                if sum(chosen) - offset <= u_small)
    return float(2 * Fraction(count, math.comb(n1 + n2, n1)))


def test_exact_u_with_ties_matches_brute_force_enumeration():
    rng = random.Random(99)
    for _ in range(120):
        n1, n2 = rng.randint(1, 7), rng.randint(1, 7)
        levels = rng.randint(2, 5)
        x1 = [rng.randint(0, levels) for _ in range(n1)]
        x2 = [rng.randint(0, levels) for _ in range(n2)]
        if len(set(x1 + x2)) == 1:
            continue
        assert stats.mann_whitney_u(x1, x2) == pytest.approx(_brute_force_p(x1, x2), rel=1e-12)


def test_brute_force_agrees_on_worked_examples():
    assert _brute_force_p(OLD_HASH, NEW_HASH) == pytest.approx(8067 / 92378, rel=1e-12)
    assert _brute_force_p(SORT_BEFORE, SORT_AFTER) == pytest.approx(29 / 396, rel=1e-12)


def test_u_test_method_boundaries_and_normal_approximation():
    rng = random.Random(7)
    # Ties with n = 26 > 25: normal approximation with tie and continuity corrections.
    x1 = [rng.randint(0, 9) for _ in range(26)]
    x2 = [rng.randint(2, 11) for _ in range(26)]
    expected = scipy.stats.mannwhitneyu(x1, x2, method="asymptotic", use_continuity=True).pvalue
    assert stats.mann_whitney_u(x1, x2) == pytest.approx(expected, rel=1e-9)
    # No ties with n = 51 > 50: normal approximation as well.
    pool = rng.sample(range(10000), 102)
    x1, x2 = pool[:51], pool[51:]
    expected = scipy.stats.mannwhitneyu(x1, x2, method="asymptotic", use_continuity=True).pvalue
    assert stats.mann_whitney_u(x1, x2) == pytest.approx(expected, rel=1e-9)
    # No ties with n = 50 is still exact.
    x1, x2 = pool[:50], pool[50:100]
    expected = scipy.stats.mannwhitneyu(x1, x2, method="exact").pvalue
    assert stats.mann_whitney_u(x1, x2) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("n", [3, 30])
def test_all_equal_samples_fail_the_test(n):
    with pytest.raises(stats.UTestError, match="^all samples are equal$"):
        stats.mann_whitney_u([64.0] * n, [64.0] * n)
    cmp = stats.compare_samples([64.0] * n, [64.0] * n, 0.05, "nothing")
    assert cmp.p == 1 and cmp.warnings[0] == "all samples are equal"


def test_equal_u_statistics_give_p_one():
    assert stats.mann_whitney_u([1, 4], [2, 3]) == 1.0


# --- Formatting of summaries and deltas -------------------------------------------------

@pytest.mark.parametrize("center, lo, hi, text", [
    (10.0, -math.inf, 12.0, "∞"),
    (10.0, 9.0, math.inf, "∞"),
    (1.0, -1.0, 2.0, "?"),
    (0.0, 0.0, 0.0, "0%"),
    (100.0, 99.0, 102.5, "2%"),
    (100.0, 97.6, 100.0, "2%"),
    (100.0, 97.5, 100.0, "3%"),  # 1 - 0.975 rounds up to 0.025000000000000022
])
def test_pct_range_string(center, lo, hi, text):
    assert stats.pct_range_string(stats.Summary(center, lo, hi)) == text


def test_format_delta_rules():
    significant = stats.Comparison(0.05, 10, 10, 0.05)  # p == alpha counts as significant
    assert stats.format_delta(significant, 2.0, 1.0) == "-50.00%"
    assert stats.format_delta(significant, 2.0, 2.0) == "0.00%"
    assert stats.format_delta(significant, 0.0, 1.0) == "?"
    assert stats.format_delta(significant, 1.0, 1.0 - 1e-9) == "-0.00%"
    assert stats.format_delta(stats.Comparison(0.0501, 10, 10, 0.05), 2.0, 1.0) == "~"


def test_geomean_requires_positive_values():
    assert math.isnan(stats.geomean([]))
    assert math.isnan(stats.geomean([1.0, 0.0]))
    assert stats.geomean([2.0, 8.0]) == pytest.approx(4.0, rel=1e-15)


def test_go_exp_and_log_reproduce_go_geomean_bits():
    # testdata/csvErrors.stdout: the geomean of one value is not the value.
    assert stats.geomean([2.2530000000000003e-06]) == 2.2530000000000016e-06
    assert gomath.go_log(1.0) == 0.0 and gomath.go_exp(0.0) == 1.0
    rng = random.Random(3)
    for _ in range(2000):
        x = 10 ** rng.uniform(-300, 300)
        assert gomath.go_log(x) == pytest.approx(math.log(x), rel=4e-16, abs=1e-300)
        y = rng.uniform(-700, 700)
        assert gomath.go_exp(y) == pytest.approx(math.exp(y), rel=4e-16)
    assert gomath.go_exp(710.0) == math.inf and gomath.go_exp(-800.0) == 0.0

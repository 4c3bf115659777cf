"""The paired-by-round comparison at the end of a matrix (triple_py.bench.paired)."""
from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

from _bench_fakes import FakeRunner, FakeServers, two_arm_matrix
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix
from triple_py.bench.report.paired import format_paired
from triple_py.bench.results.paired import paired_ratios
from triple_py.bench.results.statistics import signed_rank_p
from triple_py.bench.report.text import comparison

MATRIX = two_arm_matrix(rounds=8)

# How much each round's machine speeds up or slows down every arm of that round.
DRIFT = [1.0, 0.6, 1.4, 0.8, 1.2, 0.7, 1.3, 0.9]


class DriftRunner(FakeRunner):
    """fastpath is 5 % faster than stream-path in every round, but rounds drift by -40..+40 %,
    as they do on a shared VM."""

    def __call__(self, spec):
        result = super().__call__(spec)
        round_index = (len(self.calls) - 1) // 2  # two arms per round
        qps = 1000.0 * DRIFT[round_index] * (1.05 if spec.arm == "fastpath" else 1.0)
        return dataclasses.replace(result, qps=qps)


@pytest.fixture(scope="module")
def drift_run():
    return run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=DriftRunner(),
                      check=False, capture_environment=False)


def brute_force_p(differences):
    """The definition: the share of sign flips whose positive-rank sum is at least as far
    in either tail as the observed one (zeros dropped, ties averaged)."""
    d = [x for x in differences if x != 0]
    mags = sorted(abs(x) for x in d)
    rank = {m: (mags.index(m) + len(mags) - mags[::-1].index(m) + 1) / 2 for m in mags}
    ranks = [rank[abs(x)] for x in d]
    observed = sum(r for r, x in zip(ranks, d) if x > 0)
    sums = [sum(r for r, s in zip(ranks, signs) if s)
            for signs in itertools.product([0, 1], repeat=len(d))]
    below = sum(s <= observed for s in sums) / len(sums)
    above = sum(s >= observed for s in sums) / len(sums)
    return min(1.0, 2 * min(below, above))


@pytest.mark.parametrize("differences, expected", [
    # scipy.stats.wilcoxon(method="exact") on the same data (no ties, no zeros)
    ([0.1, -0.2, 0.3, 0.4, 0.5, 0.6, -0.05, 0.7], 0.0546875),
    ([1, 2, 3, 4, 5, 6], 0.03125),
    ([0.01 * i * (-1) ** i for i in range(1, 17)], 0.860260009765625),
])
def test_signed_rank_p_matches_the_exact_test(differences, expected):
    assert signed_rank_p(differences) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("differences", [
    [1, -1, 2, -2, 3, 3, 0, 4, -4, 5],
    [1, 1, 1, -1, 2, 2, 2, 3],
    [0.5, 0.5, -0.5, 0.25, 0.75, -0.75, 1.0],
])
def test_signed_rank_p_with_ties_and_zeros_is_the_sign_flip_distribution(differences):
    assert signed_rank_p(differences) == pytest.approx(brute_force_p(differences), rel=1e-12)


def test_signed_rank_p_without_differences_is_one():
    assert signed_rank_p([]) == 1.0
    assert signed_rank_p([0.0, 0.0, 0.0]) == 1.0
    assert signed_rank_p([math.nan, 0.0]) == 1.0


def test_pairing_sees_a_difference_that_drift_hides(drift_run):
    (row,) = paired_ratios(drift_run)
    assert (row.scenario, row.arm, row.rounds) == ("128B/c50", "fastpath", 8)
    assert row.median == pytest.approx(1.05) and row.geomean == pytest.approx(1.05)
    assert row.low == pytest.approx(1.05) and row.high == pytest.approx(1.05)
    assert row.p == pytest.approx(2 / 2 ** 8) and row.significant
    text = comparison(drift_run)
    # benchstat's unpaired test sees only the spread of the rounds...
    sec_op = next(line for line in text.splitlines() if line.startswith("Unary/128B/c50"))
    assert "~" in sec_op
    # ...the paired table sees the 5 %.
    paired = text[text.index("== paired by round"):]
    assert "fastpath" in paired and "+5.00%" in paired


def test_rounds_without_a_partner_are_left_out(drift_run):
    runs = [r for r in drift_run.runs
            if not (r.arm.name == "stream-path" and r.round in (2, 3))]
    partial = dataclasses.replace(drift_run, runs=runs)
    (row,) = paired_ratios(partial)
    assert row.rounds == 6
    assert row.p == pytest.approx(2 / 2 ** 6)


def test_few_rounds_get_a_note(drift_run):
    runs = [r for r in drift_run.runs if r.round <= 3]
    text = format_paired(dataclasses.replace(drift_run, runs=runs))
    assert "fewer than 6 paired rounds" in text
    assert text.splitlines()[-2].rstrip().endswith("~")


def test_saved_results_give_the_same_pairs(drift_run, tmp_path):
    pytest.importorskip("pandas")
    from triple_py.bench import load_results
    from triple_py.bench.report.files import write_results

    write_results(drift_run, tmp_path)
    frame = load_results(tmp_path).paired()
    (row,) = paired_ratios(drift_run)
    assert frame.to_dict("records") == [dict(dataclasses.asdict(row), significant=True)]
    # Another baseline turns the ratio around.
    flipped = load_results(tmp_path).paired(baseline="fastpath")
    assert list(flipped["arm"]) == ["stream-path"]
    assert flipped["geomean"][0] == pytest.approx(1 / 1.05)


def brute_force_walsh(logs, alpha=0.05):
    """The interval by its definition: the centres c that the exact signed-rank test does not
    reject, found by testing each Walsh average's neighbourhood."""
    walsh = sorted((a + b) / 2 for i, a in enumerate(logs) for b in logs[i:])
    mids = [(x + y) / 2 for x, y in zip(walsh, walsh[1:])]
    kept = [c for c in mids if signed_rank_p([v - c for v in logs]) > alpha]
    return min(kept), max(kept)


@pytest.mark.parametrize("logs", [
    [0.05, 0.02, 0.08, -0.01, 0.04, 0.06, 0.03, 0.07],
    [0.3, -0.2, 0.1, 0.05, -0.15, 0.25, 0.0, 0.12, -0.05, 0.2],
    [0.011, 0.013, 0.009, 0.012, 0.010, 0.014],
])
def test_walsh_interval_is_the_set_the_signed_rank_test_keeps(logs):
    from triple_py.bench.results.statistics import walsh_interval

    estimate, low, high, coverage = walsh_interval(logs)
    walsh = sorted((a + b) / 2 for i, a in enumerate(logs) for b in logs[i:])
    assert estimate == pytest.approx(sorted(walsh)[len(walsh) // 2] if len(walsh) % 2 else
                                     (walsh[len(walsh) // 2 - 1] + walsh[len(walsh) // 2]) / 2)
    kept_low, kept_high = brute_force_walsh(logs)
    # The interval's ends are the Walsh averages just outside the kept midpoints.
    assert low <= kept_low and high >= kept_high
    assert low == max(w for w in walsh if w <= kept_low)
    assert high == min(w for w in walsh if w >= kept_high)
    assert coverage >= 0.95


def test_walsh_interval_below_six_rounds_is_the_range_with_its_real_coverage():
    from triple_py.bench.results.statistics import walsh_interval

    _, low, high, coverage = walsh_interval([0.1, 0.2, 0.3, 0.4, 0.5])
    assert (low, high) == (0.1, 0.5)
    assert coverage == pytest.approx(1 - 2 / 2 ** 5)


def _ratios_run(ratios_by_arm, rounds, margin_matrix=""):
    """A matrix run whose arms have the given per-round QPS over stream-path's 1000."""
    from triple_py.bench.results.paired import compare_pairs

    qps = {("128B/c50", "stream-path", r): 1000.0 for r in range(1, rounds + 1)}
    for arm, ratios in ratios_by_arm.items():
        for r, ratio in enumerate(ratios, 1):
            qps[("128B/c50", arm, r)] = 1000.0 * ratio
    return compare_pairs(qps, [(arm, "stream-path") for arm in ratios_by_arm], ["128B/c50"])


def test_verdicts_significant_equivalent_and_inconclusive():
    faster = [1.30, 1.32, 1.29, 1.35, 1.31, 1.33, 1.28, 1.34]
    same = [1.004, 0.998, 1.010, 0.995, 1.002, 1.006, 0.999, 1.001]
    noisy = [1.20, 0.85, 1.10, 0.95, 1.25, 0.90, 1.05, 1.00]
    rows = {r.arm: r for r in _ratios_run({"a": faster, "b": same, "c": noisy}, 8)}
    assert rows["a"].verdict == "higher" and rows["a"].ci_low > 1.25
    assert rows["a"].ci_low <= rows["a"].estimate <= rows["a"].ci_high
    assert rows["a"].conclusion().startswith("+31")
    assert rows["b"].verdict == "equivalent"
    assert 0.95 < rows["b"].ci_low < rows["b"].ci_high < 1.05
    assert rows["b"].conclusion().startswith("equivalent within ±5%")
    assert rows["c"].verdict == "inconclusive"
    assert rows["c"].more_rounds is not None and rows["c"].more_rounds > 8
    assert f"needs {rows['c'].more_rounds} more rounds" in rows["c"].conclusion()


def test_rounds_needed_shrinks_as_the_spread_does():
    from triple_py.bench.results.statistics import MIN_PAIRS, rounds_needed

    wide = rounds_needed([0.02 + 0.1 * (-1) ** i for i in range(8)])
    narrow = rounds_needed([0.02 + 0.01 * (-1) ** i for i in range(8)])
    assert wide > narrow >= MIN_PAIRS
    # Three rounds of a clear, steady 10 % are never enough: the test needs six.
    assert rounds_needed([0.1, 0.1, 0.1]) == MIN_PAIRS
    assert rounds_needed([0.1]) is None


def test_too_few_rounds_say_how_many_more(drift_run):
    runs = [r for r in drift_run.runs if r.round <= 3]
    (row,) = paired_ratios(dataclasses.replace(drift_run, runs=runs))
    assert row.verdict == "inconclusive" and row.more_rounds == 3


def test_headline_pairs_from_the_matrix_get_verdicts_and_a_csv(tmp_path):
    from triple_py.bench.report.paired import format_verdicts
    from triple_py.bench.report.files import write_results

    text = MATRIX.replace('baseline = "stream-path"', 'baseline = "stream-path"\n'
                          'compare = [["stream-path", "fastpath"]]')
    assert "compare" in text
    run = run_matrix(parse_matrix(text), server_factory=FakeServers(), runner=DriftRunner(),
                     check=False, capture_environment=False)
    verdicts = format_verdicts(run)
    assert "stream-path vs fastpath" in verdicts and "-4.8% QPS" in verdicts
    assert "1 comparisons: 1 significant (0 higher, 1 lower)" in verdicts
    paths = write_results(run, tmp_path)
    import csv as csv_module

    rows = list(csv_module.DictReader(paths["paired"].open()))
    assert [(r["arm"], r["baseline"], r["verdict"]) for r in rows] == [
        ("fastpath", "stream-path", "higher"), ("stream-path", "fastpath", "lower")]
    assert float(rows[0]["ci_low"]) == pytest.approx(1.05)
    assert paths["verdicts"].read_text() == verdicts + "\n"


@pytest.mark.parametrize("compare, message", [
    ('[["fastpath", "nope"]]', "'nope' is not an arm"),
    ('[["fastpath", "fastpath"]]', "an arm against itself"),
    ('["fastpath"]', "compare must be a list of [arm, over arm] pairs"),
])
def test_bad_compare_pairs_are_refused(compare, message):
    from triple_py.bench.errors import ConfigError

    text = MATRIX.replace('baseline = "stream-path"',
                          f'baseline = "stream-path"\ncompare = {compare}')
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_matrix(text)

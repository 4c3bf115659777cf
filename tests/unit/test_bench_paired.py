"""The paired-by-round comparison at the end of a matrix (triple_py.bench.paired)."""
from __future__ import annotations

import dataclasses
import itertools
import math

import pytest

from _bench_fakes import FakeRunner, FakeServers, two_arm_matrix
from triple_py.bench.harness import run_matrix
from triple_py.bench.matrix import parse_matrix
from triple_py.bench.paired import format_paired, paired_ratios, signed_rank_p
from triple_py.bench.report import comparison

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
    from triple_py.bench.report import write_results

    write_results(drift_run, tmp_path)
    frame = load_results(tmp_path).paired()
    (row,) = paired_ratios(drift_run)
    assert frame.to_dict("records") == [dict(dataclasses.asdict(row), significant=True)]
    # Another baseline turns the ratio around.
    flipped = load_results(tmp_path).paired(baseline="fastpath")
    assert list(flipped["arm"]) == ["stream-path"]
    assert flipped["geomean"][0] == pytest.approx(1 / 1.05)

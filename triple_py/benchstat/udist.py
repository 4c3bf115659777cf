"""Exact distribution of the Mann-Whitney U statistic, with and without ties.

Both computations follow go-moremath (``stats/udist.go``) operation for
operation so that p-values agree with the reference tool in the last
bit:

* without ties, the Mann-Whitney (1947) recurrence
  ``p[n,m](U) = (n*p[n-1,m](U-m) + m*p[n,m-1](U)) / (n+m)``;
* with ties, the conditional permutation distribution of Cheung and
  Klotz (1997), which counts the assignments of pooled mid-ranks to the
  first sample whose U is at most a bound.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from .gomath import choose

__all__ = ["u_cdf"]


def _untied_pmf_table(n1: int, n2: int, u_max: int) -> np.ndarray:
    """P(U = u) for u in 0..u_max when there are no ties."""
    small, large = (n1, n2) if n1 <= n2 else (n2, n1)
    memo = [np.zeros(u_max + 1) for _ in range(small + 1)]
    for m in range(large + 1):
        memo[0][0] = 1.0
        for n in range(1, min(small, m) + 1):
            left = memo[n - 1]
            right = memo[n] if n <= m - 1 else memo[m - 1]
            ulim = min(n * m, u_max)
            shifted = np.zeros(ulim + 1)
            if ulim - m >= 0:
                shifted[m:] = float(n) * left[: ulim - m + 1]
            memo[n][: ulim + 1] = (shifted + float(m) * right[: ulim + 1]) / float(n + m)
    return memo[small]


def _untied_cdf(n1: int, n2: int, u: float) -> float:
    ui = int(u // 1)
    flip = ui >= (n1 * n2 + 1) // 2
    if flip:
        ui = n1 * n2 - ui - 1
    pdfs = _untied_pmf_table(n1, n2, ui)
    total = 0.0
    for value in pdfs[: ui + 1].tolist():
        total += value
    return 1.0 - total if flip else total


def _two_u_min(n1: int, ties: Sequence[int], a: Sequence[int]) -> int:
    two_u = -n1 * n1
    remaining = n1
    for k in range(1, len(ties) + 1):
        take = min(remaining, ties[k - 1])
        two_u += take * a[k]
        remaining -= take
    return two_u


def _two_u_max(n1: int, ties: Sequence[int], a: Sequence[int]) -> int:
    two_u = -n1 * n1
    remaining = n1
    for k in range(len(ties), 0, -1):
        take = min(remaining, ties[k - 1])
        two_u += take * a[k]
        remaining -= take
    return two_u


def _tied_cumulative_count(two_u: int, n1: int, ties: Sequence[int]) -> float:
    """Number of first-sample rank assignments with 2U <= two_u (as a float)."""
    big_k = len(ties)
    if big_k < 2:
        raise ValueError("tied U distribution needs at least two distinct values")
    a = [0] * (big_k + 1)
    a[1] = ties[0]
    for k in range(2, big_k + 1):
        a[k] = a[k - 1] + ties[k - 2] + ties[k - 1]

    # Walk the recurrence downwards to discover the (n1, 2U) states needed.
    table: List[Dict[Tuple[int, int], float]] = [dict() for _ in range(big_k + 1)]
    table[big_k][(n1, two_u)] = 0.0
    tsum = sum(ties)
    for k in range(big_k - 1, 1, -1):
        tsum -= ties[k]
        for n1_next, two_u_next in table[k + 1]:
            for rk in range(max(0, n1_next - tsum), min(n1_next, ties[k]) + 1):
                two_u_k = two_u_next - rk * (a[k + 1] - 2 * n1_next + rk)
                n1_k = n1_next - rk
                prefix = ties[:k]
                if _two_u_min(n1_k, prefix, a) <= two_u_k <= _two_u_max(n1_k, prefix, a):
                    table[k][(n1_k, two_u_k)] = 0.0

    # Base case: two distinct values.
    pair_total = ties[0] + ties[1]
    for n1_2, two_u_2 in list(table[2]):
        acc = 0.0
        r_hi = (two_u_2 - n1_2 * (ties[0] - n1_2)) // pair_total
        for r2 in range(max(0, n1_2 - ties[0]), r_hi + 1):
            acc += choose(ties[0], n1_2 - r2) * choose(ties[1], r2)
        table[2][(n1_2, two_u_2)] = acc

    # Unwind the recurrence upwards.
    tsum = ties[0]
    for k in range(3, big_k + 1):
        tsum += ties[k - 2]
        below = table[k - 1]
        for n1_k, two_u_k in list(table[k]):
            acc = 0.0
            for rk in range(max(0, n1_k - tsum), min(n1_k, ties[k - 1]) + 1):
                two_u_prev = two_u_k - rk * (a[k] - 2 * n1_k + rk)
                n1_prev = n1_k - rk
                count = below.get((n1_prev, two_u_prev))
                if count is None:
                    count = 0.0
                    if _two_u_max(n1_prev, ties[: k - 1], a) < two_u_prev:
                        count = choose(tsum, n1_prev)
                acc += count * choose(ties[k - 1], rk)
            table[k][(n1_k, two_u_k)] = acc
    return table[big_k][(n1, two_u)]


def u_cdf(n1: int, n2: int, ties: Sequence[int], u: float) -> float:
    """P(U <= u) for samples of sizes n1, n2 and pooled tie counts ``ties``.

    ``ties`` lists, in rank order, how many pooled values share each
    distinct value (it sums to n1+n2). ``u`` may be a half-integer when
    there are ties.
    """
    if u < 0:
        return 0.0
    if u >= float(n1 * n2):
        return 1.0
    if any(t > 1 for t in ties):
        count = _tied_cumulative_count(int(2 * u), n1, list(ties))
        return count / choose(n1 + n2, n1)
    return _untied_cdf(n1, n2, u)

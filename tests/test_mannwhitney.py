"""The Mann-Whitney U test's p-values: exact for small samples (scipy's exact test without
ties; with ties, the permutation distribution enumerated, and counted a second way), the
normal approximation where both samples are large, and the interval that inverts them."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from xferbench.analysis.mannwhitney import (
    EXACT_SMALLER,
    exact_applies,
    mann_whitney_u,
    ratio_interval,
)

# scipy is the reference here, not a dependency: an interpreter without it (a GPU image's)
# skips this file at collection rather than fail every test run there
_scipy = pytest.importorskip("scipy.stats")
mannwhitneyu, permutation_test = _scipy.mannwhitneyu, _scipy.permutation_test

SIZES = range(3, 21)


def _samples(rng: random.Random, n: int, shift: float, levels: int | None) -> list[float]:
    """``n`` draws; with ``levels``, rounded onto that many values, so that they tie."""
    if levels is None:
        return [rng.lognormvariate(shift, 0.1) for _ in range(n)]
    return [float(rng.randint(0, levels - 1) + (1 if shift and rng.random() < 0.5 else 0))
            for _ in range(n)]


def test_p_values_without_ties_are_scipys_exact_ones_for_every_size_from_3_to_20():
    rng = random.Random(52)
    worst = 0.0
    for n1, n2 in itertools.product(SIZES, SIZES):
        x = _samples(rng, n1, 0.0, None)
        y = _samples(rng, n2, rng.choice((0.0, 0.05, 0.2)), None)
        u, p = mann_whitney_u(x, y)
        ref = mannwhitneyu(x, y, method="exact")
        assert u == ref.statistic
        worst = max(worst, abs(p - ref.pvalue))
    assert worst < 1e-6


def counted_independently(x: list[float], y: list[float]) -> float:
    """The two-sided p-value of U with ties, counted pair by pair (U = pairs x > y plus half
    the ties) over every split of the pooled values into the two sizes, as whole numbers:
    a dynamic program over the distinct values, apart from the code under test."""
    pooled = Counter(x + y)
    n1 = len(x)
    ways: dict[tuple[int, int], int] = {(0, 0): 1}  # (x's so far, 2U so far) -> splits
    seen = 0
    for value in sorted(pooled):
        t = pooled[value]
        nxt: Counter[tuple[int, int]] = Counter()
        for (k, twice_u), count in ways.items():
            below_y = seen - k  # y's below this value
            for j in range(0, min(t, n1 - k) + 1):  # j of the t tied values are x's
                gain = j * 2 * below_y + j * (t - j)  # each x: y's below, half the tied y's
                nxt[(k + j, twice_u + gain)] += count * math.comb(t, j)
        ways, seen = dict(nxt), seen + t
    dist = {u2: c for (k, u2), c in ways.items() if k == n1}
    total = sum(dist.values())
    observed = round(2 * sum((a > b) + 0.5 * (a == b) for a in x for b in y))
    lower = sum(c for u2, c in dist.items() if u2 <= observed) / total
    upper = sum(c for u2, c in dist.items() if u2 >= observed) / total
    return min(1.0, 2 * min(lower, upper))


def _u_statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return mannwhitneyu(x, y, axis=axis, method="asymptotic").statistic


@pytest.mark.parametrize(("n1", "n2"), [(3, 3), (3, 7), (5, 5), (4, 9), (6, 6), (7, 5)])
def test_p_values_with_ties_are_the_enumerated_permutation_tests(n1, n2):
    rng = random.Random(n1 * 100 + n2)
    x, y = _samples(rng, n1, 0.0, 4), _samples(rng, n2, 1.0, 4)
    assert len(set(x + y)) < n1 + n2  # ties there are
    ref = permutation_test((x, y), _u_statistic, permutation_type="independent",
                           n_resamples=np.inf, alternative="two-sided")
    assert mann_whitney_u(x, y)[1] == pytest.approx(ref.pvalue, abs=1e-6)
    assert counted_independently(x, y) == pytest.approx(ref.pvalue, abs=1e-12)


def test_p_values_with_ties_are_counted_exactly_for_every_size_from_3_to_20():
    rng = random.Random(7)
    worst = 0.0
    for n1, n2 in itertools.product(SIZES[::2], SIZES[1::2]):
        levels = rng.choice((3, 5, 8))
        x, y = _samples(rng, n1, 0.0, levels), _samples(rng, n2, 1.0, levels)
        worst = max(worst, abs(mann_whitney_u(x, y)[1] - counted_independently(x, y)))
    assert worst < 1e-6


def test_the_exact_p_is_the_one_the_approximation_misses_on_six_and_three_samples():
    six = mann_whitney_u([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12])
    assert six == (0.0, pytest.approx(2 / math.comb(12, 6)))  # 0.0022, not 0.0051
    assert mann_whitney_u([1, 2, 3], [4, 5, 6])[1] == pytest.approx(0.1)  # not 0.081


def test_both_samples_large_is_the_normal_approximation():
    rng = random.Random(3)
    x = [rng.gauss(0, 1) for _ in range(EXACT_SMALLER + 5)]
    y = [rng.gauss(0.3, 1) for _ in range(EXACT_SMALLER + 9)]
    assert not exact_applies(len(x), len(y), tied=False)
    ref = mannwhitneyu(x, y, method="asymptotic")
    assert mann_whitney_u(x, y)[1] == pytest.approx(ref.pvalue, rel=1e-12)
    assert exact_applies(3, 5000, tied=False)  # one small sample is enough for the count


def test_the_exact_interval_excludes_one_exactly_where_the_exact_test_rejects():
    rng = random.Random(11)
    for _ in range(40):
        n1, n2 = rng.randint(3, 12), rng.randint(3, 12)
        den = [rng.lognormvariate(0, 0.1) for _ in range(n1)]
        num = [rng.lognormvariate(rng.choice((0, 0.1, 0.3)), 0.1) for _ in range(n2)]
        lo, hi = ratio_interval(den, num, 0.05)
        assert (not lo <= 1 <= hi) == (mann_whitney_u(den, num)[1] < 0.05), (den, num)

"""The verdict the site prints beside every ratio: its interval is compare's Mann-Whitney test
inverted (checked against a brute-force inversion), it excludes 1 exactly where compare calls
the change significant, and its word follows the unit's direction."""

from __future__ import annotations

import math
import random

import pytest
from conftest import committed_results

from xferbench.analysis.comparison import NOT_SIGNIFICANT, compare_results
from xferbench.analysis.stats import (
    FASTER,
    NO_DIFFERENCE,
    SLOWER,
    mann_whitney_u,
    ratio_interval,
    verdict,
)
from xferbench.results import Result, load


def result(samples: list[float] | None, unit: str = "seconds", **kw) -> Result:
    value = sorted(samples)[len(samples) // 2] if samples else kw.pop("value")
    return Result("bench_x.X.track_s", (), value, unit, "m", "c" * 40, 0, "2.13.0", "none",
                  "3.11", "env", "/x.json", samples=tuple(samples) if samples else None, **kw)


def brute_interval(den: list[float], num: list[float], alpha: float) -> tuple[float, float]:
    """Every r between consecutive pairwise ratios where the test of den against num / r is
    not significant: the edges of the accepted run."""
    q = sorted({y / x for x in den for y in num})
    probes = [q[0] / 2] + [(a + b) / 2 for a, b in zip(q, q[1:])] + [q[-1] * 2]
    edges = [(0.0, q[0])] + list(zip(q, q[1:])) + [(q[-1], math.inf)]
    accepted = [edge for r, edge in zip(probes, edges)
                if mann_whitney_u(den, [y / r for y in num])[1] >= alpha]
    return accepted[0][0], accepted[-1][1]


@pytest.mark.parametrize("seed", range(6))
def test_interval_is_the_test_inverted(seed):
    rng = random.Random(seed)
    den = [rng.lognormvariate(0, 0.1) for _ in range(rng.randint(4, 25))]
    num = [rng.lognormvariate(rng.choice((0, 0.05, 0.3)), 0.1) for _ in range(rng.randint(4, 25))]
    for alpha in (0.05, 0.01):
        got = ratio_interval(den, num, alpha)
        assert got == pytest.approx(brute_interval(den, num, alpha), rel=1e-12)


def test_interval_excludes_one_exactly_where_compare_finds_a_difference():
    rs = load(str(committed_results())).newest()
    a, b = rs.torch_versions()[:2]
    rows, _ = compare_results(rs.filter(torch=a), rs.filter(torch=b))
    checked = 0
    for row in rows:
        if row.ratio is None:
            continue
        v = verdict(row.a, row.b)
        assert v.significant == (row.mark != NOT_SIGNIFICANT), row.label()
        assert (v.word == NO_DIFFERENCE) == (not v.significant), row.label()
        if v.interval is not None:
            excludes = not v.interval[0] <= 1 <= v.interval[1]
            assert excludes == v.significant, (row.label(), v)
            checked += 1
    assert checked >= 20


def test_two_samples_a_side_cannot_tell_anything():
    assert ratio_interval([1.0, 2.0], [3.0, 4.0]) == (0.0, math.inf)
    v = verdict(result([1.0, 1.01]), result([3.0, 3.03]))
    assert v.word == NO_DIFFERENCE and v.p_value == pytest.approx(0.245, abs=0.01)
    assert (v.n_a, v.n_b) == (2, 2) and v.speedup_interval == (0.0, math.inf)


def test_word_follows_the_unit():
    base = [1.0 + 0.01 * i for i in range(20)]
    slow = [x * 1.5 for x in base]
    assert verdict(result(base), result(slow)).word == SLOWER
    assert verdict(result(slow), result(base)).word == FASTER
    assert verdict(result(base, "GB/s"), result(slow, "GB/s")).word == FASTER  # a rate
    assert verdict(result(base, "bytes"), result(slow, "bytes")).word == "higher"
    v = verdict(result(base), result(slow))
    assert v.ratio == pytest.approx(1.5) and v.interval[0] > 1 and v.n_a == v.n_b == 20
    assert v.speedup == pytest.approx(1 / 1.5)


def test_without_samples_the_interval_comes_from_asvs_cis():
    a = result(None, value=1.0, ci_99=(0.9, 1.1))
    b = result(None, value=2.0, ci_99=(1.8, 2.2))
    v = verdict(a, b)
    assert v.test == "99% CI" and v.significant and v.word == SLOWER
    assert v.interval == pytest.approx((1.8 / 1.1, 2.2 / 0.9))
    assert verdict(result(None, value=1.0), result(None, value=2.0)).word == NO_DIFFERENCE


def test_long_samples_stay_bounded_and_deterministic():
    rng = random.Random(7)
    den = [rng.lognormvariate(0, 0.05) for _ in range(3000)]
    num = [rng.lognormvariate(0.1, 0.05) for _ in range(3000)]
    lo, hi = ratio_interval(den, num)
    assert lo < math.exp(0.1) < hi and hi / lo < 1.02
    assert ratio_interval(den, num) == (lo, hi)

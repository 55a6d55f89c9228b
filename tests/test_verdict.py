"""The verdict the site prints beside every ratio: its interval is compare's Mann-Whitney test
inverted (checked against a brute-force inversion) at the level the comparison decides at, it
excludes 1 exactly where compare calls the change significant, its word follows the unit's
direction and is one of three answers (a change, the same, ambiguous), and a change that
vanishes once each sample is scaled by its SM clock is the clock's."""

from __future__ import annotations

import math
import random

import pytest
from conftest import committed_results

from xferbench.analysis.comparison import AMBIGUOUS, CLOCK, SAME, WORSE, compare_results
from xferbench.analysis.stats import (
    FASTER,
    SLOWER,
    UNCHANGED,
    Decision,
    decide,
    mann_whitney_u,
    q_values,
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
        v = row.verdict
        assert v.q_value is not None or v.test != "mann-whitney", row.label()
        assert v.significant == (v.q_value < 0.05 if v.q_value is not None
                                 else v.significant), row.label()
        assert (row.mark in (SAME, AMBIGUOUS)) == (v.word in UNCHANGED), row.label()
        if v.interval is not None and v.test == "mann-whitney" and not _tied(row):
            excludes = not v.interval[0] <= 1 <= v.interval[1]
            assert excludes == v.significant, (row.label(), v)
            checked += 1
    assert checked >= 20


def _tied(row) -> bool:
    pooled = [*row.a.samples, *row.b.samples]
    return len(set(pooled)) < len(pooled)


def test_two_samples_a_side_cannot_tell_anything():
    assert ratio_interval([1.0, 2.0], [3.0, 4.0]) == (0.0, math.inf)
    v = verdict(result([1.0, 1.01]), result([3.0, 3.03]))
    assert v.word == AMBIGUOUS and v.p_value == pytest.approx(1 / 3)  # exact: 2 of 6 splits
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
    assert verdict(result(None, value=1.0), result(None, value=2.0)).word == AMBIGUOUS


def test_long_samples_stay_bounded_and_deterministic():
    rng = random.Random(7)
    den = [rng.lognormvariate(0, 0.05) for _ in range(3000)]
    num = [rng.lognormvariate(0.1, 0.05) for _ in range(3000)]
    lo, hi = ratio_interval(den, num)
    assert lo < math.exp(0.1) < hi and hi / lo < 1.02
    assert ratio_interval(den, num) == (lo, hi)


def test_q_values_are_benjamini_hochbergs():
    # by hand: sorted 0.005, 0.01, 0.03, 0.04 times 4 / rank is 0.02, 0.02, 0.04, 0.04
    assert q_values([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert q_values([0.2, 0.01]) == pytest.approx([0.2, 0.02])  # a running minimum from the top
    decision, qs = decide([0.01, None, 0.04, 0.03, 0.005])
    assert qs[1] is None and decision.tested == 4 and decision.discoveries == 4
    assert decision.level == pytest.approx(0.05)


def test_the_interval_level_follows_what_was_found():
    assert Decision("q", 0.05, 100, 10).level == pytest.approx(0.005)
    assert Decision("q", 0.05, 100, 0).level == pytest.approx(0.0005)
    assert Decision("p", 0.05, 100, 0).level == 0.05


def test_an_interval_inside_the_threshold_is_the_same_and_one_across_it_ambiguous():
    base = [1.0 + 0.001 * i for i in range(40)]
    assert verdict(result(base), result([x * 1.02 for x in base])).word == SAME
    rng = random.Random(2)
    noisy = [rng.lognormvariate(0, 0.3) for _ in range(6)]
    wide = verdict(result(noisy), result([x * rng.lognormvariate(0, 0.3) for x in noisy]))
    assert wide.word == AMBIGUOUS and not wide.significant


def _clocked(samples: list[float], mhz: list[float]):
    return result(samples, sm_mhz=tuple(mhz))


def test_a_slowdown_from_a_lower_clock_is_the_clocks_not_the_codes():
    rng = random.Random(4)
    work = [rng.lognormvariate(0, 0.02) for _ in range(30)]  # cycles, in units of 1e-3 s
    a = _clocked([w * 1e-3 / 1.98 for w in work], [1980.0] * 30)
    slow = _clocked([w * 1e-3 / 1.40 for w in work], [1400.0] * 30)  # 41% slower: the clock
    v = verdict(a, slow)
    assert v.word == SLOWER and v.cycles is not None and v.cycles.word == SAME and v.clock
    rows, _ = compare_results([a], [slow])
    assert rows[0].mark == CLOCK
    code = _clocked([w * 1.3 * 1e-3 / 1.98 for w in work], [1980.0] * 30)  # the code
    v = verdict(a, code)
    assert v.word == SLOWER and v.cycles.word == SLOWER and not v.clock
    assert compare_results([a], [code])[0][0].mark == WORSE


def test_without_a_clock_per_sample_there_is_no_cycle_comparison():
    a = result([1.0, 1.1, 1.2, 1.3], sm_mhz=(1980.0,))  # not one per sample
    b = result([2.0, 2.1, 2.2, 2.3])
    assert verdict(a, b).cycles is None
    assert verdict(result([1.0, 1.1], sm_mhz=(1.0, 1.0)),
                   result([1.0, 1.1], sm_mhz=(1.0, 1.0))).cycles is not None

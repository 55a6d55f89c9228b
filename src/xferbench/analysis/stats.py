"""Statistics on results: the Mann-Whitney U test on recorded samples, significance with a
fallback to asv's confidence intervals, which direction of a unit is better, and the verdict
the site prints beside a ratio (its interval, sample counts and faster / slower / no
detectable difference) from that same test.

Pure arithmetic over ``Result`` records; formatting happens elsewhere.
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from ..results import Result

# numpy loads inside the functions that need it: `import xferbench` stays free of it.

#: Default threshold: a change smaller than this is never a regression, however significant.
THRESHOLD = 0.10
#: Two-sided significance level of the Mann-Whitney U test.
ALPHA = 0.05


def parse_threshold(text: str) -> float:
    """An argparse type: "10", "10%" and "0.1" all mean 0.1, the smallest change that counts
    (a bare number of 1 or more is a percentage, below 1 a fraction)."""
    t = text.strip()
    try:
        number = float(t[:-1] if t.endswith("%") else t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a threshold: write 10, 10% or 0.1 (a change of 10%)") from None
    value = number / 100 if t.endswith("%") or number >= 1 else number
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a threshold: give a change from 0% up to, not including, 100%")
    return value


def parse_alpha(text: str) -> float:
    """An argparse type: a significance level in (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a significance level in (0, 1)")
    return value


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of ``x``, p-value).

    Normal approximation with the tie correction and a continuity correction, as
    scipy.stats.mannwhitneyu(x, y, method="asymptotic"). Samples of a benchmark are many
    (tens to thousands), where the approximation is close to the exact test.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples must be non-empty")
    pooled = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    n = n1 + n2
    rank_sum_x = 0.0
    tie_term = 0.0  # sum of t^3 - t over groups of t tied values
    i = 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        t = j - i + 1
        mid_rank = (i + j) / 2 + 1  # ranks are 1-based; ties share their mean rank
        rank_sum_x += mid_rank * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        tie_term += t**3 - t
        i = j + 1
    u = rank_sum_x - n1 * (n1 + 1) / 2
    return u, u_p_value(u, n1, n2, tie_term)


@functools.lru_cache(maxsize=8192)
def _cached_u(x: tuple[float, ...], y: tuple[float, ...]) -> tuple[float, float]:
    """mann_whitney_u, once per pair of samples: publish tests each pair up to three times
    (the changes' marks, their verdicts, the trends' steps)."""
    return mann_whitney_u(x, y)


def u_p_value(u: float, n1: int, n2: int, tie_term: float) -> float:
    """The two-sided p-value of U for samples of ``n1`` and ``n2`` values whose ties add up
    to ``tie_term`` (sum of t^3 - t): normal approximation, continuity correction."""
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0  # every value tied: nothing tells the two apart
    z = max(abs(u - n1 * n2 / 2) - 0.5, 0.0) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def _tie_term(values: Sequence[float]) -> float:
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return float(sum(t**3 - t for t in counts.values()))


#: Units of figures counted or observed once, not sampled (syncs per step, allocations per
#: call, peak bytes, whether a behaviour holds): the same workload gives the same count, so
#: two that differ differ (the "exact" test); no noise to test them against.
EXACT_UNITS = frozenset({"syncs", "allocations", "bytes", "holds"})


def is_rate(unit: str) -> bool:
    """GB/s, steps/s: any unit per second."""
    return unit.strip().endswith("/s")


def higher_is_better(unit: str) -> bool:
    """Rates (GB/s, steps/s: any unit per second) grow when things improve, and so does a
    behaviour check (1 holds, 0 does not); seconds, fractions and counts shrink."""
    return is_rate(unit) or unit.strip() == "holds"


def worse_by(ratio: float, unit: str) -> float:
    """B/A turned into "times worse": B/A for seconds, A/B for rates."""
    if higher_is_better(unit):
        return math.inf if ratio == 0 else 1 / ratio
    return ratio


@dataclass(frozen=True)
class Significance:
    significant: bool
    p_value: float | None
    test: str  # "mann-whitney", "99% CI", or "none"


def significance(a: Result, b: Result, alpha: float = ALPHA) -> Significance:
    """Mann-Whitney U on the recorded samples; without samples, asv's 99% confidence
    intervals (disjoint = significant); a count or an observation (``EXACT_UNITS``) without
    either: any difference ("exact"); else never significant."""
    if a.samples and b.samples and len(a.samples) >= 2 and len(b.samples) >= 2:
        _, p = _cached_u(tuple(a.samples), tuple(b.samples))
        return Significance(p < alpha, p, "mann-whitney")
    if a.ci_99 and b.ci_99:
        (a_lo, a_hi), (b_lo, b_hi) = sorted(a.ci_99), sorted(b.ci_99)
        return Significance(a_hi < b_lo or b_hi < a_lo, None, "99% CI")
    if a.unit in EXACT_UNITS and b.unit == a.unit and a.ok and b.ok:
        return Significance(a.value != b.value, None, "exact")
    return Significance(False, None, "none")


#: Pairwise ratios beyond this many are computed on evenly spaced order statistics of each
#: side (2,000 at most), which keeps memory and time bounded for very long runs.
MAX_PAIRS = 4_000_000


def ratio_interval(den: Sequence[float], num: Sequence[float],
                   alpha: float = ALPHA) -> tuple[float, float] | None:
    """The 1 - ``alpha`` interval of the factor r by which ``num``'s values are ``den``'s
    scaled (num / den, a ratio of medians where one side is the other scaled): every r for
    which Mann-Whitney U of ``den`` against ``num / r`` is not significant at ``alpha``, the
    test ``significance`` runs (Moses' distribution-free interval, on ratios).

    U of ``den`` against ``num / r`` is the number of pairwise ratios num_j / den_i below r,
    so the interval runs between two order statistics of those ratios. It excludes 1 exactly
    when the test of ``den`` against ``num`` is significant, except where values tie across
    the sides. (0, inf) when no r can be rejected (too few samples); None where a side has
    fewer than 2 samples or a value that is not positive.
    """
    if len(den) < 2 or len(num) < 2 or min(den) <= 0 or min(num) <= 0:
        return None
    n1, n2 = len(den), len(num)
    tie_term = _tie_term(den) + _tie_term(num)  # at any r but the ratios: ties within a side
    accepted = _accepted_u(n1, n2, tie_term, alpha)
    if accepted is None:
        return None
    m_lo, m_hi = accepted
    pairs = n1 * n2
    lo_k = m_lo - 1 if m_lo >= 1 else None  # 0-based ranks of the two ratios
    hi_k = m_hi if m_hi <= pairs - 1 else None
    wanted = [k for k in (lo_k, hi_k) if k is not None]
    found = _pairwise_ratios_at(den, num, wanted)
    lo = found[lo_k] if lo_k is not None else 0.0
    hi = found[hi_k] if hi_k is not None else math.inf
    return lo, hi


def _accepted_u(n1: int, n2: int, tie_term: float, alpha: float) -> tuple[int, int] | None:
    """The integers U in [0, n1 * n2] that the test does not reject: (lowest, highest)."""
    pairs = n1 * n2
    mean = pairs / 2

    def ok(u: int) -> bool:
        return 0 <= u <= pairs and u_p_value(u, n1, n2, tie_term) >= alpha

    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return 0, pairs
    reach = NormalDist().inv_cdf(1 - alpha / 2) * math.sqrt(var) + 0.5
    lo, hi = max(math.ceil(mean - reach), 0), min(math.floor(mean + reach), pairs)
    while lo > 0 and ok(lo - 1):  # settle the edges on the test itself, not the estimate
        lo -= 1
    while lo <= hi and not ok(lo):
        lo += 1
    while hi < pairs and ok(hi + 1):
        hi += 1
    while hi >= lo and not ok(hi):
        hi -= 1
    return (lo, hi) if lo <= hi else None


def _pairwise_ratios_at(den: Sequence[float], num: Sequence[float],
                        ranks: list[int]) -> dict[int, float]:
    """{rank: the rank-th smallest of num_j / den_i} (0-based ranks)."""
    import numpy as np

    d, n = np.sort(np.asarray(den, dtype=float)), np.sort(np.asarray(num, dtype=float))
    pairs = len(d) * len(n)
    if pairs > MAX_PAIRS:
        keep = 2000
        d = d[np.linspace(0, len(d) - 1, min(len(d), keep)).round().astype(int)]
        n = n[np.linspace(0, len(n) - 1, min(len(n), keep)).round().astype(int)]
        scale = len(d) * len(n) / pairs
        ranks_here = {k: min(int(k * scale), len(d) * len(n) - 1) for k in ranks}
    else:
        ranks_here = {k: k for k in ranks}
    if not ranks_here:
        return {}
    ratios = np.divide.outer(n, d).ravel()
    wanted = sorted(set(ranks_here.values()))
    part = np.partition(ratios, wanted)
    return {k: float(part[v]) for k, v in ranks_here.items()}


FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no detectable difference"
NOW_HOLDS = "now holds"  # a behaviour check: 0 in A, 1 in B
NO_LONGER_HOLDS = "no longer holds"
#: Significant, but by no more than the threshold: a difference too small to count.
WITHIN_THRESHOLD = "within threshold"


@dataclass(frozen=True)
class Verdict:
    """B against A: the ratio of medians, its interval, the sample counts and the test's
    word. ``significant`` is ``significance(a, b, alpha)``'s, as ``compare`` marks it."""

    ratio: float | None  # B's median / A's median
    interval: tuple[float, float] | None  # of the ratio, at 1 - alpha (or from asv's 99% CIs)
    n_a: int | None  # samples behind each median (None: not recorded)
    n_b: int | None
    significant: bool
    p_value: float | None
    test: str
    word: str  # faster, slower (higher, lower for other units), within threshold, or no
    # detectable difference
    alpha: float = ALPHA
    threshold: float = THRESHOLD

    @property
    def ratio_outside(self) -> bool:
        """The medians' ratio lies outside the interval: the two sides differ in shape, not
        only by a factor (the interval is of the factor that best maps one onto the other)."""
        return (self.ratio is not None and self.interval is not None
                and not self.interval[0] <= self.ratio <= self.interval[1])

    @property
    def speedup(self) -> float | None:
        """A's median / B's median: above 1, B is faster (for times)."""
        if self.ratio is None or self.ratio == 0:
            return None
        return 1 / self.ratio

    @property
    def speedup_interval(self) -> tuple[float, float] | None:
        if self.interval is None:
            return None
        lo, hi = self.interval
        return (0.0 if math.isinf(hi) else 1 / hi, math.inf if lo == 0 else 1 / lo)


def verdict(a: Result, b: Result, alpha: float = ALPHA, threshold: float = THRESHOLD) -> Verdict:
    """B against A: significance() decides (the test compare runs, at the same alpha) and,
    as compare marks it, a significant change by no more than ``threshold`` is "within
    threshold"; the interval is that test inverted (``ratio_interval``), or without samples
    the ratio of asv's 99% confidence intervals (disjoint exactly when that fallback is
    significant)."""
    sig = significance(a, b, alpha)
    n_a = len(a.samples) if a.samples else None
    n_b = len(b.samples) if b.samples else None
    ratio = None
    if a.ok and b.ok:
        ratio = (1.0 if b.value == 0 else math.inf) if a.value == 0 else b.value / a.value
    interval = None
    if sig.test == "mann-whitney":
        interval = ratio_interval(a.samples or (), b.samples or (), alpha)
    elif sig.test == "99% CI" and a.ci_99 and b.ci_99 and min(*a.ci_99, *b.ci_99) > 0:
        (a_lo, a_hi), (b_lo, b_hi) = sorted(a.ci_99), sorted(b.ci_99)
        interval = (b_lo / a_hi, b_hi / a_lo)
    word = NO_DIFFERENCE
    # the side of 1 the test found B on: the interval's, which can differ from the medians'
    # where the medians are within a hair of each other
    up = None if ratio is None or ratio == 1 else ratio > 1
    if interval is not None and (interval[0] > 1 or interval[1] < 1):
        up = interval[0] > 1
    small = ratio is not None and ratio > 0 and not math.isinf(ratio) and \
        1 / (1 + threshold) <= ratio <= 1 + threshold
    if sig.significant and up is not None and small:
        word = WITHIN_THRESHOLD
    elif sig.significant and up is not None:
        if is_rate(a.unit) or a.unit == "seconds":
            word = SLOWER if up != higher_is_better(a.unit) else FASTER
        elif a.unit == "holds":
            word = NOW_HOLDS if up else NO_LONGER_HOLDS
        else:
            word = "higher" if up else "lower"
    return Verdict(ratio, interval, n_a, n_b, sig.significant, sig.p_value, sig.test, word,
                   alpha, threshold)

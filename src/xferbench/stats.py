"""Statistics on results: the Mann-Whitney U test on recorded samples, significance with a
fallback to asv's confidence intervals, and which direction of a unit is better.

Pure arithmetic over ``Result`` records; formatting happens elsewhere.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass

from .results import Result

#: Default threshold: a change smaller than this is never a regression, however significant.
THRESHOLD = 0.10
#: Two-sided significance level of the Mann-Whitney U test.
ALPHA = 0.05


def parse_threshold(text: str) -> float:
    """An argparse type: "10%" or "0.1" -> 0.1; the smallest change that counts."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a threshold: write 10% or 0.1") from None
    if not 0 <= value < 1 or (not t.endswith("%") and value >= 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not a threshold between 0% and 100%")
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
    mean = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return u, 1.0  # every value tied: nothing tells the two apart
    z = max(abs(u - mean) - 0.5, 0.0) / math.sqrt(var)
    return u, min(1.0, math.erfc(z / math.sqrt(2)))


def higher_is_better(unit: str) -> bool:
    """Rates (GB/s, steps/s: any unit per second) grow when things improve; seconds,
    fractions and counts shrink."""
    return unit.strip().endswith("/s")


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
    intervals (disjoint = significant); without either, never significant."""
    if a.samples and b.samples and len(a.samples) >= 2 and len(b.samples) >= 2:
        _, p = mann_whitney_u(a.samples, b.samples)
        return Significance(p < alpha, p, "mann-whitney")
    if a.ci_99 and b.ci_99:
        (a_lo, a_hi), (b_lo, b_hi) = sorted(a.ci_99), sorted(b.ci_99)
        return Significance(a_hi < b_lo or b_hi < a_lo, None, "99% CI")
    return Significance(False, None, "none")

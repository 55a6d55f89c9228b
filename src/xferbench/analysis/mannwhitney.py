"""The Mann-Whitney U test: U of two samples and its two-sided p-value, exact for small
samples (ties included), the normal approximation where both samples are large; and the
range of U the test accepts, which the ratio's interval inverts.

The exact p-value is the permutation test's: every way of splitting the pooled values into
the two samples is equally likely, tied values share their mean rank, and the p-value is
twice the smaller tail (as scipy's ``mannwhitneyu(method="exact")`` without ties and its
``permutation_test`` with them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# numpy loads inside the functions that need it: `import xferbench` stays free of it.

#: Exact where the smaller sample has at most this many values; where both have more, the
#: normal approximation is close to the exact test.
EXACT_SMALLER = 20
#: With ties the exact count runs over every pooled value: exact up to this many in all.
EXACT_TIED_TOTAL = 200


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of ``x``, p-value). Exact where ``exact_applies``,
    else the normal approximation with the tie and continuity corrections."""
    return _u_test(tuple(x), tuple(y))


@functools.lru_cache(maxsize=8192)
def _u_test(x: tuple[float, ...], y: tuple[float, ...]) -> tuple[float, float]:
    """mann_whitney_u, once per pair of samples: publish tests each pair several times."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples must be non-empty")
    groups = _tie_groups(x, y)
    u = sum(in_x * (start + (size + 1) / 2) for start, size, in_x in groups) - n1 * (n1 + 1) / 2
    if exact_applies(n1, n2, tied=any(size > 1 for _, size, _ in groups)):
        return u, _exact_p(u, n1, n2, tuple(size for _, size, _ in groups))
    tie_term = float(sum(size**3 - size for _, size, _ in groups))
    return u, u_p_value(u, n1, n2, tie_term)


def exact_applies(n1: int, n2: int, tied: bool) -> bool:
    """Whether the p-value of samples of ``n1`` and ``n2`` values is counted exactly."""
    return min(n1, n2) <= EXACT_SMALLER and (not tied or n1 + n2 <= EXACT_TIED_TOTAL)


def _tie_groups(x: Sequence[float], y: Sequence[float]) -> list[tuple[int, int, int]]:
    """The pooled values in order, equal ones grouped: (0-based start, size, how many of
    them are ``x``'s) per group."""
    pooled = sorted([(v, 1) for v in x] + [(v, 0) for v in y])
    out = []
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        out.append((i, j - i + 1, sum(side for _, side in pooled[i:j + 1])))
        i = j + 1
    return out


def u_p_value(u: float, n1: int, n2: int, tie_term: float) -> float:
    """The two-sided p-value of U for samples of ``n1`` and ``n2`` values whose ties add up
    to ``tie_term`` (sum of t^3 - t): normal approximation, continuity correction, as
    scipy's ``mannwhitneyu(method="asymptotic")``."""
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 1.0  # every value tied: nothing tells the two apart
    z = max(abs(u - n1 * n2 / 2) - 0.5, 0.0) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def _exact_p(u: float, n1: int, n2: int, sizes: tuple[int, ...]) -> float:
    """Twice the smaller tail of U's permutation distribution, given the tie groups'
    ``sizes`` in pooled order."""
    if n1 > n2:  # count the smaller sample's ways: U of the other is n1 * n2 - U
        u, n1, n2 = n1 * n2 - u, n2, n1
    if all(size == 1 for size in sizes):
        probs = untied_distribution(n1, n2)
        k = round(u)
        lower = float(probs[:k + 1].sum())
        upper = float(probs[:n1 * n2 - k + 1].sum())  # symmetric: the lower tail mirrored
    else:
        values, probs = _tied_distribution(sizes, n1)
        lower = float(probs[values <= 2 * u + 0.5].sum())  # doubled U: integers
        upper = float(probs[values >= 2 * u - 0.5].sum())
    return min(1.0, 2 * min(lower, upper))


@functools.lru_cache(maxsize=256)
def untied_distribution(m: int, n: int) -> np.ndarray:
    """P(U = 0 .. m*n) for samples of ``m`` and ``n`` distinct values (a numpy array): the
    coefficients of the Gaussian binomial [m+n choose m], built as the product over i of
    (1 - q^(n+i)) / (1 - q^i), each step a polynomial with whole coefficients."""
    import numpy as np

    top = m * n
    c = np.zeros(top + 1)
    c[0] = 1.0
    for i in range(1, m + 1):
        shift = n + i
        if shift <= top:
            c[shift:] -= c[:top + 1 - shift].copy()
        for r in range(i):  # divide by (1 - q^i): a running sum along each residue mod i
            c[r::i] = np.cumsum(c[r::i])
    return c / c.sum()


def _tied_distribution(sizes: tuple[int, ...], n1: int) -> tuple[np.ndarray, np.ndarray]:
    """(every doubled U, its probability) for the first sample of ``n1`` values, the pooled
    values falling into tie groups of ``sizes`` in order: the number of ways to draw the
    first sample's values with each sum of (doubled) mean ranks, counted group by group."""
    import numpy as np

    n = sum(sizes)
    top = 2 * sum(range(n - n1 + 1, n + 1))  # the largest doubled rank sum of n1 values
    ways = np.zeros((n1 + 1, top + 1))
    ways[0, 0] = 1.0
    start = 0
    for size in sizes:
        doubled = 2 * start + size + 1  # twice the group's mean rank
        before = ways.copy()
        for j in range(1, min(size, n1) + 1):
            step = j * doubled
            ways[j:, step:] += math.comb(size, j) * before[:n1 + 1 - j, :top + 1 - step]
        start += size
    counts = ways[n1]
    sums = np.nonzero(counts)[0]
    return sums - n1 * (n1 + 1), counts[sums] / counts[sums].sum()


#: Pairwise ratios beyond this many are computed on evenly spaced order statistics of each
#: side (2,000 at most), which keeps memory and time bounded for very long runs.
MAX_PAIRS = 4_000_000


def ratio_interval(den: Sequence[float], num: Sequence[float],
                   alpha: float = 0.05) -> tuple[float, float] | None:
    """The 1 - ``alpha`` interval of the factor r by which ``num``'s values are ``den``'s
    scaled (num / den, a ratio of medians where one side is the other scaled): every r for
    which Mann-Whitney U of ``den`` against ``num / r`` is not significant at ``alpha``, the
    test ``significance`` runs (Moses' distribution-free interval, on ratios).

    U of ``den`` against ``num / r`` is the number of pairwise ratios num_j / den_i below r,
    so the interval runs between two order statistics of those ratios. It excludes 1 exactly
    when the test of ``den`` against ``num`` is significant at ``alpha``, except where values
    tie (``accepted_u`` counts U's distribution without them). (0, inf) when no r can be
    rejected (too few samples); None where a side has fewer than 2 samples or a value that is
    not positive.
    """
    if len(den) < 2 or len(num) < 2 or min(den) <= 0 or min(num) <= 0:
        return None
    n1, n2 = len(den), len(num)
    tie_term = _tie_term(den) + _tie_term(num)  # at any r but the ratios: ties within a side
    accepted = accepted_u(n1, n2, tie_term, alpha)
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


def _tie_term(values: Sequence[float]) -> float:
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return float(sum(t**3 - t for t in counts.values()))


def accepted_u(n1: int, n2: int, tie_term: float, alpha: float) -> tuple[int, int] | None:
    """The integers U in [0, n1 * n2] that the test does not reject at ``alpha``: (lowest,
    highest), or None where it rejects every one. Exact (the distribution without ties:
    at the ratios between the pooled values, values tie only within a side, and the exact
    count leaves them apart) where ``exact_applies``, else the normal approximation with
    ``tie_term`` (ties within each side)."""
    pairs = n1 * n2
    if exact_applies(n1, n2, tied=False):
        probs = untied_distribution(min(n1, n2), max(n1, n2))
        tail = 0.0
        lo = 0
        while lo <= pairs // 2 and 2 * (tail + probs[lo]) < alpha:  # symmetric: p = 2 F(u)
            tail += probs[lo]
            lo += 1
        return (lo, pairs - lo) if lo <= pairs - lo else None
    return _accepted_normal(n1, n2, tie_term, alpha)


def _accepted_normal(n1: int, n2: int, tie_term: float,
                     alpha: float) -> tuple[int, int] | None:
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

"""Statistics on results: significance (the Mann-Whitney U test on recorded samples, with a
fallback to asv's confidence intervals), the false discovery rate across the rows of one
comparison, which direction of a unit is better, and the verdict the site, ``compare`` and
the claims print beside a ratio: its interval, sample counts and one of three answers,
faster or slower, the same within the threshold, or ambiguous.

Pure arithmetic over ``Result`` records; formatting happens elsewhere.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..results import Result
from .mannwhitney import mann_whitney_u, ratio_interval

#: Default threshold: a change smaller than this is never a regression, however significant.
THRESHOLD = 0.10
#: Two-sided significance level of the Mann-Whitney U test, and the false discovery rate
#: across the rows of one comparison.
ALPHA = 0.05
#: What a comparison's rows are decided on: each row's q-value (the false discovery rate
#: across them, Benjamini-Hochberg) or its p-value alone.
ON_Q = "q"
ON_P = "p"


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


#: Units of figures counted or observed once, not sampled (syncs per step, allocations per
#: call, peak bytes, whether a behaviour holds): the same workload gives the same count, so
#: two that differ differ (the "exact" test); no noise to test them against.
EXACT_UNITS = frozenset({"syncs", "allocations", "bytes", "holds"})


def is_rate(unit: str) -> bool:
    """GB/s, steps/s: any unit per second."""
    return unit.strip().endswith("/s")


def higher_is_better(unit: str) -> bool:
    """Rates (GB/s, steps/s: any unit per second) grow when things improve, and so does a
    check whose 1 is the good answer (a behaviour that holds; a unit "(1 yes, 0 no)", as
    peer access: losing it is worse); seconds, fractions and counts shrink."""
    return is_rate(unit) or unit.strip() == "holds" or "(1 yes, 0 no)" in unit


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
        _, p = mann_whitney_u(a.samples, b.samples)
        return Significance(p < alpha, p, "mann-whitney")
    if a.ci_99 and b.ci_99:
        (a_lo, a_hi), (b_lo, b_hi) = sorted(a.ci_99), sorted(b.ci_99)
        return Significance(a_hi < b_lo or b_hi < a_lo, None, "99% CI")
    if a.unit in EXACT_UNITS and b.unit == a.unit and a.ok and b.ok:
        return Significance(a.value != b.value, None, "exact")
    return Significance(False, None, "none")


@dataclass(frozen=True)
class Decision:
    """How the rows of one comparison are decided: on each row's q-value (Benjamini-Hochberg
    across the rows with a p-value: a false discovery rate of ``alpha``) or on its p-value."""

    on: str  # ON_Q or ON_P
    alpha: float
    tested: int  # rows with a p-value
    discoveries: int  # of them, the rows found significant

    @property
    def level(self) -> float:
        """The two-sided error rate of each row's interval. On p, ``alpha``; on q, ``alpha``
        times the share of rows found significant (Benjamini and Yekutieli's intervals for a
        false coverage rate of ``alpha``), so that an interval excludes 1 exactly where the
        row's q-value is below ``alpha``; ``alpha`` / tested where no row is."""
        if self.on == ON_P or not self.tested:
            return self.alpha
        return self.alpha * max(self.discoveries, 1) / self.tested


def q_values(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg's adjusted p-values, in the order given: the smallest false
    discovery rate at which each would be declared significant."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [1.0] * m
    smallest = 1.0
    for rank in range(m, 0, -1):  # from the largest p down: q is the running minimum
        i = order[rank - 1]
        smallest = min(smallest, p_values[i] * m / rank)
        out[i] = smallest
    return out


def decide(p_values: Sequence[float | None], alpha: float = ALPHA,
           on: str = ON_Q) -> tuple[Decision, list[float | None]]:
    """The decision over one comparison's rows and each row's q-value (None where the row
    has no p-value: it is decided by its own test, outside the rate)."""
    tested = [i for i, p in enumerate(p_values) if p is not None]
    adjusted = q_values([p_values[i] for i in tested])  # type: ignore[misc]
    qs: list[float | None] = [None] * len(p_values)
    for i, q in zip(tested, adjusted):
        qs[i] = q
    decisive = adjusted if on == ON_Q else [p_values[i] for i in tested]
    found = sum(1 for x in decisive if x is not None and x < alpha)
    return Decision(on, alpha, len(tested), found), qs


FASTER = "faster"
SLOWER = "slower"
#: The samples agree within the threshold: the ratio's interval lies inside it.
SAME = "same"
#: Neither a change beyond the threshold nor agreement within it can be shown.
AMBIGUOUS = "ambiguous"
NOW_HOLDS = "now holds"  # a behaviour check: 0 in A, 1 in B
NO_LONGER_HOLDS = "no longer holds"
#: The words that are no change.
UNCHANGED = (SAME, AMBIGUOUS)


@dataclass(frozen=True)
class Verdict:
    """B against A: the ratio of medians, its interval, the sample counts and the test's
    word: faster or slower (higher or lower, now holds or no longer holds, by the unit),
    same, or ambiguous. ``significant`` is the test's at ``alpha``, on the row's q-value
    where a comparison of many rows decides on it."""

    ratio: float | None  # B's median / A's median
    interval: tuple[float, float] | None  # of the ratio, at 1 - level (or from asv's 99% CIs)
    n_a: int | None  # samples behind each median (None: not recorded)
    n_b: int | None
    significant: bool
    p_value: float | None
    test: str
    word: str
    alpha: float = ALPHA
    threshold: float = THRESHOLD
    q_value: float | None = None  # across the comparison's rows (None: a single comparison)
    decision: Decision | None = None  # how the comparison's rows were decided
    #: the same test on each sample times the SM clock it ran at (cycles), where both sides
    #: recorded one per sample
    cycles: Verdict | None = None

    @property
    def level(self) -> float:
        """The interval's two-sided error rate."""
        return self.decision.level if self.decision else self.alpha

    @property
    def clock(self) -> bool:
        """A change in time that vanishes in cycles: the SM clock changed, not the code."""
        return (self.word not in UNCHANGED and self.cycles is not None
                and self.cycles.word != self.word)

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


def verdict(a: Result, b: Result, alpha: float = ALPHA, threshold: float = THRESHOLD, *,
            q_value: float | None = None, decision: Decision | None = None) -> Verdict:
    """B against A. A change (faster, slower...) is significant and beyond ``threshold``;
    "same" is an interval inside [1 / (1 + threshold), 1 + threshold] (an equivalence
    test; a count: a ratio inside it); anything else is "ambiguous". The interval is the
    test inverted (``ratio_interval``) at 1 - ``decision.level``, or without samples the
    ratio of asv's 99% confidence intervals (disjoint exactly when that fallback is
    significant).

    Args:
        q_value: the row's q-value in a comparison of many rows; with ``decision.on`` "q" it
            decides significance in place of the p-value.
        decision: how that comparison decides (its interval level); None: one comparison,
            decided on p at ``alpha``.
    """
    sig = significance(a, b, alpha)
    significant = sig.significant
    if sig.test == "mann-whitney" and decision is not None and decision.on == ON_Q:
        significant = q_value is not None and q_value < alpha
    level = decision.level if decision else alpha
    ratio = None
    va, vb = a.finite_value, b.finite_value
    if va is not None and vb is not None:
        ratio = (1.0 if vb == 0 else math.inf) if va == 0 else vb / va
    interval = _interval(a, b, sig.test, level)
    word = _word(a.unit, ratio, interval, significant, sig.test, threshold)
    cycles = None
    ca, cb = clock_scaled(a), clock_scaled(b)
    if ca is not None and cb is not None:
        cycles = verdict(ca, cb, level, threshold)  # at the level this row was decided at
    return Verdict(ratio, interval, len(a.samples) if a.samples else None,
                   len(b.samples) if b.samples else None, significant, sig.p_value, sig.test,
                   word, alpha, threshold, q_value, decision, cycles)


def _interval(a: Result, b: Result, test: str, level: float) -> tuple[float, float] | None:
    if test == "mann-whitney":
        return ratio_interval(a.samples or (), b.samples or (), level)
    if test == "99% CI" and a.ci_99 and b.ci_99 and min(*a.ci_99, *b.ci_99) > 0:
        (a_lo, a_hi), (b_lo, b_hi) = sorted(a.ci_99), sorted(b.ci_99)
        return b_lo / a_hi, b_hi / a_lo
    return None


def _word(unit: str, ratio: float | None, interval: tuple[float, float] | None,
          significant: bool, test: str, threshold: float) -> str:
    band = (1 / (1 + threshold), 1 + threshold)
    inside = ratio is not None and ratio > 0 and not math.isinf(ratio) and \
        band[0] <= ratio <= band[1]
    # the side of 1 the test found B on: the interval's, which can differ from the medians'
    # where the medians are within a hair of each other
    up = None if ratio is None or ratio == 1 else ratio > 1
    if interval is not None and (interval[0] > 1 or interval[1] < 1):
        up = interval[0] > 1
    if significant and up is not None and not inside:
        if is_rate(unit) or unit == "seconds":
            return SLOWER if up != higher_is_better(unit) else FASTER
        if unit == "holds":
            return NOW_HOLDS if up else NO_LONGER_HOLDS
        return "higher" if up else "lower"
    if test == "exact" and inside:
        return SAME  # a count: no noise, its ratio is the whole answer
    if interval is not None and band[0] <= interval[0] and interval[1] <= band[1]:
        return SAME
    return AMBIGUOUS


def ratio_spread(*results: Result) -> float | None:
    """The relative spread of a ratio of ``results``: their IQR/median figures added in
    quadrature; None where one has no quartiles."""
    spreads = [r.spread for r in results]
    known = [s for s in spreads if s is not None]
    return math.sqrt(sum(s * s for s in known)) if len(known) == len(spreads) else None


def clock_scaled(r: Result) -> Result | None:
    """``r`` in cycles: each sample of seconds times the SM clock it ran at (``r.sm_mhz``, one
    per sample), its value their median, its unit left as it is so that its verdict's words
    are the time's; None where the clocks are not recorded (a CPU run, a device without
    telemetry) or do not match the samples one for one."""
    clocks, samples = r.sm_mhz, r.samples
    if (r.unit != "seconds" or not clocks or not samples or len(clocks) != len(samples)
            or min(clocks) <= 0):
        return None
    cycles = tuple(s * mhz * 1e6 for s, mhz in zip(samples, clocks))
    ordered = sorted(cycles)
    return replace(r, samples=cycles, value=ordered[len(ordered) // 2], q25=None, q75=None,
                   ci_99=None, sm_mhz=None)

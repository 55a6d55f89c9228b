"""Each claim's verdict per series (machine, PyTorch), recomputed from results, never stored:
holds, does not hold, cannot tell, not measurable here (this device cannot: the run's own
reason) or not measured (it could, and these results do not hold it: why); and each change
of verdict between consecutive releases of a machine, listed as compare lists regressions.

A ratio rule is ``stats.verdict`` (the page's test, interval and word) of the practice
against its baseline at the claim's threshold, each claim a comparison of its own (decided on
its p-value: a claim is no screen of many rows). Its three words map onto the claim's: the
expected change holds; the opposite change, or an interval that rules the expected effect
out ("same" among them), does not hold; "ambiguous" otherwise cannot tell. A value rule
compares one figure with a bound. A claim with several figures holds where every one holds.
Nothing here prints.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..errors import XferbenchError
from ..results import Result, ResultSet, version_key
from ..results.discovery import Declared, declared_in_results, describe_suite
from ..results.series import SeriesKey
from .claimevidence import ClaimSeries, Finder
from .claimtable import (
    CANNOT_TELL,
    DECIDED,
    DOES_NOT_APPLY,
    DOES_NOT_HOLD,
    HOLDS,
    NOT_MEASURABLE,
    NOT_MEASURED,
    OPPOSITE,
    RATIO,
    VERDICTS,
    Claim,
    ClaimTable,
    Evidence,
    check_figures,
)
from .provenance import Provenance, provenance
from .reference import claim_exception
from .stats import ALPHA, Verdict, verdict

__all__ = ["CANNOT_TELL", "DECIDED", "DOES_NOT_APPLY", "DOES_NOT_HOLD", "HOLDS",
           "NOT_MEASURABLE", "NOT_MEASURED", "VERDICTS", "Cell", "Change", "ClaimsReport",
           "FigureVerdict", "choose", "evaluate", "suite_declarations"]

_OPS: dict[str, Callable[[float, float], bool]] = {
    "at_least": operator.ge, "above": operator.gt, "equal": operator.eq,
    "at_most": operator.le, "below": operator.lt}


@dataclass(frozen=True)
class FigureVerdict:
    """One piece of evidence of a claim in one series: its verdict and what decided it."""

    evidence: Evidence
    verdict: str
    reason: str = ""  # why: not measurable, not measured, or what "does not hold" rests on
    practice: Result | None = None
    baseline: Result | None = None
    test: Verdict | None = None  # a ratio rule's: the practice against its baseline
    observed: str = ""  # what a behaviour check saw, in the release's words

    @property
    def ratio(self) -> float | None:
        """baseline / practice (above 1: the practice is smaller), as the page's speed-up."""
        return self.test.speedup if self.test else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return self.test.speedup_interval if self.test else None

    @property
    def value(self) -> float | None:
        return self.practice.value if self.practice is not None else None


@dataclass(frozen=True)
class Cell:
    """One claim in one series."""

    claim: Claim
    machine: str
    torch: str
    verdict: str
    figures: tuple[FigureVerdict, ...]
    reason: str  # where it is not decided (or does not hold): the first figure's why
    note: str  # what a CPU's figures mean, where the claim says so
    provenance: Provenance

    @property
    def not_for_citation(self) -> tuple[str, ...]:
        return tuple(self.provenance.reasons())

    @property
    def trend(self) -> str:
        """The machine, with how it was measured where not the default way ("box (quick)"):
        releases are compared along one trend, never a quick series against a full one."""
        return self.provenance.key.trend

    @property
    def series_label(self) -> str:
        """"box, torch 2.13.0+cpu", with the mode where it is not the default ("box, torch
        2.13.0+cpu (quick)"): five modes of one release are five lines, each named."""
        key = self.provenance.key
        return f"{key.where}, torch {self.torch}" + (f" ({key.how})" if key.mode else "")

    @property
    def mode_rank(self) -> int:
        """0 for a series measured the default way, 1 for another mode that may be cited (2
        threads, the full sweep), 2 for one that may not (quick, a smoke sweep, a cap): a
        release's verdict is read from its best-measured series."""
        key = self.provenance.key
        return 0 if key.is_default else 2 if key.reasons() else 1

    @property
    def evidence(self) -> FigureVerdict | None:
        """The figure the cell is read by: the first that gave the claim's verdict."""
        return next((f for f in self.figures if f.verdict == self.verdict), None)


@dataclass(frozen=True)
class Change:
    """A claim whose verdict differs between two consecutive releases of one trend (a machine
    measured one way)."""

    claim: Claim
    machine: str  # the trend: the machine, and how it was measured where not the default
    before: Cell
    after: Cell

    @property
    def lost(self) -> bool:
        """It held and now does not: listed as compare lists a regression."""
        return self.before.verdict == HOLDS and self.after.verdict != HOLDS


@dataclass(frozen=True)
class ClaimsReport:
    table: ClaimTable
    series: tuple[Provenance, ...]  # machines by name, releases in order
    rows: tuple[tuple[Claim, tuple[Cell, ...]], ...]  # a cell per series, in series order
    changes: tuple[Change, ...]
    alpha: float

    def cells(self, claim_id: str) -> tuple[Cell, ...]:
        """The cells of ``claim_id``; XferbenchError naming the claims for an unknown id."""
        wanted = self.table.get(claim_id)
        return next(cells for claim, cells in self.rows if claim is wanted)


def suite_declarations(rs: ResultSet, repo: str | None) -> dict[str, Declared]:
    """What a claims table may name: the suite's full grid (its own discovery) over the
    results' benchmarks.json, which also holds benchmarks a suite may have dropped."""
    return {**declared_in_results(rs), **(describe_suite(repo) or {})}


def evaluate(rs: ResultSet, table: ClaimTable, *, repo: str | None = None,
             alpha: float = ALPHA) -> ClaimsReport:
    """Every claim of ``table`` in every series of ``rs``; ``repo`` is the suite's (figures
    are checked against it, and a figure these results lack says why from its discovery on
    the series' recorded device). Raises XferbenchError for a figure the suite lacks."""
    check_figures(table, suite_declarations(rs, repo))
    provs = _series(rs)
    context = _Context(Finder(rs, repo), alpha)
    rows = tuple((claim, tuple(_cell(context, claim, p) for p in provs)) for claim in table.claims)
    return ClaimsReport(table, tuple(provs), rows, tuple(_changes(rows)), alpha)


@dataclass(frozen=True)
class _Context:
    finder: Finder
    alpha: float


def _series(rs: ResultSet) -> list[Provenance]:
    """Every series (machine, torch, how measured): machines by name, releases in order."""
    return provenance(rs)


def _cell(ctx: _Context, claim: Claim, p: Provenance) -> Cell:
    s = ctx.finder.series(p)
    on_cpu = s.caps.device == "cpu" if s.caps else p.cpu_only
    figures = []
    for e in claim.evidence:
        fv = _evidence(ctx, claim, e, s)
        if on_cpu and claim.cpu_reason and fv.verdict != NOT_MEASURED:
            fv = FigureVerdict(e, NOT_MEASURABLE, claim.cpu_reason, fv.practice, fv.baseline,
                               fv.test, fv.observed)
        figures.append(fv)
    word = next(v for v in VERDICTS if any(f.verdict == v for f in figures) or v == HOLDS)
    first = next(f for f in figures if f.verdict == word)
    note = claim.cpu_note if on_cpu and word in DECIDED else ""
    why_not = _not_here(claim, s)
    if why_not:  # the figures still show: what this machine measured, not a general rule
        return Cell(claim, p.machine, p.torch, DOES_NOT_APPLY, tuple(figures),
                    f"{why_not}; the figures alone: {word}", note, p)
    return Cell(claim, p.machine, p.torch, word, tuple(figures), first.reason, note, p)


def _not_here(claim: Claim, s: ClaimSeries) -> str | None:
    """Why ``claim`` does not apply on the series' machine (its ``unless``, by the reference
    ranges of the GPU and link the series recorded), or None."""
    first = next(iter(s.results), None)
    if not claim.unless or first is None or s.results.gpu_for(first) is None:
        return None
    return claim_exception(claim.unless, s.results.metadata_for(first))


def _evidence(ctx: _Context, claim: Claim, e: Evidence, s: ClaimSeries) -> FigureVerdict:
    found, missing = [], []
    for figure in e.figures:
        r, status, why = ctx.finder.find(figure, s)
        found.append(r)
        if r is None:
            missing.append((status != NOT_MEASURABLE, status, why))
    practice, baseline = found[0], (found[1] if len(found) > 1 else None)
    timed = claim.rule.kind == RATIO or (practice is not None and practice.unit == "seconds")
    if timed and s.caps is not None and s.caps.emulated:
        # its ratios are of times (or shares of time), its values in seconds: host threads'
        # on an emulated device
        return FigureVerdict(e, NOT_MEASURABLE, f"a claim about time: {s.caps.reason}",
                             practice, baseline)
    if missing:  # a figure this device cannot measure says more than one not in the grid
        _, status, why = min(missing, key=lambda m: m[0])
        return FigureVerdict(e, status, why, practice, baseline)
    # none missing: every figure found, each a finite result (ResultSet.latest)
    if claim.rule.kind == RATIO:
        assert practice is not None and baseline is not None  # a ratio's evidence names two
        return _ratio(claim, e, practice, baseline, ctx.alpha)
    assert practice is not None and practice.value is not None
    holds = _OPS[claim.rule.op](float(practice.value), claim.rule.bound)
    return FigureVerdict(e, HOLDS if holds else DOES_NOT_HOLD, "", practice,
                         observed=ctx.finder.observed(practice))


def _ratio(claim: Claim, e: Evidence, practice: Result, baseline: Result,
           alpha: float) -> FigureVerdict:
    rule = claim.rule
    v = verdict(baseline, practice, alpha, rule.threshold)
    if v.word == rule.expect:
        return FigureVerdict(e, HOLDS, "", practice, baseline, v)
    if v.word == OPPOSITE[rule.expect]:
        return FigureVerdict(e, DOES_NOT_HOLD, f"the practice is {v.word}", practice,
                             baseline, v)
    if _no_effect(v, rule.expect, rule.threshold):
        return FigureVerdict(e, DOES_NOT_HOLD, "the interval shows no effect beyond the "
                             f"{rule.threshold:.0%} threshold", practice, baseline, v)
    return FigureVerdict(e, CANNOT_TELL, "the test is ambiguous: the interval neither shows "
                         f"the effect beyond {rule.threshold:.0%} nor rules it out", practice,
                         baseline, v)


def _no_effect(v: Verdict, expect: str, threshold: float) -> bool:
    """The interval of practice / baseline rules out the expected effect beyond the
    threshold: for a smaller practice, it lies above 1 / (1 + threshold); for a larger one,
    below 1 + threshold."""
    if v.interval is None:
        return False
    lo, hi = v.interval
    if expect in ("faster", "lower"):
        return lo >= 1 / (1 + threshold)
    return hi <= 1 + threshold


def _changes(rows: tuple[tuple[Claim, tuple[Cell, ...]], ...]) -> list[Change]:
    out = []
    for claim, cells in rows:
        by_machine: dict[str, list[Cell]] = {}
        for c in cells:
            by_machine.setdefault(c.trend, []).append(c)
        for machine, seq in by_machine.items():
            for a, b in zip(seq, seq[1:]):
                if a.verdict != b.verdict and a.verdict in DECIDED and b.verdict in DECIDED:
                    out.append(Change(claim, machine, a, b))
    return out


def choose(report: ClaimsReport, claim_id: str,
           keys: Collection[SeriesKey] | None = None) -> tuple[Cell, list[Cell]]:
    """The cell ``cite --claim`` quotes: among the series ``keys`` (``ResultSet.select``'s,
    every series where None), the best-measured mode (the default, then a mode that may be
    cited, then the rest), in it the newest series that decided the claim (else the
    newest); and the claim's other cells."""
    cells = report.cells(claim_id)
    pool = [c for c in cells if keys is None or c.provenance.key in keys]
    if not pool:
        raise XferbenchError(f"no series of these results measured claim {claim_id!r}")
    best = min(c.mode_rank for c in pool)
    pool = [c for c in pool if c.mode_rank == best]
    decided = [c for c in pool if c.verdict in DECIDED]
    pick = max(decided or pool, key=lambda c: (c.provenance.measured_ms, version_key(c.torch)))
    return pick, [c for c in cells if c is not pick]

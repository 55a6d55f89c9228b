"""What ``compare`` resolved and found: the two sides, the rows, how they were decided and
which changes a repeat confirmed."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...analysis.comparison import MARKS, REGRESSIONS, WORSE, Row, decision_of
from ...analysis.repeats import Confirmation
from ...analysis.stats import ON_Q, Decision
from ...errors import ExitCode, XferbenchError
from ...results import ResultSet
from ...results.series import SeriesKey


class MeasuredNothing(XferbenchError):
    """One side of a comparison holds no number at all: compare's exit status 3."""


@dataclass(frozen=True)
class Side:
    spec: str
    label: str  # "torch 2.13.0+cpu", "commit 1da1603a", "file results/m/x.json"
    results: ResultSet
    others: tuple[SeriesKey, ...] = ()  # the series of other modes it did not read

    @property
    def series(self) -> list[SeriesKey]:
        return self.results.series()


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    rows: list[Row]
    skipped_both: int
    threshold: float
    alpha: float
    #: what differs between A and B besides what was asked (the build, the machine, Python)
    confounds: tuple[str, ...] = ()
    #: index of a row that is a change (worse, better) -> whether a repeat confirmed it
    confirmed: dict[int, Confirmation] = field(default_factory=dict)
    only_confirmed: bool = False  # --confirmed: suspected regressions do not fail
    decide_on: str = ON_Q
    #: why the compared series are not for citation, each "reason (which series)": a CPU
    #: run, an emulated device, a quick run... (the site's banner, ``provenance.banner``)
    caveats: tuple[str, ...] = ()

    @property
    def decision(self) -> Decision:
        """How the rows were decided: on q or p, over how many rows tested."""
        return decision_of(self.rows) or Decision(self.decide_on, self.alpha, 0, 0)

    def confirmation(self, i: int) -> Confirmation | None:
        return self.confirmed.get(i)

    @property
    def regressions(self) -> list[Row]:
        """The rows that fail the comparison: failed in B, and worse (with --confirmed, only
        where a repeat confirmed it)."""
        return [r for i, r in enumerate(self.rows) if r.mark in REGRESSIONS
                and not (self.only_confirmed and r.mark == WORSE and not self.is_confirmed(i))]

    def is_confirmed(self, i: int) -> bool:
        c = self.confirmed.get(i)
        return bool(c and c.confirmed)

    @property
    def exit_status(self) -> ExitCode:
        return ExitCode.REGRESSION if self.regressions else ExitCode.OK

    def counts(self) -> dict[str, int]:
        return {m: sum(1 for r in self.rows if r.mark == m) for m in MARKS}



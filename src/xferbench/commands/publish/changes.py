"""The steps between consecutive PyTorch versions of one trend (a machine measured one way),
as ``compare`` marks them, each change confirmed or left suspected by the repeats of both
series (``analysis.repeats``): what the page's changes section shows."""

from __future__ import annotations

from dataclasses import dataclass

from ...analysis.comparison import BETTER, FAILED_IN_B, WORSE, Row, compare_results, decision_of
from ...analysis.provenance import differences
from ...analysis.repeats import Confirmation, confirm, identities, repeat_comparisons
from ...analysis.stats import Decision, Verdict
from .catalog import Catalog, SeriesView


@dataclass(frozen=True)
class StepRow:
    row: Row  # compare's row: its mark decides regression and improvement
    #: a change's confirmation by the repeats of both series (None: no change)
    confirmation: Confirmation | None = None

    @property
    def verdict(self) -> Verdict | None:
        """The row's verdict; None where one side has no number."""
        return self.row.verdict

    @property
    def confirmed(self) -> bool:
        return bool(self.confirmation and self.confirmation.confirmed)


@dataclass(frozen=True)
class Step:
    """Every benchmark both of two consecutive PyTorch versions of one trend measured."""

    machine: str  # the trend: the machine, with its mode where not the default
    a: SeriesView
    b: SeriesView
    rows: tuple[StepRow, ...]
    differences: tuple[tuple[str, str, str], ...]  # what differs besides the release
    repeats: tuple[str, ...] = ()  # the machine folders holding a repeat of both series

    def marked(self, *marks: str) -> list[StepRow]:
        return [r for r in self.rows if r.row.mark in marks]

    @property
    def regressions(self) -> list[StepRow]:
        """Failed in B, and worse where a repeat confirmed it: what counts."""
        return [r for r in self.rows
                if r.row.mark == FAILED_IN_B or (r.row.mark == WORSE and r.confirmed)]

    @property
    def improvements(self) -> list[StepRow]:
        """Better, where a repeat confirmed it."""
        return [r for r in self.marked(BETTER) if r.confirmed]

    @property
    def suspected(self) -> list[StepRow]:
        """Worse or better, not confirmed by a repeat (none measured, or it disagreed)."""
        return [r for r in self.marked(WORSE, BETTER) if not r.confirmed]

    @property
    def compared(self) -> list[StepRow]:
        return [r for r in self.rows if r.verdict is not None]

    def count(self, mark: str) -> int:
        return len(self.marked(mark))

    @property
    def decision(self) -> Decision | None:
        """How its rows were decided (None: no row both releases measured)."""
        return decision_of(r.row for r in self.rows)


def version_steps(cat: Catalog, threshold: float, alpha: float) -> list[Step]:
    """Each trend's consecutive versions compared as ``compare`` does, each change confirmed
    or left suspected by the repeats of both series (``analysis.repeats``)."""
    by_trend: dict[str, list[SeriesView]] = {}
    for s in cat.series:
        by_trend.setdefault(s.trend, []).append(s)
    steps = []
    ids = identities(cat.rs)
    for trend, ss in sorted(by_trend.items()):
        for a, b in zip(ss, ss[1:]):
            rows, _ = compare_results(a.results, b.results, threshold=threshold, alpha=alpha)
            repeats = repeat_comparisons(cat.rs, a.key, b.key, threshold=threshold,
                                         alpha=alpha, ids=ids)
            built = tuple(StepRow(r, confirm(r, repeats)) for r in rows)
            steps.append(Step(trend, a, b, built, tuple(differences(a.provenance, b.provenance)),
                              tuple(rep.machine for rep in repeats)))
    return steps

"""A run's budget (``xferbench run --budget S``): the whole run ends within S seconds, every
class saving what it finished, every number at its default spec.

asv saves a class's numbers only when its process ends, so a run that is killed at its limit
loses the class in progress. Under a budget the classes run in priority order (``PRIORITY``:
the README's headlines first) and each class measures its headline combinations before the
rest of its grid; each asv call gets a deadline (``XFERBENCH_DEADLINE``, an
absolute time) that its process keeps by itself, cutting, with the reason, each combination
that no longer fits at its default spec (``benchmarks/_budget.py``). Nothing is sampled under
a cap unless ``--cap`` asks for it, and a capped run is a series of its own.

The plan, per class (``ClassPlan``): its headline part (the class's start, its headline
combinations, asv's reading of its values) and the rest of its grid, each combination planned
at ``Grid.combination_s``: the worst case of its sampling budgets plus the work beside them
that ``scripts/grid-time costs`` measured (``benchmarks/costs.json``). Before each call the
time left is shared out again:

- the headline parts of the classes still to run are set aside first;
- what is left beyond them is shared among the rests of the grid in proportion to their
  plans (each rest in full where it all fits), and a class's unused time flows to the next;
- short of time for the headline parts (a machine slower than planned), every class still to
  run first has its least set aside (its start, its values' reading and ``MIN_SAMPLING_S``),
  and what is left beyond is shared in proportion to what each headline part needs beyond
  its least, so that each still measures its first headline combinations (a class that is
  started measures at least one: ``benchmarks/_budget.py``);
- where even the leasts do not fit, the classes start in order, each with its least, and a
  class left less than that is not started: every combination it would have measured is
  recorded as skipped, with the reason.

A budget too short for the headline parts of the headline classes (``HEADLINE_CLASSES``) is
refused before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...errors import XferbenchError
from .suite import HEADLINE_CLASSES, SuiteClass

#: asv reads each track value back, after the grid, in a process forked for it, then saves
#: the results file. VALUE_READ_S is planned per value and CLASS_END_S per class; a fork
#: costs about the same on any machine, and scripts/grid-time costs measures the class's end.
VALUE_READ_S = 0.03
CLASS_END_S = 2.0
#: Kept back at the end of the run for its report.
REPORT_S = 2.0
#: A class left less than this for sampling, beyond its start and its values' reading, is
#: not started.
MIN_SAMPLING_S = 2.0


def seconds_text(seconds: float) -> str:
    """A planned duration as the plan prints it: whole seconds from 10 s, tenths below."""
    seconds = max(seconds, 0.0)
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


def check_budget(seconds: float | None) -> float | None:
    """``--budget``'s value, or one sentence why it is not one."""
    if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
        raise XferbenchError(f"--budget {seconds:g} is not a time: give the run's seconds, "
                             "a positive number such as 240")
    return seconds


def read_time_s(c: SuiteClass) -> float:
    """asv's reading of the class's values after its grid (one forked process each), and its
    saving them."""
    return CLASS_END_S + VALUE_READ_S * sum(len(rows) for rows in c.runs.values())


@dataclass(frozen=True)
class ClassPlan:
    """What one asv call is planned to cost: ``headline_s`` (its start, its headline
    combinations, its values' reading) and ``rest_s`` (the rest of its grid), at the default
    spec."""

    headline_s: float = 0.0
    rest_s: float = 0.0
    start_s: float = 0.0  # of headline_s: the process's start before its first combination
    read_s: float = CLASS_END_S  # of headline_s: asv's reading of its values

    def __add__(self, other: ClassPlan) -> ClassPlan:
        return ClassPlan(self.headline_s + other.headline_s, self.rest_s + other.rest_s,
                         self.start_s + other.start_s, self.read_s + other.read_s)

    @property
    def total_s(self) -> float:
        return self.headline_s + self.rest_s

    @property
    def need_s(self) -> float:
        """The least ``allot`` starts the class with: its start, its values' reading and
        MIN_SAMPLING_S (nothing for a class that measures nothing here)."""
        return self.start_s + self.read_s + MIN_SAMPLING_S if self.total_s > 0 else 0.0

    @property
    def part_s(self) -> float:
        """Its headline part as ``allot`` sets it aside: at least what starts the class."""
        return max(self.headline_s, self.need_s)


def class_plan(c: SuiteClass) -> ClassPlan:
    """``c``'s plan; a class that measures nothing here costs nothing."""
    if not c.measured:
        return ClassPlan(read_s=0.0)
    return ClassPlan(c.start_s + c.headline_s + read_time_s(c), c.rest_s, c.start_s,
                     read_time_s(c))


def plan_of(classes: Sequence[SuiteClass]) -> ClassPlan:
    """One asv call's plan: its classes' together."""
    out = ClassPlan(read_s=0.0)
    for c in classes:
        out = out + class_plan(c)
    return out


@dataclass(frozen=True)
class Allotment:
    """One asv call's share of the budget: ``seconds`` from now, of which the class's own
    deadline leaves ``read_s`` for asv to read its values; ``None`` seconds: not started."""

    seconds: float | None
    read_s: float
    left_s: float  # of the whole budget, before this call

    def deadline(self, now: float) -> float | None:
        """The absolute time (time.time()) the class's grid must be done by."""
        return None if self.seconds is None else now + self.seconds - self.read_s


def allot(budget_s: float, spent_s: float, plans: Sequence[ClassPlan], read_s: float
          ) -> Allotment:
    """The share of the budget for the next asv call.

    Args:
        budget_s: the whole run's budget (--budget).
        spent_s: what the run has spent of it so far.
        plans: the next call's plan first, then those of the calls after it.
        read_s: what asv's reading of the next call's values is planned at.
    """
    left = budget_s - spent_s - REPORT_S
    own = replace(plans[0], read_s=read_s)
    if own.total_s <= 0:  # measures nothing here: asv only records the skips
        return Allotment(max(left, 0.0), 0.0, left)
    later = plans[1:]
    parts = own.part_s + sum(p.part_s for p in later)
    if left >= parts:  # every headline part fits: the spare shared among the rests
        rests = own.rest_s + sum(p.rest_s for p in later)
        share_of_rest = min(1.0, (left - parts) / rests) if rests else 1.0
        share = left - sum(p.part_s + share_of_rest * p.rest_s for p in later)
    else:  # each class's least set aside first, what is left beyond shared by headline part
        needs = own.need_s + sum(p.need_s for p in later)
        beyond = parts - needs
        spare = left - needs
        share = own.need_s + (max(spare, 0.0) * (own.part_s - own.need_s) / beyond
                              if beyond > 0 else 0.0)
        if spare < 0:  # not every class can start: the earlier ones first, each at its least
            share = min(left, own.need_s)
    if share < own.need_s:
        return Allotment(None, read_s, left)
    return Allotment(share, read_s, left)


def cut_reason(budget_s: float, left_s: float) -> str:
    return (f"cut: the run's budget (--budget {budget_s:g} s) had "
            f"{seconds_text(max(left_s, 0.0))} left for this class, too little to start it")


def check_headline(budget_s: float, classes: Sequence[SuiteClass]) -> None:
    """One sentence, before anything runs, where ``budget_s`` cannot hold the headline parts
    of the headline classes (their headline combinations at the default spec)."""
    heads = [c for c in classes if c.name in HEADLINE_CLASSES and c.measured]
    need = plan_of(heads).headline_s + REPORT_S
    if heads and budget_s < need:
        raise XferbenchError(
            f"--budget {budget_s:g} s is too short for the headline classes: "
            f"{', '.join(c.name for c in heads)} need {math.ceil(need)} s for their "
            "headline combinations at the default spec (each class's start included); give "
            f"at least {math.ceil(need)} s")


def plan_text(budget_s: float, groups: Sequence[tuple[str, ClassPlan]], cap: bool = False,
              spent_s: float = 0.0) -> str:
    """One sentence on what ``budget_s`` holds. A headline part holds only where ``allot``
    would start its class: its start, its values' reading and the least sampling beside.

    Args:
        budget_s: the whole run's budget (--budget).
        groups: (title, plan) of each asv call, in run order.
        cap: --cap: each combination's sampling is capped to fit rather than cut.
        spent_s: what the run has spent already (its own start).
    """
    if cap:
        planned_s = sum(p.total_s for _t, p in groups)
        return (f"--budget {budget_s:g} s --cap for a grid planned at {seconds_text(planned_s)} "
                "at the default spec: each combination's sampling is capped at its share of "
                "what is left, and what no longer fits is cut; a series of its own (-capped), "
                "every capped combination marked, none of it for citation")
    total = ClassPlan(read_s=0.0)
    for _title, p in groups:
        total = total + p
    left = budget_s - spent_s - REPORT_S  # what the classes have
    # what allot needs to start a class, at least (its values' reading is in headline_s)
    need = sum(p.part_s for _t, p in groups)
    head = (f"--budget {budget_s:g} s: the headline combinations (every class's, at the "
            f"default spec, each class's start included) are planned at "
            f"{seconds_text(total.headline_s)}, the rest of the grid at "
            f"{seconds_text(total.rest_s)}")
    if total.total_s <= left:
        return f"{head}: it holds the whole grid"
    if need <= left:
        spare = left - need
        part = min(1.0, spare / total.rest_s) if total.rest_s else 1.0
        return (f"{head}: it holds every class's headline combinations and about {part:.0%} "
                "of the rest; what does not fit is cut, each combination saying why (nothing "
                "is sampled under a cap)")
    held, used = [], 0.0
    for title, p in groups:
        part = p.part_s
        if used + part > left:
            break
        held.append(title)
        used += part
    rest = [t for t, _p in groups[len(held):]]
    return (f"{head}: it holds the headline combinations of {', '.join(held) or 'no class'} "
            f"({seconds_text(used)}); {', '.join(rest)} will be cut short or left out, "
            "each combination without a number saying why")

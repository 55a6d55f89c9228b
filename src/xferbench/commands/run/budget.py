"""A run's budget (``xferbench run --budget S``): the whole run ends within S seconds, every
class saving what it finished.

asv saves a class's numbers only when its process ends, so a run that is killed at its limit
loses the class in progress. Under a budget the classes run in priority order (``PRIORITY``:
the README's headlines first), and each asv call gets a deadline (``XFERBENCH_DEADLINE``, an
absolute time) that its process keeps by itself: each combination's sampling is capped at its
share of what is left, and the combinations that no longer fit are cut, each with a reason
(``benchmarks/_asv.py``, ``Grid._cap``). Before each call the time left is shared out again:

- time to spare (the rest of the grid is estimated to fit): a class may use all that is
  left but what the classes after it are estimated to need (a class that outruns its estimate
  is not cut while time is spare), and time it did not use flows to the next;
- short of time: each class in turn gets its whole estimate, while the time lasts, so the
  headlines are measured in full and the last classes are cut short or left out;
- a class left less than ``CLASS_START_S`` and ``MIN_SAMPLING_S`` is not started: every
  combination it would have measured is recorded as skipped, with the reason.

The estimates are ``Grid.seconds_per_combination`` (read from each class, for an H200 at the
default budgets) times the combinations measured here, plus the process's start and asv's
reading of each value (``CLASS_START_S``, ``VALUE_READ_S``): estimates, not measurements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import XferbenchError
from ...units import format_seconds
from .suite import SuiteClass

#: A class's process before its first combination: start, the suite's import, torch's import
#: and the device's initialisation (1-3 s of CUDA context on a GPU). An estimate.
CLASS_START_S = 5.0
#: asv reads each track value back, after the grid, in a process forked for it (about 30 ms
#: each on a 2-core VM; the forks are the same on any machine), then saves the results file.
#: Estimates.
VALUE_READ_S = 0.03
CLASS_END_S = 2.0
#: Kept back at the end of the run for its report.
REPORT_S = 2.0
#: A class left less than this for sampling, beyond its start and its values' reading, is
#: not started.
MIN_SAMPLING_S = 2.0


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


def estimate_s(classes: Sequence[SuiteClass]) -> float:
    """One asv call's estimated seconds: its grids, one process start, its values' reading."""
    measured = [c for c in classes if c.measured]
    if not measured:
        return 0.0
    return CLASS_START_S + sum(c.estimate_s + read_time_s(c) for c in measured)


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


def allot(budget_s: float, spent_s: float, estimates: Sequence[float], read_s: float
          ) -> Allotment:
    """The share of the next call, whose estimate is ``estimates[0]`` (the rest: the calls
    after it), after ``spent_s`` of ``budget_s``."""
    left = budget_s - spent_s - REPORT_S
    own, rest = estimates[0], sum(estimates)
    if own <= 0:  # measures nothing here: asv only records the skips
        return Allotment(max(left, 0.0), 0.0, left)
    share = left - (rest - own) if left >= rest else min(left, own)
    if share < CLASS_START_S + read_s + MIN_SAMPLING_S:
        return Allotment(None, read_s, left)
    return Allotment(share, read_s, left)


def cut_reason(budget_s: float, left_s: float) -> str:
    return (f"cut: the run's budget (--budget {budget_s:g} s) had "
            f"{format_seconds(max(left_s, 0.0))} left for this class, too little to start it")


def plan_text(budget_s: float, groups: Sequence[tuple[str, float]]) -> str:
    """One sentence on what ``budget_s`` holds: ``groups`` are (title, estimate) in order."""
    total = sum(e for _t, e in groups)
    head = (f"--budget {budget_s:g} s for a grid estimated at {format_seconds(total)} "
            "(on an H200)")
    if total <= budget_s:
        return f"{head}: it holds every class, each combination within its share"
    held, used = [], 0.0
    for title, est in groups:
        if used + est > budget_s:
            break
        held.append(title)
        used += est
    rest = [t for t, _e in groups[len(held):]]
    holds = (f"holds {', '.join(held)} in full ({format_seconds(used)})" if held
             else "holds no class in full")
    return f"{head}: it {holds}; {', '.join(rest)} will be cut short or left out, each " \
           "combination without a number saying why"

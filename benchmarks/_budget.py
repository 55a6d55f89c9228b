"""The run's budget inside one class's process (``xferbench run --budget``), and what each
combination is planned to cost.

asv saves a class's numbers only when its process ends, so the class keeps its deadline
(``XFERBENCH_DEADLINE``, absolute, from ``commands/run/budget.py``) itself. Before each
combination it compares the time left with what the combination is planned to cost at its
default spec (``Grid.combination_s``: the worst case of its sampling budgets, or what
``scripts/grid-time costs`` measured where that is more (``costs.json``), plus what its data
costs, by its bytes, ``data_s``):

- by default a combination is measured at its default spec or not at all: one that no
  longer fits is cut, with the reason, and nothing is ever sampled under a cap, so every
  number of a budgeted run is a default run's number (its series is the plain one);
- with ``--cap`` (``XFERBENCH_CAP=1``) each combination's sampling is capped at its share of
  what is left instead (more combinations, each on fewer samples); the run is then a series
  of its own (``capped: yes``) and every combination sampled under a cap says so.

Work that would ignore the deadline is bounded by it too: a practice with a fixed count of
trials (``Hazards``) stops at the deadline, and what it measured is then cut (by default) or
kept marked as capped (``--cap``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from xferbench.flags import env_flag
from xferbench.practices import SMOKE_NBYTES
from xferbench.spec import MeasureSpec

#: The moment (time.time()) this class must be done by, or None without a budget.
DEADLINE = float(os.environ.get("XFERBENCH_DEADLINE") or 0) or None
#: ``--cap``: sample each combination for its share of what is left (a capped series).
CAP = env_flag("XFERBENCH_CAP")
#: Of a combination's share of the time left, this much goes to sampling under ``--cap``
#: (measure()'s max_time_s over the class's measurements per combination); building,
#: warming up and verifying take the rest.
SAMPLING_SHARE = 0.6
#: Combinations a class with no number yet may measure past the time they need (the first
#: one that gives no figure here is followed by one more): a run's overrun is bounded.
MAX_OVERRUNS = 2
#: Below this many seconds left for a combination it is cut, not measured (``--cap``).
MIN_COMBINATION_S = 1.0
#: A combination's seconds where costs.json names none for the class.
DEFAULT_COMBINATION_S = 1.0
#: What a combination's data costs on a GPU machine beside its sampling, beyond what
#: costs.json measured at the smoke sweep's size: DATA_S, and DATA_PASSES passes over each
#: byte beyond it for each build of its buffers (filled, pinned, copied to the device, copied
#: back and compared before and after), at FRESH_BYTES_PER_S: fresh memory, whose first
#: touches are slow in a VM whose memory grows as it is used (so a 256 MiB copy read on two
#: clocks is planned about 3 s for its data). A buffer used again (a practice's trials) is
#: warm: WARM_BYTES_PER_S.
DATA_S = 0.1
DATA_PASSES = 10
FRESH_BYTES_PER_S = 2e9
WARM_BYTES_PER_S = 5e9
#: A class process's start before its first combination (asv's start and discovery, the
#: interpreter, torch's import), where costs.json names none for the class.
DEFAULT_START_S = 5.0
#: What a real accelerator adds to that start in a fresh process: the CUDA context, lazy
#: module loading, NVML's start. costs.json is measured on the emulated device, which
#: initialises none of these, so a GPU's start is planned this much longer.
DEVICE_INIT_S = 3.0
#: What scripts/grid-time costs measured per class: {class: {"start_s", "combination_s",
#: ...}}, with the device, sweep and load it was measured on.
COSTS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "costs.json")


def load_costs(path: str = COSTS_FILE) -> dict[str, dict[str, Any]]:
    """costs.json's classes ({} where it is missing or unreadable: the defaults apply)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    classes = data.get("classes") if isinstance(data, dict) else None
    return classes if isinstance(classes, dict) else {}


COSTS = load_costs()


def work_s(class_name: str, sampling: float) -> float:
    """The work beside its sampling of one of ``class_name``'s combinations: what costs.json
    measured per combination beyond ``sampling`` (the worst case of its sampling budgets).
    So a combination is planned at the larger of its sampling's worst case and what it was
    measured at, plus its data (``data_s``): an upper bound wherever the GPU machine's host
    is no slower than the one measured and its calls are short against max_time_s."""
    value = COSTS.get(class_name, {}).get("combination_s")
    measured = float(value) if isinstance(value, (int, float)) and value >= 0 else \
        DEFAULT_COMBINATION_S
    return max(0.0, measured - sampling)


def data_s(nbytes: int, passes: float = DATA_PASSES, rate: float = FRESH_BYTES_PER_S) -> float:
    """What building and checking ``nbytes`` of a combination's data costs beyond costs.json's
    measurement: DATA_S, and ``passes`` over each byte beyond the smoke sweep's at ``rate``."""
    return DATA_S + passes * max(0, nbytes - SMOKE_NBYTES) / rate


def start_s(class_name: str, real_accelerator: bool = False) -> float:
    """The start of ``class_name``'s process as costs.json gives it, plus DEVICE_INIT_S on
    a real accelerator."""
    value = COSTS.get(class_name, {}).get("start_s")
    here = float(value) if isinstance(value, (int, float)) and value >= 0 else DEFAULT_START_S
    return here + (DEVICE_INIT_S if real_accelerator else 0.0)


def sampling_s(spec: MeasureSpec, measurements: int) -> float:
    """The worst case of ``measurements`` measurements' warm-up and sampling under ``spec``
    (the stop rule may end each earlier, at min_time_s, once the noise target is met)."""
    return measurements * (spec.warmup_s + spec.max_time_s)


class Cut(Exception):
    """A combination not measured, or not kept, under the run's budget: recorded as skipped,
    with the reason."""


class Budget:
    """One class process's budget: before each combination, whether it fits (or, with
    ``--cap``, the cap on its sampling); after it, whether it was sampled under a cap."""

    def __init__(self, deadline: float | None = DEADLINE, cap: bool = CAP) -> None:
        self.deadline, self.cap = deadline, cap
        self.max_time_s: float | None = None  # the cap on the current combination's sampling
        self.capped: str | None = None  # why the current combination is capped, or None
        self.overruns = 0  # combinations measured past the time they were planned to need
        #: When the current combination's own fixed-count work must end (Hazards' trials):
        #: the class's deadline; None for one measured past it (whole, as at its default
        #: spec: cut short it would be cut, and the overrun be for nothing).
        self.combination_deadline: float | None = deadline

    def before(self, cost_s: float, remaining: int, measurements: int,
               first: bool = False) -> str | None:
        """Why the next combination (planned at ``cost_s`` at its default spec; ``remaining``
        combinations left, this one included) is cut, or None; sets its cap under --cap.
        While a class has no number yet (``first``: the caller's to say), its next
        combination is not cut for want of time, up to MAX_OVERRUNS of them: a class that
        was started (its start slower than planned, on a loaded machine) saves a number even
        where its first combination gives none here (the busy-stream hazard on a device that
        does not hold the work behind the spin is no figure, by its own check)."""
        self.max_time_s, self.capped = None, None
        self.combination_deadline = self.deadline
        if self.deadline is None:
            return None
        left = self.deadline - time.time()
        if not self.cap:
            if left < cost_s:
                if not first or self.overruns >= MAX_OVERRUNS:
                    return (f"cut: the run's budget (--budget) had {max(left, 0):.0f} s left "
                            f"for this class, and this combination is planned at "
                            f"{cost_s:.1f} s at its default spec (never sampled under a cap)")
                self.overruns += 1
                self.combination_deadline = None
            return None
        if left < MIN_COMBINATION_S:
            return (f"cut: the run's budget (--budget) left {max(left, 0):.0f} s for this class "
                    f"and its {remaining} remaining combination(s)")
        self.max_time_s = max(0.01, left / remaining * SAMPLING_SHARE / max(measurements, 1))
        return None

    def spec(self, base: MeasureSpec) -> MeasureSpec:
        """``base`` under the current combination's cap (--cap), which it then records."""
        cap = self.max_time_s
        if cap is None or cap >= base.max_time_s:
            return base
        self.capped = (f"sampled under a budget cap: max_time_s {cap:.3g} s of its default "
                       f"{base.max_time_s:g} s (--budget --cap)")
        return base.replace(max_time_s=cap, min_time_s=min(base.min_time_s, cap),
                            warmup_s=min(base.warmup_s, cap / 4))

    def stopped_early(self, done: int, planned: int, what: str) -> None:
        """A practice with a fixed count stopped at the deadline after ``done`` of ``planned``
        ``what``: cut by default (Cut), kept marked as capped under --cap."""
        why = f"the run's budget (--budget) ended it after {done} of {planned} {what}"
        if not self.cap:
            raise Cut(f"cut: {why}; a figure of fewer {what} than its default is not kept")
        self.capped = f"sampled under a budget cap: {why} (--budget --cap)"


def headline_first(combos: Sequence[tuple], headline: Sequence[bool]) -> list[tuple]:
    """``combos`` with the headline combinations first, each part in its order."""
    first = [c for c, yes in zip(combos, headline) if yes]
    return first + [c for c, yes in zip(combos, headline) if not yes]

"""MeasureSpec: what ``measure()`` times and how, kept apart from the samples it brings back.

As torch.utils.benchmark keeps its frozen ``TaskSpec`` apart from a ``Measurement``: the
identity of a measurement (label, bytes per call, the clock its figure is read from) and its
budgets and stop rule, in one frozen record with the one set of defaults the package has.
Modes are resolved at the edge, once, as pyperf resolves ``--fast``: a benchmark process or a
plugin turns quick mode into ``spec.for_quick()`` before it hands the spec down, and
``measure()`` never reads the environment.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from .errors import XferbenchError

#: The clocks a figure can be read from (see timing.measure).
CLOCKS = ("device_s", "completion_s", "enqueue_s")

#: No figure rests on fewer samples than this: quick runs sample this often, and a call
#: slower than its budget allows is sampled this often anyway.
MIN_SAMPLES = 3

#: Quick mode (`xferbench run --quick`, XFERBENCH_QUICK=1) scales every budget by this
#: factor: a smoke run of the whole grid, not numbers to publish.
QUICK_SCALE = 0.1


@dataclass(frozen=True)
class MeasureSpec:
    """What is measured and how.

    What: ``label``; ``nbytes`` moved per call (for GB/s); ``clock``, the clock the figure is
    read from: None samples every clock and reads device time where it exists, a named clock
    samples that clock alone ("device_s": event batches; "completion_s" and "enqueue_s": host
    batches, which give both); ``ops_per_call``, the operations one call queues on the stream
    (1,000 for a call that copies 1,000 tensors), which bounds how many calls are queued
    behind one stream hold (half the launch queue's depth); ``sm_clocked``, whether the
    call's speed follows the SM clock (kernels): a copy's does not (copy engines and memory
    set it), so its event batches are discarded on throttle reasons alone.
    How: warm-up and sampling budgets in seconds; the stop rule (IQR/median of the figure's
    clock at or below ``target_iqr`` after ``min_time_s`` and ``min_samples``, else
    ``max_time_s``); ``batch``, the calls per batch. ``quick`` says the budgets were scaled
    down for a smoke run. Invalid values raise XferbenchError with one sentence."""

    label: str = ""
    nbytes: int | None = None
    clock: str | None = None
    warmup_s: float = 0.05
    min_time_s: float = 0.2
    max_time_s: float = 1.0
    target_iqr: float = 0.03
    min_samples: int = 6
    batch: int = 10
    ops_per_call: int = 1
    sm_clocked: bool = True
    quick: bool = False

    def __post_init__(self) -> None:
        if self.nbytes is not None and self.nbytes <= 0:
            raise XferbenchError(f"nbytes {self.nbytes} is not a size: give a positive byte count")
        if not (0 < self.min_time_s <= self.max_time_s) or not math.isfinite(self.max_time_s):
            raise XferbenchError(
                f"min_time_s {self.min_time_s} and max_time_s {self.max_time_s} are not a "
                "budget: need 0 < min_time_s <= max_time_s, both finite"
            )
        if not (0 <= self.warmup_s < math.inf) or not self.target_iqr > 0:
            raise XferbenchError("warmup_s must be >= 0 and finite, and target_iqr > 0")
        if self.clock is not None and self.clock not in CLOCKS:
            raise XferbenchError(
                f"clock {self.clock!r} is not a clock: use one of {', '.join(CLOCKS)}")
        if min(self.min_samples, self.batch, self.ops_per_call) < 1:
            raise XferbenchError(
                f"min_samples {self.min_samples}, batch {self.batch} and ops_per_call "
                f"{self.ops_per_call} must be at least 1")

    def replace(self, **changes: Any) -> MeasureSpec:
        """A copy with ``changes`` applied (and checked)."""
        return dataclasses.replace(self, **changes)

    def for_quick(self) -> MeasureSpec:
        """The same spec with every budget scaled by QUICK_SCALE and MIN_SAMPLES samples:
        what a quick run measures. Applying it twice changes nothing."""
        if self.quick:
            return self
        return self.replace(
            warmup_s=self.warmup_s * QUICK_SCALE, min_time_s=self.min_time_s * QUICK_SCALE,
            max_time_s=self.max_time_s * QUICK_SCALE, min_samples=MIN_SAMPLES, quick=True,
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasureSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise XferbenchError(f"measure spec has unknown fields: {', '.join(unknown)}")
        return cls(**data)


#: The one set of defaults: library calls, the practices and the pytest plugin start here.
DEFAULT_SPEC = MeasureSpec()

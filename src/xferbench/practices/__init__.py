"""The practices measured: copies, creation, synchronisation. Each module holds the
workloads as plain functions that the asv benchmarks, tests, CLI and reports all call."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import XferbenchError
from ..units import KiB, MiB

#: About five sizes, 4 KiB to 256 MiB: a full default run stays short.
DEFAULT_SIZES = (4 * KiB, 256 * KiB, 4 * MiB, 64 * MiB, 256 * MiB)
#: XFERBENCH_SWEEP=full: every power of two from 1 KiB to 1 GiB (21 sizes).
FULL_SIZES = tuple(2**k for k in range(10, 31))
#: The size at which headline figures are quoted.
HEADLINE_NBYTES = 64 * MiB
#: XFERBENCH_SWEEP=smoke: one size, which also stands in for the headline size, so that every
#: branch of every practice runs in a minute or two on a slow or emulated device (CI runs the
#: suite so on tests/emu). A smoke run checks the suite end to end; it quotes no headline.
SMOKE_NBYTES = 1 * MiB
SWEEPS = ("default", "smoke", "full")


class VerificationError(AssertionError):
    """A measured workload produced a wrong result; its numbers must not be recorded."""


def sweep() -> str:
    value = os.environ.get("XFERBENCH_SWEEP", "default").strip().lower() or "default"
    if value not in SWEEPS:
        raise XferbenchError(
            f"XFERBENCH_SWEEP={value!r} is not a sweep: use default, smoke or full")
    return value


def sizes() -> tuple[int, ...]:
    return {"full": FULL_SIZES, "smoke": (SMOKE_NBYTES,)}.get(sweep(), DEFAULT_SIZES)


def headline_nbytes() -> int:
    """The size of the figures measured at the headline size alone (host clocks, overlap,
    memory peaks): HEADLINE_NBYTES, or SMOKE_NBYTES in a smoke sweep."""
    return SMOKE_NBYTES if sweep() == "smoke" else HEADLINE_NBYTES


@dataclass(frozen=True)
class Budget:
    """Time budgets handed to measure(), in seconds."""

    warmup_s: float = 0.05
    min_time_s: float = 0.2
    max_time_s: float = 1.0
    target_cv: float = 0.02

    def kwargs(self) -> dict[str, float]:
        return {"warmup_s": self.warmup_s, "min_time_s": self.min_time_s,
                "max_time_s": self.max_time_s, "target_cv": self.target_cv}

"""The practices measured: copies, creation, synchronisation. Each module holds the
workloads as plain functions that the asv benchmarks, tests, CLI and reports all call."""

from __future__ import annotations

import os

from ..errors import XferbenchError
from ..flags import env_flag
from ..spec import MeasureSpec
from ..units import KiB, MiB

#: About five sizes, 4 KiB to 256 MiB: a full default run stays short.
DEFAULT_SIZES = (4 * KiB, 256 * KiB, 4 * MiB, 64 * MiB, 256 * MiB)
#: XFERBENCH_SWEEP=full: every power of two from 1 KiB to 1 GiB (21 sizes).
FULL_SIZES = tuple(2**k for k in range(10, 31))
#: The size at which headline figures are quoted.
HEADLINE_NBYTES = 64 * MiB
#: XFERBENCH_SWEEP=smoke: one size, which also stands in for the headline size, so that every
#: branch of every practice runs in a minute or two on a slow or emulated device (scripts/test
#: runs the suite so on tests/emu). A smoke run checks the suite end to end; it quotes no headline.
SMOKE_NBYTES = 1 * MiB
SWEEPS = ("default", "smoke", "full")


class VerificationError(AssertionError):
    """A measured workload produced a wrong result; its numbers must not be recorded."""


def parse_sweep(text: str | None, source: str = "XFERBENCH_SWEEP") -> str:
    """A sweep's name from ``text`` (empty or None: "default"); ``source`` names where the
    text came from in the one sentence a bad value gets."""
    value = (text or "").strip().lower() or "default"
    if value not in SWEEPS:
        raise XferbenchError(
            f"{source}={text!r} is not a sweep: use default, smoke or full")
    return value


def sweep() -> str:
    """The grid's sweep (XFERBENCH_SWEEP: default, smoke or full)."""
    return parse_sweep(os.environ.get("XFERBENCH_SWEEP"))


def sizes() -> tuple[int, ...]:
    return {"full": FULL_SIZES, "smoke": (SMOKE_NBYTES,)}.get(sweep(), DEFAULT_SIZES)


def headline_nbytes() -> int:
    """The size of the figures measured at the headline size alone (host clocks, overlap,
    memory peaks): HEADLINE_NBYTES, or SMOKE_NBYTES in a smoke sweep."""
    return SMOKE_NBYTES if sweep() == "smoke" else HEADLINE_NBYTES


def quick() -> bool:
    """Quick mode (XFERBENCH_QUICK, set by `xferbench run --quick`): read by a benchmark
    process at its edge, once, and handed down as ``spec.for_quick()``."""
    return env_flag("XFERBENCH_QUICK")


#: The budget the asv benchmarks of the creation, forward, loop and pipeline practices use:
#: a class measures its whole grid in one process, so a short run per combination keeps a GPU
#: check within minutes; measure() still stops early once the noise target is met.
BENCH_SPEC = MeasureSpec(warmup_s=0.02, min_time_s=0.05, max_time_s=0.25)

"""d2d from memory, beside the L2-resident figure: a device-to-device copy of 4 MiB or less
whose source and destination fit the L2 cache together reads and writes the cache, not the
device's memory. Each size is measured twice, on device time: ``l2_resident`` copies the
same buffers every call (the cache's figure, as ``Copy``'s d2d is), and ``rotated`` walks
through buffers that together exceed the L2 several times, so that each call's source and
destination were last touched that much copying ago and come from memory (triton's do_bench
writes a 256 MB buffer between calls for the same reason; a rotation needs no write between
calls, so the calls stay back to back behind one stream hold). Bytes are counted once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import MeasureSpec
from ..telemetry import l2_cache_bytes
from ..timing import measure
from ..units import KiB, MiB, size_label
from . import SMOKE_NBYTES, VerificationError, sweep
from .copies import pattern

# torch loads inside the functions that need it: `import xferbench` stays free of it.

PLACEMENTS = ("l2_resident", "rotated")
DEFAULT_SIZES = (4 * KiB, 256 * KiB, 4 * MiB)
FULL_SIZES = tuple(2**k for k in range(10, 23))  # 1 KiB .. 4 MiB
#: The rotation's source and destination together are this many times the L2.
L2_MULTIPLE = 4
#: The L2 assumed where the device does not say: triton's do_bench flushes 256 MB.
UNKNOWN_L2_BYTES = 256 * MiB


def d2d_sizes() -> tuple[int, ...]:
    return {"full": FULL_SIZES, "smoke": (SMOKE_NBYTES,)}.get(sweep(), DEFAULT_SIZES)


@dataclass(frozen=True)
class D2DCase:
    placement: str  # one of PLACEMENTS
    nbytes: int

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS or self.nbytes <= 0:
            raise XferbenchError(f"placement {self.placement!r}, {self.nbytes} bytes: give "
                                 f"one of {', '.join(PLACEMENTS)} and a positive size")

    @property
    def label(self) -> str:
        return f"d2d {self.placement} {size_label(self.nbytes)}"


def d2d_skip_reason(case: D2DCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number on a device with ``caps``; the probe only."""
    if caps.device == "cpu":
        return "d2d needs an accelerator: on the CPU it is the h2d host copy"
    if not caps.timing_events:
        return f"d2d is read on device time, which needs timing events {caps.device} lacks"
    return None


@dataclass
class D2DWorkload:
    """``run()`` copies the next slot (rotated) or slot 0 (L2-resident); ``verify()``
    checks every slot written so far."""

    case: D2DCase
    device: Device
    run: Callable[[], None]
    slots: int
    l2_bytes: int | None
    calls: list[int] = field(default_factory=lambda: [0])
    keep: list[Any] = field(default_factory=list)

    @property
    def footprint(self) -> int:
        """Bytes of source and destination the calls walk through."""
        return 2 * self.slots * self.case.nbytes

    def verify(self) -> None:
        import torch

        synchronize(self.device)
        src, dst = self.keep
        written = min(self.calls[0], self.slots) * self.case.nbytes
        if not torch.equal(dst[:written], src[:written]):  # compared where they are
            raise VerificationError(f"{self.case.label}: a destination differs from its source")


def rotation_slots(nbytes: int, l2_bytes: int | None) -> int:
    """Source and destination pairs a rotation walks through: together at least L2_MULTIPLE
    times the L2 (or UNKNOWN_L2_BYTES where the device does not say)."""
    return max(2, math.ceil(L2_MULTIPLE * (l2_bytes or UNKNOWN_L2_BYTES) / (2 * nbytes)))


def build_d2d(case: D2DCase, device: str | Device = "auto") -> D2DWorkload:
    """The buffers and the copy of ``case`` (outside any timed region)."""
    import torch

    dev = resolve_device(device)
    why = d2d_skip_reason(case, capabilities(dev))
    if why:
        raise XferbenchError(f"{case.label} on {dev}: {why}")
    l2 = l2_cache_bytes(dev)
    slots = 1 if case.placement == "l2_resident" else rotation_slots(case.nbytes, l2)
    n = case.nbytes
    why = check_fits(slots * n, dev, copies=2, host_copies=1)
    if why:
        raise DoesNotFit(f"{case.label}: {why}")
    src = pattern(slots * n).to(dev.torch())
    dst = torch.zeros_like(src)
    pairs = [(dst[i * n:(i + 1) * n], src[i * n:(i + 1) * n]) for i in range(slots)]
    calls = [0]

    def run() -> None:
        d, s = pairs[calls[0] % slots]
        d.copy_(s)
        calls[0] += 1

    synchronize(dev)
    return D2DWorkload(case, dev, run, slots, l2, calls, keep=[src, dst])


def run_d2d(case: D2DCase, device: str | Device = "auto",
            spec: MeasureSpec | None = None) -> Measurement:
    """Measure ``case`` on device time and verify every slot written; what the rotation
    walked through (slots, bytes, the L2 it was sized on) goes into the extra."""
    work = build_d2d(case, device)
    work.run()
    work.verify()  # a wrong first copy fails before any number exists
    m = measure(work.run, spec, device=work.device, clock="device_s", nbytes=case.nbytes,
                label=case.label)
    work.verify()
    return dataclasses.replace(m, extra={**m.extra, "slots": work.slots,
                                         "footprint_bytes": work.footprint,
                                         "l2_bytes": work.l2_bytes})

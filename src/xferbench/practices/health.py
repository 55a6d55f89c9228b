"""The figures ``xferbench check`` measures to tell whether a machine is healthy: one large
copy each way from pinned and from pageable memory, a d2d copy, and an ``.item()`` round trip
on an idle device. Each is the suite's own workload (``copies.run_copy``,
``sync.measure_item_roundtrip``), verified as the suite verifies it, on short budgets."""

from __future__ import annotations

from dataclasses import dataclass

from ..devices import Device
from ..measurement import Measurement
from ..spec import MeasureSpec
from ..units import MiB
from .copies import CopyCase, run_copy
from .sync import ROUNDTRIP_CLOCK, measure_item_roundtrip

#: One large size: each copy runs at its link's rate, and all of them fit a check in seconds.
CHECK_NBYTES = 256 * MiB
#: Short budgets: a copy of 256 MiB takes about 5 ms on PCIe Gen5, so even the minimum time
#: holds tens of samples; the noise target still stops a quiet one early.
CHECK_SPEC = MeasureSpec(warmup_s=0.1, min_time_s=0.3, max_time_s=1.0)


def check_copies(nbytes: int = CHECK_NBYTES) -> tuple[tuple[str, CopyCase], ...]:
    """(figure, the copy that measures it): pinned copies non_blocking, read on device time
    (the copy alone, as nvbandwidth reads it); pageable ones blocking, on the completion clock
    (the host stages them: what a user waits for); d2d, bytes copied once."""
    return (("pinned_h2d", CopyCase("h2d", "pinned", "non_blocking", "one", nbytes)),
            ("pinned_d2h", CopyCase("d2h", "pinned", "non_blocking", "one", nbytes)),
            ("pageable_h2d", CopyCase("h2d", "pageable", "blocking", "one", nbytes)),
            ("pageable_d2h", CopyCase("d2h", "pageable", "blocking", "one", nbytes)),
            ("d2d", CopyCase("d2d", "pageable", "blocking", "one", nbytes)))


@dataclass(frozen=True)
class HealthFigure:
    """One figure of a check: GB/s for a copy, us for the round trip, and its samples."""

    figure: str
    value: float
    measurement: Measurement
    case: CopyCase | None = None  # None: the round trip


def measure_health(device: Device, nbytes: int = CHECK_NBYTES,
                   spec: MeasureSpec = CHECK_SPEC) -> list[HealthFigure]:
    """Every figure of the check on ``device`` (an accelerator), in ``check_copies``' order,
    the round trip last."""
    out = []
    for figure, case in check_copies(nbytes):
        m = run_copy(case, device, spec)
        out.append(HealthFigure(figure, case.nbytes / m.median / 1e9, m, case))
    trip = measure_item_roundtrip(device, spec)
    out.append(HealthFigure("item_roundtrip", trip.stats(ROUNDTRIP_CLOCK).median * 1e6, trip))
    return out

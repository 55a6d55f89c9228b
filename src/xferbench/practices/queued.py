"""Copies behind queued work: how long a host<->device copy holds the host (its enqueue time)
and when it is done, from an idle stream and behind a known amount of work queued on it (a
calibrated spin of 1, 10 or 50 ms), pageable and pinned, non_blocking and blocking, and from
a strided view of a pinned buffer.

Why the idle figure is not enough: CUDA stages a copy from pageable memory after a stream
synchronise ("For transfers from pageable host memory to device memory, a stream sync is
performed before the copy is initiated", CUDA Runtime API, "API synchronization behavior"),
and a device-to-host copy into pageable memory "returns only once the copy has completed".
PyTorch copies a host side that is not contiguous through a contiguous temporary, which is
pageable (``copy_requires_temporaries`` in aten/src/ATen/native/cuda/Copy.cu), so a strided
view of a pinned buffer is staged the same way. Each of them holds the host for as long as
the work queued before it; a pinned non_blocking copy returns at once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import MeasureSpec
from ..stream_hold import MAX_HOLD_S, hold_stream, timed_hold
from ..units import size_label
from . import SMOKE_NBYTES, sweep
from .copies import DIRECTIONS, SYNCS, CopyCase, CopyWorkload, build_copy, measure_copy, pattern

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: The host side of the copy: pageable, pinned, or every other byte of a pinned buffer (a
#: strided view: staged through a pageable temporary).
QUEUED_HOST_MEMORY = ("pageable", "pinned", "pinned_strided")
#: Work queued before each copy, in ms (0: an idle stream).
DEFAULT_QUEUED_MS = (0, 1, 10, 50)
SMOKE_QUEUED_MS = (0, 50)
#: One size: a batch of token ids or a loss is far smaller, a batch of images larger; the
#: hold is the queued work's whatever the size, and at 1 MiB the copy itself stays short.
QUEUED_NBYTES = SMOKE_NBYTES
#: Both clocks come from the same host batches (``timing.measure``'s completion clock).
QUEUED_CLOCK = "completion_s"


def queued_ms() -> tuple[int, ...]:
    """The queued work of the grid, in ms: the idle stream and the largest queue alone in a
    smoke sweep."""
    return SMOKE_QUEUED_MS if sweep() == "smoke" else DEFAULT_QUEUED_MS


@dataclass(frozen=True)
class QueuedCopyCase:
    direction: str  # h2d | d2h
    host_memory: str  # one of QUEUED_HOST_MEMORY
    sync: str  # blocking | non_blocking
    queued_ms: int  # work queued on the stream before the copy, ms
    nbytes: int = QUEUED_NBYTES

    def __post_init__(self) -> None:
        for name, value, allowed in (("direction", self.direction, DIRECTIONS),
                                     ("host_memory", self.host_memory, QUEUED_HOST_MEMORY),
                                     ("sync", self.sync, SYNCS)):
            if value not in allowed:
                raise XferbenchError(f"{name} {value!r} is not one of {', '.join(allowed)}")
        if self.queued_ms < 0 or self.nbytes <= 0:
            raise XferbenchError(f"{self.queued_ms} ms queued, {self.nbytes} bytes: give a "
                                 "queue of 0 ms or more and a positive byte count")

    @property
    def queued_s(self) -> float:
        return self.queued_ms * 1e-3

    @property
    def label(self) -> str:
        return (f"{self.direction} {self.host_memory} {self.sync} behind {self.queued_ms}ms "
                f"{size_label(self.nbytes)}")


def queued_skip_reason(case: QueuedCopyCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number on a device with ``caps``, or None; the probe only."""
    if caps.device == "cpu":
        return ("copies behind queued work need an accelerator: on the CPU nothing is queued "
                "and every copy is done when it returns")
    if case.host_memory != "pageable" and not caps.pinned_memory:
        return f"pinned host memory is not available on {caps.device}: {caps.reason}"
    if case.queued_ms and not caps.stream_hold:
        return f"known queued work needs a spin to hold the stream, which {caps.device} lacks"
    if case.host_memory == "pinned_strided" and case.sync == "blocking":
        return ("a blocking copy waits for the queued work whatever its host memory: the "
                "strided view is measured non_blocking, where its staging is the question")
    return None


def build_queued_copy(case: QueuedCopyCase, device: str | Device = "auto") -> CopyWorkload:
    """The buffers and the copy of ``case`` (outside any timed region); contiguous host memory
    is ``copies.build_copy``'s, a strided view ``_strided_copy``'s."""
    dev = resolve_device(device)
    reason = queued_skip_reason(case, capabilities(dev))
    if reason:
        raise XferbenchError(f"{case.label} on {dev}: {reason}")
    if case.host_memory != "pinned_strided":
        work = build_copy(CopyCase(case.direction, case.host_memory, case.sync, "one",
                                   case.nbytes), dev)
        return dataclasses.replace(work, case=case)
    return _strided_copy(case, dev)


def _strided_copy(case: QueuedCopyCase, dev: Device) -> CopyWorkload:
    """Every other byte of a pinned buffer of twice the size: the host side of an h2d copy's
    source or of a d2h copy's destination (``x[::2]`` of a pinned buffer is pinned memory,
    ``is_pinned()`` says so, and it is not contiguous)."""
    import torch

    n, nb = case.nbytes, case.sync == "non_blocking"
    source = pattern(n)
    pinned = torch.empty(2 * n, dtype=torch.uint8, pin_memory=True)
    view = pinned[::2]
    if case.direction == "h2d":
        view.copy_(source)
        dst = torch.empty(n, dtype=torch.uint8, device=dev.torch())

        def run() -> None:
            dst.copy_(view, non_blocking=nb)

        result, keep = dst, [pinned, dst]
    else:
        src = source.to(dev.torch())

        def run() -> None:
            view.copy_(src, non_blocking=nb)

        result, keep = view, [pinned, src]
    synchronize(dev)
    return CopyWorkload(case, dev, run, [source], lambda: [result], keep=keep)


def run_queued_copy(case: QueuedCopyCase, device: str | Device = "auto",
                    spec: MeasureSpec | None = None) -> Measurement:
    """Time ``case`` on the host clocks, each call behind ``case.queued_ms`` of work queued
    on the stream (a spin sized by ``queue_seconds``, outside the timed region and not waited
    for), and verify the copy. The enqueue clock is how long the call held the host; the
    completion clock is when the copy was done, the queued work included. What one spin
    held the stream for, measured after the calls, goes into the extra (``queued_s``)."""
    dev = resolve_device(device)
    work = build_queued_copy(case, dev)
    behind = None
    if case.queued_ms:
        spin_s = queue_seconds(dev, case.queued_s)

        def behind() -> Any:
            return hold_stream(dev, spin_s)

    m = measure_copy(work, spec, clock=QUEUED_CLOCK, behind=behind)
    queued = timed_hold(dev, spin_s) if case.queued_ms else 0.0
    return dataclasses.replace(m, extra={**m.extra, "queued_s": queued})


def queue_seconds(dev: Device, seconds: float) -> float:
    """What to ask ``hold_stream`` for so that the spin holds the stream about ``seconds``:
    one spin is timed, and the request scaled by how far it fell short or ran over (a spin
    calibrated on a cooler clock, or while the host was busy, runs off its length)."""
    held = timed_hold(dev, seconds)
    if not held:
        return seconds
    return min(MAX_HOLD_S, seconds * seconds / held)

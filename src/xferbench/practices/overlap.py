"""A host-to-device copy overlapped with compute: a non_blocking copy on a side stream
beside a chain of matmuls on the default stream, pageable vs pinned, queued in both orders
(copy first: only a pinned copy returns before the matmuls are queued; compute first: the
host stages a pageable copy while the device computes, so it can overlap too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..devices import (
    Capabilities,
    Device,
    capabilities,
    current_stream,
    new_stream,
    resolve_device,
    stream_context,
    synchronize,
)
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from . import VerificationError, sweep
from .copies import pattern

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: The order the copy and the matmuls are queued in, each call.
ORDERS = ("copy_first", "compute_first")


@dataclass(frozen=True)
class OverlapResult:
    """Three measurements and the overlap fraction derived from their medians."""

    copy: Measurement
    compute: Measurement
    both: Measurement
    matmuls: int

    @property
    def overlap(self) -> float:
        """(t_copy + t_compute - t_both) / min(t_copy, t_compute): 1 hidden, 0 serialised."""
        tc, tk, tb = self.copy.median, self.compute.median, self.both.median
        return (tc + tk - tb) / min(tc, tk)


def overlap_matmul_n() -> int:
    """The overlap's matmul size: 1024, or 256 in a smoke sweep, whose copy is small too."""
    return 256 if sweep() == "smoke" else 1024


def overlap_skip_reason(host_memory: str, caps: Capabilities,
                        order: str = "copy_first") -> str | None:
    if order not in ORDERS:
        return f"order {order!r} is not one of {', '.join(ORDERS)}"
    if not caps.side_streams:
        return "overlap needs side streams: only an accelerator has them"
    if host_memory == "pinned" and not caps.pinned_memory:
        return f"pinned host memory is not available on {caps.device}"
    if host_memory not in ("pageable", "pinned"):
        return f"host memory {host_memory!r} is not compared for overlap"
    return None


def run_overlap(host_memory: str, nbytes: int, device: str | Device = "auto",
                spec: MeasureSpec | None = None, matmul_n: int = 1024,
                order: str = "copy_first") -> OverlapResult:
    """A non_blocking H2D copy on a side stream while matmuls run on the default stream.

    The matmul chain is sized to take about as long as the copy alone, so full overlap would
    halve the pair's time. All three are read on the completion clock from an idle device,
    host staging included (the host stages a pageable copy before it queues what follows).

    Args:
        host_memory: the copy's source, "pageable" or "pinned".
        order: "copy_first" (the copy queued, then the matmuls) or "compute_first".
    """
    import torch

    dev = resolve_device(device)
    reason = overlap_skip_reason(host_memory, capabilities(dev), order)
    if reason:
        raise XferbenchError(f"overlap on {dev}: {reason}")
    spec = (spec or DEFAULT_SPEC).replace(clock="completion_s", nbytes=None)
    tdev = dev.torch()
    src = pattern(nbytes)
    if host_memory == "pinned":
        src = src.pin_memory()
    side = new_stream(dev)
    main = current_stream(dev)
    out: list[Any] = []
    a = torch.randn(matmul_n, matmul_n, device=tdev) / matmul_n**0.5
    acc = torch.empty_like(a)

    def copy_only() -> None:
        side.wait_stream(main)  # this call's copy starts after its start event
        with stream_context(dev, side):
            out[:] = [src.to(tdev, non_blocking=True)]
        main.wait_stream(side)

    def compute(k: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(k):
                torch.mm(a, a, out=acc)
        return run

    t_copy = measure(copy_only, spec, device=dev, nbytes=nbytes, label="overlap copy")
    k = _chain_length(compute, t_copy, spec, dev)
    work = compute(k)

    def copy() -> None:
        with stream_context(dev, side):
            out[:] = [src.to(tdev, non_blocking=True)]

    def both() -> None:
        side.wait_stream(main)  # this call's copy starts after the previous call's work
        for step in ((copy, work) if order == "copy_first" else (work, copy)):
            step()
        main.wait_stream(side)

    t_compute = measure(work, spec, device=dev, label=f"{k} matmuls")
    t_both = measure(both, spec, device=dev, nbytes=nbytes, label="copy + matmuls")
    _verify(dev, out[0], src, acc)
    return OverlapResult(t_copy, t_compute, t_both, k)


def _verify(dev: Device, landed: Any, src: Any, acc: Any) -> None:
    """The last side-stream copy equals its source and the matmuls stayed finite."""
    import torch

    synchronize(dev)
    if not torch.equal(landed.to("cpu"), src.to("cpu")):
        raise VerificationError("overlap: the side-stream copy differs from its source")
    if not bool(torch.isfinite(acc).all()):
        raise VerificationError("overlap: the matmul produced non-finite values")


def _chain_length(compute: Callable[[int], Callable[[], None]], t_copy: Measurement,
                  spec: MeasureSpec, dev: Device) -> int:
    """How many matmuls take about as long as the copy: one timed first, then the chain
    resized until it takes within a quarter of the copy's time (a few rounds at most: one
    matmul may have been timed before the clock rose)."""
    one = measure(compute(1), spec, device=dev, label="one matmul")
    k = max(1, round(t_copy.median / max(one.median, 1e-9)))
    for _ in range(3):
        t_compute = measure(compute(k), spec, device=dev, label=f"{k} matmuls")
        ratio = t_compute.median / t_copy.median
        if 0.8 <= ratio <= 1.25:
            break
        k = max(1, round(k / ratio))
    return k

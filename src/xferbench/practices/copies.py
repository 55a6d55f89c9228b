"""Host-device copies: pageable vs pinned vs pin-then-copy, blocking vs non_blocking,
one tensor vs 1,000, and a copy overlapped with compute on a side stream.

Each case is a frozen ``CopyCase`` (the identity of the measurement); ``build_copy`` turns it
into buffers and a callable that queues the copies; ``run_copy`` measures and verifies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..device_memory import DoesNotFit, check_fits
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
from ..units import size_label
from . import VerificationError, sweep

# torch loads inside the functions that need it: `import xferbench` stays free of it.

DIRECTIONS = ("h2d", "d2h")
HOST_MEMORY = ("pageable", "pinned", "pin_then_copy")
SYNCS = ("blocking", "non_blocking")
LAYOUTS = ("one", "many")
#: The "many" layout: the DataLoader / TensorDict case of many small tensors.
MANY_TENSORS = 1000


@dataclass(frozen=True)
class CopyCase:
    direction: str  # h2d | d2h | d2d
    host_memory: str  # pageable | pinned | pin_then_copy
    sync: str  # blocking | non_blocking
    layout: str  # one | many
    nbytes: int

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("direction", self.direction, (*DIRECTIONS, "d2d")),
            ("host_memory", self.host_memory, HOST_MEMORY),
            ("sync", self.sync, SYNCS),
            ("layout", self.layout, LAYOUTS),
        ):
            if value not in allowed:
                raise XferbenchError(f"{name} {value!r} is not one of {', '.join(allowed)}")
        if self.nbytes <= 0:
            raise XferbenchError(f"size {self.nbytes} is not a size: give a positive byte count")

    @property
    def non_blocking(self) -> bool:
        return self.sync == "non_blocking"

    @property
    def label(self) -> str:
        return (f"{self.direction} {self.host_memory} {self.sync} {self.layout} "
                f"{size_label(self.nbytes)}")


def copy_skip_reason(case: CopyCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number on a device with ``caps``, or None when it runs.

    Depends only on the case and the capability probe, so asv can skip at discovery.
    """
    on_cpu = caps.device == "cpu"
    if case.direction == "d2d":
        if on_cpu:
            return "d2d needs an accelerator: on the CPU it is the h2d host copy"
        if case.host_memory != "pageable" or case.non_blocking:
            return "d2d touches no host memory and is ordered on one stream: one variant only"
        return None
    if case.direction == "d2h" and case.host_memory == "pin_then_copy":
        return "pin_then_copy pins a host source; a d2h copy has none (see d2h pinned)"
    if on_cpu:
        if case.direction == "d2h":
            return "on the CPU d2h is the same host copy as h2d"
        if case.host_memory != "pageable":
            return "pinned host memory needs an accelerator"
        if case.non_blocking:
            return "non_blocking needs an accelerator: on the CPU the copy is synchronous"
        return None
    if case.host_memory != "pageable" and not caps.pinned_memory:
        return f"pinned host memory is not available on {caps.device}: {caps.reason}"
    return None


#: The pattern's period: (i * 7 + seed) mod 251 repeats every 251 bytes (251 is prime), which
#: no power-of-two size or offset lines up with.
PATTERN_PERIOD = 251


def pattern(nbytes: int, *, seed: int = 0) -> Any:
    """A host uint8 tensor of ``nbytes`` that is not all zeros: byte i is (i * 7 + seed) mod
    251. Built by tiling one period (a memory copy: tens of ms at 64 MiB), never by
    arithmetic over the whole buffer (seconds)."""
    import torch

    period = ((torch.arange(PATTERN_PERIOD, dtype=torch.int64) * 7 + seed) % 251).to(torch.uint8)
    out = torch.empty(nbytes, dtype=torch.uint8)
    whole, rest = divmod(nbytes, PATTERN_PERIOD)
    out[: whole * PATTERN_PERIOD].view(whole, PATTERN_PERIOD).copy_(
        period.expand(whole, PATTERN_PERIOD))
    out[whole * PATTERN_PERIOD:] = period[:rest]
    return out


def _split(nbytes: int, layout: str) -> list[int]:
    """Bytes per tensor: one tensor, or MANY_TENSORS tensors summing to ``nbytes``."""
    if layout == "one":
        return [nbytes]
    if nbytes < MANY_TENSORS:
        raise XferbenchError(
            f"{nbytes} bytes cannot be split into {MANY_TENSORS} tensors: use at least 1000 B"
        )
    base, rem = divmod(nbytes, MANY_TENSORS)
    return [base + (1 if i < rem else 0) for i in range(MANY_TENSORS)]


@dataclass
class CopyWorkload:
    """Buffers of a built case, ``run()`` that queues its copies, ``verify()`` that checks them."""

    case: CopyCase
    device: Device
    run: Callable[[], None]
    expected: list[Any]  # host tensors the destination must equal
    result: Callable[[], list[Any]]  # the destination tensors of the last run
    keep: list[Any] = field(default_factory=list)  # buffers kept alive

    def verify(self) -> None:
        """Synchronise, then check every destination equals its source bit for bit."""
        import torch

        synchronize(self.device)
        got = self.result()
        if len(got) != len(self.expected):
            raise VerificationError(
                f"{self.case.label}: {len(got)} tensors arrived, {len(self.expected)} sent"
            )
        for i, (dst, src) in enumerate(zip(got, self.expected)):
            host = dst.to("cpu")
            if host.dtype != src.dtype or host.shape != src.shape or not torch.equal(host, src):
                what = (f"{int((host != src).sum())} of {src.numel()} bytes wrong"
                        if host.shape == src.shape and host.dtype == src.dtype
                        else f"got {host.dtype} {tuple(host.shape)}")
                raise VerificationError(
                    f"{self.case.label}: destination {i} differs from its source ({what})"
                )


def build_copy(case: CopyCase, device: str | Device = "auto") -> CopyWorkload:
    """Allocate and fill the buffers for ``case`` (outside any timed region)."""
    import torch

    dev = resolve_device(device)
    reason = copy_skip_reason(case, capabilities(dev))
    if reason:
        raise XferbenchError(f"{case.label} on {dev}: {reason}")
    sizes = _split(case.nbytes, case.layout)
    host_copies = 3 if case.host_memory != "pageable" else 2
    why = check_fits(case.nbytes, dev, copies=2, host_copies=host_copies)
    if why:
        raise DoesNotFit(f"{case.label}: {why}")
    sources = [pattern(n, seed=i) for i, n in enumerate(sizes)]
    nb = case.non_blocking
    tdev = dev.torch()

    if not dev.is_accelerator:
        # The CPU baseline: copy_ into preallocated host tensors (a memory-bandwidth figure).
        dsts = [torch.empty_like(s) for s in sources]

        def run() -> None:
            for d, s in zip(dsts, sources):
                d.copy_(s)

        return CopyWorkload(case, dev, run, sources, lambda: dsts, keep=[dsts])

    if case.direction == "h2d":
        if case.host_memory == "pinned":
            # pin once here: pinning is the cost pin_then_copy pays, not part of this copy
            srcs = [s.pin_memory() for s in sources]
        else:
            srcs = sources
        # Preallocated destinations, as for d2h and d2d: x.to(dev) would add the caching
        # allocator's per-tensor bookkeeping (1,000 allocations in the many layout) to the
        # host clocks of h2d alone. The copy itself is the one .to() makes (copy_).
        dsts = [torch.empty(s.shape, dtype=s.dtype, device=tdev) for s in sources]
        synchronize(dev)

        if case.host_memory == "pin_then_copy":
            def run() -> None:
                for d, s in zip(dsts, srcs):
                    d.copy_(s.pin_memory(), non_blocking=nb)
        else:
            def run() -> None:
                for d, s in zip(dsts, srcs):
                    d.copy_(s, non_blocking=nb)

        return CopyWorkload(case, dev, run, sources, lambda: dsts, keep=[srcs, dsts])

    if case.direction == "d2h":
        dev_srcs = [s.to(tdev) for s in sources]
        pin = case.host_memory == "pinned"
        # Preallocated destinations: .to("cpu", non_blocking=True) would silently allocate
        # a pinned destination, hiding the pageable case this row is about.
        dsts = [torch.empty(s.shape, dtype=s.dtype, pin_memory=pin) for s in sources]
        synchronize(dev)

        def run() -> None:
            for d, s in zip(dsts, dev_srcs):
                d.copy_(s, non_blocking=nb)

        return CopyWorkload(case, dev, run, sources, lambda: dsts, keep=[dev_srcs, dsts])

    # d2d: the device's own ceiling; bytes copied once (read + write traffic is twice that).
    dev_srcs = [s.to(tdev) for s in sources]
    dsts = [torch.empty_like(s) for s in dev_srcs]
    synchronize(dev)

    def run() -> None:
        for d, s in zip(dsts, dev_srcs):
            d.copy_(s)

    return CopyWorkload(case, dev, run, sources, lambda: dsts, keep=[dev_srcs, dsts])


def copy_clock(case: CopyCase, device: Device) -> str | None:
    """The clock a copy's figure is read from: device time (None, the default) except for
    pin_then_copy on an accelerator, whose pinning is host work the device clock sees only in
    part (a large pin outlasts the stream hold, so some calls would be timed as the DMA alone
    and others as pin + DMA): it is read on the completion clock, pin and copy together."""
    if device.is_accelerator and case.host_memory == "pin_then_copy":
        return "completion_s"
    return None


def run_copy(case: CopyCase, device: str | Device = "auto", spec: MeasureSpec | None = None,
             *, clock: str | None = None) -> Measurement:
    """Measure ``case`` on ``device`` and verify the copy (VerificationError on a mismatch).
    ``clock``: the clock to read (and stop on); by default ``copy_clock``'s."""
    work = build_copy(case, device)
    work.run()
    work.verify()  # a wrong first copy fails before any number exists
    m = measure(work.run, spec or DEFAULT_SPEC, device=work.device, nbytes=case.nbytes,
                label=case.label, clock=clock or copy_clock(case, work.device))
    work.verify()
    return m


# -- pin_memory() alone -----------------------------------------------------------------------

def pin_skip_reason(caps: Capabilities) -> str | None:
    if not caps.pinned_memory:
        return "pin_memory() needs an accelerator with pinned host memory"
    return None


def run_pin_memory(nbytes: int, device: str | Device = "auto",
                   spec: MeasureSpec | None = None) -> Measurement:
    """Time ``x.pin_memory()`` alone: host work, so on the host clock."""
    import torch

    dev = resolve_device(device)
    reason = pin_skip_reason(capabilities(dev))
    if reason:
        raise XferbenchError(f"pin_memory on {dev}: {reason}")
    why = check_fits(nbytes, Device("cpu"), copies=3)
    if why:
        raise DoesNotFit(f"pin_memory {size_label(nbytes)}: {why}")
    src = pattern(nbytes)
    last: list[Any] = []

    def run() -> None:
        last[:] = [src.pin_memory()]

    m = measure(run, spec or DEFAULT_SPEC, device="cpu", nbytes=nbytes,
                label=f"pin_memory {size_label(nbytes)}", clock=None)
    if not (last[0].is_pinned() and torch.equal(last[0], src)):
        raise VerificationError("pin_memory(): the pinned copy differs from its source")
    return m


# -- overlap of a side-stream copy with compute -----------------------------------------------

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


def overlap_skip_reason(host_memory: str, caps: Capabilities) -> str | None:
    if not caps.side_streams:
        return "overlap needs side streams: only an accelerator has them"
    if host_memory == "pinned" and not caps.pinned_memory:
        return f"pinned host memory is not available on {caps.device}"
    if host_memory not in ("pageable", "pinned"):
        return f"host memory {host_memory!r} is not compared for overlap"
    return None


def run_overlap(host_memory: str, nbytes: int, device: str | Device = "auto",
                spec: MeasureSpec | None = None, matmul_n: int = 1024) -> OverlapResult:
    """A non_blocking H2D copy on a side stream while matmuls run on the default stream.

    The matmul chain is sized (in whole matmuls of ``matmul_n``) to take about as long as
    the copy alone, so that full overlap would halve the pair's time.
    """
    import torch

    dev = resolve_device(device)
    reason = overlap_skip_reason(host_memory, capabilities(dev))
    if reason:
        raise XferbenchError(f"overlap on {dev}: {reason}")
    spec = (spec or DEFAULT_SPEC).replace(clock=None, nbytes=None)
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
    one = measure(compute(1), spec, device=dev, label="one matmul")
    k = max(1, round(t_copy.median / max(one.median, 1e-9)))
    # One matmul may have been timed before the clock rose: time the chain and resize it
    # until it takes within a quarter of the copy's time (a few rounds at most).
    for _ in range(3):
        t_compute = measure(compute(k), spec, device=dev, label=f"{k} matmuls")
        ratio = t_compute.median / t_copy.median
        if 0.8 <= ratio <= 1.25:
            break
        k = max(1, round(k / ratio))
    work = compute(k)

    def both() -> None:
        # The copy may start with this call's compute, not before: calls do not pipeline.
        side.wait_stream(main)
        work()
        with stream_context(dev, side):
            out[:] = [src.to(tdev, non_blocking=True)]
        main.wait_stream(side)

    t_compute = measure(work, spec, device=dev, label=f"{k} matmuls")
    t_both = measure(both, spec, device=dev, nbytes=nbytes, label="copy + matmuls")
    synchronize(dev)
    if not torch.equal(out[0].to("cpu"), src.to("cpu")):
        raise VerificationError("overlap: the side-stream copy differs from its source")
    if not bool(torch.isfinite(acc).all()):
        raise VerificationError("overlap: the matmul produced non-finite values")
    return OverlapResult(t_copy, t_compute, t_both, k)

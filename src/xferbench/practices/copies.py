"""Host-device copies: pageable vs pinned vs pin-then-copy, blocking vs non_blocking, one
tensor vs 1,000, each on the clock that means something for it (``device_clock_reason``).

Each case is a frozen ``CopyCase`` (the identity of the measurement); ``build_copy`` turns it
into buffers and a callable that queues the copies; ``run_copy`` measures and verifies it.
Pinning itself is in ``pinning.py``, a copy overlapped with compute in ``overlap.py``.
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
    resolve_device,
    synchronize,
)
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from ..units import size_label
from . import VerificationError

# torch loads inside the functions that need it: `import xferbench` stays free of it.

DIRECTIONS = ("h2d", "d2h")
HOST_MEMORY = ("pageable", "pinned", "pin_then_copy")
SYNCS = ("blocking", "non_blocking")
LAYOUTS = ("one", "many")
#: The "many" layout: the DataLoader / TensorDict case of many small tensors.
MANY_TENSORS = 1000
#: The host memory of the copy grid; pin_then_copy has a benchmark of its own, cold and warm.
COPY_HOST_MEMORY = ("pageable", "pinned")


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

    case: Any  # a CopyCase, or another case that names its copy (``label``)
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
    if not dev.is_accelerator:
        build = _cpu_copy
    else:
        build = {"h2d": _h2d_copy, "d2h": _d2h_copy, "d2d": _d2d_copy}[case.direction]
    return build(case, dev, sources)


def _copies(dsts: list[Any], srcs: list[Any], **kwargs: Any) -> Callable[[], None]:
    """A call that copies every source into its destination (``copy_``, as ``.to()`` does)."""
    def run() -> None:
        for d, s in zip(dsts, srcs):
            d.copy_(s, **kwargs)

    return run


def _cpu_copy(case: CopyCase, dev: Device, sources: list[Any]) -> CopyWorkload:
    """The CPU baseline: copy_ into preallocated host tensors (a memory-bandwidth figure)."""
    import torch

    dsts = [torch.empty_like(s) for s in sources]
    return CopyWorkload(case, dev, _copies(dsts, sources), sources, lambda: dsts, keep=[dsts])


def _h2d_copy(case: CopyCase, dev: Device, sources: list[Any]) -> CopyWorkload:
    import torch

    nb = case.non_blocking
    # pin once here: pinning is the cost pin_then_copy pays, not part of this copy
    srcs = [s.pin_memory() for s in sources] if case.host_memory == "pinned" else sources
    # Preallocated destinations, as for d2h and d2d: x.to(dev) would add the caching
    # allocator's per-tensor bookkeeping (1,000 allocations in the many layout) to the
    # host clocks of h2d alone. The copy itself is the one .to() makes (copy_).
    dsts = [torch.empty(s.shape, dtype=s.dtype, device=dev.torch()) for s in sources]
    synchronize(dev)
    if case.host_memory == "pin_then_copy":
        def run() -> None:
            for d, s in zip(dsts, srcs):
                d.copy_(s.pin_memory(), non_blocking=nb)
    else:
        run = _copies(dsts, srcs, non_blocking=nb)
    return CopyWorkload(case, dev, run, sources, lambda: dsts, keep=[srcs, dsts])


def _d2h_copy(case: CopyCase, dev: Device, sources: list[Any]) -> CopyWorkload:
    import torch

    dev_srcs = [s.to(dev.torch()) for s in sources]
    pin = case.host_memory == "pinned"
    # Preallocated destinations: .to("cpu", non_blocking=True) would silently allocate
    # a pinned destination, hiding the pageable case this row is about.
    dsts = [torch.empty(s.shape, dtype=s.dtype, pin_memory=pin) for s in sources]
    synchronize(dev)
    run = _copies(dsts, dev_srcs, non_blocking=case.non_blocking)
    return CopyWorkload(case, dev, run, sources, lambda: dsts, keep=[dev_srcs, dsts])


def _d2d_copy(case: CopyCase, dev: Device, sources: list[Any]) -> CopyWorkload:
    """The device's own ceiling; bytes copied once (read + write traffic is twice that)."""
    import torch

    dev_srcs = [s.to(dev.torch()) for s in sources]
    dsts = [torch.empty_like(s) for s in dev_srcs]
    synchronize(dev)
    return CopyWorkload(case, dev, _copies(dsts, dev_srcs), sources, lambda: dsts,
                        keep=[dev_srcs, dsts])


def device_clock_reason(case: CopyCase, caps: Capabilities) -> str | None:
    """Why ``case`` has no device-time figure of its own (``Copy.track_device_s``), or None.

    Device time is the copy alone on the device, its calls queued back to back behind a
    stream hold: what a pinned non_blocking copy (and a d2d copy) costs the device. Every other
    copy involves the host while it runs (a blocking copy waits for itself; an h2d copy from
    pageable memory is staged through a pinned buffer by the host, and a d2h copy into
    pageable memory returns only once it is done, both even when non_blocking, as CUDA's
    rules have it; 1,000 copies per call overfill what one hold covers), so its device time
    would be part host, part device and mislead beside the others: those are read on the
    completion clock, as a user waits."""
    why = copy_skip_reason(case, caps)
    if why:
        return why
    if caps.device == "cpu":
        return "the CPU has no device clock: its copy is timed on the host (track_completion_s)"
    if case.layout == "many":
        return (f"{MANY_TENSORS:,} copies per call overfill one stream hold (half a stream's "
                "launch queue): timed on the completion clock (track_completion_s)")
    if case.direction != "d2d" and case.sync == "blocking":
        return ("a blocking copy waits for itself, so its device time would include the host: "
                "timed on the completion clock (track_completion_s)")
    if case.direction == "h2d" and case.host_memory != "pinned":
        return ("an h2d copy from pageable memory is staged through a pinned buffer by the "
                "host, even when non_blocking: timed on the completion clock "
                "(track_completion_s)")
    if case.direction == "d2h" and case.host_memory != "pinned":
        return ("a d2h copy into pageable memory returns only once it is done, even when "
                "non_blocking (it waits for itself): timed on the completion clock "
                "(track_completion_s)")
    return None


def completion_clock_reason(case: CopyCase, caps: Capabilities) -> str | None:
    """Why ``case`` has no completion-clock figure (``Copy.track_completion_s``): every
    host<->device copy has one, at every size (blocking and non_blocking compared as a user
    waits for them); d2d is the device's own ceiling, read on device time alone."""
    why = copy_skip_reason(case, caps)
    if why:
        return why
    if case.direction == "d2d":
        return "d2d is the device's own ceiling: read on device time (track_device_s)"
    if case.host_memory == "pin_then_copy":
        return "pin_then_copy has its own benchmark (PinThenCopy), cold and warm"
    return None


def run_copy(case: CopyCase, device: str | Device = "auto", spec: MeasureSpec | None = None,
             *, clock: str | None = None, setup: Callable[[], Any] | None = None
             ) -> Measurement:
    """Measure ``case`` on ``device`` and verify the copy (VerificationError on a mismatch).

    Args:
        case: the copy: direction, host memory, sync, layout and size.
        device: "auto", a device name ("cuda:0") or a Device.
        spec: warm-up and sampling budgets; DEFAULT_SPEC where None.
        clock: the clock to read and stop on. By default device time where
            ``device_clock_reason`` allows it, else the completion clock.
        setup: run before every timed call, outside the timing (host clocks only).
    """
    return measure_copy(build_copy(case, device), spec, clock=clock, setup=setup)


def measure_copy(work: CopyWorkload, spec: MeasureSpec | None = None, *,
                 clock: str | None = None, setup: Callable[[], Any] | None = None,
                 behind: Callable[[], Any] | None = None) -> Measurement:
    """Verify, measure and verify a built copy (see ``run_copy``); ``behind`` queues device
    work before every call, not waited for (``timing.measure``)."""
    case = work.case
    work.run()
    work.verify()  # a wrong first copy fails before any number exists
    if clock is None:
        dev_reason = device_clock_reason(case, capabilities(work.device))
        clock = None if not work.device.is_accelerator else (
            "device_s" if dev_reason is None else "completion_s")
    m = measure(work.run, spec or DEFAULT_SPEC, device=work.device, setup=setup, behind=behind,
                nbytes=case.nbytes, label=case.label, clock=clock,
                ops_per_call=len(work.expected), sm_clocked=False)
    work.verify()
    return m

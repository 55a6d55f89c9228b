"""The non_blocking hazards, measured: how often the unsafe pattern sees wrong data.

Three patterns, each a trial repeated from an idle device, each checked against the value it
should have seen (a fill that changes every trial), never inferred from timing:

``d2h_read_before_sync``
    A kernel fills a device tensor, a non_blocking copy into pinned host memory is queued,
    and the host reads the destination at once, before synchronising (the PyTorch tutorial's
    first hazard). Wrong: the read is not the kernel's value.
``pinned_source_modified``
    A non_blocking copy from pinned host memory to the device is queued and the host then
    overwrites the source at once (the tutorial's second hazard). Wrong: after a synchronise,
    the device copy is not the value the source held when the copy was asked for.
``pageable_non_blocking``
    A non_blocking copy from pageable host memory to the device: does the call return before
    the copy is complete? The destination is read back on a side stream as soon as the call
    returns (a read not ordered after the copy). Wrong: that read is not yet the new value, so
    the call returned before completion. A lower bound: a copy that completes between the
    return and the read counts as complete.

After each trial's synchronise the copy itself must be right (for the second hazard: the
value asked for, or the overwrite); anything else is a broken copy, not a hazard, and raises
VerificationError. Device-generic: only the device layer's streams and synchronise and torch's
generic tensor API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import (
    Capabilities,
    Device,
    capabilities,
    new_stream,
    resolve_device,
    stream_context,
    synchronize,
)
from ..errors import XferbenchError
from ..units import KiB, MiB, size_label
from . import SMOKE_NBYTES, VerificationError, sweep

# torch loads inside the functions that need it: `import xferbench` stays free of it.

HAZARDS = ("d2h_read_before_sync", "pinned_source_modified", "pageable_non_blocking")
#: At least 100 trials per size, so that a fraction moves in steps of 1% at most.
TRIALS = 100
DEFAULT_SIZES = (4 * KiB, 1 * MiB, 64 * MiB)
FULL_SIZES = tuple(4**k * KiB for k in range(0, 10))  # 1 KiB .. 256 MiB


def hazard_sizes() -> tuple[int, ...]:
    return {"full": FULL_SIZES, "smoke": (SMOKE_NBYTES,)}.get(sweep(), DEFAULT_SIZES)


def hazard_skip_reason(kind: str, caps: Capabilities) -> str | None:
    """Why ``kind`` cannot be tried on a device with ``caps``; the capability probe only."""
    if kind not in HAZARDS:
        return f"hazard {kind!r} is not one of {', '.join(HAZARDS)}"
    if caps.device == "cpu":
        return "the hazards need an accelerator: on the CPU every copy is synchronous"
    if kind == "pageable_non_blocking":
        if not caps.side_streams:
            return (f"the completion check reads on a side stream, which {caps.device} "
                    f"lacks: {caps.reason}")
        return None
    if not caps.pinned_memory:
        return f"pinned host memory is not available on {caps.device}: {caps.reason}"
    return None


@dataclass(frozen=True)
class HazardResult:
    kind: str
    nbytes: int
    trials: int
    wrong: int  # trials in which the unsafe pattern saw wrong data
    torn: int  # of those, trials that saw part of the right value (a copy in progress)
    device: str

    @property
    def fraction(self) -> float:
        return self.wrong / self.trials

    @property
    def label(self) -> str:
        return f"{self.kind} {size_label(self.nbytes)} on {self.device}"


def _value(trial: int) -> int:
    """The byte trial ``trial`` should see: 1..250, never the stale 0 nor OVERWRITE."""
    return 1 + trial % 250


#: What the host writes over a pinned source (hazard 2); no trial's value.
OVERWRITE = 255


def seen_wrong(t: Any, right: int) -> tuple[bool, bool]:
    """(wrong, torn): not all ``right``; some ``right`` but not all."""
    hits = t.eq(right)
    if bool(hits.all()):
        return False, False
    return True, bool(hits.any())


def run_hazard(kind: str, nbytes: int, device: str | Device = "auto",
               trials: int = TRIALS) -> HazardResult:
    """``trials`` trials of the unsafe pattern ``kind`` with ``nbytes`` of uint8: how many saw
    wrong data. VerificationError when the copy itself is wrong after synchronising."""
    import torch

    dev = resolve_device(device)
    reason = hazard_skip_reason(kind, capabilities(dev))
    if reason:
        raise XferbenchError(f"{kind} on {dev}: {reason}")
    if nbytes <= 0 or trials <= 0:
        raise XferbenchError(f"{nbytes} bytes x {trials} trials: give positive numbers")
    why = check_fits(nbytes, dev, copies=2, host_copies=3)
    if why:
        raise DoesNotFit(f"{kind} {size_label(nbytes)}: {why}")
    tdev = dev.torch()
    on_dev = torch.zeros(nbytes, dtype=torch.uint8, device=tdev)
    wrong = torn = 0

    if kind == "d2h_read_before_sync":
        host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        for t in range(trials):
            v = _value(t)
            host.zero_()
            synchronize(dev)
            on_dev.fill_(v)  # the device work whose result the host wants
            host.copy_(on_dev, non_blocking=True)
            read = host.clone()  # the unsafe read: no synchronise before it
            synchronize(dev)
            if not bool(host.eq(v).all()):
                raise VerificationError(f"{kind}: after synchronising, the host copy is not "
                                        f"{v} (trial {t})")
            w, p = seen_wrong(read, v)
            wrong, torn = wrong + w, torn + p

    elif kind == "pinned_source_modified":
        src = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        for t in range(trials):
            v = _value(t)
            on_dev.zero_()
            src.fill_(v)
            synchronize(dev)
            on_dev.copy_(src, non_blocking=True)
            src.fill_(OVERWRITE)  # the unsafe write: the copy may not have read it yet
            synchronize(dev)
            got = on_dev.to("cpu")
            if not bool((got.eq(v) | got.eq(OVERWRITE)).all()):
                raise VerificationError(f"{kind}: the device copy holds neither {v} nor "
                                        f"{OVERWRITE} (trial {t})")
            w, p = seen_wrong(got, v)
            wrong, torn = wrong + w, torn + p

    elif kind == "pageable_non_blocking":
        src = torch.empty(nbytes, dtype=torch.uint8)
        probe = torch.empty(nbytes, dtype=torch.uint8, pin_memory=capabilities(dev)
                            .pinned_memory)
        side = new_stream(dev)
        for t in range(trials):
            v = _value(t)
            on_dev.zero_()
            src.fill_(v)
            synchronize(dev)
            on_dev.copy_(src, non_blocking=True)
            with stream_context(dev, side):  # not ordered after the copy: reads what is there
                probe.copy_(on_dev, non_blocking=True)
            synchronize(dev)
            if not bool(on_dev.eq(v).all()):
                raise VerificationError(f"{kind}: after synchronising, the device copy is not "
                                        f"{v} (trial {t})")
            w, p = seen_wrong(probe, v)
            wrong, torn = wrong + w, torn + p

    return HazardResult(kind, nbytes, trials, wrong, torn, dev.name)

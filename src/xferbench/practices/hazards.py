"""The non_blocking hazards, measured: how often the unsafe pattern sees wrong data.

Three patterns, each checked against the value it should have seen (a fill that changes every
trial), never inferred from timing:

``d2h_read_before_sync``
    A kernel fills a device tensor, a non_blocking copy into pinned host memory is queued,
    and the host reads the destination at once, before synchronising (the PyTorch tutorial's
    first hazard). Wrong: the read is not the kernel's value.
``pinned_source_modified``
    A non_blocking copy from pinned host memory to the device is queued and the host then
    overwrites the source at once (the tutorial's second hazard). Wrong: after a synchronise,
    the device copy is not the value the source held when the copy was asked for.
``pageable_source_modified``
    The same with a pageable source: the fact users rely on. A copy from pageable memory is
    staged by the host before the call returns, even when non_blocking, so overwriting the
    source right after the return is safe. Expected: 0% wrong, on a busy stream too.

Each pattern runs on a ``busy`` stream (a spin queued before the work: the copy cannot have
run when the host acts, so an unsafe pattern fails deterministically; an event recorded after
the spin says whether it still held once the host had acted, and a trial it did not hold, the
host kept from acting longer than the spin by a loaded machine, is tried again while the
run's ``RETRIES_PER_TRIAL`` retries a trial last) and on an ``idle`` one
(the work queued on a quiet device: a race between Python and the copy's latency, whose
fraction depends on size and machine; a 0% there means the race was not seen, not that the
pattern is safe). After each trial's synchronise the copy itself must be right (for the
source overwrites: the value asked for, or the overwrite); anything else is a broken copy,
not a hazard, and raises VerificationError. Device-generic: the device layer's spin and
synchronise and torch's generic tensor API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import (
    Capabilities,
    Device,
    capabilities,
    current_stream,
    new_event,
    resolve_device,
    synchronize,
)
from ..errors import XferbenchError
from ..stream_hold import hold_stream
from ..units import KiB, MiB, size_label
from . import SMOKE_NBYTES, VerificationError, sweep

# torch loads inside the functions that need it: `import xferbench` stays free of it.

HAZARDS = ("d2h_read_before_sync", "pinned_source_modified", "pageable_source_modified")
#: The stream each trial's work is queued on: busy (behind a spin) or idle.
STREAMS = ("busy", "idle")
#: The hazards that are unsafe (wrong data is possible); the others are facts relied on.
UNSAFE = ("d2h_read_before_sync", "pinned_source_modified")
#: At least 100 trials per size, so that a fraction moves in steps of 1% at most.
TRIALS = 100
DEFAULT_SIZES = (4 * KiB, 1 * MiB, 64 * MiB)
FULL_SIZES = tuple(4**k * KiB for k in range(0, 10))  # 1 KiB .. 256 MiB
#: The busy variant's largest size: its spin must outlast the host's whole unsafe action (a
#: read or a fill of the buffer: tens of ms per trial at 64 MiB, minutes per size).
BUSY_MAX_NBYTES = 1 * MiB
#: An unsafe pattern's busy trial whose spin had ended before the host acted (the host was
#: held up longer than the spin: another process on its core) did not try the pattern; it is
#: tried again while the run's retries last (this many per trial, shared: a device that never
#: queues the work behind the spin costs twice the trials), and counted as ``unheld`` if its
#: last try was not held.
RETRIES_PER_TRIAL = 1


def hazard_sizes() -> tuple[int, ...]:
    return {"full": FULL_SIZES, "smoke": (SMOKE_NBYTES,)}.get(sweep(), DEFAULT_SIZES)


def hazard_skip_reason(kind: str, caps: Capabilities, stream: str = "idle",
                       nbytes: int | None = None) -> str | None:
    """Why ``kind`` on a ``stream`` stream cannot be tried on a device with ``caps``; the
    capability probe only."""
    if kind not in HAZARDS:
        return f"hazard {kind!r} is not one of {', '.join(HAZARDS)}"
    if stream not in STREAMS:
        return f"stream {stream!r} is not one of {', '.join(STREAMS)}"
    if caps.device == "cpu":
        return "the hazards need an accelerator: on the CPU every copy is synchronous"
    if kind in UNSAFE and not caps.pinned_memory:
        return f"pinned host memory is not available on {caps.device}: {caps.reason}"
    if stream == "busy":
        if not caps.stream_hold:
            return f"a busy stream needs a spin to hold it, which {caps.device} lacks"
        if nbytes is not None and nbytes > BUSY_MAX_NBYTES:
            return (f"the busy stream is tried up to {size_label(BUSY_MAX_NBYTES)}: its spin "
                    "must outlast the host's read or fill of the whole buffer every trial")
    return None


@dataclass(frozen=True)
class HazardResult:
    kind: str
    stream: str
    nbytes: int
    trials: int  # the trials run: fewer than asked where a deadline ended them
    wrong: int  # trials in which the unsafe pattern saw wrong data
    torn: int  # of those, trials that saw part of the right value (a copy in progress)
    device: str
    unheld: int = 0  # busy trials whose spin had ended before the host acted, last try

    @property
    def fraction(self) -> float:
        return self.wrong / self.trials

    @property
    def no_figure(self) -> str | None:
        """Why this result is no figure of its pattern, else None: an unsafe pattern's busy rate
        below 100% with trials the spin did not hold, whose right trials may be the host's
        doing (held up longer than the spin) or the device's (work not queued behind it)."""
        if self.kind not in UNSAFE or not self.unheld or self.wrong == self.trials:
            return None
        return (f"the spin had ended before the host acted in {self.unheld} of {self.trials} "
                "trials, tried again as often as there are trials (a host held up longer than "
                "the spin, or a device that does not queue the work behind it), and "
                f"{self.trials - self.wrong} came out right: not a figure of the busy pattern")

    @property
    def label(self) -> str:
        return f"{self.kind} {self.stream} {size_label(self.nbytes)} on {self.device}"


def trial_value(trial: int) -> int:
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


def busy_s(nbytes: int) -> float:
    """How long the busy variant's spin holds the stream: 2 ms and 1 ms per MB (the host's
    unsafe read or fill of the buffer, several times over)."""
    return 0.002 + nbytes / 1e6 * 1e-3


def run_hazard(kind: str, nbytes: int, device: str | Device = "auto",
               trials: int = TRIALS, stream: str = "idle",
               deadline: float | None = None) -> HazardResult:
    """Run trials of the pattern ``kind`` and count how many saw wrong data.

    Raises VerificationError when the copy itself is wrong after synchronising.

    Args:
        kind: the pattern, one of HAZARDS.
        nbytes: the buffer's size, in bytes of uint8.
        device: "auto", a device name or a Device.
        trials: how many trials to run.
        stream: "idle", or "busy" (a spin holds the stream, so the copy is still queued
            when the host acts).
        deadline: a time.time() at which the trials end early. The result then says how
            many ran (its ``trials``), at least one.
    """
    import torch

    dev = resolve_device(device)
    reason = hazard_skip_reason(kind, capabilities(dev), stream, nbytes)
    if reason:
        raise XferbenchError(f"{kind} on {dev}: {reason}")
    if nbytes <= 0 or trials <= 0:
        raise XferbenchError(f"{nbytes} bytes x {trials} trials: give positive numbers")
    why = check_fits(nbytes, dev, copies=2, host_copies=3)
    if why:
        raise DoesNotFit(f"{kind} {size_label(nbytes)}: {why}")
    on_dev = torch.zeros(nbytes, dtype=torch.uint8, device=dev.torch())
    # one host buffer for every trial: pinning is not what is tried; and one, touched now,
    # for what each trial reads back (a fresh tensor a trial faulted in 64 MiB page by page)
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=kind in UNSAFE)
    seen = torch.zeros(nbytes, dtype=torch.uint8)
    trial = _TRIALS[kind]
    hold = busy_s(nbytes) if stream == "busy" else 0.0
    wrong = torn = done = unheld = 0
    retries = trials * RETRIES_PER_TRIAL if hold and kind in UNSAFE else 0
    for t in range(trials):
        if done and deadline is not None and time.time() >= deadline:
            break
        right, held = trial(dev, on_dev, host, seen, trial_value(t), hold)
        while not held and retries:
            retries -= 1
            right, held = trial(dev, on_dev, host, seen, trial_value(t), hold)
        w, p = seen_wrong(seen, right)
        wrong, torn, done, unheld = wrong + w, torn + p, done + 1, unheld + (not held)
    return HazardResult(kind, stream, nbytes, done, wrong, torn, dev.name, unheld)


def busy_stream(dev: Device, hold: float) -> Any:
    """Queue the busy variant's spin and an event after it (None for an idle stream)."""
    if not hold:
        return None
    if not hold_stream(dev, hold):
        raise XferbenchError(f"{dev} has no spin to make its stream busy")
    after = new_event(dev, timing=False)
    after.record(current_stream(dev))
    return after


def still_held(after: Any) -> bool:
    """Whether the spin still held the stream once the host had acted (always, idle)."""
    return after is None or not after.query()


def _d2h_read_before_sync(dev: Device, on_dev: Any, host: Any, seen: Any, v: int,
                          hold: float) -> tuple[int, bool]:
    """The trial: what the host read into ``seen``; returns the value it should have read,
    and whether the spin (if any) still held once the host had read."""
    host.zero_()
    synchronize(dev)
    after = busy_stream(dev, hold)
    on_dev.fill_(v)  # the device work whose result the host wants
    host.copy_(on_dev, non_blocking=True)
    seen.copy_(host)  # the unsafe read: no synchronise before it
    held = still_held(after)
    synchronize(dev)
    if not bool(host.eq(v).all()):
        raise VerificationError(f"d2h_read_before_sync: after synchronising, the host copy is "
                                f"not {v}")
    return v, held


def _source_modified(dev: Device, on_dev: Any, src: Any, seen: Any, v: int,
                     hold: float) -> tuple[int, bool]:
    """Both source overwrites: ``src`` is pinned or pageable, as the hazard's name says; the
    device copy read back into ``seen``."""
    on_dev.zero_()
    src.fill_(v)
    synchronize(dev)
    after = busy_stream(dev, hold)
    on_dev.copy_(src, non_blocking=True)
    src.fill_(OVERWRITE)  # the write: the copy may not have read the source yet
    held = still_held(after)
    synchronize(dev)
    seen.copy_(on_dev)  # a blocking copy back: the device's work is done
    if not bool((seen.eq(v) | seen.eq(OVERWRITE)).all()):
        raise VerificationError(f"source overwrite: the device copy holds neither {v} nor "
                                f"{OVERWRITE}")
    return v, held


_TRIALS = {
    "d2h_read_before_sync": _d2h_read_before_sync,
    "pinned_source_modified": _source_modified,
    "pageable_source_modified": _source_modified,
}

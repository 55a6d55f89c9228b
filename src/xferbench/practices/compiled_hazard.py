"""The non_blocking device-to-host hazard under ``torch.compile``, per release, beside the eager
one: a function copies what the device computed to the host ``non_blocking`` (into pinned
memory torch makes) and reads it on the host, without a synchronise (``no_sync``) or
after recording an event and waiting for it (``event_sync``, safe in eager code).

Compiled, the function is what the compiler makes of it: some releases keep the copy
``non_blocking`` and drop the event's wait, so the host reads a buffer the copy has not
filled (pytorch/pytorch#174695); later ones wait after a pinned device-to-host copy
(pytorch/pytorch#185252), which makes even ``no_sync`` safe. Each trial runs on a busy stream
(a spin queued first, ``hazards``'s), so a read that does not wait sees the wrong value every
time, decided by the data against the value the trial asked for. After each trial's
synchronise the copy itself must hold that value, else VerificationError.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from ..units import size_label
from . import VerificationError
from .hazards import (
    BUSY_MAX_NBYTES,
    RETRIES_PER_TRIAL,
    TRIALS,
    busy_s,
    busy_stream,
    hazard_skip_reason,
    seen_wrong,
    still_held,
    trial_value,
)

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: How the host reads the copy: at once, or after an event recorded behind it completes.
COMPILED_READS = ("no_sync", "event_sync")
MODES = ("eager", "compiled")
#: The busy stream's largest size: its spin outlasts the host's read of the whole buffer.
COMPILED_NBYTES = BUSY_MAX_NBYTES
#: torch.compile's default backend, and the device types it generates code for here.
BACKEND = "inductor"
INDUCTOR_DEVICES = ("cuda", "xpu")
#: What compiling the function may cost, planned per combination: dynamo, AOTAutograd and
#: inductor on a graph of one copy and one host read, whose kernel a C++ compiler builds.
COMPILE_S = 8.0


def compiled_hazard_skip_reason(read: str, mode: str, caps: Capabilities,
                                backend: str = BACKEND) -> str | None:
    """Why the pattern cannot be tried on a device with ``caps``; the probe only."""
    if read not in COMPILED_READS or mode not in MODES:
        return (f"read {read!r}, mode {mode!r}: use {', '.join(COMPILED_READS)} and "
                f"{', '.join(MODES)}")
    why = hazard_skip_reason("d2h_read_before_sync", caps, "busy", COMPILED_NBYTES)
    if why:
        return why
    kind = caps.device.partition(":")[0]
    if mode == "compiled" and backend == BACKEND and kind not in INDUCTOR_DEVICES:
        return (f"torch.compile's default backend, inductor, has no code generator for the "
                f"{kind} device (torch._inductor.codegen.common.get_scheduling_for_device"
                f"({kind!r}) is None): compiling for {caps.device} fails")
    return None


def _pattern(read: str) -> Callable[[Any], tuple[Any, Any]]:
    """The user's function: (the host copy, what the host read of it)."""
    import torch

    def d2h_then_read(src: Any) -> tuple[Any, Any]:
        # the copy back, queued behind the work before it (the spin), into pinned memory
        # that torch makes for a non_blocking copy to the host
        host = src.to("cpu", non_blocking=True)
        if read == "event_sync":
            done = torch.Event()
            done.record()
            done.synchronize()  # eager: waits for the copy
        return host, host.clone()  # the host's read

    return d2h_then_read


@dataclass(frozen=True)
class CompiledHazardResult:
    read: str
    mode: str
    backend: str
    nbytes: int
    trials: int  # the trials run: fewer than asked where a deadline ended them
    wrong: int  # trials in which the host read wrong data
    device: str
    unheld: int = 0  # trials the spin did not hold (see _trial), last try

    @property
    def fraction(self) -> float:
        return self.wrong / self.trials

    @property
    def label(self) -> str:
        how = self.mode if self.mode == "eager" else f"compiled ({self.backend})"
        return f"d2h {self.read} {how} {size_label(self.nbytes)} on {self.device}"

    @property
    def no_figure(self) -> str | None:
        """Why this is no figure of the pattern, else None: right trials the spin did not
        hold may be the host's doing (held up longer than the spin), not the pattern's."""
        if not self.unheld or self.wrong == self.trials:
            return None
        return (f"the spin did not hold the copy in {self.unheld} of {self.trials} trials "
                f"(a host held up longer than the spin), and {self.trials - self.wrong} came "
                "out right: not a figure of the busy pattern")


def run_compiled_hazard(read: str, mode: str, device: str | Device = "auto",
                        trials: int = TRIALS, *, backend: str = BACKEND,
                        deadline: float | None = None) -> CompiledHazardResult:
    """Run ``trials`` trials of the pattern, eager or compiled with ``backend`` (compiled
    once, on an untimed first trial), on a busy stream; count the wrong reads.

    Args:
        read: "no_sync" or "event_sync".
        mode: "eager" or "compiled".
        backend: torch.compile's backend (the default, inductor, for the figures).
        deadline: a time.time() at which the trials end early (at least one runs).
    """
    import torch

    dev = resolve_device(device)
    why = compiled_hazard_skip_reason(read, mode, capabilities(dev), backend)
    if why:
        raise XferbenchError(f"d2h {read} {mode} on {dev}: {why}")
    fits = check_fits(COMPILED_NBYTES, dev, copies=2, host_copies=3)
    if fits:
        raise DoesNotFit(f"d2h {read} {mode}: {fits}")
    fn = _pattern(read)
    if mode == "compiled":
        torch.compiler.reset()  # this pattern's own graph, not one an earlier case left
        fn = torch.compile(fn, backend=backend)
    on_dev = torch.zeros(COMPILED_NBYTES, dtype=torch.uint8, device=dev.torch())
    wait, hold = read == "event_sync", busy_s(COMPILED_NBYTES)
    # every try reads a value the one before did not: torch hands the next copy the pinned
    # block the last one filled, so a stale read of a retried value would look right
    tries = iter(range(1, 1 << 30))
    _trial(fn, dev, on_dev, trial_value(0), 0.0, wait)  # compiles, off the count
    wrong = done = unheld = 0
    retries = trials * RETRIES_PER_TRIAL
    for _ in range(trials):
        if done and deadline is not None and time.time() >= deadline:
            break
        right, held, seen = _trial(fn, dev, on_dev, trial_value(next(tries)), hold, wait)
        while not held and retries:
            retries -= 1
            right, held, seen = _trial(fn, dev, on_dev, trial_value(next(tries)), hold, wait)
        wrong, done, unheld = wrong + seen_wrong(seen, right)[0], done + 1, unheld + (not held)
    return CompiledHazardResult(read, mode, backend, COMPILED_NBYTES, done, wrong, dev.name,
                                unheld)


def _trial(fn: Callable[[Any], tuple[Any, Any]], dev: Device, on_dev: Any, v: int,
           hold: float, wait: bool) -> tuple[int, bool, Any]:
    """One trial: (the value the host should have read, whether the spin held, what it
    read). A read that waits by design (``wait``: event_sync) is held when the spin still
    held the stream as the function was called, so the copy was queued behind it; one that
    does not, when the spin still held once the host had read."""
    on_dev.fill_(v)  # the value the host wants, then the copy of it queued behind the spin
    synchronize(dev)
    after = busy_stream(dev, hold) if hold else None
    queued = still_held(after)
    host, seen = fn(on_dev)
    held = queued if wait else still_held(after)
    synchronize(dev)
    if not bool(host.eq(v).all()):
        raise VerificationError(f"d2h copy: after synchronising, the host copy is not {v}")
    return v, held, seen

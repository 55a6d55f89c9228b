"""The stream hold: a spin queued on a stream so that the calls ``measure()`` queues behind it
run back to back on the device (nvbandwidth's blocking kernel), calibrated with a warm clock.
A device can be held where its backend module has a ``_sleep(cycles)`` spin: CUDA and ROCm
(``torch.cuda._sleep``) and tests/emu (``torch.emu._sleep``, whose clock ramps up under load as
a GPU's does). Part of the device layer."""

from __future__ import annotations

import time
from typing import Any

from .devices import Device, current_stream, new_event, spin_module, synchronize

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: Spin rate of the backend's _sleep per device (cycles per second), measured once warm.
_SPIN_CYCLES_PER_S: dict[str, float] = {}
#: Longest hold: a batch that needs more is split by the caller, not held longer.
MAX_HOLD_S = 0.2
#: The SM clock runs this long under a spin before the spin is calibrated. A GPU's idle clock
#: can be several times below its clock under load, so a spin calibrated cold would end
#: several times too early once the clock has risen.
WARM_SPIN_S = 0.05


def can_hold_stream(device: Device) -> bool:
    """Whether ``hold_stream`` can hold ``device``'s stream (a backend with a spin)."""
    return spin_module(device) is not None


def _on_device(module: Any, device: Device) -> Any:
    """``with _on_device(m, dev):`` makes ``dev`` current, so the spin goes to its stream."""
    return module.device(device.index or 0)


def calibrate_spin(device: Device) -> float:
    """Cycles per second of the backend's ``_sleep`` on ``device``, measured after the clock has
    run under a spin for at least WARM_SPIN_S (timing events around each chunk); stored for
    ``hold_stream``. Call it again when a hold was seen to end early."""
    module = spin_module(device)
    with _on_device(module, device):
        stream = current_stream(device)
        cycles, spent, rate = 1_000_000, 0.0, 0.0
        for _ in range(200):  # a bound: 50 ms of spin takes 2 to 20 rounds
            pairs = [(new_event(device), new_event(device)) for _ in range(8)]
            for start, end in pairs:
                start.record(stream)
                module._sleep(cycles)
                end.record(stream)
            synchronize(device)
            times = sorted(max(s.elapsed_time(e) * 1e-3, 1e-7) for s, e in pairs)
            spent += sum(times)
            rate = cycles / times[len(times) // 2]
            if spent >= WARM_SPIN_S:
                break
            cycles = max(cycles, int(rate * 0.002))  # chunks of about 2 ms once the rate is known
    _SPIN_CYCLES_PER_S[device.name] = rate
    return rate


def hold_stream(device: Device, seconds: float) -> bool:
    """Queue a spin of about ``seconds`` (at most MAX_HOLD_S) on ``device``'s current stream,
    so that work the host queues next waits behind it and runs back to back (nvbandwidth's
    blocking kernel).

    Without it, a launch-bound call finds the device idle: its start event fires at once and
    "device time" becomes the host's launch time. The spin counts SM clock cycles; its rate is
    calibrated warm (``calibrate_spin``) the first time. Whether a hold really outlasted the
    queueing is the caller's to check (an event recorded after the spin must still be pending
    once the batch is queued; see ``timing.measure``). Returns False where no spin exists
    (``can_hold_stream``), and the caller records that.
    """
    module = spin_module(device)
    if seconds <= 0 or module is None:
        return False
    rate = _SPIN_CYCLES_PER_S.get(device.name) or calibrate_spin(device)
    with _on_device(module, device):  # the spin goes to the current device
        module._sleep(int(min(seconds, MAX_HOLD_S) * rate))
    return True


#: Launches tried behind one spin, at most, while the launch queue is measured.
QUEUE_PROBE_LIMIT = 16384
#: A launch that took this share of the spin or more waited for the spin to end: the queue
#: was full. A host descheduled for a moment takes milliseconds, not a share of the spin.
BLOCKED_SHARE = 0.25


#: A depth below this is probed once more: a host held up past the whole spin (another
#: process took the core) reads as a queue that blocked early, and every later hold would be
#: sized to it. The larger of the two probes is kept.
PLAUSIBLE_DEPTH = 64


def launch_queue_depth(device: Device, limit: int = QUEUE_PROBE_LIMIT) -> int | None:
    """How many operations ``device``'s current stream holds before a launch blocks the
    host (the spin and an event among them), or None where that cannot be seen: no spin, or
    ``limit`` tiny device-to-device copies queued behind a spin of MAX_HOLD_S without one
    blocking. A depth under PLAUSIBLE_DEPTH is probed again and the larger kept."""
    depth = _probe_depth(device, limit)
    if depth is not None and depth < PLAUSIBLE_DEPTH:
        again = _probe_depth(device, limit)
        depth = None if again is None else max(depth, again)
    return depth


def _probe_depth(device: Device, limit: int) -> int | None:
    """One probe of ``launch_queue_depth``: the copies are timed one by one; the first that
    returns only once the spin has ended (an event recorded after the spin has completed)
    found the queue full."""
    module = spin_module(device)
    if module is None:
        return None
    import torch

    src = torch.zeros(1, device=device.torch())
    dst = torch.empty_like(src)
    guard = new_event(device, timing=False)
    synchronize(device)
    if not hold_stream(device, MAX_HOLD_S):
        return None
    guard.record(current_stream(device))  # completes when the spin does
    depth = None
    for queued in range(limit):
        t0 = time.perf_counter()
        dst.copy_(src)
        if time.perf_counter() - t0 >= BLOCKED_SHARE * MAX_HOLD_S and _ends_soon(guard):
            depth = queued + 2  # it waited for the spin: the copies before it, spin, guard
            break
        if guard.query():  # the spin ran out before any launch blocked
            break
    synchronize(device)
    return depth


def _ends_soon(event: Any, within_s: float = 0.01) -> bool:
    """Whether ``event`` completes within ``within_s``: after a launch that waited for the
    spin it does at once, while a launch slowed by the host alone finds the spin running."""
    deadline = time.perf_counter() + within_s
    while not event.query():
        if time.perf_counter() > deadline:
            return False
        time.sleep(0.0005)
    return True


def timed_hold(device: Device, seconds: float) -> float | None:
    """Seconds one ``hold_stream(device, seconds)`` held the stream, read from timing events
    around it after a synchronise: what "``seconds`` of queued work" came to on the device
    (a spin calibrated warm runs longer on a cooler clock). None where no spin exists."""
    module = spin_module(device)
    if module is None or seconds <= 0:
        return None
    synchronize(device)
    start, end = new_event(device), new_event(device)
    with _on_device(module, device):
        stream = current_stream(device)
        start.record(stream)
        hold_stream(device, seconds)
        end.record(stream)
    synchronize(device)
    return start.elapsed_time(end) * 1e-3

"""measure(): the one place that times anything, on the CPU or an accelerator.

On an accelerator each call gets three clocks:
  * device time from timing events; all events are created before the loop, and the batch
    of calls is queued back to back behind a spin that holds the stream until the host has
    queued them (nvbandwidth's blocking kernel), with a single synchronise at its end (as
    triton's do_bench), so the host's launch time does not show as device time. The spin is
    calibrated with a warm clock, and every batch checks that it held: an event recorded
    right after the spin must still be pending once the batch is queued, else the spin is
    recalibrated and the batch redone (extra["redone_batches"]). Where no spin exists (not
    CUDA/ROCm), and for calls that wait for the device themselves, there is no hold and a
    launch-bound call's device time includes its launch gaps; extra["stream_hold"] says which;
  * completion time: host clock from the call until its device work is done, read after a
    synchronise (what a user waits for);
  * enqueue time: how long the call held the Python thread (what non_blocking gives back).
Device time comes from an event batch; completion and enqueue from a batch where each call
starts on an idle device and is followed by a synchronise. Batches alternate until the
noise target or the time budget is reached; a figure read from the completion or enqueue
clock runs the host batches only.

On the CPU the host clock (perf_counter_ns) times blocks of calls, the block size chosen so
that the timer's own cost stays under 0.01% of a sample (as torch.utils.benchmark's
blocked_autorange).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .devices import Device, current_stream, new_event, resolve_device, synchronize
from .errors import XferbenchError
from .measurement import Measurement, Stats
from .spec import DEFAULT_SPEC, MIN_SAMPLES, MeasureSpec
from .stream_hold import MAX_HOLD_S, calibrate_spin, can_hold_stream, hold_stream

#: Timer overhead may cost at most this share of one CPU sample. 1e-4 as blocked_autorange:
#: with 1e-3 our blocks were ten times shorter than its, and on a busy machine the median of
#: short blocks skips the slowed ones while that of long blocks averages them in (a 1 MiB copy
#: read 40-50% below blocked_autorange's median under contention, within 3% when quiet).
MAX_TIMER_OVERHEAD = 1e-4

#: An event batch whose stream hold ended before it was queued is redone at most this often
#: (after recalibrating the spin); one still unheld is kept and counted.
MAX_REDO = 3

#: A call slower than its budget allows is still sampled MIN_SAMPLES times (a spread of one
#: sample is no spread), up to SLOW_CALL_CAP times the budget.
SLOW_CALL_CAP = 5


def measure(fn: Callable[[], Any], spec: MeasureSpec | None = None, *,
            device: str | Device = "auto", **changes: Any) -> Measurement:
    """Time ``fn`` on ``device`` as ``spec`` says and return its raw samples as a Measurement.

    ``fn`` takes no arguments and queues its work; it must not synchronise itself (measure
    does, before reading any wall clock that follows device work). ``spec`` (default:
    DEFAULT_SPEC) holds the label, bytes per call, clock and budgets; keyword ``changes``
    replace its fields (``measure(fn, device="cuda", nbytes=n)``). Warm-up and run length are
    time budgets in seconds. Sampling stops when the coefficient of variation of the primary
    clock is at or below ``spec.target_cv`` after ``spec.min_time_s`` and ``spec.min_samples``
    samples, or at ``spec.max_time_s``; a measurement that stopped noisy says so in its
    warnings. ``spec.clock`` names the clock the figure is read from (and the stop rule
    watches): "device_s" (the default on an accelerator), "completion_s" or "enqueue_s".
    Quick mode is the caller's to resolve (``spec.for_quick()``): measure reads no environment.
    """
    spec = (spec or DEFAULT_SPEC).replace(**changes) if changes else (spec or DEFAULT_SPEC)
    dev = resolve_device(device)
    if spec.clock not in (None, "completion_s") and not dev.is_accelerator:
        raise XferbenchError(
            f"clock {spec.clock!r} needs an accelerator: the CPU has completion_s")
    runner = _measure_accelerator if dev.is_accelerator else _measure_cpu
    return runner(fn, dev, spec)


class _Stopper:
    """Decides when sampling ends; the noise is re-checked only after the sample count has
    grown by a tenth, so the bookkeeping stays linear in the number of samples."""

    def __init__(self, spec: MeasureSpec) -> None:
        self.started = time.perf_counter()
        self.min_time_s, self.max_time_s = spec.min_time_s, spec.max_time_s
        self.target_cv, self.min_samples = spec.target_cv, spec.min_samples
        self.next_check = spec.min_samples

    def __call__(self, samples: list[float]) -> str | None:
        elapsed = time.perf_counter() - self.started
        if elapsed >= self.max_time_s and (len(samples) >= MIN_SAMPLES
                                           or elapsed >= SLOW_CALL_CAP * self.max_time_s):
            return "max_time_s"
        if elapsed >= self.min_time_s and len(samples) >= self.next_check:
            if Stats.of(samples).cv <= self.target_cv:
                return "target_cv"
            self.next_check = len(samples) + max(1, len(samples) // 10)
        return None


def timer_overhead_s(repeats: int = 200) -> float:
    """Median cost of one pair of perf_counter_ns reads, in seconds."""
    costs = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        t1 = time.perf_counter_ns()
        costs.append(t1 - t0)
    costs.sort()
    return max(costs[len(costs) // 2], 1) * 1e-9


def _time_block(fn: Callable[[], Any], number: int) -> float:
    t0 = time.perf_counter_ns()
    for _ in range(number):
        fn()
    return (time.perf_counter_ns() - t0) * 1e-9


def calibrate_block(fn: Callable[[], Any], overhead_s: float) -> int:
    """Smallest power-of-ten block of calls whose time makes the timer's cost negligible."""
    return _calibrate(fn, overhead_s)[0]


def _calibrate(fn: Callable[[], Any], overhead_s: float) -> tuple[int, float]:
    """(block size, seconds the last block of that size took): that block is a sample too."""
    number = 1
    while True:
        taken = _time_block(fn, number)
        if taken <= 0:
            taken = 1e-9
        if overhead_s / taken <= MAX_TIMER_OVERHEAD or number >= 10**7:
            return number, taken
        # Jump straight to the block size the estimate asks for, by powers of ten.
        needed = overhead_s / MAX_TIMER_OVERHEAD / (taken / number)
        while number < needed:
            number *= 10


def _measure_cpu(fn: Callable[[], Any], dev: Device, spec: MeasureSpec) -> Measurement:
    warm_start = time.perf_counter()
    fn()
    while time.perf_counter() - warm_start < spec.warmup_s:
        fn()
    warm = time.perf_counter() - warm_start
    number, first = _calibrate(fn, timer_overhead_s())
    samples: list[float] = [first / number]  # the calibrating block, timed like the others
    done = _Stopper(spec)
    while True:
        samples.append(_time_block(fn, number) / number)
        stop = done(samples)
        if stop:
            break
    return Measurement(
        device=dev.name, completion_s=tuple(samples), spec=spec, calls_per_sample=number,
        warmup_s=warm, total_s=time.perf_counter() - done.started, stop=stop,
    )


def _measure_accelerator(fn: Callable[[], Any], dev: Device, spec: MeasureSpec) -> Measurement:
    # Warm up: first calls pay for allocator growth, kernel loading and page faults.
    warm_start = time.perf_counter()
    fn()
    synchronize(dev)
    while time.perf_counter() - warm_start < spec.warmup_s:
        fn()
        synchronize(dev)
    warm = time.perf_counter() - warm_start

    stream = current_stream(dev)
    batch, clock = spec.batch, spec.clock
    starts = [new_event(dev) for _ in range(batch)]
    ends = [new_event(dev) for _ in range(batch)]
    guard = new_event(dev, timing=False)
    # Device time needs an event batch only when the figure is read from it: completion and
    # enqueue come from the host batch, and the held batch would only cost time there.
    events = (clock or "device_s") == "device_s"
    hold_s = 0.0
    ev_batch = batch
    if events and can_hold_stream(dev):
        # How long the host takes to queue one call with its two event records: the spin that
        # holds the stream while a batch is queued must outlast a batch of them.
        t0 = time.perf_counter()
        starts[0].record(stream)
        fn()
        ends[0].record(stream)
        enqueue_one = time.perf_counter() - t0
        synchronize(dev)
        if not waits_for_itself(fn, dev, enqueue_one):
            # a batch the longest hold cannot cover is made shorter, not held longer
            ev_batch = max(1, min(batch, int(MAX_HOLD_S / (2 * enqueue_one + 1e-9))))
            hold_s = min(MAX_HOLD_S, 2 * ev_batch * enqueue_one + 1e-4)

    device_s: list[float] = []
    completion_s: list[float] = []
    enqueue_s: list[float] = []
    watched = {"device_s": device_s, "completion_s": completion_s, "enqueue_s": enqueue_s}[
        clock or "device_s"]
    done = _Stopper(spec)
    perf = time.perf_counter
    held = redone = unheld = 0
    while True:
        if events:
            # Event batch: behind a spin, calls queued back to back, one synchronise at the end.
            for attempt in range(MAX_REDO + 1):
                on_hold = hold_stream(dev, hold_s)
                if on_hold:
                    guard.record(stream)  # completes when the spin does
                for i in range(ev_batch):
                    starts[i].record(stream)
                    fn()
                    ends[i].record(stream)
                early = on_hold and guard.query()
                synchronize(dev)
                if not early:
                    held += on_hold
                    break
                # The spin ended before the batch was queued: the clock rose since the spin
                # was calibrated, or the host was slow. Recalibrate, hold longer, redo.
                if attempt == MAX_REDO:
                    unheld += 1
                    break
                redone += 1
                calibrate_spin(dev)
                hold_s = min(MAX_HOLD_S, 2 * hold_s)
            device_s.extend(starts[i].elapsed_time(ends[i]) * 1e-3 for i in range(ev_batch))
        # Host batch: each call from an idle device; synchronise before reading the clock.
        for _ in range(batch):
            t0 = perf()
            fn()
            t1 = perf()
            synchronize(dev)
            t2 = perf()
            enqueue_s.append(t1 - t0)
            completion_s.append(t2 - t0)
        stop = done(watched)
        if stop:
            break
    extra = {"stream_hold": bool(held) and not unheld, "redone_batches": redone}
    if unheld:
        extra["unheld_batches"] = unheld
    return Measurement(
        device=dev.name, completion_s=tuple(completion_s), device_s=tuple(device_s),
        enqueue_s=tuple(enqueue_s), spec=spec, calls_per_sample=1, warmup_s=warm,
        total_s=time.perf_counter() - done.started, stop=stop, extra=extra,
    )


def waits_for_itself(fn: Callable[[], Any], dev: Device, enqueue_s: float) -> bool:
    """Whether ``fn`` returns only once the device has caught up with it (a blocking copy to
    pageable memory, say): queued behind a spin it then waits the spin out, so holding the
    stream for it costs the spin and gains nothing. Asked twice, both must agree."""
    probe_s = max(0.005, 4 * enqueue_s)
    for _ in range(2):
        hold_stream(dev, probe_s)
        t0 = time.perf_counter()
        fn()
        taken = time.perf_counter() - t0
        synchronize(dev)
        if taken < enqueue_s + 0.5 * probe_s:
            return False
    return True

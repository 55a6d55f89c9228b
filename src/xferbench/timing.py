"""measure(): the one place that times anything, on the CPU or an accelerator.

On an accelerator a call has three clocks:
  * device time, from timing events (``device_s``). The calls of a batch are queued back to
    back behind a spin that holds the stream until the host has queued them all
    (nvbandwidth's blocking kernel), so the host's launch time does not show as device time.
    A hold covers at most half the operations a stream's launch queue holds (measured once:
    ``event_batches.max_queued_ops``; past it the host blocks, the spin ends early and the
    device runs at the host's pace): the batch is sized from ``spec.ops_per_call``, and a
    batch whose hold still ends early is redone once after recalibrating the spin, then made
    smaller, never held longer.
    A call that cannot be held even alone is read on the completion clock instead, and says
    so: no figure stored as device time is a host rate. Calls too short for one pair of
    events to resolve (under RESOLVE_S) are timed in batches, from the first start event to
    the last end event over the calls. Each held batch reads the SM clock and throttle
    reasons while it runs; a batch taken on a throttled device or, for work that follows the
    SM clock (``spec.sm_clocked``; a copy does not), below 75% of the maximum clock is
    discarded and counted (nvbench's rule). A call that waits for the device itself
    (a blocking copy) gets no hold: its device time includes the host and is labelled so.
  * completion time: host clock from the call until its device work is done, read after a
    synchronise, each call starting from an idle device (what a user waits for);
  * enqueue time: how long the call held the Python thread (what non_blocking gives back).
With no clock named in the spec, event and host batches alternate and all three are kept,
the figure read from device time; a named clock samples that clock's batches alone.

On the CPU the host clock (perf_counter_ns) times blocks of calls, the block size chosen so
that the timer's own cost stays under 0.01% of a sample (as torch.utils.benchmark's
blocked_autorange). A ``setup`` callable makes every sample one call, with ``setup`` run
before it outside the timed region (as asv's and timeit's setup).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from .devices import Device, resolve_device, synchronize
from .errors import XferbenchError
from .event_batches import EventSampler
from .measurement import Measurement, Stats
from .spec import DEFAULT_SPEC, MIN_SAMPLES, MeasureSpec

#: Timer overhead may cost at most this share of one CPU sample, as in blocked_autorange. The
#: blocks are then as long as its, which matters on a busy machine: the median of short
#: blocks skips the slowed ones, while that of long blocks averages them in.
MAX_TIMER_OVERHEAD = 1e-4

#: A call slower than its budget allows is still sampled MIN_SAMPLES times (a spread of one
#: sample is no spread), up to SLOW_CALL_CAP times the budget.
SLOW_CALL_CAP = 5

#: Seconds this process has spent inside measure() (warm-up, planning, sampling), for the
#: suite's cost accounting (``measuring_s``): what a combination spends beside it is its work.
_MEASURING_S = [0.0]


def measuring_s() -> float:
    """Seconds this process has spent inside ``measure()`` so far."""
    return _MEASURING_S[0]


def measure(fn: Callable[[], Any], spec: MeasureSpec | None = None, *,
            device: str | Device = "auto", setup: Callable[[], Any] | None = None,
            behind: Callable[[], Any] | None = None, **changes: Any) -> Measurement:
    """Time ``fn`` on ``device`` as ``spec`` says and return its raw samples as a Measurement.

    ``fn`` takes no arguments and queues its work; it must not synchronise itself (measure
    does, before reading any wall clock that follows device work). ``spec`` (default:
    DEFAULT_SPEC) holds the label, bytes per call, clock and budgets; keyword ``changes``
    replace its fields (``measure(fn, device="cuda", nbytes=n)``). Sampling stops when the
    IQR of the figure's clock is at most ``spec.target_iqr`` of its median after
    ``spec.min_time_s`` and ``spec.min_samples`` samples, or at ``spec.max_time_s``; a
    measurement that stopped noisy says so in its warnings. ``setup`` runs before every timed
    call, outside the timed region (each sample is then one call; on an accelerator it needs
    a host clock). ``behind`` queues device work before every call, after ``setup``'s
    synchronise and outside the timed region, and is not waited for: each call then starts
    behind it, as a copy issued behind a step's queued kernels does (a host clock on an
    accelerator). Quick mode is the caller's to resolve (``spec.for_quick()``): measure
    reads no environment.
    """
    started = time.perf_counter()
    try:
        return _measure(fn, spec, device, _Before(setup, behind), changes)
    finally:
        _MEASURING_S[0] += time.perf_counter() - started


class _Before:
    """What runs before every timed call, outside the timed region: ``setup`` (then a
    synchronise, so the call starts from an idle device), then ``behind`` (device work queued
    and not waited for, so the call starts behind it)."""

    def __init__(self, setup: Callable[[], Any] | None,
                 behind: Callable[[], Any] | None) -> None:
        self.setup, self.behind = setup, behind

    def __bool__(self) -> bool:
        return self.setup is not None or self.behind is not None

    def __call__(self, dev: Device) -> None:
        if self.setup is not None:
            self.setup()
            synchronize(dev)
        if self.behind is not None:
            self.behind()


def _measure(fn: Callable[[], Any], spec: MeasureSpec | None, device: str | Device,
             before: _Before, changes: dict[str, Any]) -> Measurement:
    spec = (spec or DEFAULT_SPEC).replace(**changes) if changes else (spec or DEFAULT_SPEC)
    dev = resolve_device(device)
    if spec.clock not in (None, "completion_s") and not dev.is_accelerator:
        raise XferbenchError(
            f"clock {spec.clock!r} needs an accelerator: the CPU has completion_s")
    if before and dev.is_accelerator and spec.clock in (None, "device_s"):
        what = "a setup" if before.setup is not None else "work queued"
        raise XferbenchError(
            f"{what} before every call needs a host clock on an accelerator: give "
            "clock='completion_s' (event batches queue calls back to back)")
    if before.behind is not None and not dev.is_accelerator:
        raise XferbenchError("work queued before every call needs an accelerator: the CPU "
                             "queues nothing")
    if dev.is_accelerator:
        return _measure_accelerator(fn, dev, spec, before)
    return _measure_cpu(fn, dev, spec, before)


class _Stopper:
    """Decides when sampling ends; the noise is re-checked only after the sample count has
    grown by a tenth, so the bookkeeping stays linear in the number of samples."""

    def __init__(self, spec: MeasureSpec) -> None:
        self.started = time.perf_counter()
        self.spec = spec
        self.next_check = spec.min_samples

    def spent(self, samples: int) -> bool:
        """Whether the budget is spent with ``samples`` samples taken: at max_time_s once
        there are MIN_SAMPLES, at SLOW_CALL_CAP times it in any case."""
        elapsed = time.perf_counter() - self.started
        return elapsed >= self.spec.max_time_s and (
            samples >= MIN_SAMPLES or elapsed >= SLOW_CALL_CAP * self.spec.max_time_s)

    def __call__(self, samples: list[float], settle: bool = True) -> str | None:
        """Why sampling ends now, or None. ``settle`` False: the samples may not end it on
        their noise (they were all taken on a slowed device), only on the budget."""
        elapsed = time.perf_counter() - self.started
        spec = self.spec
        if self.spent(len(samples)):
            return "max_time_s"
        if settle and elapsed >= spec.min_time_s and len(samples) >= self.next_check:
            if Stats.of(samples).iqr_rel <= spec.target_iqr:
                return "target_iqr"
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
    repeat = itertools.repeat(None, number)  # cheaper per call than range()
    t0 = time.perf_counter_ns()
    for _ in repeat:
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


def _warm_up(fn: Callable[[], Any], dev: Device, spec: MeasureSpec, before: _Before) -> float:
    """Run ``fn`` for ``spec.warmup_s`` (at least once): first calls pay for allocator
    growth, kernel loading and page faults. Returns the seconds it took."""
    start = time.perf_counter()
    while True:
        before(dev)
        fn()
        synchronize(dev)
        if time.perf_counter() - start >= spec.warmup_s:
            return time.perf_counter() - start


def _measure_cpu(fn: Callable[[], Any], dev: Device, spec: MeasureSpec,
                 before: _Before) -> Measurement:
    warm = _warm_up(fn, dev, spec, before)
    if before:
        number, samples = 1, []
    else:
        number, first = _calibrate(fn, timer_overhead_s())
        samples = [first / number]  # the calibrating block, timed like the others
    done = _Stopper(spec)
    while True:
        before(dev)
        samples.append(_time_block(fn, number) / number)
        stop = done(samples)
        if stop:
            break
    return Measurement(
        device=dev.name, completion_s=tuple(samples), spec=spec, calls_per_sample=number,
        warmup_s=warm, total_s=time.perf_counter() - done.started, stop=stop,
    )


def _host_batch(fn: Callable[[], Any], dev: Device, n: int, before: _Before,
                completion_s: list[float], enqueue_s: list[float],
                over: Callable[[int], bool] | None = None) -> None:
    """``n`` calls, each from an idle device (or behind the work ``before`` queues):
    synchronise before reading the clock. ``over``
    (the samples so far) ends the batch early once the budget is spent: a batch of slow
    calls (cold pinning, say) never outruns max_time_s by a whole batch."""
    perf = time.perf_counter
    for _ in range(n):
        if over is not None and over(len(completion_s)):
            return
        before(dev)
        t0 = perf()
        fn()
        t1 = perf()
        synchronize(dev)
        t2 = perf()
        enqueue_s.append(t1 - t0)
        completion_s.append(t2 - t0)


def _measure_accelerator(fn: Callable[[], Any], dev: Device, spec: MeasureSpec,
                         before: _Before) -> Measurement:
    warm = _warm_up(fn, dev, spec, before)
    events = EventSampler(fn, dev, spec) if spec.clock in (None, "device_s") else None
    if events is not None and events.unavailable:
        spec = spec.replace(clock="completion_s")  # read on a named host clock: see extra
    host = spec.clock != "device_s"
    completion_s: list[float] = []
    enqueue_s: list[float] = []
    done = _Stopper(spec)
    while True:
        if events is not None and not events.unavailable:
            events.batch()
            if events.unavailable:  # even one call could not be held: the host clock reads
                spec, host = spec.replace(clock="completion_s"), True
                done.spec = spec
        if host:  # a host clock alone is the figure's: its batch ends at the budget
            _host_batch(fn, dev, spec.batch, before, completion_s, enqueue_s,
                        done.spent if spec.clock in ("completion_s", "enqueue_s") else None)
        on_events = spec.clock in (None, "device_s")
        watched = events.watched() if on_events else (  # type: ignore[union-attr]
            enqueue_s if spec.clock == "enqueue_s" else completion_s)
        stop = done(watched, settle=not on_events or bool(events.samples))  # type: ignore[union-attr]
        if stop:
            break
    device_s = () if events is None else events.result()
    return Measurement(
        device=dev.name, completion_s=tuple(completion_s), device_s=device_s,
        enqueue_s=tuple(enqueue_s), spec=spec, calls_per_sample=1, warmup_s=warm,
        total_s=time.perf_counter() - done.started, stop=stop,
        extra=events.extra() if events is not None else {},
    )

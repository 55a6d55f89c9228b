"""Event batches: device time of a call, read from timing events around calls queued back to
back behind a stream hold (see timing.measure for the whole method). One EventSampler per
measurement decides how many calls go behind one hold (the launch queue and the longest hold
bound it), whether a sample is one call or a whole batch (calls too short for one event pair),
and keeps the count of every batch redone, shrunk or discarded (a throttled device)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

from .devices import Device, current_stream, new_event, synchronize
from .spec import MeasureSpec
from .stream_hold import (
    MAX_HOLD_S,
    calibrate_spin,
    can_hold_stream,
    hold_stream,
    launch_queue_depth,
)
from .telemetry import clock_reader

#: Operations queued behind one stream hold, at most, where the launch queue's depth is not
#: known: half of the 1,024 a CUDA stream is documented to accept before the host blocks in
#: the launch call (the spin, the guard event and each call's two events count too).
MAX_QUEUED_OPS = 512
#: The launch queue's depth handed down by ``xferbench run`` (measured once, in its metadata).
QUEUE_DEPTH_VAR = "XFERBENCH_LAUNCH_QUEUE_DEPTH"
#: The launch queue's depth per device in this process (None: it could not be measured).
_DEPTHS: dict[str, int | None] = {}


def max_queued_ops(dev: Device) -> int:
    """Operations one stream hold may cover on ``dev``: half its launch queue's depth, as
    QUEUE_DEPTH_VAR hands it down or ``launch_queue_depth`` measures it once per process;
    MAX_QUEUED_OPS where neither can say."""
    if dev.name not in _DEPTHS:
        given = os.environ.get(QUEUE_DEPTH_VAR, "").strip()
        _DEPTHS[dev.name] = int(given) if given.isdigit() and int(given) > 0 else \
            launch_queue_depth(dev)
    depth = _DEPTHS[dev.name]
    return depth // 2 if depth else MAX_QUEUED_OPS

#: CUDA's event resolution is about half a microsecond: calls shorter than RESOLVE_S (100
#: times that) are timed as batches, first start event to last end event over the calls.
EVENT_RESOLUTION_S = 0.5e-6
RESOLVE_S = 100 * EVENT_RESOLUTION_S

#: A batch whose spin ran short (the SM clock rose after calibration) recalibrates the spin
#: and is redone at most this often per measurement; after that, early holds shrink the batch.
MAX_RECALIBRATIONS = 3
#: A single call whose hold still ends early (a loaded host queues it slowly) is held this
#: many times longer at each try, up to MAX_HOLD_S: with one call the launch queue cannot be
#: full, so a longer hold costs spin time only. Past MAX_HOLD_S it cannot be held.
LONGER_HOLD = 4

class EventSampler:
    """Event batches of one measurement: how many calls go behind one hold, whether a sample
    is one call or a whole batch, and the count of every batch redone, shrunk or discarded.
    ``unavailable`` holds the reason device time cannot be read (the call cannot be held)."""

    def __init__(self, fn: Callable[[], Any], dev: Device, spec: MeasureSpec) -> None:
        self.fn, self.dev, self.spec = fn, dev, spec
        self.stream = current_stream(dev)
        self.clock = clock_reader(dev)
        self.samples: list[float] = []
        #: per kept sample: the calls it spans and the SM clock (MHz) its batch ran at
        self.spans: list[tuple[int, float | None]] = []
        self.unavailable: str | None = None
        self.mode = "unheld"  # "held", "unheld", "host-inclusive"
        self.batched = False
        self.recalibrations = 0
        self.discarded: list[float] = []
        self.discarded_spans: list[tuple[int, float | None]] = []
        self.counts = {"held": 0, "redone": 0, "shrunk": 0, "lengthened": 0, "unheld": 0,
                       "discarded": 0}
        self.slowed: list[str] = []
        self.calls, self.hold_s, self.enqueue_one = spec.batch, 0.0, 0.0
        self.max_ops = MAX_QUEUED_OPS
        self._events(spec.batch)
        if can_hold_stream(dev):
            self.max_ops = max_queued_ops(dev)
            self._plan_hold()

    def _events(self, n: int) -> None:
        self.starts = [new_event(self.dev) for _ in range(n)]
        self.ends = [new_event(self.dev) for _ in range(n)]
        self.guard = new_event(self.dev, timing=False)

    def _plan_hold(self) -> None:
        """Time one call's queueing, then size the batch to the launch queue and the longest
        hold; a call that waits for the device itself is not held."""
        t0 = time.perf_counter()
        self.starts[0].record(self.stream)
        self.fn()
        self.ends[0].record(self.stream)
        self.enqueue_one = time.perf_counter() - t0
        synchronize(self.dev)
        by_queue = (self.max_ops - 2) // (self.spec.ops_per_call + 2)
        if by_queue < 1:  # known before any probe: one call alone overfills a hold
            self._resize(0)
            return
        if waits_for_itself(self.fn, self.dev, self.enqueue_one):
            self.mode = "host-inclusive"
            return
        by_hold = int(MAX_HOLD_S / (2 * self.enqueue_one + 1e-9))
        self.mode = "held"
        self._resize(min(self.spec.batch, by_queue, by_hold))

    def _resize(self, calls: int, queue_s: float | None = None) -> None:
        """Hold ``calls`` calls per batch, for twice their queueing time; none: unavailable
        (``queue_s``: the last try's queueing, where a hold of MAX_HOLD_S still ended early)."""
        if calls < 1:
            if queue_s is not None:
                held = (f"in {queue_s * 1e3:.3g} ms behind a hold of {MAX_HOLD_S:g} s that "
                        "still ended first (a host slowed by other work, or a spin that ran "
                        "short)")
            else:
                held = (f"in {self.enqueue_one * 1e3:.3g} ms, beyond what one stream hold "
                        f"covers (at most {self.max_ops} operations, {MAX_HOLD_S:g} s)")
            self.unavailable = (
                f"one call could not be held: it queues {self.spec.ops_per_call} operation(s) "
                f"{held}; read on the completion clock instead")
            return
        if calls > len(self.starts):
            self._events(calls)
        self.calls = calls
        self.hold_s = min(MAX_HOLD_S, 2 * calls * self.enqueue_one + 1e-4)

    def batch(self) -> None:
        """One event batch: queued behind the hold where there is one, checked, its samples
        kept unless the hold failed or the device was slowed while it ran."""
        while True:
            on_hold = self.mode == "held" and hold_stream(self.dev, self.hold_s)
            t0 = time.perf_counter()
            if on_hold:
                self.guard.record(self.stream)  # completes when the spin does
            for i in range(self.calls):
                self.starts[i].record(self.stream)
                self.fn()
                self.ends[i].record(self.stream)
            queue_s = time.perf_counter() - t0
            early = on_hold and self.guard.query()  # first: nothing else inside the hold
            # telemetry (NVML's two calls) after the hold's window, while the batch runs: a
            # slow read inside it would make every batch look early
            state = self.clock.read() if on_hold else None
            synchronize(self.dev)
            if not early:
                break
            if not self._after_early(queue_s):
                return
        self.counts["held" if on_hold else "unheld"] += 1
        self._keep(state)

    def _after_early(self, queue_s: float) -> bool:
        """The hold ended before the batch was queued. Queued quickly, the spin itself ran
        short (the clock rose since it was calibrated): recalibrate and redo, a few times at
        most. Queued slowly (the host blocked on a full launch queue, or is slow): halve the
        batch, never hold a batch longer. At one call the queue cannot be full, so a slow host
        (a loaded machine) gets a longer hold, up to MAX_HOLD_S; a call that then waits the
        whole spin out waits for the device itself (a probe that missed it): it is timed
        without a hold, its device time labelled as including the host. False when even one
        call held that long, after any recalibration left, cannot be held: the measurement is
        then read on the completion clock."""
        self.counts["redone"] += 1
        if queue_s < 0.5 * self.hold_s and self.recalibrations < MAX_RECALIBRATIONS:
            calibrate_spin(self.dev)
            self.recalibrations += 1
            return True
        if self.calls > 1:
            self.counts["shrunk"] += 1
            self._resize(self.calls // 2)
            return True
        if self.hold_s < MAX_HOLD_S:
            self.counts["lengthened"] += 1
            self.hold_s = min(MAX_HOLD_S, self.hold_s * LONGER_HOLD)
            return True
        if queue_s >= 0.9 * self.hold_s:  # it waited the whole spin out: it waits for itself
            self.mode = "host-inclusive"  # as waits_for_itself would have said: no hold
            self.calls = min(self.spec.batch, len(self.starts))
            return True
        if self.recalibrations < MAX_RECALIBRATIONS:  # the longest spin may itself have run
            calibrate_spin(self.dev)  # short (a clock that rose), or the host stalled once:
            self.recalibrations += 1  # recalibrated and tried again before giving it up
            return True
        self._resize(0, queue_s)
        return False

    def _keep(self, state: Any) -> None:
        calls = [self.starts[i].elapsed_time(self.ends[i]) * 1e-3 for i in range(self.calls)]
        if (not self.batched and self.mode == "held"
                and sorted(calls)[len(calls) // 2] < RESOLVE_S):
            self._batch_short_calls(calls)
            return
        if self.batched:
            span = self.starts[0].elapsed_time(self.ends[self.calls - 1]) * 1e-3
            calls = [span / self.calls]
        spans = [(self.calls if self.batched else 1, state.sm_mhz if state else None)] * \
            len(calls)
        why = state.slowed_for(self.spec.sm_clocked) if state is not None else None
        if why:
            self.counts["discarded"] += 1
            self.slowed.append(why)
            self.discarded.extend(calls)
            self.discarded_spans.extend(spans)
        else:
            self.samples.extend(calls)
            self.spans.extend(spans)

    def watched(self) -> list[float]:
        """What the stop rule watches: the kept samples, or the discarded ones while none is
        kept (so that a device slowed throughout stops at its budget, not on their noise)."""
        return self.samples or self.discarded

    def result(self) -> tuple[float, ...]:
        """The device-time samples; where every batch was discarded, the discarded ones (the
        measurement then warns that all of them were taken on a slowed device)."""
        if self.unavailable:
            return ()
        return tuple(self.samples or self.discarded)

    def _batch_short_calls(self, calls: list[float]) -> None:
        """Calls too short for one event pair: from now on one sample per batch, the batch
        made long enough (RESOLVE_S) where the queue and the hold allow. The per-call samples
        taken so far are dropped: they are not of the same kind."""
        self.batched = True
        self.samples.clear()
        self.spans.clear()
        per_call = max(sum(calls) / len(calls), EVENT_RESOLUTION_S)
        want = math.ceil(RESOLVE_S / per_call)
        by_queue = (self.max_ops - 2) // (self.spec.ops_per_call + 2)
        by_hold = int(MAX_HOLD_S / (2 * self.enqueue_one + 1e-9))
        self._resize(max(self.calls, min(want, by_queue, by_hold)))

    def extra(self) -> dict[str, Any]:
        """What the batches were: the device clock's kind and every count, for the record."""
        kind = self.unavailable and "unavailable" or self.mode + (", batched" if self.batched
                                                                  else "")
        out: dict[str, Any] = {
            "device_clock": kind, "stream_hold": self.counts["held"] > 0 and not
            self.counts["unheld"], "redone_batches": self.counts["redone"],
            "calls_per_batch": self.calls,
        }
        if self.unavailable:
            out["device_clock_unavailable"] = self.unavailable
        for key in ("held", "shrunk", "lengthened", "unheld", "discarded"):
            if self.counts[key]:
                out[f"{key}_batches"] = self.counts[key]
        if self.slowed:
            out["slowed"] = sorted(set(self.slowed))
            out["all_discarded"] = not self.samples
        if self.clock.source is None and self.dev.is_accelerator:
            out["clock_checked"] = f"no: {self.clock.why_not}"
        spans = self.spans if self.samples else self.discarded_spans  # as result() chooses
        if spans and not self.unavailable:
            # asv's "number": the calls each sample averages (at least, where batches shrank)
            out["device_calls_per_sample"] = min(calls for calls, _mhz in spans)
            if all(mhz is not None for _calls, mhz in spans):
                out["sm_mhz"] = tuple(mhz for _calls, mhz in spans)
        return out


def waits_for_itself(fn: Callable[[], Any], dev: Device, enqueue_s: float) -> bool:
    """Whether ``fn`` returns only once the device has caught up with it (a blocking copy to
    pageable memory, say): queued behind a spin it then waits the spin out, so holding the
    stream for it costs the spin and gains nothing. Asked twice, both must agree. The probe's
    spin is capped at MAX_HOLD_S, as every hold is: a call that waits compares with the spin
    it really waited out, not with one it was never given."""
    probe_s = min(MAX_HOLD_S, max(0.005, 4 * enqueue_s))
    for _ in range(2):
        hold_stream(dev, probe_s)
        t0 = time.perf_counter()
        fn()
        taken = time.perf_counter() - t0
        synchronize(dev)
        if taken < enqueue_s + 0.5 * probe_s:
            return False
    return True

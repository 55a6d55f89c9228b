"""measure()'s accelerator path, run on the CPU against a scripted device layer: every held
batch is checked (redone after recalibrating when the spin ran short, made smaller when the
host took longer than the hold, never held longer), a call that cannot be held even alone is
read on the completion clock and says so, the launch queue bounds the calls behind one hold,
short calls are timed as batches, batches taken on a slowed device are discarded and counted,
no event batch runs for figures read on the host, and no hold for calls that wait for the
device themselves. The real device layer is exercised by the gpu tests (and on tests/emu)."""

from __future__ import annotations

import time
import types

import pytest

from xferbench import event_batches as eb
from xferbench import timing
from xferbench.devices import Device
from xferbench.telemetry import ClockState

# alone, after the others (scripts/test): it asserts timing on this machine's clocks
pytestmark = pytest.mark.serial

CUDA = Device("cuda", 0)


class FakeClock:
    """A scripted telemetry reader: ``states`` consumed per read, the last one repeated."""

    def __init__(self, states: list[ClockState | None]) -> None:
        self.states = list(states)
        self.source = object() if states else None
        self.why_not = "scripted: no telemetry"
        self.reads = 0

    def read(self) -> ClockState | None:
        self.reads += 1
        return self.states.pop(0) if len(self.states) > 1 else (self.states or [None])[0]


class FakeDevice:
    """What measure() asks of the device layer, with a scripted answer to 'did the spin that
    held the stream end before the batch was queued?' (the guard event's query()), and
    device times of ``call_s`` per call where given."""

    def __init__(self, early: list[bool], can_hold: bool = True, call_s: float | None = None,
                 clock: list[ClockState | None] | None = None) -> None:
        self.early = list(early)  # consumed per held batch; False once empty
        self.can_hold = can_hold
        self.call_s = call_s
        self.clock = FakeClock(clock or [])
        self.holds: list[float] = []
        self.calibrations = 0
        self.records = 0
        self.pending_hold = 0.0  # seconds a call queued now would wait (a self-waiting call)
        self.device_now = 0.0  # the scripted device clock, advanced one call per event pair
        self.parity = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeDevice:
        fake = self

        class Event:
            def __init__(self, timing_flag: bool = True) -> None:
                self.t = 0.0
                self.timing = timing_flag

            def record(self, stream=None) -> None:
                fake.records += 1
                if fake.call_s is None:
                    self.t = time.perf_counter()
                elif self.timing:  # starts and ends alternate: an end is one call later
                    fake.parity ^= 1
                    if not fake.parity:
                        fake.device_now += fake.call_s
                    self.t = fake.device_now

            def query(self) -> bool:
                return fake.early.pop(0) if fake.early else False

            def elapsed_time(self, end) -> float:
                return max(end.t - self.t, 1e-9) * 1e3

        def hold_stream(dev, seconds):
            if seconds <= 0 or not fake.can_hold:
                return False
            fake.holds.append(seconds)
            fake.pending_hold = seconds
            return True

        def synchronize(dev):
            fake.pending_hold = 0.0

        def calibrate_spin(dev):
            fake.calibrations += 1
            return 1e9

        monkeypatch.setattr(eb, "new_event", lambda dev, timing=True: Event(timing))
        monkeypatch.setattr(eb, "current_stream", lambda dev: "stream")
        monkeypatch.setattr(eb, "hold_stream", hold_stream)
        monkeypatch.setattr(eb, "can_hold_stream", lambda dev: fake.can_hold)
        monkeypatch.setattr(eb, "calibrate_spin", calibrate_spin)
        monkeypatch.setattr(eb, "clock_reader", lambda dev: fake.clock)
        monkeypatch.setattr(eb, "launch_queue_depth", lambda dev: None)  # MAX_QUEUED_OPS
        monkeypatch.setattr(eb, "_DEPTHS", {})
        monkeypatch.delenv(eb.QUEUE_DEPTH_VAR, raising=False)
        for module in (eb, timing):
            monkeypatch.setattr(module, "synchronize", synchronize)
        return self


BUDGET = {"warmup_s": 0.0, "min_time_s": 0.001, "max_time_s": 0.05, "min_samples": 10,
          "batch": 10}
#: Calls the scripted device takes long enough for one event pair to resolve.
RESOLVED = 2 * eb.RESOLVE_S


def _call() -> None:
    pass


def test_a_spin_that_ran_short_is_recalibrated_and_the_batch_redone(monkeypatch):
    fake = FakeDevice(early=[True], call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.extra["redone_batches"] == 1 and "shrunk_batches" not in m.extra
    assert fake.calibrations == 1
    # holds: the waits_for_itself probe, the batch that ended early, its redo: held as long
    assert fake.holds[2] == pytest.approx(fake.holds[1])
    assert m.extra["stream_hold"] is True and m.extra["device_clock"] == "held"
    # the redone batch's events are not samples: ten per kept batch
    assert len(m.device_s) % 10 == 0 and m.warnings == ()


def test_a_host_slower_than_the_hold_shrinks_the_batch_and_never_holds_longer(monkeypatch):
    fake = FakeDevice(early=[True, True], call_s=RESOLVED).install(monkeypatch)
    # the host's clock as the event batches read it: virtual, so a loaded machine cannot
    # make the planned call look slow (then the batch would fit and nothing would shrink)
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(eb, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    calls = []

    def slower_than_planned() -> None:  # warm-up, plan, probe: 0.3 ms; the batches: 6 ms
        calls.append(1)
        clock.now += 0.006 if len(calls) > 3 else 0.0003

    m = timing.measure(slower_than_planned, device=CUDA, **{**BUDGET, "max_time_s": 0.3,
                                                             "min_samples": 3})
    assert fake.calibrations == 0  # queued slowly: no spin to blame
    assert m.extra["shrunk_batches"] == 2 and m.extra["calls_per_batch"] == 2  # 10 -> 5 -> 2
    held = fake.holds[1:]
    assert max(held) <= held[0] and held[-1] < held[0]
    assert m.extra["device_clock"] == "held" and m.primary_clock == "device_s"


def test_a_call_that_cannot_be_held_alone_is_read_on_the_completion_clock(monkeypatch):
    fake = FakeDevice(early=[True] * 50, call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert fake.calibrations == eb.MAX_RECALIBRATIONS
    assert m.device_s == () and m.primary_clock == "completion_s" and len(m.completion_s) >= 10
    assert m.extra["device_clock"] == "unavailable"
    assert any(w.startswith("no device time: one call could not be held") for w in m.warnings)


def test_one_call_is_held_longer_before_its_device_time_is_given_up(monkeypatch):
    """A batch of one call cannot fill the launch queue: before device time is given up, its
    hold grows (x4 a try) to MAX_HOLD_S; only a hold that long ending first gives it up."""
    fake = FakeDevice(early=[True] * 50, call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert max(fake.holds) == pytest.approx(eb.MAX_HOLD_S)
    assert m.extra["lengthened_batches"] >= 3 and m.extra["calls_per_batch"] == 1
    assert f"behind a hold of {eb.MAX_HOLD_S:g} s that still ended first" in \
        m.extra["device_clock_unavailable"]
    # held long enough once, it keeps device time: two early holds, then a held one
    fake = FakeDevice(early=[True] * 8, call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.device_s and m.extra["device_clock"] == "held", m.extra


def test_the_longest_hold_ending_first_is_recalibrated_before_device_time_is_given_up(
        monkeypatch):
    """One call queued slowly (over half the longest hold, not all of it) behind a hold of
    MAX_HOLD_S that still ends first: the spin may have run short of its time, so it is
    recalibrated and tried again, MAX_RECALIBRATIONS times at most, before device time is
    given up; one hold that then lasts keeps it."""
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(eb, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))

    def slow_to_queue() -> None:  # warm-up, plan and probe: quick; then 0.11 s a call
        calls.append(1)
        clock.now += 0.11 if len(calls) > 3 else 0.0003

    calls: list[int] = []
    fake = FakeDevice(early=[True] * 40, call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(slow_to_queue, device=CUDA, **{**BUDGET, "max_time_s": 0.3,
                                                       "min_samples": 3})
    assert fake.calibrations == eb.MAX_RECALIBRATIONS and m.device_s == ()
    assert max(fake.holds) == pytest.approx(eb.MAX_HOLD_S)
    assert "still ended first" in m.extra["device_clock_unavailable"]
    early_before_giving_up = 40 - len(fake.early)
    calls = []
    fake = FakeDevice(early=[True] * (early_before_giving_up - eb.MAX_RECALIBRATIONS),
                      call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(slow_to_queue, device=CUDA, **{**BUDGET, "max_time_s": 0.3,
                                                       "min_samples": 3})
    assert fake.calibrations == 1 and m.device_s and m.extra["device_clock"] == "held", m.extra


def test_a_call_that_waits_the_whole_spin_out_is_timed_without_a_hold(monkeypatch):
    """A call that waits for the device itself, which the probe missed, waits out every hold
    queued before it: held for MAX_HOLD_S it still takes the whole spin. It is then what
    waits_for_itself would have said, timed without a hold (device time labelled as
    including the host), not given up for the completion clock."""
    fake = FakeDevice(early=[True] * 50, call_s=RESOLVED).install(monkeypatch)
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(eb, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    calls = []

    def waits() -> None:  # warm-up, plan and probe: quick; then each waits out the hold
        calls.append(1)
        clock.now += max(fake.pending_hold, 0.0003) if len(calls) > 3 else 0.0003

    m = timing.measure(waits, device=CUDA, **{**BUDGET, "max_time_s": 0.3, "min_samples": 3})
    assert m.extra["device_clock"] == "host-inclusive" and m.device_s, m.extra
    assert "device_clock_unavailable" not in m.extra
    assert max(fake.holds) == pytest.approx(eb.MAX_HOLD_S)  # it was tried at the longest


def test_a_host_batch_of_slow_calls_ends_at_its_budget_not_after_the_whole_batch(monkeypatch):
    """A host batch is spec.batch calls (10); calls of 30 ms (cold pinning, say) made it run
    300 ms past a 50 ms budget. It now stops once the budget is spent and MIN_SAMPLES are in."""
    FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)

    calls = []

    def slow() -> None:
        calls.append(1)
        time.sleep(0.03)

    m = timing.measure(slow, device=CUDA, clock="completion_s", warmup_s=0.0,
                       min_time_s=0.01, max_time_s=0.05, batch=10)
    # counted, not timed: a loaded host only makes each call longer, and so the batch shorter
    assert 3 <= len(m.completion_s) < 10 and len(calls) < 10, (len(m.completion_s), calls)


def test_the_launch_queue_bounds_the_calls_behind_one_hold(monkeypatch):
    fake = FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET, ops_per_call=200)
    # (512 - 2) // (200 + 2): two calls of 200 operations each behind one spin
    assert m.extra["calls_per_batch"] == 2 and len(m.device_s) % 2 == 0
    assert fake.records >= 4


def test_a_call_of_more_operations_than_a_hold_covers_is_never_held(monkeypatch):
    fake = FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET, ops_per_call=1000)
    assert fake.holds == []  # not even a probe: the operation count settles it
    assert m.device_s == () and m.primary_clock == "completion_s"
    assert "1000 operation(s)" in m.extra["device_clock_unavailable"]


def test_calls_too_short_for_an_event_pair_are_timed_as_batches(monkeypatch):
    fake = FakeDevice(early=[], call_s=2e-6).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.extra["device_clock"] == "held, batched"
    # enough calls per batch for the batch to span RESOLVE_S, within the queue bound
    assert m.extra["calls_per_batch"] >= min(eb.RESOLVE_S / 2e-6, 510 // 3)
    assert m.median == pytest.approx(2e-6, rel=0.01)
    # one sample per batch but the probe of waits_for_itself and the first, per-call batch
    assert len(m.device_s) == len(fake.holds) - 2
    # each sample averages the whole batch: filed as that many calls, not as one
    assert m.calls_per_sample_of("device_s") == m.extra["calls_per_batch"] > 1
    assert m.calls_per_sample_of("completion_s") == 1


@pytest.mark.parametrize(("state", "why"), [
    (ClockState(1000.0, 1980.0), "below 75% of its maximum"),
    (ClockState(1980.0, 1980.0, ("thermal",)), "thermal throttling"),
    (ClockState(1900.0, 1980.0, ("power",)), "power throttling"),
])
def test_batches_taken_on_a_slowed_device_are_discarded_and_counted(monkeypatch, state, why):
    fast = ClockState(1980.0, 1980.0)
    fake = FakeDevice(early=[], call_s=RESOLVED, clock=[state, state, fast]).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.extra["discarded_batches"] == 2 and not m.extra["all_discarded"]
    assert len(m.device_s) % 10 == 0 and fake.clock.reads >= 3
    assert any(why in w and "2 event batches discarded" in w for w in m.warnings)


def test_a_device_slowed_throughout_keeps_its_samples_and_says_so(monkeypatch):
    slow = ClockState(800.0, 1980.0)
    FakeDevice(early=[], call_s=RESOLVED, clock=[slow]).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.device_s and m.extra["all_discarded"]
    assert any("none kept: every sample is from a slowed device" in w for w in m.warnings)


@pytest.mark.parametrize("clock", ["completion_s", "enqueue_s"])
def test_a_figure_read_on_the_host_runs_no_event_batch(clock, monkeypatch):
    fake = FakeDevice(early=[]).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, clock=clock, **BUDGET)
    assert m.device_s == () and len(m.completion_s) >= 10
    assert fake.holds == [] and fake.records == 0
    assert m.primary_clock == clock


def test_a_figure_read_on_device_time_runs_no_host_batch(monkeypatch):
    FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, clock="device_s", **BUDGET)
    assert m.completion_s == () and m.enqueue_s == () and len(m.device_s) >= 10


def test_a_call_that_waits_for_the_device_is_not_held_and_is_labelled(monkeypatch):
    fake = FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)

    def waits() -> None:  # a blocking copy: returns once the stream has caught up
        if fake.pending_hold:
            time.sleep(fake.pending_hold)
            fake.pending_hold = 0.0

    m = timing.measure(waits, device=CUDA, **BUDGET)
    assert len(fake.holds) == 2  # the two probes of waits_for_itself, none for the batches
    assert m.extra["device_clock"] == "host-inclusive" and m.extra["stream_hold"] is False
    assert len(m.device_s) >= 10
    assert any("device time includes the host" in w for w in m.warnings)


def test_a_call_that_returns_at_once_is_held(monkeypatch):
    fake = FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.extra["stream_hold"] is True
    assert len(fake.holds) >= 1 + len(m.device_s) // 10  # a probe, then one per batch


def test_without_a_spin_there_is_no_hold_and_no_redo(monkeypatch):
    fake = FakeDevice(early=[True, True], can_hold=False, call_s=RESOLVED).install(monkeypatch)
    m = timing.measure(_call, device=Device("xpu", 0), **BUDGET)
    assert fake.holds == []
    assert m.extra["device_clock"] == "unheld" and m.extra["redone_batches"] == 0
    assert m.extra["clock_checked"].startswith("no:")
    assert len(m.device_s) >= 10
    assert any("without a stream hold" in w for w in m.warnings)


def test_a_batch_longer_than_the_longest_hold_is_split(monkeypatch):
    fake = FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)
    clock = types.SimpleNamespace(now=0.0)  # the host's clock as the event batches read it
    monkeypatch.setattr(eb, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))

    def slow_to_queue() -> None:  # 30 ms of host time per call: 10 calls outlast 0.2 s x 2
        clock.now += 0.03

    m = timing.measure(slow_to_queue, device=CUDA,
                       **{**BUDGET, "max_time_s": 0.2, "min_samples": 3})
    assert max(fake.holds[1:]) <= eb.MAX_HOLD_S
    # int(0.2 s / (2 x 30 ms)) = 3 calls per held batch instead of 10
    assert m.extra["calls_per_batch"] == 3
    assert len(m.device_s) % m.extra["calls_per_batch"] == 0


def test_a_setup_before_every_call_needs_a_host_clock_on_an_accelerator(monkeypatch):
    FakeDevice(early=[]).install(monkeypatch)
    with pytest.raises(timing.XferbenchError, match="needs a host clock"):
        timing.measure(_call, device=CUDA, setup=_call, **BUDGET)
    setups: list[int] = []
    m = timing.measure(_call, device=CUDA, setup=lambda: setups.append(1),
                       clock="completion_s", **BUDGET)
    assert len(setups) >= len(m.completion_s) >= 10


def _blocking_call_of(fake: FakeDevice, clock: types.SimpleNamespace, own_s: float):
    """A blocking call: it waits out the spin queued before it (never longer than a real
    spin, MAX_HOLD_S), then takes ``own_s`` of its own."""
    def blocking() -> None:
        clock.now += min(fake.pending_hold, eb.MAX_HOLD_S) + own_s
        fake.pending_hold = 0.0

    return blocking


def test_a_blocking_call_over_a_tenth_of_a_second_is_found_to_wait_for_itself(monkeypatch):
    """The probe's spin is capped as every hold is: an uncapped probe of 4 x 150 ms asked the
    call to wait 300 ms beyond its own time, longer than the 200 ms spin it could wait out."""
    fake = FakeDevice(early=[]).install(monkeypatch)
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(eb, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    assert eb.waits_for_itself(_blocking_call_of(fake, clock, 0.15), CUDA, 0.15)
    assert fake.holds and max(fake.holds) <= eb.MAX_HOLD_S
    # a call as long that does not wait for the device is still told apart
    assert not eb.waits_for_itself(lambda: setattr(clock, "now", clock.now + 0.15), CUDA, 0.15)


def test_measure_labels_a_slow_blocking_call_host_inclusive_not_unheld(monkeypatch):
    fake = FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)
    clock = types.SimpleNamespace(now=0.0)
    monkeypatch.setattr(eb, "time", types.SimpleNamespace(perf_counter=lambda: clock.now))
    m = timing.measure(_blocking_call_of(fake, clock, 0.15), device=CUDA,
                       **{**BUDGET, "min_samples": 3})
    assert m.extra["device_clock"] == "host-inclusive", m.extra
    assert "device_clock_unavailable" not in m.extra and m.device_s


@pytest.mark.parametrize(("state", "discarded"), [
    (ClockState(345.0, 1980.0), 0),  # an idle SM clock: a copy engine runs at full speed
    (ClockState(1980.0, 1980.0, ("thermal",)), 2),
])
def test_a_copy_is_discarded_on_throttle_reasons_alone_not_on_the_sm_clock(
        monkeypatch, state, discarded):
    fast = ClockState(1980.0, 1980.0)
    FakeDevice(early=[], call_s=RESOLVED, clock=[state, state, fast]).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, sm_clocked=False, **BUDGET)
    assert m.extra.get("discarded_batches", 0) == discarded, m.extra


def test_the_launch_queue_depth_handed_down_sets_how_many_calls_one_hold_covers(monkeypatch):
    """xferbench run measures the depth once and hands it down; half of it bounds a hold:
    at 2,048, (1,024 - 2) // (200 + 2) = 5 calls of 200 operations, not 2."""
    FakeDevice(early=[], call_s=RESOLVED).install(monkeypatch)
    monkeypatch.setenv(eb.QUEUE_DEPTH_VAR, "2048")
    m = timing.measure(_call, device=CUDA, **BUDGET, ops_per_call=200)
    assert m.extra["calls_per_batch"] == 5

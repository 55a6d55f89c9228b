"""measure()'s accelerator path, run on the CPU against a scripted device layer: the stream
hold is checked every batch (redone after recalibrating when the spin ended early, counted
when it never held), no event batch for figures read on the host, and no hold for calls that
wait for the device themselves. The real device layer is exercised by the gpu tests."""

from __future__ import annotations

import time

import pytest

from xferbench import timing
from xferbench.devices import Device

CUDA = Device("cuda", 0)


class FakeDevice:
    """What measure() asks of the device layer, with a scripted answer to 'did the spin that
    held the stream end before the batch was queued?' (the guard event's query())."""

    def __init__(self, early: list[bool], can_hold: bool = True) -> None:
        self.early = list(early)  # consumed per held batch; False once empty
        self.can_hold = can_hold
        self.holds: list[float] = []
        self.calibrations = 0
        self.records = 0
        self.pending_hold = 0.0  # seconds a call queued now would wait (a self-waiting call)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeDevice:
        fake = self

        class Event:
            def __init__(self, timing_flag: bool = True) -> None:
                self.t = 0.0
                self.is_guard = not timing_flag

            def record(self, stream=None) -> None:
                self.t = time.perf_counter()
                fake.records += 1

            def query(self) -> bool:
                return fake.early.pop(0) if fake.early else False

            def elapsed_time(self, end) -> float:
                return max(end.t - self.t, 1e-6) * 1e3

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

        monkeypatch.setattr(timing, "new_event", lambda dev, timing=True: Event(timing))
        monkeypatch.setattr(timing, "current_stream", lambda dev: "stream")
        monkeypatch.setattr(timing, "hold_stream", hold_stream)
        monkeypatch.setattr(timing, "can_hold_stream", lambda dev: fake.can_hold)
        monkeypatch.setattr(timing, "synchronize", synchronize)
        monkeypatch.setattr(timing, "calibrate_spin", calibrate_spin)
        return self


BUDGET = {"warmup_s": 0.0, "min_time_s": 0.001, "max_time_s": 0.05, "min_samples": 10,
          "batch": 10}


def _call() -> None:
    pass


def test_a_batch_whose_hold_ended_early_is_redone_after_recalibrating(monkeypatch, no_quick):
    fake = FakeDevice(early=[True]).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.extra["redone_batches"] == 1 and "unheld_batches" not in m.extra
    assert fake.calibrations == 1
    # holds: the waits_for_itself probe, the batch that ended early, its redo held twice as long
    assert fake.holds[2] == pytest.approx(2 * fake.holds[1])
    assert m.extra["stream_hold"] is True
    # the redone batch's events are not samples: one device sample per host sample
    assert len(m.device_s) == len(m.completion_s) and len(m.device_s) % 10 == 0
    assert m.warnings == () or all("stream hold" not in w for w in m.warnings)


def test_a_hold_that_never_holds_is_counted_and_warned_about(monkeypatch, no_quick):
    fake = FakeDevice(early=[True] * (timing.MAX_REDO + 1)).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.extra["redone_batches"] == timing.MAX_REDO
    assert m.extra["unheld_batches"] == 1
    assert m.extra["stream_hold"] is False
    assert fake.calibrations == timing.MAX_REDO
    assert any("ran without the stream hold" in w for w in m.warnings)


@pytest.mark.parametrize("clock", ["completion_s", "enqueue_s"])
def test_a_figure_read_on_the_host_runs_no_event_batch(clock, monkeypatch, no_quick):
    fake = FakeDevice(early=[]).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, clock=clock, **BUDGET)
    assert m.device_s == () and len(m.completion_s) >= 10
    assert fake.holds == [] and fake.records == 0
    assert m.primary_clock == clock


def test_a_call_that_waits_for_the_device_is_not_held(monkeypatch, no_quick):
    fake = FakeDevice(early=[]).install(monkeypatch)

    def waits() -> None:  # a blocking copy: returns once the stream has caught up
        if fake.pending_hold:
            time.sleep(fake.pending_hold)
            fake.pending_hold = 0.0

    m = timing.measure(waits, device=CUDA, **BUDGET)
    assert len(fake.holds) == 2  # the two probes of waits_for_itself, none for the batches
    assert m.extra["stream_hold"] is False and m.extra["redone_batches"] == 0
    assert len(m.device_s) >= 10


def test_a_call_that_returns_at_once_is_held(monkeypatch, no_quick):
    fake = FakeDevice(early=[]).install(monkeypatch)
    m = timing.measure(_call, device=CUDA, **BUDGET)
    assert m.extra["stream_hold"] is True
    assert len(fake.holds) >= 1 + len(m.device_s) // 10  # one probe, then one per batch


def test_without_a_spin_there_is_no_hold_and_no_redo(monkeypatch, no_quick):
    fake = FakeDevice(early=[True, True], can_hold=False).install(monkeypatch)
    m = timing.measure(_call, device=Device("xpu", 0), **BUDGET)
    assert fake.holds == [] and m.extra == {"stream_hold": False, "redone_batches": 0}
    assert len(m.device_s) >= 10


def test_a_batch_longer_than_the_longest_hold_is_split(monkeypatch, no_quick):
    fake = FakeDevice(early=[]).install(monkeypatch)

    def slow_to_queue() -> None:  # 30 ms of host time per call: 10 calls outlast 0.2 s x 2
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.03:
            pass

    m = timing.measure(slow_to_queue, device=CUDA, **{**BUDGET, "max_time_s": 0.5,
                                                       "min_samples": 3})
    assert max(fake.holds[1:]) <= timing.MAX_HOLD_S
    batches = len(fake.holds) - 1  # one probe of waits_for_itself, then one per batch
    # int(0.2 s / (2 x 30-35 ms)) = 2 or 3 calls per held batch instead of 10
    assert len(m.device_s) % batches == 0 and len(m.device_s) // batches in (2, 3)

"""measure(): agreement with torch.utils.benchmark, its own overhead, budgets and its clocks."""

from __future__ import annotations

import math
import time

import pytest

from xferbench import XferbenchError
from xferbench.devices import Device, capabilities, is_emulated
from xferbench.event_batches import MAX_QUEUED_OPS, max_queued_ops
from xferbench.measurement import Measurement, Stats
from xferbench.spec import QUICK_SCALE, MeasureSpec
from xferbench.stream_hold import can_hold_stream, launch_queue_depth
from xferbench.timing import (
    MAX_TIMER_OVERHEAD,
    calibrate_block,
    measure,
    timer_overhead_s,
)
from xferbench.units import format_seconds

# alone, after the others (scripts/test): it asserts timing on this machine's clocks
pytestmark = pytest.mark.serial

MiB = 2**20


def _busy(seconds: float):
    """A call that holds the CPU for ``seconds`` (busy, not asleep: no scheduler wake-up lag)."""
    perf = time.perf_counter

    def run() -> None:
        t0 = perf()
        while perf() - t0 < seconds:
            pass

    return run


def _noop() -> None:
    pass


# -- agreement with torch.utils.benchmark --------------------------------------------------

#: The agreement test alternates the two tools in rounds of this length, ROUNDS times each.
ROUND_S = 0.15
ROUNDS = 8
#: Below this share of a CPU for the test's thread, wall-clock agreement is not a fair claim.
MIN_CPU_SHARE = 0.9


#: Attempts at the agreement before it fails: the first within 10% ends it.
ATTEMPTS = 3


def _compare_once(torch, nbytes: int) -> tuple[float, float, str]:
    """One interleaved comparison: (measure()'s median over blocked_autorange's, less 1;
    this thread's share of a CPU; the figures in words)."""
    from torch.utils.benchmark import Timer

    src = torch.full((nbytes,), 7, dtype=torch.uint8)
    dst = torch.empty_like(src)
    timer = Timer("dst.copy_(src)", globals={"dst": dst, "src": src}, num_threads=1)
    ours: list[float] = []
    theirs: list[float] = []
    calls: set[int] = set()
    numbers: set[int] = set()
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    try:
        for i in range(ROUNDS):
            m = measure(lambda: dst.copy_(src), device="cpu", nbytes=nbytes,
                        warmup_s=0.1 if i == 0 else 0.01, min_time_s=ROUND_S,
                        max_time_s=ROUND_S)
            ours.extend(m.completion_s)
            calls.add(m.calls_per_sample)
            t = timer.blocked_autorange(min_run_time=ROUND_S)
            theirs.extend(t.times)  # seconds per call, as ours
            numbers.add(t.number_per_run)
    finally:
        torch.set_num_threads(previous)
    cpu_share = (time.thread_time() - cpu0) / (time.perf_counter() - wall0)
    assert torch.get_num_threads() == previous
    assert torch.equal(dst, src)

    ours_s, theirs_s = Stats.of(ours).median, Stats.of(theirs).median
    diff = ours_s / theirs_s - 1
    figures = (
        f"{nbytes // MiB} MiB CPU copy_, 1 thread: measure() median "
        f"{format_seconds(ours_s)} (n={len(ours)}, calls/sample {sorted(calls)}), "
        f"blocked_autorange median {format_seconds(theirs_s)} (n={len(theirs)}, "
        f"calls/sample {sorted(numbers)}): {diff:+.1%}; this thread had {cpu_share:.0%} of a CPU"
    )
    return diff, cpu_share, figures


@pytest.mark.parametrize("nbytes", [1 * MiB, 64 * MiB], ids=["1MiB", "64MiB"])
def test_measure_agrees_with_torch_blocked_autorange_within_10_percent(nbytes, no_quick):
    """The CPU copy_ of one tensor, timed by measure() and by Timer.blocked_autorange().

    Both run on one intra-op thread: Timer pins num_threads=1 for its own runs, so ours is
    pinned to the same (torch.set_num_threads(1), restored after), else a copy split over two
    threads by measure() would be compared with a single-threaded one. The two tools run in
    alternating rounds whose samples are pooled, so that a change in the machine's background
    load falls on both.

    Both pick blocks of calls that make a timer read under 1e-4 of a block. Where this thread
    got under MIN_CPU_SHARE of a CPU, samples of single calls (64 MiB) are few and bimodal in
    both tools; a disagreement there skips, with both figures, not fails.

    Up to ATTEMPTS comparisons, the first within 10% ending it. On a shared machine a load
    that changes at the scale of milliseconds can still push one comparison outside 10%,
    either way: the blocks differ in length, and it moves short blocks' median more than
    long ones'. A bias of measure()'s own (a block miscounted, a sync missed, a timer read
    inside the block) is in every attempt, and fails all of them, each named.
    """
    import torch

    tried: list[str] = []
    for _ in range(ATTEMPTS):
        diff, cpu_share, figures = _compare_once(torch, nbytes)
        print(figures)
        if abs(diff) <= 0.10:
            return
        if cpu_share < MIN_CPU_SHARE:
            pytest.skip(f"machine oversubscribed, no fair comparison: {figures}")
        tried.append(figures)
    pytest.fail(f"{ATTEMPTS} comparisons, none within 10%: " + "; ".join(tried))


# -- overhead ------------------------------------------------------------------------------

def test_measure_of_a_noop_reports_the_call_not_the_timer(no_quick):
    started = time.perf_counter()
    m = measure(_noop, device="cpu", warmup_s=0.01, min_time_s=0.1, max_time_s=0.3)
    wall_s = time.perf_counter() - started
    overhead_s = timer_overhead_s()
    timer_share = overhead_s / (m.median * m.calls_per_sample)
    print(
        f"measure() of a no-op: {format_seconds(m.median)} per call, "
        f"{m.calls_per_sample} calls per sample, timer read pair "
        f"{format_seconds(overhead_s)} = {timer_share:.1e} of a sample; "
        f"wall {wall_s:.3f} s for a 0.01 s warm-up + 0.3 s budget"
    )
    # A Python call costs tens of nanoseconds; a timer read per call would double that.
    assert m.median < 1e-6
    assert m.calls_per_sample >= 100
    assert timer_share < 10 * MAX_TIMER_OVERHEAD
    # Calibration and bookkeeping cost little beside the budget.
    assert wall_s < 0.01 + 0.3 + 0.2


def test_timer_overhead_is_positive_and_sub_microsecond():
    assert 0 < timer_overhead_s() < 1e-6


def test_calibrate_block_gives_one_call_for_a_5_ms_call():
    assert calibrate_block(_busy(5e-3), timer_overhead_s()) == 1


def test_calibrate_block_gives_a_large_power_of_ten_for_a_noop():
    number = calibrate_block(_noop, timer_overhead_s())
    assert number >= 100
    assert 10 ** round(math.log10(number)) == number


# -- per-call times and stopping -----------------------------------------------------------

@pytest.mark.parametrize("seconds", [20e-6, 1e-3], ids=["20us", "1ms"])
def test_measure_reports_seconds_per_call_of_a_busy_wait(seconds, no_quick):
    m = measure(_busy(seconds), device="cpu", warmup_s=0.01, min_time_s=0.05, max_time_s=0.1)
    # 20 us calls are timed in blocks of ~100 (2 ms) that another process's time slice can
    # stretch; 1.5x still catches a per-block time not divided by the calls in it (100x)
    assert seconds <= m.median <= 1.5 * seconds
    # a pair of timer reads costs tens of ns: more than 1e-4 of 20 us; about 1e-4 of 1 ms,
    # and more under load (then a block of 10): never 100
    assert (m.calls_per_sample in (1, 10)) if seconds >= 1e-3 else (m.calls_per_sample >= 10)
    assert m.device == "cpu"
    assert m.device_s == () and m.enqueue_s == ()
    assert m.primary_clock == "completion_s"


def test_measure_stops_at_target_iqr_once_min_time_and_samples_are_reached(no_quick):
    # a target every run meets (a CV cannot exceed sqrt(n)): this tests when sampling stops
    m = measure(_busy(200e-6), device="cpu", warmup_s=0.0, min_time_s=0.05, max_time_s=1.0,
                target_iqr=1e3, min_samples=10)
    assert m.stop == "target_iqr"
    assert len(m.completion_s) >= 10
    assert 0.05 <= m.total_s < 0.05 + 0.1


def test_measure_stops_at_max_time_when_the_target_is_unreachable(no_quick):
    m = measure(_busy(200e-6), device="cpu", warmup_s=0.0, min_time_s=0.05, max_time_s=0.15,
                target_iqr=1e-12)
    assert m.stop == "max_time_s"
    assert 0.15 <= m.total_s < 0.15 + 0.05


def test_measure_carries_label_bytes_and_warmup(no_quick):
    m = measure(_busy(50e-6), device="cpu", nbytes=4096, label="busy", warmup_s=0.03,
                min_time_s=0.02, max_time_s=0.05)
    assert (m.label, m.nbytes) == ("busy", 4096)
    assert m.warmup_s >= 0.03
    assert m.gbps == pytest.approx(4096 / m.median / 1e9)


def test_a_quick_spec_scales_the_budget_down():
    spec = MeasureSpec(warmup_s=0.0, min_time_s=0.5, max_time_s=0.5, target_iqr=1e-12)
    m = measure(_busy(200e-6), spec.for_quick(), device="cpu")
    assert m.stop == "max_time_s" and m.spec.quick
    assert m.total_s < 0.5 * QUICK_SCALE + 0.05


def test_measure_reads_no_quick_mode_from_the_environment(monkeypatch):
    """Quick mode is resolved at the edge (a benchmark process, the plugin), once: measure()
    itself times what its spec says whatever XFERBENCH_QUICK holds."""
    monkeypatch.setenv("XFERBENCH_QUICK", "1")
    m = measure(_busy(200e-6), device="cpu", warmup_s=0.0, min_time_s=0.2, max_time_s=0.2,
                target_iqr=1e-12)
    assert m.total_s >= 0.2 and not m.spec.quick


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"nbytes": 0}, "nbytes 0 is not a size"),
        ({"nbytes": -5}, "nbytes -5 is not a size"),
        ({"min_time_s": 0.0}, "not a budget"),
        ({"min_time_s": 2.0, "max_time_s": 1.0}, "not a budget"),
        ({"warmup_s": -1.0}, "warmup_s must be >= 0"),
        ({"target_iqr": 0.0}, "target_iqr > 0"),
        ({"device": "tpu"}, "device 'tpu' is not a device type"),
    ],
)
def test_measure_refuses_bad_arguments_before_calling(kwargs, words):
    calls = []
    with pytest.raises(XferbenchError, match=words):
        measure(lambda: calls.append(1), **{"device": "cpu", **kwargs})
    assert calls == []


# -- accelerator clocks --------------------------------------------------------------------

def _mm_measured(device, budget, n=2048):
    import torch

    a = torch.randn(n, n, device=device.torch())
    out = torch.empty_like(a)
    m = measure(lambda: torch.mm(a, a, out=out), budget, device=device, label="mm")
    return m, a, out


@pytest.mark.gpu
def test_measure_on_accelerator_gives_three_clocks(gpu_device, small_budget):
    import torch

    m, a, out = _mm_measured(gpu_device, small_budget, n=512)  # no time is judged here
    assert m.device == gpu_device.name
    assert m.primary_clock == "device_s"
    assert m.calls_per_sample == 1
    assert len(m.device_s) >= 6 and len(m.completion_s) == len(m.enqueue_s) >= 6
    assert min(m.device_s) > 0 and min(m.enqueue_s) > 0
    # the measured calls really ran: the last one left a @ a in out
    assert torch.allclose(out.cpu(), a.cpu() @ a.cpu(), rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.timing
def test_measure_on_accelerator_device_time_within_completion(gpu_device, small_budget):
    import torch

    m, _, out = _mm_measured(gpu_device, small_budget)
    device_s = m.stats("device_s").median
    completion_s = m.stats("completion_s").median
    enqueue_s = m.stats("enqueue_s").median
    print(f"mm 2048: device {format_seconds(device_s)}, completion "
          f"{format_seconds(completion_s)}, enqueue {format_seconds(enqueue_s)}")
    assert device_s <= completion_s
    assert enqueue_s <= completion_s
    assert bool(torch.isfinite(out).all())


def _pinned_h2d_measured(device, budget):
    import torch

    nbytes = 64 * MiB
    src = torch.full((nbytes,), 3, dtype=torch.uint8).pin_memory()
    tdev = device.torch()
    landed = []
    m = measure(lambda: landed.__setitem__(slice(None), [src.to(tdev, non_blocking=True)]),
                budget, device=device, nbytes=nbytes)
    return m, src, landed[0]


@pytest.mark.gpu
def test_non_blocking_pinned_h2d_is_measured_on_three_clocks_and_lands(
        gpu_device, small_budget):
    import torch

    if not capabilities(gpu_device).pinned_memory:
        pytest.skip(f"{gpu_device} has no pinned host memory")
    m, src, landed = _pinned_h2d_measured(gpu_device, small_budget)
    assert m.primary_clock == "device_s" and m.nbytes == 64 * MiB
    assert len(m.device_s) >= 3 and len(m.completion_s) == len(m.enqueue_s) >= 3
    # a pinned non_blocking copy returns at once: its calls are held back to back where a
    # spin exists (no call waits for itself)
    assert m.extra["device_clock"] == ("held" if can_hold_stream(gpu_device) else "unheld")
    assert m.gbps > 0
    # measure() synchronised after the last call: its copy has landed, bit for bit
    assert landed.device == gpu_device.torch() and torch.equal(landed.cpu(), src)


@pytest.mark.gpu
@pytest.mark.timing
def test_non_blocking_pinned_h2d_enqueue_is_much_shorter_than_its_completion(
        gpu_device, small_budget):
    if not capabilities(gpu_device).pinned_memory:
        pytest.skip(f"{gpu_device} has no pinned host memory")
    m, _, _ = _pinned_h2d_measured(gpu_device, small_budget)
    enqueue_s = m.stats("enqueue_s").median
    completion_s = m.stats("completion_s").median
    print(f"64 MiB pinned non_blocking H2D: enqueue {format_seconds(enqueue_s)}, completion "
          f"{format_seconds(completion_s)}, {m.gbps:.1f} GB/s on device events")
    # ~1.2 ms of PCIe Gen5 transfer against tens of microseconds to queue it
    assert enqueue_s * 10 < completion_s
    assert m.stats("device_s").median <= completion_s
    assert m.gbps > 1.0


def test_measure_reads_the_clock_it_is_asked_for(no_quick):
    m = measure(_noop, device="cpu", warmup_s=0.0, min_time_s=0.01, max_time_s=0.05,
                clock="completion_s")
    assert m.clock == "completion_s" and m.primary_clock == "completion_s"
    assert Measurement.from_dict(m.to_dict()).clock == "completion_s"


@pytest.mark.parametrize(("clock", "words"), [("wall_s", "is not a clock"),
                                              ("device_s", "needs an accelerator")])
def test_measure_refuses_a_clock_it_cannot_read(clock, words):
    with pytest.raises(XferbenchError, match=words):
        measure(_noop, device="cpu", clock=clock)


def _launch_bound_measured(device, budget, declared: bool = True):
    """200 tiny adds per call: the call queues 200 kernels, which it declares (as a practice
    does) unless ``declared`` is False (as a plugin user's call would not)."""
    import torch

    xs = [torch.ones(4, device=device.torch()) for _ in range(200)]
    calls = []

    def add() -> None:
        calls.append(1)
        for x in xs:
            x.add_(1)

    spec = budget.replace(ops_per_call=200) if declared else budget
    return measure(add, spec, device=device), xs, len(calls)


@pytest.mark.gpu
def test_launch_bound_calls_are_held_where_a_spin_exists_and_all_run(gpu_device, small_budget):
    import torch

    m, xs, calls = _launch_bound_measured(gpu_device, small_budget)
    # held behind a spin on CUDA/ROCm; elsewhere there is none, and the measurement says so.
    # The emulated device has a spin but runs a kernel at once, after what its stream holds:
    # a call of kernels alone waits for itself there, and is read host-inclusive, not held
    if is_emulated(gpu_device):
        assert m.extra["device_clock"] == "host-inclusive" and not m.extra["stream_hold"]
    else:
        assert m.extra["stream_hold"] is can_hold_stream(gpu_device)
    # 200 kernels a call: at most (half the launch queue - 2) // 202 calls behind one hold
    if m.extra["stream_hold"]:
        assert m.extra["calls_per_batch"] <= max(1, (max_queued_ops(gpu_device) - 2) // 202)
        assert m.extra["device_clock"].startswith("held")
    assert len(m.device_s) >= 3
    # every call measure() made (warm-up and calibration included) ran all 200 adds
    assert all(torch.equal(x.cpu(), torch.full((4,), 1.0 + calls)) for x in xs)


@pytest.mark.gpu
@pytest.mark.cuda_only("the launch queue behind torch.cuda._sleep")
def test_a_call_that_does_not_declare_its_kernels_is_shrunk_to_fit_the_launch_queue(
        gpu_device, small_budget):
    """10 calls of 200 kernels overfill the launch queue behind one hold: the host blocks,
    the spin ends early, and the batch is halved until it fits, never held longer."""
    m, _, _ = _launch_bound_measured(gpu_device, small_budget, declared=False)
    assert m.extra["device_clock"].startswith("held")
    assert m.extra["calls_per_batch"] < 10 and m.extra.get("shrunk_batches", 0) >= 1
    assert "device_clock_unavailable" not in m.extra


@pytest.mark.gpu
@pytest.mark.timing
@pytest.mark.cuda_only("the stream hold (torch.cuda._sleep)")
def test_launch_bound_calls_behind_a_stream_hold_take_less_device_than_host_time(
        gpu_device, small_budget):
    m, _, _ = _launch_bound_measured(gpu_device, small_budget)
    assert m.extra["stream_hold"] is True
    # 200 tiny kernels run faster on the device than the host can launch them: with the
    # stream held, device time is the device's, shorter than the host's enqueue time.
    assert m.stats("device_s").median < m.stats("enqueue_s").median


def test_a_call_slower_than_the_budget_still_gets_three_samples(no_quick):
    m = measure(_busy(0.03), device="cpu", warmup_s=0, min_time_s=0.01, max_time_s=0.02)
    assert m.stop == "max_time_s" and len(m.completion_s) == 3
    assert "only 3 samples" in m.warnings  # said, not hidden


def test_a_call_far_slower_than_the_budget_stops_at_five_times_it(no_quick):
    started = time.perf_counter()
    m = measure(_busy(0.06), device="cpu", warmup_s=0, min_time_s=0.005, max_time_s=0.01)
    assert time.perf_counter() - started < 0.5
    # the calibrating call and one more, then the cap (5 x 10 ms) has passed
    assert len(m.completion_s) == 2 and "only 2 samples" in " ".join(m.warnings)


# -- the launch queue (also on the emulated device, whose depth is set: emu.set_queue_depth) --

def test_a_launch_queue_shallower_than_plausible_is_probed_again_and_the_larger_kept(
        monkeypatch):
    """A host held up past the whole spin reads as a queue that blocked after two operations:
    such a depth is probed once more, the larger kept; a real shallow queue reads the same
    twice, and a second probe that sees no block gives None (the default depth)."""
    import xferbench.stream_hold as sh

    for probes, want in (([2, 1024], 1024), ([48, 48], 48), ([2, None], None), ([300], 300)):
        seen = list(probes)
        monkeypatch.setattr(sh, "_probe_depth", lambda dev, limit, seen=seen: seen.pop(0))
        assert sh.launch_queue_depth(Device("cuda", 0)) == want and not seen, probes


@pytest.mark.gpu
def test_the_launch_queue_depth_is_measured_behind_a_spin(gpu_device):
    """Tiny copies queued behind a long spin until one blocks: on the emulated device, the
    depth it is set to (the spin and an event among the operations counted)."""
    if not can_hold_stream(gpu_device):
        pytest.skip(f"{gpu_device} has no spin to hold its stream")
    depth = launch_queue_depth(gpu_device)
    assert depth is not None and depth >= 64, depth
    if not is_emulated(gpu_device):
        return  # a real card's depth is its own; the emulated one's is set here
    import emu

    previous = emu.queue_depth()
    try:
        for want in (48, 300):
            emu.set_queue_depth(want)
            assert launch_queue_depth(gpu_device) == want
    finally:
        emu.set_queue_depth(previous)



@pytest.mark.gpu
def test_a_held_batch_that_meets_the_launch_queue_is_shrunk_not_stored_as_a_host_rate(
        gpu_device, small_budget):
    """400 pinned non_blocking copies a call, not declared: ten calls behind one hold would
    queue 4,000 operations, and the host blocks once the stream's queue is full (about 1,000),
    so the spin ends while the host is still queueing and the device would run at the host's
    pace. measure() halves the batch until the calls fit behind the hold (two calls or one),
    and keeps device time only from batches that held: never the host's enqueue rate."""
    import torch

    if not capabilities(gpu_device).pinned_memory or not can_hold_stream(gpu_device):
        pytest.skip(f"{gpu_device} has no pinned memory or no spin to hold its stream")
    srcs = [torch.full((64,), i % 251, dtype=torch.uint8).pin_memory() for i in range(400)]
    dsts = [torch.empty(64, dtype=torch.uint8, device=gpu_device.torch()) for _ in srcs]

    def copies() -> None:
        for d, s in zip(dsts, srcs):
            d.copy_(s, non_blocking=True)

    depth = launch_queue_depth(gpu_device) or 2 * MAX_QUEUED_OPS
    if 10 * 400 <= depth:
        pytest.skip(f"{gpu_device}'s launch queue holds {depth}: ten calls fit behind a hold")
    m = measure(copies, small_budget.replace(max_time_s=0.5), device=gpu_device)
    assert m.extra["device_clock"].startswith("held"), m.extra
    # the batch halves from 10 until its 400 operations a call fit the queue
    assert m.extra["calls_per_batch"] <= max(1, depth // 400), m.extra
    assert m.extra["shrunk_batches"] >= 1, m.extra
    assert "unheld_batches" not in m.extra and m.device_s
    assert all(torch.equal(d.cpu(), s) for d, s in zip(dsts, srcs))


@pytest.mark.gpu
def test_a_pinned_copy_at_an_idle_sm_clock_keeps_its_batches(gpu_device, small_budget):
    """A copy's speed is the copy engine's and the memory's, not the SM clock's: run_copy's
    batches at an SM clock of 345 MHz (a GPU at idle) are all kept."""
    if not is_emulated(gpu_device):
        pytest.skip("the emulated device's own clock controls: a real card's settings are "
                    "never changed")
    import emu

    from xferbench.practices.copies import CopyCase, run_copy

    case = CopyCase("h2d", "pinned", "non_blocking", "one", 2**20)
    emu.set_clock(345.0)
    try:
        m = run_copy(case, gpu_device, small_budget, clock="device_s")
    finally:
        emu.set_clock(None)
    assert m.spec.sm_clocked is False and m.extra["device_clock"].startswith("held")
    assert "discarded_batches" not in m.extra and m.device_s, m.extra


@pytest.mark.gpu
@pytest.mark.parametrize("slow", ["thermal", "clock"])
def test_batches_taken_on_a_slowed_device_are_discarded_and_the_figure_says_so(
        gpu_device, small_budget, slow):
    """As nvbench does: a batch read while the SM clock is below 75% of its maximum, or while
    the device is thermally or power throttled, is discarded and counted. Only the emulated
    device can be slowed on purpose: a real card's settings are never changed."""
    if not is_emulated(gpu_device):
        pytest.skip("the emulated device's own clock controls: a real card's settings are "
                    "never changed")
    import emu
    import torch

    src = torch.ones(2**18).pin_memory()
    dst = torch.empty_like(src, device=gpu_device.torch())

    def copy() -> None:
        dst.copy_(src, non_blocking=True)

    emu.set_throttle(["thermal"]) if slow == "thermal" else emu.set_clock(400.0)
    try:
        m = measure(copy, small_budget, device=gpu_device)
    finally:
        emu.set_throttle([])
        emu.set_clock(None)
    assert m.extra["stream_hold"] and m.extra["discarded_batches"] >= 1
    assert m.extra["all_discarded"] is True and m.extra["slowed"]
    assert any("slowed device" in w for w in m.warnings), m.warnings
    assert torch.equal(dst.cpu(), src)
    # the same copy on a device at full speed keeps its batches
    emu.set_clock(1980.0)
    try:
        fast = measure(copy, small_budget, device=gpu_device)
    finally:
        emu.set_clock(None)
    assert "discarded_batches" not in fast.extra and fast.device_s


@pytest.mark.gpu
def test_a_slow_clock_read_is_taken_outside_the_hold_so_batches_keep_their_samples(
        gpu_device, small_budget):
    """The SM clock read (two NVML calls on CUDA, slow in some microVMs) comes after the
    hold's window is checked: read inside it, a 5 ms read outlasts a hold sized for the
    batch's queueing (well under a millisecond), every batch looks early, and after the
    recalibrations and shrinks the copy has no device time at all."""
    if not is_emulated(gpu_device):
        pytest.skip("the emulated device's own clock controls: a real card's settings are "
                    "never changed")
    import emu
    import torch

    src = torch.ones(2**16).pin_memory()
    dst = torch.empty_like(src, device=gpu_device.torch())

    def copy() -> None:
        dst.copy_(src, non_blocking=True)

    emu.set_clock_read_delay(0.005)
    try:
        m = measure(copy, small_budget, device=gpu_device, clock="device_s")
    finally:
        emu.set_clock_read_delay(0.0)
    assert m.device_s and m.extra["device_clock"].startswith("held"), m.extra
    assert "device_clock_unavailable" not in m.extra  # (a loaded host may still shrink one)
    assert torch.equal(dst.cpu(), src)


@pytest.mark.gpu
def test_a_host_that_queues_late_gets_a_longer_hold_and_keeps_its_device_time(
        gpu_device, small_budget):
    """A loaded host (here: every third copy or spin queued 5 ms late) makes holds sized for
    the batch end early; the batch shrinks to one call, and one call, which cannot fill the
    launch queue, is then held longer (up to MAX_HOLD_S) instead of giving device time up.
    The spin is calibrated first and there is no warm-up beyond one call, so the calls that
    plan the hold are not the late ones."""
    if not is_emulated(gpu_device):
        pytest.skip("the emulated device's own host-stall knob: a real machine's load is not "
                    "set on purpose")
    import emu
    import torch

    src = torch.ones(2**16).pin_memory()
    dst = torch.empty_like(src, device=gpu_device.torch())

    def copy() -> None:
        dst.copy_(src, non_blocking=True)

    from xferbench.stream_hold import calibrate_spin

    calibrate_spin(gpu_device)
    emu.set_host_stall(3, 0.005)
    try:
        m = measure(copy, small_budget.replace(max_time_s=0.5, warmup_s=0.0),
                    device=gpu_device, clock="device_s")
    finally:
        emu.set_host_stall(0, 0.0)
    assert m.device_s and m.extra["device_clock"].startswith("held"), m.extra
    # holds did end early (and were shrunk or lengthened), yet device time was kept; the
    # lengthening's own logic is pinned in test_timing_device.py, on a scripted device
    assert m.extra["redone_batches"] >= 1 and "device_clock_unavailable" not in m.extra
    assert torch.equal(dst.cpu(), src)

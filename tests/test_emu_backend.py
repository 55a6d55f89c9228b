"""The emulated accelerator (tests/emu) on its own: the behaviour CI's emulated run relies on.

Loading it makes "emu" torch's accelerator for the rest of the process, which would change
what every later test in a mixed session sees. So the tests that need it run in-process
only where that is harmless (this file alone, or a session already running on emu); in any
other session one test runs this file again in a fresh interpreter.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
import time
from pathlib import Path

import emu
import pytest
import torch

THIS_FILE = Path(__file__).resolve()
#: Devices the backend emulates in this process (XFERBENCH_EMU_DEVICES, default 1).
DEVICES = int(os.environ.get("XFERBENCH_EMU_DEVICES", "1"))
MiB = 2**20

def _runs_in_process(session: pytest.Session) -> bool:
    return emu.is_loaded() or all(Path(item.path) == THIS_FILE for item in session.items)


@pytest.fixture(scope="module")
def _emu_loaded(request: pytest.FixtureRequest) -> torch.device:
    if not _runs_in_process(request.session):
        pytest.skip("emu becomes torch's accelerator for the whole process, so in this "
                    "session these run in a fresh one: test_backend_passes_in_a_fresh_process")
    try:
        emu.load()
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    return torch.device("emu:0")


@pytest.fixture
def dev(_emu_loaded: torch.device):
    """emu:0, idle, with no copy hold and every hardware knob at its default, before and
    after the test."""
    torch.accelerator.synchronize(_emu_loaded)
    yield _emu_loaded
    emu.set_copy_delay(0)
    torch.accelerator.synchronize(_emu_loaded)
    emu.set_queue_depth(emu.DEFAULT_QUEUE_DEPTH)
    emu.set_pin_cost(20.0, 16.0)
    emu.set_clock(None)
    emu.set_throttle([])
    emu.set_clock_model()


def _side_stream_read(t: torch.Tensor, side: torch.Stream) -> torch.Tensor:
    """``t``'s bytes as they are now: a blocking copy waits for the *current* stream only,
    so from an idle side stream it does not wait for work queued on the default stream."""
    with side:
        return t.cpu()


# --- running it at all


@pytest.mark.slow
def test_backend_passes_in_a_fresh_process(request, run_python):
    if _runs_in_process(request.session):
        pytest.skip("this session runs the backend tests in-process")
    done = run_python("-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", str(THIS_FILE),
                      timeout=900)
    output = done.stdout + done.stderr
    if done.returncode == 0 and not re.search(r"\d+ passed", output):
        reasons = re.findall(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", output)
        pytest.skip(reasons[0] if reasons else "every backend test was skipped")
    assert done.returncode == 0, output[-6000:]


def test_torch_accelerator_sees_emu(dev):
    assert torch.accelerator.current_accelerator() == torch.device("emu")
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == DEVICES
    assert torch.accelerator.current_device_index() == 0
    assert torch.get_device_module("emu").is_available()
    stream = torch.accelerator.current_stream()
    assert stream.device == torch.device("emu:0") and stream.stream_id == 0
    x = torch.ones(3, device="emu")
    assert x.device == dev and x.is_emu


# --- copies


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.uint8, torch.bool, torch.complex64])
def test_tensors_round_trip_bit_for_bit(dev, dtype):
    bits = torch.randint(0, 256, (4096,), dtype=torch.uint8)
    x = bits.view(dtype) if dtype != torch.bool else bits > 127
    for host in (x, x.pin_memory()):
        for non_blocking in (False, True):
            back = host.to(dev, non_blocking=non_blocking).to("cpu", non_blocking=non_blocking)
            torch.accelerator.synchronize()
            assert torch.equal(back.view(torch.uint8), x.view(torch.uint8))


def test_strided_converting_and_device_to_device_copies_are_exact(dev):
    x = torch.randn(64, 48, dtype=torch.float64)
    on_dev = x.t().to(dev)  # a transposed (non-contiguous) source
    assert torch.equal(on_dev.cpu(), x.t())
    assert torch.equal(x.to(dev, torch.float32).cpu(), x.float())  # dtype conversion
    twin = torch.empty_like(on_dev)
    twin.copy_(on_dev)  # emu -> emu: queued on the current stream
    torch.accelerator.synchronize()
    assert torch.equal(twin.cpu(), x.t())
    column = torch.zeros(64, device=dev)
    column.copy_(torch.tensor(7.0))  # broadcast from a 0-dim host tensor
    assert torch.equal(column.cpu(), torch.full((64,), 7.0))


def test_device_to_device_copy_is_queued_on_the_stream(dev):
    src = torch.arange(MiB, dtype=torch.float32, device=dev)
    dst = torch.zeros_like(src)
    torch.accelerator.synchronize()
    with emu.held():
        dst.copy_(src)
        assert emu.pending(0) == 1  # returned with the copy still in the queue
    torch.accelerator.synchronize()
    assert emu.pending(0) == 0
    assert torch.equal(dst.cpu(), src.cpu())


def test_non_blocking_pinned_h2d_returns_before_the_data_lands(dev):
    """A read before the copy ran (its stream held) sees the old bytes; the read after the
    synchronise is always right."""
    side = torch.Stream(device=dev)
    dst = torch.zeros(MiB // 4, device=dev)
    for i in range(1, 11):
        src = torch.full((MiB // 4,), float(i)).pin_memory()
        with emu.held():
            dst.copy_(src, non_blocking=True)
            early = _side_stream_read(dst, side)
        assert torch.equal(early, torch.full_like(src, float(i - 1))), f"try {i}: landed early"
        torch.accelerator.synchronize()
        assert torch.equal(dst.cpu(), src), f"try {i}: wrong after synchronize"


def test_non_blocking_pinned_d2h_returns_before_the_data_lands(dev):
    """Practice 4: reading a non_blocking device-to-host copy before synchronising."""
    for i in range(1, 11):
        src = torch.full((MiB // 4,), float(i), device=dev)
        torch.accelerator.synchronize()
        with emu.held():
            host = src.to("cpu", non_blocking=True)
            assert host.is_pinned()  # torch allocates a pinned destination, as on CUDA
            early = host.clone()
        assert not torch.equal(early, torch.full_like(early, float(i))), f"try {i}: landed"
        torch.accelerator.synchronize()
        assert torch.equal(host, torch.full_like(host, float(i))), f"try {i}: wrong after sync"


def test_changing_a_pinned_source_before_its_copy_runs_is_observable(dev):
    """Practice 4: writing the pinned source right after a non_blocking H2D, before the copy
    ran: the device copy holds the new data. With a synchronise in between it never does."""
    for _ in range(5):
        src = torch.full((MiB // 4,), 1.0).pin_memory()
        with emu.held():
            dst = src.to(dev, non_blocking=True)
            src.fill_(2.0)
        torch.accelerator.synchronize()
        assert torch.equal(dst.cpu(), torch.full_like(src, 2.0))
    for _ in range(20):
        src = torch.full((MiB // 4,), 1.0).pin_memory()
        dst = src.to(dev, non_blocking=True)
        torch.accelerator.synchronize()
        src.fill_(2.0)
        assert torch.equal(dst.cpu(), torch.full_like(src, 1.0))


def test_pageable_non_blocking_copy_is_synchronous(dev):
    side = torch.Stream(device=dev)
    emu.set_copy_delay(0.02)
    held = torch.full((1024,), 5.0).pin_memory()
    first = held.to(dev, non_blocking=True)  # held on the current stream for 20 ms
    src = torch.arange(MiB // 4, dtype=torch.float32)  # pageable
    dst = src.to(dev, non_blocking=True)
    # It waited for the stream (so the held copy ran first) and copied before returning.
    assert emu.pending(0) == 0
    assert torch.equal(first.cpu(), held)
    assert torch.equal(_side_stream_read(dst, side), src)
    back = torch.empty(MiB // 4)  # pageable destination
    back.copy_(dst, non_blocking=True)
    assert torch.equal(back, src)


# --- streams and events


def test_a_stream_runs_its_work_in_fifo_order(dev):
    emu.set_copy_delay(0.002)  # 20 copies: 40 ms of work, completing one by one
    dst = torch.zeros(1024, device=dev)
    sources = [torch.full((1024,), float(i)).pin_memory() for i in range(20)]
    events = [torch.Event(device=dev, enable_timing=True) for _ in sources]
    with emu.held():
        for src, event in zip(sources, events):
            dst.copy_(src, non_blocking=True)
            event.record()
        assert not any(event.query() for event in events)  # queued, none run
    # Read while they run, queried from last to first: whatever completed is a prefix.
    while not events[-1].query():
        done = [event.query() for event in reversed(events)][::-1]
        first_pending = done.index(False) if False in done else len(done)
        assert all(not d for d in done[first_pending:]), done
    torch.accelerator.synchronize()
    assert all(event.query() for event in events)
    assert torch.equal(dst.cpu(), sources[-1])  # the last copy landed last
    gaps = [a.elapsed_time(b) for a, b in zip(events, events[1:])]
    assert all(gap >= 0 for gap in gaps), gaps


def test_events_take_their_time_when_the_worker_reaches_them(dev):
    start = torch.Event(device=dev, enable_timing=True)
    middle = torch.Event(device=dev, enable_timing=True)
    end = torch.Event(device=dev, enable_timing=True)
    src = torch.ones(1024).pin_memory()
    with emu.held():
        start.record()
        with emu.copy_delay(0.1):
            dst = src.to(dev, non_blocking=True)  # the worker sleeps 100 ms before it
        middle.record()
        end.record()
        assert not end.query() and not start.query()
    end.synchronize()
    assert end.query() and start.query()
    # The held copy lies between start and middle: at least its hold (sleep never wakes
    # early). A lower bound from a sleep is order, not speed.
    assert start.elapsed_time(middle) >= 100.0
    total = start.elapsed_time(end)
    assert total == pytest.approx(start.elapsed_time(middle) + middle.elapsed_time(end))
    assert torch.equal(dst.cpu(), src)


def test_elapsed_time_needs_timing_and_completed_events(dev):
    plain = torch.Event(device=dev)
    timed = torch.Event(device=dev, enable_timing=True)
    plain.record()
    timed.record()
    torch.accelerator.synchronize()
    with pytest.raises(ValueError, match="enable_timing"):  # torch.Event checks it itself
        plain.elapsed_time(timed)
    late = torch.Event(device=dev, enable_timing=True)
    with emu.held():
        torch.ones(8).pin_memory().to(dev, non_blocking=True)
        late.record()
        with pytest.raises(RuntimeError, match="completed"):
            timed.elapsed_time(late)
    late.synchronize()
    assert timed.elapsed_time(late) >= 0


def test_wait_stream_orders_work_across_streams(dev):
    side = torch.Stream(device=dev)
    default = torch.accelerator.current_stream()
    emu.set_copy_delay(0.05)
    src = torch.full((MiB // 4,), 3.0).pin_memory()
    dst = src.to(dev, non_blocking=True)  # held 50 ms on the default stream
    side.wait_stream(default)
    with side:
        assert torch.accelerator.current_stream() == side
        # A kernel on the side stream: it may start only after the default stream's copy.
        total = dst.sum().item()
    assert total == 3.0 * (MiB // 4)
    # And the other way round: a side-stream copy the default stream waits for.
    with emu.held(side):
        with side:
            late = src.to(dev, non_blocking=True)
        assert not side.query()
        done = torch.Event(device=dev)
        done.record(side)
        default.wait_event(done)
    assert late.sum().item() == 3.0 * (MiB // 4)
    side.synchronize()
    assert side.query() and default.query()


def test_torch_stream_context_and_device_module(dev):
    side = torch.Stream(device=dev)
    assert side != torch.accelerator.current_stream()
    with side:
        assert torch.accelerator.current_stream() == side
        with torch.emu.stream(None):
            assert torch.emu.current_stream() == side
    assert torch.accelerator.current_stream().stream_id == 0
    assert torch.emu.default_stream() == torch.accelerator.current_stream()
    assert side.native_handle != torch.accelerator.current_stream().native_handle
    torch.ones(4, device=dev).record_stream(side)  # accepted: frees wait for every stream
    with torch.autocast("emu", dtype=torch.bfloat16):  # accepted and changes nothing
        assert (torch.ones(2, device=dev) @ torch.ones(2, device=dev)).dtype == torch.float32
    torch.emu.synchronize()
    assert torch.emu.current_device() == 0 and torch.emu.device_count() == DEVICES
    assert torch.emu.get_device_properties(0).total_memory > 0


# --- memory


def test_pin_memory_and_is_pinned(dev):
    x = torch.randn(1000)
    assert not x.is_pinned()
    pinned = x.pin_memory()
    assert pinned.is_pinned() and torch.equal(pinned, x)
    assert pinned[10:].is_pinned()  # a view into a pinned block is pinned too
    assert torch.empty(64, pin_memory=True).is_pinned()
    assert not torch.ones(3, device=dev).is_pinned()
    assert not torch.ones(3).is_pinned()


def test_memory_statistics_change_by_the_bytes_allocated(dev):
    torch.accelerator.reset_peak_memory_stats()
    base = torch.accelerator.memory_allocated()
    assert torch.accelerator.max_memory_allocated() == base
    x = torch.empty(MiB, dtype=torch.uint8, device=dev)
    assert torch.accelerator.memory_allocated() == base + MiB
    y = torch.empty(3 * MiB // 4, dtype=torch.float32, device=dev)  # 3 MiB
    assert torch.accelerator.memory_allocated() == base + 4 * MiB
    del y
    assert torch.accelerator.memory_allocated() == base + MiB
    assert torch.accelerator.max_memory_allocated() == base + 4 * MiB
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == base + MiB
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == base + MiB
    assert stats["reserved_bytes.all.current"] == base + MiB  # no caching: reserved = allocated
    assert stats["allocated_bytes.large_pool.current"] >= MiB
    del x
    assert torch.accelerator.memory_allocated() == base


def test_get_memory_info_reports_the_configured_total(dev):
    _free, previous_total = torch.accelerator.get_memory_info()
    try:
        emu.set_memory_total(256 * MiB)
        free, total = torch.accelerator.get_memory_info()
        assert total == 256 * MiB
        assert free == total - torch.accelerator.memory_allocated()
        x = torch.empty(64 * MiB, dtype=torch.uint8, device=dev)
        assert torch.accelerator.get_memory_info()[0] == free - 64 * MiB
        with pytest.raises(torch.OutOfMemoryError, match="emu: out of memory"):
            torch.empty(256 * MiB, dtype=torch.uint8, device=dev)
        del x
    finally:
        emu.set_memory_total(previous_total)


# --- the launch queue (a CUDA stream takes about 1,000 pending operations, then the host blocks)


def _queue_copies(dst: torch.Tensor, src: torch.Tensor, n: int) -> float:
    """Seconds the host spends queueing ``n`` non_blocking copies of ``src`` into ``dst``."""
    started = time.perf_counter()
    for _ in range(n):
        dst.copy_(src, non_blocking=True)
    return time.perf_counter() - started


def test_the_host_blocks_once_a_stream_holds_queue_depth_jobs(dev):
    """Under the default depth (1024) 14 copies queue on a held stream; with depth 8 set at
    run time, queueing 8 + 6 copies held 5 ms waits for 6 to finish: at least 30 ms."""
    assert emu.queue_depth() == 1024
    src = torch.ones(256).pin_memory()
    dst = torch.empty(256, device=dev)
    with emu.held():
        _queue_copies(dst, src, 14)
        assert emu.pending(0) == 14, "the default depth blocked the host at 14 copies"
    torch.accelerator.synchronize()
    emu.set_copy_delay(0.005)
    emu.set_queue_depth(8)
    assert emu.queue_depth() == 8
    took = _queue_copies(dst, src, 8 + 6)
    assert emu.pending(0) <= 8  # never more than the depth pending
    assert took >= 6 * 0.005, f"queueing 14 copies at depth 8 took {took * 1e3:.1f} ms"
    torch.accelerator.synchronize()
    assert torch.equal(dst.cpu(), src)
    with pytest.raises(RuntimeError, match="queue depth must be >= 1"):
        emu.set_queue_depth(0)


def test_a_larger_depth_frees_a_host_blocked_on_the_queue(dev):
    """A thread blocked on a full queue (depth 1, its copy held) queues its copy as soon as the
    depth grows, while the held copy has still not run."""
    src = torch.ones(256).pin_memory()
    dst = torch.empty(256, device=dev)
    emu.set_queue_depth(1)
    queued = threading.Event()

    def second_copy() -> None:
        dst.copy_(src, non_blocking=True)
        queued.set()

    with emu.held():
        dst.copy_(src, non_blocking=True)
        thread = threading.Thread(target=second_copy, daemon=True)
        thread.start()
        assert not queued.wait(0.05), "the second copy was queued past a depth of 1"
        emu.set_queue_depth(4)
        assert queued.wait(60) and emu.pending(0) == 2  # the first has still not run
    thread.join()
    torch.accelerator.synchronize()


def test_frees_never_wait_for_room_in_a_full_queue(dev):
    """Frees queue an internal marker on every busy stream (memory goes back only after the
    work queued before it). On a full queue that marker must not block: a free that waited
    for a 200 ms copy would stall the host, and one from a worker thread would deadlock."""
    emu.set_queue_depth(2)
    src = torch.ones(1024).pin_memory()
    on_dev = torch.zeros(1024, device=dev)
    # Made first: filling an emu tensor is a kernel, which waits for the queue to drain.
    doomed = [torch.ones(64, device=dev), torch.ones(64).pin_memory()]
    with emu.held():
        on_dev.copy_(src, non_blocking=True)
        on_dev.copy_(src, non_blocking=True)  # the stream now holds its 2 jobs
        assert emu.pending(0) == 2
        # a free that waited for room would wait while the stream is held: for ever
        freeing = threading.Thread(target=doomed.clear, daemon=True)
        freeing.start()
        freeing.join(60)
        assert not freeing.is_alive(), "a free waited for room in the full queue"
    # Every other path through a full queue finishes once the work drains, none deadlocks.
    side = torch.Stream(device=dev)
    event = torch.Event(device=dev)
    event.record()  # waits for room, then queues
    side.wait_event(event)
    event.synchronize()
    torch.accelerator.synchronize()
    assert emu.pending(0) == 0 and torch.equal(on_dev.cpu(), src)


# --- the caching pinned host allocator (torch's CachingHostAllocator)


def _is_pinned_at(ptr: int, nbytes: int) -> bool:
    """is_pinned() of a tensor that does not own ``ptr``'s memory (so it keeps no block)."""
    return torch.frombuffer((ctypes.c_char * nbytes).from_address(ptr),
                            dtype=torch.uint8).is_pinned()


def test_a_freed_pinned_block_is_cached_and_handed_out_again(dev):
    """4000 and 4096 bytes both round up to 4096: the second request gets the first's block
    (no new allocation); 6000 bytes round up to 8192, a miss. Emptying the cache frees both."""
    torch.emu.empty_host_cache()
    before = torch.emu.host_memory_stats()
    first = torch.empty(1000, dtype=torch.float32, pin_memory=True)  # 4000 B
    ptr = first.data_ptr()
    stats = torch.emu.host_memory_stats()
    assert stats["num_host_alloc"] == before["num_host_alloc"] + 1
    assert stats["allocated_bytes.current"] == before["allocated_bytes.current"] + 4096
    assert stats["active_requests.current"] == before["active_requests.current"] + 1
    assert first.is_pinned() and _is_pinned_at(ptr, 4096)
    del first
    stats = torch.emu.host_memory_stats()
    assert stats["active_requests.current"] == before["active_requests.current"]
    assert stats["allocations.current"] == before["allocations.current"] + 1  # cached
    assert not _is_pinned_at(ptr, 4096), "a block back in the cache still reads as pinned"
    again = torch.empty(4096, dtype=torch.uint8, pin_memory=True)
    assert again.data_ptr() == ptr and again.is_pinned()
    assert torch.emu.host_memory_stats()["num_host_alloc"] == before["num_host_alloc"] + 1
    larger = torch.empty(6000, dtype=torch.uint8, pin_memory=True)
    stats = torch.emu.host_memory_stats()
    assert larger.data_ptr() != ptr
    assert stats["num_host_alloc"] == before["num_host_alloc"] + 2
    assert stats["allocated_bytes.current"] == before["allocated_bytes.current"] + 4096 + 8192
    del again, larger
    torch.accelerator.empty_host_cache()  # torch's own call reaches the same cache
    stats = torch.emu.host_memory_stats()
    assert stats["num_host_free"] == before["num_host_free"] + 2
    assert stats["allocations.current"] == before["allocations.current"]
    assert stats["allocated_bytes.current"] == before["allocated_bytes.current"]
    fresh = torch.empty(4096, dtype=torch.uint8, pin_memory=True)
    assert torch.emu.host_memory_stats()["num_host_alloc"] == before["num_host_alloc"] + 3
    assert fresh.is_pinned() and not torch.empty(4096, dtype=torch.uint8).is_pinned()


def test_a_cold_pin_pays_the_pinning_cost_and_a_warm_one_does_not(dev):
    """Timed without pin_memory()'s copy: on a loaded machine torch's threaded CPU copy alone
    can take milliseconds."""
    assert emu.pin_cost() == (20.0, 16.0)
    emu.set_pin_cost(5000, 0)  # 5 ms per fresh block: far above a cached block's cost
    torch.emu.empty_host_cache()
    before = torch.emu.host_memory_stats()

    def pin_s() -> float:
        started = time.perf_counter()
        block = torch.empty(1 << 16, pin_memory=True)
        took = time.perf_counter() - started
        assert block.is_pinned()
        return took

    cold_s = pin_s()
    for _ in range(5):
        pin_s()  # cached: no new block, so no pinning cost (counted below, not timed)
    stats = torch.emu.host_memory_stats()
    assert cold_s >= 0.005, f"a fresh block took {cold_s * 1e3:.2f} ms, less than its cost"
    assert stats["num_host_alloc"] == before["num_host_alloc"] + 1
    assert stats["host_alloc_time.total"] - before["host_alloc_time.total"] >= 5000  # us
    assert stats["host_alloc_time.count"] == before["host_alloc_time.count"] + 1
    with pytest.raises(RuntimeError, match="pin cost must be >= 0"):
        emu.set_pin_cost(-1)


def test_a_pinned_block_is_not_reused_while_a_queued_copy_still_reads_it(dev):
    dst = torch.zeros(1024, device=dev)
    src = torch.full((1024,), 7.0).pin_memory()
    ptr = src.data_ptr()
    with emu.held():
        dst.copy_(src, non_blocking=True)  # reads src once the stream is let go
        del src
        other = torch.full((1024,), -1.0).pin_memory()  # same rounded size
        assert other.data_ptr() != ptr, "a block still read by a queued copy was handed out"
    torch.accelerator.synchronize()
    assert torch.equal(dst.cpu(), torch.full((1024,), 7.0))
    assert torch.empty(1024, pin_memory=True).data_ptr() == ptr  # cached once the copy ran


# --- the SM clock (the model's: idle at 345 MHz, 1980 under load) and the spin that counts it.
# The model's time is held by the test (emu.manual_time): it moves only as the test advances
# it, so what is read at a moment is exact, whatever the host's load.

IDLE_MHZ, MAX_MHZ = 345.0, 1980.0
CYCLES = 1_000_000  # 2.28 ms from idle (the clock rising as it runs), 0.505 ms at the maximum


def _cool_down() -> None:
    time.sleep(emu.clock_model()[1] + 0.01)  # real time: the manual clock starts from it


def _runs_between(clock: emu.ManualTime, cycles: int, still_s: float, done_s: float) -> None:
    """A spin of ``cycles`` queued now is still running ``still_s`` of the model's time after
    it starts (its cycles need longer) and has ended by ``done_s``."""
    torch.emu._sleep(cycles)
    clock.wait_busy()  # its worker started it: a condition, not a time
    clock.advance(still_s)
    assert clock.busy(), f"{cycles} cycles ended within {still_s} s"
    clock.advance(done_s - still_s)
    torch.accelerator.synchronize()
    assert not clock.busy()


def test_a_spin_counts_cycles_of_a_clock_that_ramps_up_under_load(dev):
    """Cold, 1M cycles take 2.28 ms (the clock rises from 345 MHz at 1635 MHz per 20 ms while
    the spin runs); once the clock is at 1980 they take 0.505 ms."""
    emu.set_clock_model()
    _cool_down()
    with emu.manual_time() as clock:
        assert torch.emu.clock_info()["sm_clock_mhz"] == IDLE_MHZ
        _runs_between(clock, CYCLES, 0.00225, 0.00235)
        held = torch.emu.clock_info()["sm_clock_mhz"]
        assert held == pytest.approx(IDLE_MHZ + (MAX_MHZ - IDLE_MHZ) * 0.00235 / 0.02)
        _runs_between(clock, 10 * CYCLES, 0.003, 0.03)  # the ramp's end comes at 17.7 ms
        assert torch.emu.clock_info(0) == {"sm_clock_mhz": MAX_MHZ,
                                           "max_sm_clock_mhz": MAX_MHZ, "throttle_reasons": []}
        _runs_between(clock, CYCLES, 0.000500, 0.000510)  # warm: 4.5 times as fast
        clock.advance(0.051)  # idle past the cool-down
        assert torch.emu.clock_info(dev)["sm_clock_mhz"] == IDLE_MHZ


def test_clock_info_reports_the_ramp_while_the_device_works(dev):
    """With a 200 ms ramp a 100M-cycle spin runs about 120 ms and ends below the maximum. Read
    while it runs, the clock has risen as the ramp says for the time passed; idle, it holds
    its value until the cool-down, then it is back at 345 MHz."""
    emu.set_clock_model(ramp_s=0.2, cooldown_s=0.005)
    _cool_down()
    rise = (MAX_MHZ - IDLE_MHZ) / 0.2  # MHz per second of load
    with emu.manual_time() as clock:
        assert torch.emu.clock_info()["sm_clock_mhz"] == IDLE_MHZ
        torch.emu._sleep(100_000_000)
        clock.wait_busy()
        readings = []
        for _ in range(2):
            clock.advance(0.05)
            readings.append(torch.emu.clock_info()["sm_clock_mhz"])
        assert readings == pytest.approx([IDLE_MHZ + rise * 0.05, IDLE_MHZ + rise * 0.1])
        assert clock.busy()  # 100M cycles need 0.1198 s of the ramp
        clock.advance(0.03)
        torch.accelerator.synchronize()
        held = torch.emu.clock_info()["sm_clock_mhz"]
        assert held == pytest.approx(IDLE_MHZ + rise * 0.13) and held < MAX_MHZ
        clock.advance(0.004)
        assert torch.emu.clock_info()["sm_clock_mhz"] == held  # idle, within the cool-down
        clock.advance(0.002)
        assert torch.emu.clock_info()["sm_clock_mhz"] == IDLE_MHZ  # idle past the cool-down
        # the model is evaluated when read: a longer cool-down applies to the idle time so far
        emu.set_clock_model(ramp_s=0.2, cooldown_s=1.0)
        assert torch.emu.clock_info()["sm_clock_mhz"] == held
    emu.set_clock_model()


def test_set_clock_pins_the_clock_and_a_throttle_caps_it(dev):
    with emu.manual_time() as clock:
        emu.set_clock(400.0)  # 10M cycles: 25 ms; at 1980 MHz, 5.05 ms
        assert torch.emu.clock_info()["sm_clock_mhz"] == 400.0
        _runs_between(clock, 10 * CYCLES, 0.0249, 0.0251)
        emu.set_clock(MAX_MHZ)
        _runs_between(clock, 10 * CYCLES, 0.00500, 0.00510)
        emu.set_throttle(["thermal"])
        info = torch.emu.clock_info()
        assert info["throttle_reasons"] == ["thermal"]
        assert info["sm_clock_mhz"] == MAX_MHZ / 2  # capped at half the maximum
        _runs_between(clock, CYCLES, 0.00100, 0.00102)  # 1.01 ms at 990 MHz
        emu.set_throttle(["sync_boost"])  # reported, and not a slowdown
        assert torch.emu.clock_info() == {"sm_clock_mhz": MAX_MHZ, "max_sm_clock_mhz": MAX_MHZ,
                                          "throttle_reasons": ["sync_boost"]}
        emu.set_throttle([])
        emu.set_clock(None)
        clock.advance(emu.clock_model()[1] + 0.001)
        assert torch.emu.clock_info()["sm_clock_mhz"] == IDLE_MHZ  # the model again
    with pytest.raises(RuntimeError, match="must be > 0 MHz"):
        emu.set_clock(0)


def test_the_manual_time_moves_only_forward_and_only_while_held(dev):
    with emu.manual_time() as clock, pytest.raises(RuntimeError, match="only moves forward"):
        clock.advance(-0.001)
    with pytest.raises(RuntimeError, match="needs set_manual_time"):
        emu.ManualTime().advance(0.001)


# --- everything else runs on the CPU


def test_ops_fall_back_to_the_cpu(dev):
    a = torch.randn(64, 32)
    b = torch.randn(32, 16)
    assert torch.equal((a.to(dev) @ b.to(dev)).cpu(), a @ b)  # the same CPU kernel
    x = torch.arange(10.0, device=dev)
    assert x.sum().item() == 45.0
    assert torch.equal(torch.nonzero(x > 6.5).cpu(), torch.tensor([[7], [8], [9]]))
    assert torch.equal(x[torch.tensor([1, 3], device=dev)].cpu(), torch.tensor([1.0, 3.0]))
    assert torch.equal(x[x > 7].cpu(), torch.tensor([8.0, 9.0]))
    x[2:4] = -1.0
    assert x.cpu()[2:5].tolist() == [-1.0, -1.0, 4.0]
    view = x.view(2, 5)  # a view aliases: writing through it changes x
    view[1].add_(100)
    assert x.cpu()[5:].tolist() == [105.0, 106.0, 107.0, 108.0, 109.0]
    assert torch.zeros(4, device=dev).cpu().tolist() == [0.0] * 4
    torch.manual_seed(0)
    on_dev = torch.randn(5, device=dev).cpu()
    torch.manual_seed(0)
    assert torch.equal(on_dev, torch.randn(5))  # emu's generator is the CPU's


def test_an_op_mixing_devices_raises_torchs_error_as_cuda_does(dev):
    # CUDA refuses a host tensor beside a device one (the generated device check, and
    # TensorIterator's); the CPU fallback would quietly run it and hide the bug.
    lin = torch.nn.Linear(4, 3).to(dev)
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device, "
                                           r"but got mat1 is on cpu, different from other "
                                           r"tensors on emu:0 \(when checking argument in "
                                           r"method wrapper_PrivateUse1_addmm\)"):
        lin(torch.randn(2, 4))
    with pytest.raises(RuntimeError, match="but got weight is on cpu"):
        torch.nn.functional.cross_entropy(torch.randn(2, 3, device=dev),
                                          torch.tensor([0, 1], device=dev),
                                          weight=torch.ones(3))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device=dev) * (torch.rand(3) > 0.5)
    # what CUDA allows: a 0-dim host tensor (a scalar) and host indices
    x = torch.arange(4.0, device=dev)
    assert (x + torch.tensor(1.0)).cpu().tolist() == [1.0, 2.0, 3.0, 4.0]
    assert x[torch.tensor([True, False, True, False])].cpu().tolist() == [0.0, 2.0]
    assert x[torch.tensor([3, 1])].cpu().tolist() == [3.0, 1.0]


def test_a_kernel_waits_for_copies_queued_on_its_stream(dev):
    src = torch.full((MiB // 4,), 2.0).pin_memory()
    stream = torch.accelerator.current_stream()
    let_go = threading.Timer(0.2, lambda: torch.ops.xferbench_emu.hold_stream(0, 0, False))
    torch.ops.xferbench_emu.hold_stream(0, stream.stream_id, True)
    dst = src.to(dev, non_blocking=True)
    assert emu.pending(0) == 1  # the copy cannot run until the stream is let go
    let_go.start()
    assert dst.sum().item() == 2.0 * (MiB // 4)  # no synchronize: the kernel waited
    let_go.join()


# --- builds and devices


def test_two_devices_and_the_hardware_settings_from_the_environment(_emu_loaded, run_python):
    script = """
import sys, json
sys.path.insert(0, "tests")
import emu, torch
emu.load()
x = torch.arange(6.0, device="emu:1")
y = x.to("emu:0")
try:
    torch.ones(1, device="emu:2")
    missing = ""
except RuntimeError as exc:
    missing = str(exc).splitlines()[0]
with torch.accelerator.device_index(1):
    stream = torch.accelerator.current_stream()
    event = torch.Event(device="emu:1", enable_timing=True)
    event.record()
    event.synchronize()
    clock = torch.emu.clock_info()["sm_clock_mhz"]
clock0 = torch.emu.clock_info(0)["sm_clock_mhz"]
print(json.dumps({"count": torch.accelerator.device_count(), "x": str(x.device),
                  "y": y.cpu().tolist(), "missing": missing,
                  "stream": str(stream.device), "done": event.query(),
                  "depth": emu.queue_depth(), "pin_cost": emu.pin_cost(), "clock": clock,
                  "clock0": clock0}))
"""
    env = {"XFERBENCH_EMU_DEVICES": "2", "XFERBENCH_EMU_QUEUE_DEPTH": "16",
           "XFERBENCH_EMU_PIN_COST_US": "100,0.5"}
    done = run_python("-c", script, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["count"] == 2 and seen["x"] == "emu:1" and seen["stream"] == "emu:1"
    assert seen["y"] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and seen["done"]
    assert "emu:2 not found" in seen["missing"]
    assert seen["depth"] == 16 and seen["pin_cost"] == [100.0, 0.5]
    # each device has its own clock: x.to("emu:0") ran on emu:1's stream (a copy between two
    # devices is the source's work), so only emu:1's clock may have risen from idle
    assert seen["clock0"] == 345.0 and 345.0 <= seen["clock"] < 1980.0


@pytest.mark.parametrize(("name", "value", "message"), [
    ("XFERBENCH_EMU_QUEUE_DEPTH", "0", "is not a queue depth"),
    ("XFERBENCH_EMU_QUEUE_DEPTH", "lots", "is not a queue depth"),
    ("XFERBENCH_EMU_PIN_COST_US", "20,16,3", "is not a cost in microseconds"),
    ("XFERBENCH_EMU_PIN_COST_US", "-5", "is not a cost in microseconds"),
])
def test_a_bad_hardware_setting_is_one_clear_error(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=f"{name}='{value}' {message}"):
        emu._check_environment()


def test_a_build_for_another_torch_is_not_used(monkeypatch, tmp_path):
    from emu import _build

    monkeypatch.setenv("XFERBENCH_EMU_CACHE", str(tmp_path))
    here = _build.build_dir()
    assert here.name.startswith(torch.__version__ + "-")
    monkeypatch.setattr(_build, "_torch_identity", lambda: ("9.9.9", "f00"))
    assert _build.build_dir().name.startswith("9.9.9-") and _build.build_dir() != here
    monkeypatch.undo()
    monkeypatch.setenv("XFERBENCH_EMU_CACHE", str(tmp_path))
    # A library in this build's folder whose record names another torch is not loaded.
    here.mkdir(parents=True)
    (here / _build.LIBRARY_NAME).write_bytes(b"not a library")
    (here / "build.json").write_text(json.dumps({"torch": "2.0.0"}))
    assert _build.built_library() is None
    (here / "build.json").write_text(json.dumps({"torch": torch.__version__}))
    assert _build.built_library() == here / _build.LIBRARY_NAME


def test_no_compiler_is_one_line_and_a_failure_status(run_python, tmp_path):
    env = {"PATH": str(tmp_path), "CXX": "", "XFERBENCH_EMU_CACHE": str(tmp_path / "cache")}
    done = run_python("tests/emu/_build.py", env=env)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "emu: not built: no C++ compiler on PATH (looked for $CXX, c++, g++, clang++)"]
    assert not os.path.exists(tmp_path / "cache") or not any((tmp_path / "cache").iterdir())


@pytest.mark.slow  # a cmake that fails
def test_a_failed_build_is_one_line_naming_its_log(run_python, tmp_path):
    env = {"CXX": "/bin/false", "XFERBENCH_EMU_CACHE": str(tmp_path)}
    done = run_python("tests/emu/_build.py", env=env)
    assert done.returncode == 1
    [line] = done.stdout.splitlines()
    assert line.startswith("emu: not built: build failed: CMake Error")
    assert "not able to compile" in line
    log = Path(line.rsplit("full log: ", 1)[1])
    assert log.is_file() and log.parent == tmp_path
    assert not any(path.is_dir() for path in tmp_path.iterdir())  # nothing left to load


def test_loading_twice_is_harmless(dev):
    module = torch.emu
    emu.load()
    assert torch._C._get_privateuse1_backend_name() == "emu"
    assert torch.emu is module
    assert torch.ones(1, device=dev).item() == 1.0

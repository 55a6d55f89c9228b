"""The emulated device stalls where the hardware does: a non_blocking copy from pageable memory
waits for the work queued before it, a strided view of a pinned buffer is staged the same way,
and threads that pin at once wait for each other on the driver's lock.

Loading emu makes it torch's accelerator for the rest of the process, so, as
tests/test_emu_backend.py does, these run in-process only alone or in a session already on
the emulated device, and otherwise once in a fresh interpreter.
"""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

import emu
import pytest
import torch
from conftest import emu_runs_in_process, rerun_in_fresh_process

THIS_FILE = Path(__file__).resolve()
MiB = 2**20
#: Work queued before each copy: long enough that a copy staged behind it cannot hide in a
#: loaded host's noise, short enough for the test to stay quick.
QUEUED_S = 0.05


@pytest.fixture(scope="module")
def dev(request: pytest.FixtureRequest) -> torch.device:
    if not emu_runs_in_process(request.session, THIS_FILE):
        pytest.skip("emu becomes torch's accelerator for the whole process, so in this "
                    "session these run in a fresh one: test_stalls_pass_in_a_fresh_process")
    try:
        emu.load()
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    yield torch.device("emu:0")
    emu.set_copy_delay(0)
    emu.set_pin_cost(20.0, 16.0)
    torch.accelerator.synchronize()


@pytest.mark.slow
def test_stalls_pass_in_a_fresh_process(request):
    if emu_runs_in_process(request.session, THIS_FILE):
        pytest.skip("this session runs the stall tests in-process")
    rerun_in_fresh_process(THIS_FILE)


def _behind_queued_work(copy) -> tuple[float, int]:
    """(seconds ``copy()`` held the host, jobs still queued when it returned), the copy
    issued behind QUEUED_S of work: one copy held that long on the stream."""
    torch.accelerator.synchronize()
    held = torch.ones(1024, dtype=torch.uint8).pin_memory()
    landing = torch.empty(1024, dtype=torch.uint8, device="emu")
    with emu.copy_delay(QUEUED_S):
        landing.copy_(held, non_blocking=True)  # the queued work
    started = time.perf_counter()
    copy()
    took = time.perf_counter() - started
    pending = emu.pending(0)
    torch.accelerator.synchronize()
    return took, pending


def test_a_non_blocking_copy_from_pageable_memory_waits_for_the_queued_work(dev):
    src = torch.arange(MiB, dtype=torch.int32).to(torch.uint8)
    dst = torch.empty(MiB, dtype=torch.uint8, device=dev)
    took, pending = _behind_queued_work(lambda: dst.copy_(src, non_blocking=True))
    assert took >= 0.8 * QUEUED_S and pending == 0  # staged after the stream drained
    assert torch.equal(dst.cpu(), src)
    back = torch.empty(MiB, dtype=torch.uint8)  # pageable destination: d2h waits too
    took, pending = _behind_queued_work(lambda: back.copy_(dst, non_blocking=True))
    assert took >= 0.8 * QUEUED_S and pending == 0 and torch.equal(back, src)


def test_a_non_blocking_copy_from_pinned_memory_returns_before_the_queued_work(dev):
    src = torch.arange(MiB, dtype=torch.int32).to(torch.uint8).pin_memory()
    dst = torch.empty(MiB, dtype=torch.uint8, device=dev)
    took, pending = _behind_queued_work(lambda: dst.copy_(src, non_blocking=True))
    assert took < 0.2 * QUEUED_S and pending >= 1  # queued behind the held copy
    assert torch.equal(dst.cpu(), src)


@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_a_strided_view_of_a_pinned_buffer_is_staged_like_pageable_memory(dev, direction):
    """x[::2] of a pinned buffer is pinned memory (is_pinned() says so) and not contiguous:
    torch copies it through a pageable temporary, which waits for the stream."""
    pinned = torch.arange(2 * MiB, dtype=torch.int32).to(torch.uint8).pin_memory()
    view = pinned[::2]
    assert view.is_pinned() and not view.is_contiguous()
    on_dev = torch.empty(MiB, dtype=torch.uint8, device=dev)
    expected = view.clone()
    if direction == "h2d":
        took, pending = _behind_queued_work(lambda: on_dev.copy_(view, non_blocking=True))
        assert torch.equal(on_dev.cpu(), expected)
    else:
        on_dev.copy_(expected)
        view.zero_()
        took, pending = _behind_queued_work(lambda: view.copy_(on_dev, non_blocking=True))
        assert torch.equal(view, expected)
    assert took >= 0.8 * QUEUED_S and pending == 0


def _pin_calls(threads: int, rounds: int = 3) -> list[float]:
    """Seconds of each fresh pin (the cache emptied before each round), ``threads`` pinning at
    once behind a barrier."""
    out: list[float] = []
    lock = threading.Lock()
    for _ in range(rounds):
        torch.emu.empty_host_cache()
        gate = threading.Barrier(threads)

        def pin(gate: threading.Barrier = gate) -> None:
            gate.wait()
            started = time.perf_counter()
            block = torch.empty(1 << 16, dtype=torch.uint8, pin_memory=True)
            took = time.perf_counter() - started
            assert block.is_pinned()
            with lock:
                out.append(took)

        workers = [threading.Thread(target=pin) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    return out


def test_threads_that_pin_at_once_wait_for_each_other(dev):
    """Each fresh block costs 5 ms of page-locking under the driver's lock: one thread's pin
    takes about 5 ms, eight threads' take 5 to 40 ms, a median near 20."""
    emu.set_pin_cost(5000, 0)
    one = statistics.median(_pin_calls(1))
    eight = _pin_calls(8)
    assert one >= 0.005
    assert statistics.median(eight) >= 3 * one, (one, sorted(eight))
    assert max(eight) >= 6 * 0.005  # the last of eight waited for seven before it
    stats = torch.emu.host_memory_stats()
    assert stats["host_alloc_time.max"] >= 6 * 5000  # the wait counts, as torch's timer's

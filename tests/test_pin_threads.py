"""Pinning under concurrency: skipped with its reasons, the reserved segment where CUDA's
allocator has it, a release without it says so, and on the emulated device the calls of
threads that pin at once take turns on the driver's lock."""

from __future__ import annotations

import json
import os
import statistics
import subprocess

import pytest
from conftest import CPU_PROBE

from xferbench.devices import capabilities, is_emulated
from xferbench.errors import XferbenchError
from xferbench.practices import pin_threads
from xferbench.practices.pin_threads import (
    LARGE_PIN_NBYTES,
    PIN_NBYTES,
    THREADS,
    NotInRelease,
    PinThreadsCase,
    pin_sizes,
    pin_threads_skip_reason,
    run_pin_threads,
)


def test_pinning_threads_needs_pinned_memory_and_the_reserve_cuda(cpu_caps, gpu_caps):
    assert pin_threads_skip_reason(PinThreadsCase(8), cpu_caps) == (
        "pin_memory() needs an accelerator with pinned host memory")
    assert pin_threads_skip_reason(PinThreadsCase(8, "reserved"), gpu_caps) is None
    emu = capabilities("cpu").__class__("emu:0", True, True, True, emulated=True)
    assert pin_threads_skip_reason(PinThreadsCase(8, "reserved"), emu) == (
        "pinned_reserve_segment_size_mb is a setting of CUDA's caching host allocator "
        "(PYTORCH_CUDA_ALLOC_CONF): emu:0 pins through its own allocator")
    large = PinThreadsCase(2, "none", LARGE_PIN_NBYTES)
    assert "is measured once, from one thread" in pin_threads_skip_reason(large, gpu_caps)
    assert pin_threads_skip_reason(PinThreadsCase(1, "none", LARGE_PIN_NBYTES), gpu_caps) is None


def test_the_pin_over_2_gib_is_in_the_full_sweep_alone(monkeypatch):
    assert pin_sizes() == (PIN_NBYTES,) and LARGE_PIN_NBYTES > 2**31
    monkeypatch.setenv("XFERBENCH_SWEEP", "full")
    assert pin_sizes() == (PIN_NBYTES, LARGE_PIN_NBYTES)


def test_a_bad_case_is_one_sentence():
    with pytest.raises(XferbenchError, match="3 threads, reserve 'none'"):
        PinThreadsCase(3)
    assert PinThreadsCase(4, "reserved").label == "pin_memory x4 threads reserved 1536KiB"


def _child_fails(monkeypatch, stderr: str) -> None:
    def fake_run(*args, **kwargs):
        assert "pinned_reserve_segment_size_mb:" in kwargs["env"]["PYTORCH_CUDA_ALLOC_CONF"]
        return subprocess.CompletedProcess(args, 1, "", stderr)

    monkeypatch.setattr(pin_threads.subprocess, "run", fake_run)


def test_a_release_without_the_reserve_setting_gives_no_figure_saying_so(monkeypatch):
    from xferbench.devices import Device

    _child_fails(monkeypatch, "RuntimeError: Unrecognized key 'pinned_reserve_segment_size_mb'"
                              " in CUDA allocator config.")
    with pytest.raises(NotInRelease, match="this release refuses pinned_reserve_segment_size_mb:"
                                           " RuntimeError: Unrecognized key"):
        pin_threads._in_fresh_process(PinThreadsCase(8, "reserved"), Device("cuda", 0), 3)
    _child_fails(monkeypatch, "RuntimeError: CUDA error: out of memory")
    with pytest.raises(RuntimeError, match="the process that measured pin_memory x8 threads "
                                           "reserved 1536KiB failed: RuntimeError: CUDA"):
        pin_threads._in_fresh_process(PinThreadsCase(8, "reserved"), Device("cuda", 0), 3)


def test_describe_skips_every_pin_on_the_cpu(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_pin_threads",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    (found,) = json.loads(proc.stdout)
    assert (found["class"], found["measured"], found["combinations"]) == ("PinThreads", 0, 8)


# -- on an accelerator (the emulated one in CI) ---------------------------------------------

def _emulated(device) -> None:
    if not is_emulated(device):
        pytest.skip("emulated device only: its pinning cost is set to make the lock plain")


@pytest.mark.gpu
def test_threads_that_pin_at_once_take_turns_and_each_call_verifies(gpu_device):
    """At 5 ms a fresh block (the emulated cost of page-locking, under the driver's lock),
    eight threads' calls take 5 to 40 ms: the median call is at least 3x one thread's, and
    the slowest of a round at least 3x its fastest."""
    _emulated(gpu_device)
    import emu

    emu.set_pin_cost(5000, 0)
    try:
        one = run_pin_threads(PinThreadsCase(1), gpu_device, rounds=3)
        eight = run_pin_threads(PinThreadsCase(THREADS[-1]), gpu_device, rounds=3)
    finally:
        emu.set_pin_cost(20.0, 16.0)
    assert len(one.call_s) == 3 and len(eight.call_s) == 3 * THREADS[-1]
    assert statistics.median(eight.call_s) >= 3 * statistics.median(one.call_s)
    assert statistics.median(eight.spread) >= 3 and one.spread == (1.0, 1.0, 1.0)


@pytest.mark.gpu
def test_every_call_pins_a_fresh_block(gpu_device):
    """The cache is emptied before each round (the device layer's empty_host_cache reaches
    the backend's own allocator), so each call allocates: threads x (rounds + the untimed
    one), and one more for the bytes per byte."""
    from xferbench.device_memory import host_allocations

    if not capabilities(gpu_device).pinned_memory:
        pytest.skip(f"{gpu_device} has no pinned host memory")
    before = host_allocations(gpu_device)
    if before is None:
        pytest.skip(f"{gpu_device}'s backend keeps no pinned allocation count")
    run_pin_threads(PinThreadsCase(4), gpu_device, rounds=2)
    assert host_allocations(gpu_device) - before == 4 * (2 + 1) + 1


@pytest.mark.gpu
def test_a_pinned_byte_costs_the_block_it_is_rounded_up_to(gpu_device):
    if not capabilities(gpu_device).pinned_memory:
        pytest.skip(f"{gpu_device} has no pinned host memory")
    r = run_pin_threads(PinThreadsCase(2), gpu_device, rounds=1)
    if r.host_bytes_per_byte is None:
        pytest.skip(f"{gpu_device}'s backend keeps no pinned byte count")
    assert r.host_bytes_per_byte == pytest.approx(2 * 2**20 / PIN_NBYTES)  # 1.5 MiB in 2


@pytest.mark.gpu
@pytest.mark.slow
def test_a_fresh_process_measures_and_hands_its_result_back(gpu_device):
    """The reserved case's path, on any accelerator: a child measures and prints its result."""
    _emulated(gpu_device)
    if "autoload" not in os.environ.get("PYTHONPATH", ""):
        pytest.skip("a child process loads emu through tests/emu/autoload on PYTHONPATH")
    r = pin_threads._in_fresh_process(PinThreadsCase(2), gpu_device, 2)
    assert r.device == gpu_device.name and len(r.call_s) == 4 and len(r.spread) == 2

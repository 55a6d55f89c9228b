"""d2d from memory beside the L2-resident figure: the rotation sized past the L2 the device
reports, every slot written checked, skipped with its reason where there is no device clock."""

from __future__ import annotations

import json

import pytest
from conftest import CPU_PROBE, GPU_PROBE

from xferbench.devices import Capabilities, Device, capabilities
from xferbench.errors import XferbenchError
from xferbench.practices import VerificationError
from xferbench.practices.d2d_memory import (
    DEFAULT_SIZES,
    FULL_SIZES,
    L2_MULTIPLE,
    PLACEMENTS,
    UNKNOWN_L2_BYTES,
    D2DCase,
    build_d2d,
    d2d_sizes,
    d2d_skip_reason,
    rotation_slots,
    run_d2d,
)
from xferbench.spec import MeasureSpec
from xferbench.telemetry import l2_cache_bytes
from xferbench.units import KiB, MiB


def test_d2d_needs_an_accelerator_with_a_device_clock(cpu_caps, gpu_caps):
    case = D2DCase("rotated", 4 * KiB)
    assert d2d_skip_reason(case, cpu_caps) == (
        "d2d needs an accelerator: on the CPU it is the h2d host copy")
    assert d2d_skip_reason(case, gpu_caps) is None
    no_clock = Capabilities("xpu:0", True, False, True)
    assert "needs timing events xpu:0 lacks" in d2d_skip_reason(case, no_clock)
    with pytest.raises(XferbenchError, match="placement 'cold'"):
        D2DCase("cold", 4 * KiB)


def test_small_sizes_only_and_the_full_sweep_every_power_of_two(monkeypatch):
    assert d2d_sizes() == DEFAULT_SIZES and max(DEFAULT_SIZES) == 4 * MiB
    monkeypatch.setenv("XFERBENCH_SWEEP", "full")
    assert d2d_sizes() == FULL_SIZES and (FULL_SIZES[0], FULL_SIZES[-1]) == (KiB, 4 * MiB)


def test_the_rotation_exceeds_the_l2_four_times():
    h200_l2 = 50 * MiB
    slots = rotation_slots(4 * KiB, h200_l2)
    assert slots == 25600 and 2 * slots * 4 * KiB == L2_MULTIPLE * h200_l2
    assert rotation_slots(4 * MiB, None) * 2 * 4 * MiB >= L2_MULTIPLE * UNKNOWN_L2_BYTES
    assert rotation_slots(64 * MiB, 4 * MiB) == 2  # never fewer than two pairs
    assert l2_cache_bytes(Device("cpu")) is None


def test_describe_plans_both_placements_at_the_largest_size_as_the_headline(run_python):
    for probe, measured, headline in ((CPU_PROBE, 0, 0), (GPU_PROBE, 6, 2)):
        proc = run_python("-m", "benchmarks._asv", "bench_d2d",
                          env={"XFERBENCH_PROBE": probe, "XFERBENCH_SWEEP": "default"})
        assert proc.returncode == 0, proc.stderr
        (found,) = json.loads(proc.stdout)
        assert (found["class"], found["measured"], found["headline"]) == (
            "D2DFromMemory", measured, headline)


# -- on an accelerator (the emulated one in CI) ---------------------------------------------

SPEC = MeasureSpec(warmup_s=0.01, min_time_s=0.02, max_time_s=0.1)


def _device_clock(device) -> None:
    why = d2d_skip_reason(D2DCase("rotated", KiB), capabilities(device))
    if why:
        pytest.skip(why)


@pytest.mark.gpu
@pytest.mark.parametrize("placement", PLACEMENTS)
def test_each_placement_is_read_on_device_time_and_verified(gpu_device, placement):
    _device_clock(gpu_device)
    m = run_d2d(D2DCase(placement, 256 * KiB), gpu_device, SPEC)
    assert m.label == f"d2d {placement} 256KiB" and m.nbytes == 256 * KiB
    assert m.device_s  # device time, bytes counted once
    l2 = l2_cache_bytes(gpu_device)
    if placement == "rotated":
        assert m.extra["footprint_bytes"] >= L2_MULTIPLE * (l2 or UNKNOWN_L2_BYTES)
    else:
        assert (m.extra["slots"], m.extra["footprint_bytes"]) == (1, 2 * 256 * KiB)


@pytest.mark.gpu
def test_a_slot_copied_wrong_fails_verification(gpu_device):
    _device_clock(gpu_device)
    work = build_d2d(D2DCase("rotated", 64 * KiB), gpu_device)
    for _ in range(work.slots + 1):
        work.run()
    work.verify()
    work.keep[1][3] += 1  # a byte of the first destination
    with pytest.raises(VerificationError, match="d2d rotated 64KiB: a destination differs"):
        work.verify()

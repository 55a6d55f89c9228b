"""A copy overlapped with compute, pageable vs pinned, queued copy first and compute first."""

from __future__ import annotations

import math

import pytest

from xferbench import XferbenchError
from xferbench.devices import capabilities
from xferbench.practices.overlap import ORDERS, overlap_skip_reason, run_overlap
from xferbench.spec import MeasureSpec
from xferbench.units import MiB, size_label


def test_overlap_skipped_without_side_streams(cpu_caps):
    for host in ("pageable", "pinned"):
        assert "needs side streams" in overlap_skip_reason(host, cpu_caps)


def test_overlap_runs_pageable_and_pinned_in_both_orders_where_there_are_side_streams(
        gpu_caps, mps_caps):
    for order in ORDERS:
        assert overlap_skip_reason("pageable", gpu_caps, order) is None
        assert overlap_skip_reason("pinned", gpu_caps, order) is None
    assert "not compared" in overlap_skip_reason("pin_then_copy", gpu_caps)
    assert "side streams" in overlap_skip_reason("pageable", mps_caps)
    assert "order 'sideways' is not one of" in overlap_skip_reason("pinned", gpu_caps, "sideways")


def test_overlap_refused_without_accelerator():
    with pytest.raises(XferbenchError, match="overlap on cpu: overlap needs side streams"):
        run_overlap("pinned", MiB, "cpu")


def _overlap(host_memory, device, order="copy_first", nbytes=64 * MiB, matmul_n=1024):
    caps = capabilities(device)
    if overlap_skip_reason(host_memory, caps, order):
        pytest.skip(overlap_skip_reason(host_memory, caps, order))
    spec = MeasureSpec(warmup_s=0.02, min_time_s=0.05, max_time_s=0.3)
    result = run_overlap(host_memory, nbytes, device, spec, matmul_n=matmul_n, order=order)
    print(f"overlap {host_memory} {order} {size_label(nbytes)}: copy "
          f"{result.copy.median * 1e3:.3f} ms, {result.matmuls} matmuls "
          f"{result.compute.median * 1e3:.3f} ms, both {result.both.median * 1e3:.3f} ms: "
          f"overlap {result.overlap:.2f}")
    return result


@pytest.mark.gpu
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("host_memory", ["pinned", "pageable"])
def test_overlap_runs_three_verified_measurements_on_the_completion_clock(
        host_memory, order, gpu_device):
    # run_overlap verifies the side-stream copy against its source and the matmuls' output;
    # small, since no time is judged here (the timing twin below is full size)
    result = _overlap(host_memory, gpu_device, order, nbytes=4 * MiB, matmul_n=256)
    assert result.matmuls >= 1
    for m in (result.copy, result.compute, result.both):
        assert m.device == gpu_device.name and m.median > 0
        assert m.primary_clock == "completion_s" and m.device_s == ()
    assert result.copy.nbytes == result.both.nbytes == 4 * MiB
    assert math.isfinite(result.overlap)


@pytest.mark.gpu
@pytest.mark.timing
@pytest.mark.parametrize("host_memory", ["pinned", "pageable"])
def test_overlap_gives_a_sane_fraction_from_three_measurements(host_memory, gpu_device):
    result = _overlap(host_memory, gpu_device)
    assert -0.5 <= result.overlap <= 1.5
    # the chain is resized until it takes within a quarter of the copy's time, timed after
    # the clock has risen (not from one matmul timed at idle clocks): within 2x, whatever GPU
    assert 0.5 < result.compute.median / result.copy.median < 2


@pytest.mark.gpu
@pytest.mark.timing
@pytest.mark.cuda_only("a pinned copy that returns before the matmuls are queued")
def test_copy_first_a_pinned_copy_overlaps_more_than_a_pageable_one(gpu_device):
    pinned = _overlap("pinned", gpu_device, "copy_first")
    pageable = _overlap("pageable", gpu_device, "copy_first")
    assert pinned.overlap > pageable.overlap + 0.2

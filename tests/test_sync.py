"""Sync workloads: every read runs and verifies, on the same parameters; wrong losses fail."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from xferbench.devices import capabilities
from xferbench.errors import XferbenchError
from xferbench.practices import VerificationError
from xferbench.practices.sync import (
    DEFAULT_WIDTH,
    SYNC_WARNING,
    LoopCase,
    build_loop,
    compare_sync,
    count_sync_warnings,
    count_syncs,
    loop_skip_reason,
    loop_widths,
    read_count_skip_reason,
    run_loop,
    sync_count_skip_reason,
    syncs_per_step,
)
from xferbench.practices.sync_reads import (
    LOG_EVERY,
    PER_BATCH,
    PER_EPOCH,
    READS,
    epoch_tolerance,
    readers,
)

STEPS = 12  # two readings for item_every_10 (steps 0 and 10)


def tiny(read: str) -> LoopCase:
    return LoopCase(read, width=16, depth=2, batch=8, steps=STEPS)


def _on_cpu(read: str) -> None:
    reason = loop_skip_reason(tiny(read), capabilities("cpu"))
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize("read", READS)
def test_every_read_runs_and_verifies_on_cpu(read, small_budget):
    _on_cpu(read)
    result = run_loop(tiny(read), "cpu", small_budget)
    assert result.syncs is None and result.syncs_per_step is None
    assert 0 < result.step_s < 1
    assert result.steps_per_s == pytest.approx(1 / result.step_s)
    assert len(result.step_samples) == len(result.measurement.completion_s)


@pytest.mark.parametrize("read", READS)
def test_every_read_ends_on_the_same_parameters(read):
    _on_cpu(read)
    ref = build_loop(tiny(PER_BATCH), "cpu")
    ref.run()
    work = build_loop(tiny(read), "cpu")
    work.run()
    work.run()  # each epoch restarts from the same state
    for p, q in zip(work.params(), ref.params()):
        assert torch.equal(p, q)


def test_the_loop_trains():
    work = build_loop(tiny(PER_EPOCH), "cpu")
    work.run()
    assert all(not torch.equal(a, b) for a, b in zip(work.initial, work.params()))
    assert len(set(work.reference.losses)) == STEPS  # a different batch every step


def test_readings_per_variant():
    expected = {"item_every_batch": STEPS, "item_every_10": math.ceil(STEPS / LOG_EVERY),
                "device_accumulate": 1, "print": STEPS, "nonzero": STEPS}
    for read, n in expected.items():
        work = build_loop(tiny(read), "cpu")
        work.run()
        assert len(work.readings) == n, read
    work = build_loop(tiny("print"), "cpu")
    work.run()
    assert work.readings[0].startswith("tensor(")


def test_per_epoch_loss_is_the_sum_of_the_batch_losses():
    per_batch = build_loop(tiny(PER_BATCH), "cpu")
    per_batch.run()
    per_epoch = build_loop(tiny(PER_EPOCH), "cpu")
    per_epoch.run()
    assert per_batch.readings == per_batch.reference.losses
    assert math.isclose(per_epoch.readings[0], math.fsum(per_batch.readings),
                        rel_tol=epoch_tolerance(STEPS))


def test_wrong_accumulated_loss_fails_verification():
    work = build_loop(tiny(PER_EPOCH), "cpu")
    work.run()
    work.verify()
    work.readings[0] *= 1 + 1e-4  # far above fp32 rounding, far below a visible change
    with pytest.raises(VerificationError, match="not the sum of the per-batch losses"):
        work.verify()


def test_wrong_batch_loss_fails_verification():
    work = build_loop(tiny(PER_BATCH), "cpu")
    work.run()
    work.readings[3] += 1e-6
    with pytest.raises(VerificationError, match="reading 3"):
        work.verify()


def test_wrong_mask_result_fails_verification():
    work = build_loop(tiny("mask_index"), "cpu")
    work.run()
    work.verify()
    work.readings[0] = work.readings[0][:-1]
    with pytest.raises(VerificationError, match="reading 0"):
        work.verify()


def test_changed_arithmetic_fails_verification():
    work = build_loop(tiny("float"), "cpu")
    work.run()
    with torch.no_grad():
        work.params()[0][0, 0] += 1e-6
    with pytest.raises(VerificationError, match="parameter 0 after 12 steps differs"):
        work.verify()


def test_sync_count_skipped_where_no_debug_mode(cpu_caps, gpu_caps, mps_caps):
    assert "CPU has no host-device synchronisation" in sync_count_skip_reason(cpu_caps)
    assert "CUDA and ROCm only" in sync_count_skip_reason(mps_caps)
    assert sync_count_skip_reason(gpu_caps) is None
    with pytest.raises(XferbenchError, match="sync count on cpu"):
        count_syncs(lambda: None, "cpu")


def test_sync_warnings_are_counted_and_other_warnings_are_not():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            warnings.warn(SYNC_WARNING, UserWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert count_sync_warnings(caught) == 3


def test_bad_cases_are_refused():
    with pytest.raises(XferbenchError, match="read 'log'"):
        LoopCase("log")
    with pytest.raises(XferbenchError, match="steps 0"):
        LoopCase(PER_BATCH, steps=0)


def test_widths_default_and_full(monkeypatch):
    monkeypatch.delenv("XFERBENCH_SWEEP", raising=False)
    assert loop_widths() == (DEFAULT_WIDTH,)
    monkeypatch.setenv("XFERBENCH_SWEEP", "full")
    assert DEFAULT_WIDTH in loop_widths() and len(loop_widths()) > 1


def test_headline_comparison_on_cpu(small_budget):
    result = compare_sync("cpu", width=16, spec=small_budget)
    assert result.per_batch.case.read == PER_BATCH and result.per_epoch.case.read == PER_EPOCH
    assert result.per_batch.syncs_per_step is None  # not countable on the CPU
    assert result.ratio == pytest.approx(result.per_epoch.steps_per_s
                                         / result.per_batch.steps_per_s)
    assert 0 < result.ratio < 100


@pytest.mark.gpu
@pytest.mark.cuda_only("sync debug mode (torch.cuda.set_sync_debug_mode)")
def test_syncs_per_step_counted_on_cuda(gpu_device):
    case = LoopCase(PER_BATCH, width=64, batch=32, steps=STEPS)
    assert syncs_per_step(case, gpu_device) == pytest.approx(1.0)
    per_epoch = syncs_per_step(LoopCase(PER_EPOCH, width=64, batch=32, steps=STEPS), gpu_device)
    assert per_epoch == pytest.approx(1 / STEPS)
    for read in ("nonzero", "mask_index", "if_tensor", "cpu"):
        assert syncs_per_step(LoopCase(read, width=64, batch=32, steps=STEPS), gpu_device) >= 1


@pytest.mark.gpu
@pytest.mark.parametrize("read", READS)
def test_every_read_runs_and_verifies_on_the_accelerator(read, gpu_device, small_budget):
    # verified: the readings equal the host reference's losses, the parameters its own
    result = run_loop(tiny(read), gpu_device, small_budget)
    assert result.measurement.device == gpu_device.name
    assert 0 < result.step_s and len(result.step_samples) >= 3


def test_the_synchronize_variant_drains_once_per_step_and_reads_nothing():
    readings: list = []
    drains: list = []
    read, start, end = readers("synchronize", readings, torch.device("cpu"),
                               lambda: drains.append(1))
    start()
    for i in range(STEPS):
        read(i, torch.ones(()), torch.ones(3))
    end()
    assert len(drains) == STEPS and readings == list(range(STEPS))
    work = build_loop(tiny("synchronize"), "cpu")
    work.run()
    work.verify()
    work.readings.pop()
    with pytest.raises(VerificationError, match="readings in the epoch"):
        work.verify()


def test_the_synchronize_variant_is_never_counted(gpu_caps):
    # torch's sync debug mode does not report an explicit synchronise: a count would read 0
    assert "does not report an explicit synchronise" in read_count_skip_reason(
        "synchronize", gpu_caps)
    assert read_count_skip_reason("item_every_batch", gpu_caps) is None

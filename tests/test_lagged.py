"""The lagged read, the fix for .item() every batch: the loss copied non_blocking into pinned
memory behind an event and read one step later reads the same losses as .item() every batch,
ends on the same parameters, and makes no synchronisation in the step."""

from __future__ import annotations

import pytest
import torch

import xferbench
from xferbench.errors import XferbenchError
from xferbench.practices import VerificationError
from xferbench.practices.sync import (
    LoopCase,
    build_loop,
    loop_skip_reason,
    read_count_skip_reason,
    syncs_per_step,
)
from xferbench.practices.sync_reads import PER_BATCH, READS, check_readings, readers

STEPS = 12


def tiny(read: str) -> LoopCase:
    return LoopCase(read, width=16, depth=2, batch=8, steps=STEPS)


def _epoch(read: str, device) -> list:
    work = build_loop(tiny(read), device)
    work.run()
    work.verify()  # the readings against the reference's losses, the parameters bit for bit
    return list(work.readings)


def test_the_lagged_read_is_one_of_the_loops_reads_and_counted_where_syncs_are(gpu_caps,
                                                                              cpu_caps):
    assert "lagged" in READS
    assert read_count_skip_reason("lagged", gpu_caps) is None
    assert read_count_skip_reason("lagged", cpu_caps) == (
        "the CPU has no host-device synchronisation to count")


def test_each_step_reads_the_step_before_and_the_epoch_end_reads_the_last():
    readings: list = []
    read, start, end = readers("lagged", readings, torch.device("cpu"), device=None)
    start()
    for i in range(STEPS):
        read(i, torch.tensor(float(i)), torch.ones(3))
        assert readings == [float(j) for j in range(i)]  # one step late
    end()
    assert readings == [float(j) for j in range(STEPS)]


def test_the_lagged_read_lags_behind_a_device_so_the_cpu_skips_it(cpu_caps, gpu_caps, mps_caps):
    assert loop_skip_reason(tiny("lagged"), cpu_caps).startswith(
        "the lagged read waits a step for a device's copy: on the CPU every copy is done")
    assert "copies into pinned memory, which mps lacks" in loop_skip_reason(tiny("lagged"),
                                                                             mps_caps)
    assert loop_skip_reason(tiny("lagged"), gpu_caps) is None
    with pytest.raises(XferbenchError, match="loop lagged mlp16x2 b8 k12 on cpu: the lagged"):
        build_loop(tiny("lagged"), "cpu")


def test_a_wrong_lagged_reading_fails_verification():
    work = build_loop(tiny(PER_BATCH), "cpu")  # the lagged read's readings, as it checks them
    work.run()
    work.readings[3] += 1.0  # a stale or wrong value is caught
    with pytest.raises(VerificationError, match="reading 3 is"):
        check_readings("lagged", STEPS, "lagged", work.readings, work.reference)


@pytest.mark.gpu
def test_the_lagged_read_reads_the_same_losses_with_no_sync_in_the_step(gpu_device):
    """Verified against the reference epoch (every value kept on the device, read after),
    equal to .item() every batch's readings; the audit counts the host's waits for the
    device: one per step for .item(), none for the lagged read (its event wait is for a copy
    queued a step earlier, and it reads a host tensor)."""
    assert _epoch("lagged", gpu_device) == _epoch(PER_BATCH, gpu_device)
    counted = {}
    for read in ("lagged", PER_BATCH):
        work = build_loop(tiny(read), gpu_device)
        work.run()
        with xferbench.audit(device=gpu_device, sync_debug=False) as audit:
            work.run()
        work.verify()
        counted[read] = audit.total.syncs / STEPS
    assert counted == {"lagged": 0.0, PER_BATCH: 1.0}


@pytest.mark.gpu
@pytest.mark.cuda_only("sync debug mode (torch.cuda.set_sync_debug_mode)")
def test_torchs_sync_debug_mode_counts_no_sync_in_the_lagged_step(gpu_device):
    case = LoopCase("lagged", width=64, batch=32, steps=STEPS)
    assert syncs_per_step(case, gpu_device) == 0


def test_each_lagged_claim_says_why_the_committed_cpu_series_cannot_measure_it():
    from conftest import REPO_ROOT, committed_results

    from xferbench.analysis.claims import NOT_MEASURABLE, evaluate
    from xferbench.analysis.claimtable import load_table
    from xferbench.devices import capabilities
    from xferbench.results import load

    report = evaluate(load(str(committed_results())), load_table(), repo=str(REPO_ROOT))
    why = loop_skip_reason(LoopCase("lagged"), capabilities("cpu"))
    for claim_id in ("lagged-read", "lagged-read-no-sync"):
        cells = report.cells(claim_id)
        assert cells and {(c.verdict, c.reason) for c in cells} == {(NOT_MEASURABLE, why)}

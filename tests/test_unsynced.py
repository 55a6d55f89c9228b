"""The unsynchronised timer: skipped on the CPU with what it means there, its chain of matmuls
verified element by element, and on an accelerator both clocks read from the same calls (on
real hardware the unsynchronised one reads less than the real time)."""

from __future__ import annotations

import json

import pytest
import torch

from xferbench.devices import Capabilities, Device
from xferbench.errors import XferbenchError
from xferbench.practices import BENCH_SPEC, VerificationError
from xferbench.practices.unsynced import (
    CPU_REASON,
    SYNCED_CLOCK,
    UNSYNCED_CLOCK,
    MatmulChain,
    run_unsynced,
    timer_skip_reason,
    under_report_factor,
)

CPU_PROBE = json.dumps({"device": "cpu", "capabilities": {
    "device": "cpu", "pinned_memory": False, "timing_events": False, "side_streams": False,
    "reason": "the CPU has none"}})


def test_on_the_cpu_it_is_skipped_saying_the_timer_is_exact_there(cpu_caps, gpu_caps):
    assert timer_skip_reason(1024, cpu_caps) == CPU_REASON
    assert "a factor of 1 by construction" in CPU_REASON
    assert timer_skip_reason(4096, gpu_caps) is None
    emulated = Capabilities("emu:0", True, True, True, emulated=True)
    assert timer_skip_reason(256, emulated) is None
    assert "emulated on the host" in timer_skip_reason(1024, emulated)
    assert "not a power of two" in timer_skip_reason(1000, gpu_caps)


def test_it_refuses_the_cpu_in_one_sentence():
    with pytest.raises(XferbenchError, match="unsynchronised timer on cpu: an unsynchronised"):
        run_unsynced(256, "cpu")


def test_the_chain_is_verified_element_by_element():
    n = 8
    a = torch.full((n, n), 1.0 / n)
    chain = MatmulChain(Device("cpu"), n, a, [torch.empty_like(a), torch.empty_like(a)])
    chain.run()
    chain.verify()  # the product of the 1/n matrix with itself is itself, exactly
    chain.buffers[1][3, 5] += 1e-3  # one element off in the last product
    with pytest.raises(VerificationError, match="did not give the matrix of 1/8"):
        chain.verify()


def test_discovery_skips_every_size_on_the_cpu_with_its_reason(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_timer", env={"XFERBENCH_PROBE": CPU_PROBE})
    assert proc.returncode == 0, proc.stderr
    (cls,) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert cls["methods"] == ["track_synced_s", "track_unsynced_s"] and cls["measured"] == 0
    assert all(row[-1] == CPU_REASON for rows in cls["skips"].values() for row in rows)


@pytest.mark.gpu
def test_both_clocks_come_from_the_same_calls(gpu_device, small_budget):
    m = run_unsynced(256, gpu_device, small_budget)
    unsynced, synced = m.samples(UNSYNCED_CLOCK), m.samples(SYNCED_CLOCK)
    assert len(unsynced) == len(synced) >= 2
    # each call's reading as it returns comes before the same call's synchronised one
    assert all(0 < u <= s for u, s in zip(unsynced, synced))


@pytest.mark.gpu
@pytest.mark.timing
def test_an_unsynchronised_timer_under_reports_a_long_chain(gpu_device):
    m = run_unsynced(4096, gpu_device, BENCH_SPEC)
    assert under_report_factor(m) > 5  # 8 matmuls of 4096: milliseconds behind microseconds

"""The behaviour checks: what PyTorch does with .to(), module.to() and a device mismatch, each
holding or not by what the release did, its words kept; on a CPU-only machine the .to()
checks run against the meta device and the mismatch checks are skipped with their reason;
on an accelerator (real or emulated) every check runs."""

from __future__ import annotations

import json

import pytest
import torch

from xferbench.errors import XferbenchError
from xferbench.practices import behaviour
from xferbench.practices.behaviour import (
    CHECKS,
    EXPECTED_ERROR,
    MISMATCH,
    behaviour_skip_reason,
    run_behaviour,
)

CPU_PROBE = json.dumps({"device": "cpu", "capabilities": {
    "device": "cpu", "pinned_memory": False, "timing_events": False, "side_streams": False,
    "reason": "the CPU has none"}})
GPU_PROBE = json.dumps({"device": "cuda:0", "capabilities": {
    "device": "cuda:0", "pinned_memory": True, "timing_events": True, "side_streams": True,
    "stream_hold": True}})


def test_the_mismatch_checks_need_an_accelerator_and_the_to_checks_do_not(cpu_caps, gpu_caps):
    for check in CHECKS:
        assert behaviour_skip_reason(check, gpu_caps) is None
        why = behaviour_skip_reason(check, cpu_caps)
        if check in MISMATCH:
            assert why.startswith("a device mismatch needs an accelerator: on a CPU-only")
        else:
            assert why is None
    assert "is not one of" in behaviour_skip_reason("tensor_to_old", gpu_caps)
    assert MISMATCH == ("mismatch_batch_not_moved", "mismatch_created_in_forward",
                        "mismatch_loss_weight")


def test_on_the_cpu_the_to_checks_hold_against_the_meta_device():
    new = run_behaviour("tensor_to_new", "cpu")
    assert (new.holds, new.value, new.device) == (True, 1.0, "meta")
    assert new.observed == ("x.to('meta') returned a new tensor on meta; x stayed on cpu, its "
                            "values unchanged")
    moved = run_behaviour("module_to_in_place", "cpu")
    assert moved.holds and moved.value == 1.0
    assert moved.observed.startswith("model.to('meta') returned the module itself; its 2 "
                                     "parameters are on meta; ")


def test_a_mismatch_check_refused_on_the_cpu_says_why():
    with pytest.raises(XferbenchError, match="a device mismatch needs an accelerator"):
        run_behaviour("mismatch_loss_weight", "cpu")


def test_a_call_that_raises_nothing_or_another_error_does_not_hold():
    def fine(model, device):
        return model(torch.randn(2, 8, device=device))

    def other(model, device):
        raise ValueError("shapes differ\nsecond line")

    def mismatch(model, device):
        raise RuntimeError(f"{EXPECTED_ERROR}, but found cuda:0 and cpu!\ntraceback...")

    assert behaviour._raises("meta", fine) == (
        False, "no error: the call returned a tensor on meta")
    assert behaviour._raises("meta", other) == (False, "ValueError: shapes differ")
    assert behaviour._raises("meta", mismatch) == (
        True, f"RuntimeError: {EXPECTED_ERROR}, but found cuda:0 and cpu!")
    # the meta device checks devices with other words: not the guide's error
    held, said = behaviour._raises("meta", behaviour._batch_not_moved)
    assert not held and said.startswith("RuntimeError: ") and EXPECTED_ERROR not in said


def test_a_to_that_returns_the_tensor_itself_does_not_hold():
    # on its own device .to() hands back the tensor itself: the check must tell
    held, said = behaviour._tensor_to_new("cpu")
    assert not held and said.startswith("x.to('cpu') returned x itself on cpu")


@pytest.mark.parametrize("probe, skipped", [(CPU_PROBE, set(MISMATCH)), (GPU_PROBE, set())])
def test_discovery_skips_what_the_device_cannot_check(run_python, probe, skipped):
    proc = run_python("-m", "benchmarks._asv", "bench_behaviour",
                      env={"XFERBENCH_PROBE": probe})
    assert proc.returncode == 0, proc.stderr
    (cls,) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (cls["class"], cls["methods"], cls["params"]) == (
        "Behaviour", ["track_holds"], [list(CHECKS)])
    assert {row[0] for row in cls["skips"]["track_holds"]} == skipped


@pytest.mark.gpu
def test_every_check_holds_on_the_accelerator_in_the_releases_words(gpu_device):
    for check in CHECKS:
        result = run_behaviour(check, gpu_device)
        assert result.holds, (check, result.observed)
        assert result.device == gpu_device.name
        if check in MISMATCH:
            assert result.observed.startswith(f"RuntimeError: {EXPECTED_ERROR}")
            assert gpu_device.name in result.observed or gpu_device.type in result.observed

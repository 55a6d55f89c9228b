"""The device-to-host read under torch.compile: skipped with the exact reason where inductor
cannot compile for the device (the emulated one among them), and on an accelerator the eager
patterns decided by their data (the unsafe read wrong every time, the event's wait right),
the compiled path run with a backend the device has."""

from __future__ import annotations

import json

import pytest
from conftest import CPU_PROBE

from xferbench.devices import Capabilities, capabilities, is_emulated
from xferbench.errors import XferbenchError
from xferbench.practices.compiled_hazard import (
    COMPILED_READS,
    MODES,
    CompiledHazardResult,
    compiled_hazard_skip_reason,
    run_compiled_hazard,
)

EMU = Capabilities("emu:0", True, True, True, reason="emu:0 is emulated on the host",
                   emulated=True, stream_hold=True)
TRIALS = 20


def test_compiling_is_skipped_where_inductor_has_no_code_generator(cpu_caps, gpu_caps):
    assert compiled_hazard_skip_reason("no_sync", "compiled", cpu_caps) == (
        "the hazards need an accelerator: on the CPU every copy is synchronous")
    assert compiled_hazard_skip_reason("event_sync", "compiled", gpu_caps) is None
    assert compiled_hazard_skip_reason("event_sync", "eager", EMU) is None
    assert compiled_hazard_skip_reason("event_sync", "compiled", EMU) == (
        "torch.compile's default backend, inductor, has no code generator for the emu "
        "device (torch._inductor.codegen.common.get_scheduling_for_device('emu') is None): "
        "compiling for emu:0 fails")
    assert compiled_hazard_skip_reason("event_sync", "compiled", EMU, "aot_eager") is None
    assert "use no_sync, event_sync and eager, compiled" in compiled_hazard_skip_reason(
        "later", "eager", gpu_caps)


def test_a_result_whose_spin_did_not_hold_right_trials_is_no_figure():
    held = CompiledHazardResult("no_sync", "compiled", "inductor", 2**20, 100, 100, "cuda:0")
    assert held.fraction == 1.0 and held.no_figure is None
    assert held.label == "d2h no_sync compiled (inductor) 1MiB on cuda:0"
    loose = CompiledHazardResult("no_sync", "eager", "inductor", 2**20, 100, 60, "cuda:0", 5)
    assert "did not hold the copy in 5 of 100 trials" in loose.no_figure


def test_describe_skips_every_combination_on_the_cpu(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_hazards",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    found = {c["class"]: c for c in json.loads(proc.stdout)}
    compiled = found["CompiledHazard"]
    assert (compiled["measured"], compiled["combinations"]) == (0, 4)


# -- on an accelerator (the emulated one in CI) ---------------------------------------------

def _runs(device, read: str, mode: str, backend: str = "inductor") -> None:
    reason = compiled_hazard_skip_reason(read, mode, capabilities(device), backend)
    if reason:
        pytest.skip(reason)


@pytest.mark.gpu
def test_on_the_emulated_device_inductor_really_cannot_compile(gpu_device):
    """The skip's reason, checked against torch: no scheduling for the device, and
    compiling the pattern fails."""
    if not is_emulated(gpu_device):
        pytest.skip("emulated device only: a real GPU has inductor's code generator")
    from torch._inductor.codegen.common import get_scheduling_for_device

    assert get_scheduling_for_device(gpu_device.type) is None
    with pytest.raises(XferbenchError, match="has no code generator for the emu device"):
        run_compiled_hazard("no_sync", "compiled", gpu_device, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("read", COMPILED_READS)
def test_the_eager_patterns_are_decided_by_the_data(gpu_device, read):
    """On a busy stream: read at once, the host sees the buffer before the copy fills it,
    every trial; after the event's wait, never (the copies themselves verify)."""
    _runs(gpu_device, read, "eager")
    r = run_compiled_hazard(read, "eager", gpu_device, TRIALS)
    assert r.no_figure is None and r.trials == TRIALS
    assert r.fraction == (1.0 if read == "no_sync" else 0.0)


@pytest.mark.gpu
@pytest.mark.parametrize("read", COMPILED_READS)
@pytest.mark.parametrize("mode", MODES)
def test_the_compiled_pattern_runs_its_trials_and_its_copies_verify(gpu_device, read, mode):
    """Compiled with inductor where the device has it, else with aot_eager (the same graph
    run by the eager kernels): the harness runs; the fraction is the release's own."""
    backend = "inductor" if not is_emulated(gpu_device) else "aot_eager"
    _runs(gpu_device, read, mode, backend)
    r = run_compiled_hazard(read, mode, gpu_device, TRIALS, backend=backend)
    assert r.trials == TRIALS and 0.0 <= r.fraction <= 1.0

"""The non_blocking hazards: skipped with their reasons without an accelerator, a wrong trial
decided by the data against the right value, and on an accelerator (real or emulated) every
pattern runs its trials and the copies themselves verify."""

from __future__ import annotations

import json

import pytest
import torch

from xferbench.devices import capabilities
from xferbench.errors import XferbenchError
from xferbench.headline import HAZARD_BENCHMARK, hazard_table
from xferbench.practices.hazards import (
    DEFAULT_SIZES,
    FULL_SIZES,
    HAZARDS,
    TRIALS,
    HazardResult,
    hazard_sizes,
    hazard_skip_reason,
    run_hazard,
    seen_wrong,
)
from xferbench.results import Result, ResultSet
from xferbench.units import KiB, MiB

CPU_PROBE = json.dumps({"device": "cpu", "capabilities": {
    "device": "cpu", "pinned_memory": False, "timing_events": False, "side_streams": False,
    "reason": "the CPU has none"}})


def test_every_hazard_needs_an_accelerator(cpu_caps, gpu_caps, mps_caps):
    for kind in HAZARDS:
        assert hazard_skip_reason(kind, cpu_caps) == (
            "the hazards need an accelerator: on the CPU every copy is synchronous")
        assert hazard_skip_reason(kind, gpu_caps) is None
    # mps: no pinned memory (the first two), no side stream to check completion (the third)
    assert "pinned host memory is not available on mps" in hazard_skip_reason(
        "d2h_read_before_sync", mps_caps)
    assert "reads on a side stream, which mps lacks" in hazard_skip_reason(
        "pageable_non_blocking", mps_caps)
    assert "is not one of" in hazard_skip_reason("use_after_free", gpu_caps)


def test_run_hazard_on_the_cpu_says_why_not():
    with pytest.raises(XferbenchError, match="d2h_read_before_sync on cpu: the hazards need"):
        run_hazard("d2h_read_before_sync", 4 * KiB, "cpu")


def test_a_trial_is_wrong_by_its_data_not_its_timing():
    right = 7
    assert seen_wrong(torch.full((64,), right, dtype=torch.uint8), right) == (False, False)
    assert seen_wrong(torch.zeros(64, dtype=torch.uint8), right) == (True, False)  # stale
    torn = torch.zeros(64, dtype=torch.uint8)
    torn[:40] = right  # a copy caught half-way
    assert seen_wrong(torn, right) == (True, True)


def test_fraction_is_of_the_trials():
    r = HazardResult("pinned_source_modified", MiB, 200, 50, 10, "cuda:0")
    assert r.fraction == 0.25
    assert r.label == "pinned_source_modified 1MiB on cuda:0"


def test_at_least_100_trials_per_size(monkeypatch):
    assert TRIALS >= 100
    assert hazard_sizes() == DEFAULT_SIZES
    monkeypatch.setenv("XFERBENCH_SWEEP", "full")
    assert hazard_sizes() == FULL_SIZES and FULL_SIZES[0] == KiB and FULL_SIZES[-1] == 256 * MiB


def test_describe_skips_every_hazard_on_this_cpu_and_imports_nothing(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_hazards",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    (hazards,) = json.loads(proc.stdout)
    assert (hazards["class"], hazards["measured"], hazards["combinations"]) == ("Hazards", 0, 9)
    assert {row[-1] for row in hazards["skips"]["track_wrong_fraction"]} == {
        "the hazards need an accelerator: on the CPU every copy is synchronous"}
    code = ("import sys, benchmarks.bench_hazards as b\n"
            "assert b.Hazards().setup_cache() == {}\n"
            "print('torch' in sys.modules)")
    proc = run_python("-c", code, env={"XFERBENCH_PROBE": CPU_PROBE})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


# -- on an accelerator (also the emulated one): the flow and the checks, no expected rate ------

@pytest.mark.gpu
@pytest.mark.parametrize("kind", HAZARDS)
@pytest.mark.parametrize("nbytes", [4 * KiB, 1 * MiB])
def test_each_hazard_runs_its_trials_and_its_copies_verify(gpu_device, kind, nbytes):
    reason = hazard_skip_reason(kind, capabilities(gpu_device))
    if reason:
        pytest.skip(reason)
    r = run_hazard(kind, nbytes, gpu_device, TRIALS)  # VerificationError if a copy is wrong
    assert (r.kind, r.nbytes, r.trials, r.device) == (kind, nbytes, TRIALS, gpu_device.name)
    assert 0 <= r.torn <= r.wrong <= r.trials  # 0% is a figure too, not a failure
    assert 0.0 <= r.fraction <= 1.0


@pytest.mark.gpu
@pytest.mark.parametrize("kind, observed", [
    ("d2h_read_before_sync", True), ("pinned_source_modified", True),
    ("pageable_non_blocking", False)])
def test_the_emulated_device_shows_the_hazards_the_detection_finds(gpu_device, kind, observed):
    """The detection works: on the emulated device, whose pinned non_blocking copies run on a
    worker thread after the call returns (held 2 ms here to widen the window), the same code
    that measures a GPU finds the first two hazards; a pageable non_blocking copy is
    synchronous there, as in CUDA, so the third finds none."""
    from xferbench.devices import is_emulated

    if not is_emulated(gpu_device):
        pytest.skip("emulated device only: a real GPU's rate is its own figure, 0% included")
    import emu

    with emu.copy_delay(0.002):
        r = run_hazard(kind, 64 * KiB, gpu_device, TRIALS)
    if observed:
        assert r.wrong > 0, f"{kind}: no wrong trial in {r.trials}: the detection missed it"
    else:
        assert r.wrong == 0, f"{kind}: {r.wrong} wrong trials where the copy is synchronous"


# -- the table the README and `xferbench run` show -----------------------------------------------

def _hazard(kind: str, size: str, value: float, date_ms: int = 0) -> Result:
    return Result(benchmark=HAZARD_BENCHMARK, params=(("hazard", kind), ("size", size)),
                  value=value, unit="fraction", machine="m", commit="c", date_ms=date_ms,
                  torch="2.13.0", cuda="13.0", python="3", env_name="e", path="p")


def test_hazard_table_has_a_column_per_size_measured_in_size_order():
    rs = ResultSet([_hazard("d2h_read_before_sync", "64MiB", 0.97),
                    _hazard("d2h_read_before_sync", "4KiB", 1.0),
                    _hazard("d2h_read_before_sync", "4KiB", 0.5, date_ms=1),  # the newest
                    _hazard("pinned_source_modified", "4KiB", 0.0),
                    _hazard("pageable_non_blocking", "4KiB", float("nan"))], {}, "")
    table = hazard_table(rs)
    assert table[2:] == [
        "| hazard | 4KiB | 64MiB |", "| --- | ---: | ---: |",
        "| d2h_read_before_sync | 50% | 97% |",
        "| pinned_source_modified | 0% | n/a |",  # 0% is a figure
        "| pageable_non_blocking | n/a | n/a |"]


def test_hazard_table_without_results_says_why():
    rs = ResultSet([], {}, "")
    assert hazard_table(rs)[-1] == "| pageable_non_blocking | n/a: not measured in these results |"

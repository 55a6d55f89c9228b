"""The non_blocking hazards: skipped with their reasons without an accelerator, a wrong trial
decided by the data against the right value, and on an accelerator (real or emulated) every
pattern runs its trials and the copies themselves verify."""

from __future__ import annotations

import json

import pytest
import torch

from xferbench.analysis.headline import HAZARD_BENCHMARK, hazard_table
from xferbench.devices import capabilities
from xferbench.errors import XferbenchError
from xferbench.practices.hazards import (
    DEFAULT_SIZES,
    FULL_SIZES,
    HAZARDS,
    STREAMS,
    TRIALS,
    UNSAFE,
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
        for stream in STREAMS:
            assert hazard_skip_reason(kind, cpu_caps, stream) == (
                "the hazards need an accelerator: on the CPU every copy is synchronous")
            assert hazard_skip_reason(kind, gpu_caps, stream, MiB) is None
    # mps: no pinned memory (the unsafe two), no spin for a busy stream
    assert "pinned host memory is not available on mps" in hazard_skip_reason(
        "d2h_read_before_sync", mps_caps)
    assert hazard_skip_reason("pageable_source_modified", mps_caps, "idle") is None
    assert "needs a spin to hold it, which mps lacks" in hazard_skip_reason(
        "pageable_source_modified", mps_caps, "busy")
    assert "is not one of" in hazard_skip_reason("use_after_free", gpu_caps)
    assert "stream 'calm' is not one of busy, idle" in hazard_skip_reason(
        "pinned_source_modified", gpu_caps, "calm")


def test_the_busy_stream_stops_at_1_mib(gpu_caps):
    assert hazard_skip_reason("pinned_source_modified", gpu_caps, "busy", MiB) is None
    assert "tried up to 1MiB" in hazard_skip_reason("pinned_source_modified", gpu_caps, "busy",
                                                    64 * MiB)
    assert hazard_skip_reason("pinned_source_modified", gpu_caps, "idle", 64 * MiB) is None


def test_the_unsafe_patterns_are_the_tutorials_and_the_pageable_one_is_the_safe_fact():
    assert UNSAFE == ("d2h_read_before_sync", "pinned_source_modified")
    assert set(HAZARDS) - set(UNSAFE) == {"pageable_source_modified"}


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
    r = HazardResult("pinned_source_modified", "busy", MiB, 200, 50, 10, "cuda:0")
    assert r.fraction == 0.25
    assert r.label == "pinned_source_modified busy 1MiB on cuda:0"


def test_at_least_100_trials_per_size(monkeypatch):
    assert TRIALS >= 100
    assert hazard_sizes() == DEFAULT_SIZES
    monkeypatch.setenv("XFERBENCH_SWEEP", "full")
    assert hazard_sizes() == FULL_SIZES and FULL_SIZES[0] == KiB and FULL_SIZES[-1] == 256 * MiB


def test_describe_skips_every_hazard_on_this_cpu_and_imports_nothing(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_hazards",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    hazards, _compiled = json.loads(proc.stdout)  # CompiledHazard: tests/test_compiled_hazard
    assert (hazards["class"], hazards["measured"], hazards["combinations"]) == ("Hazards", 0, 18)
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
@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("kind", HAZARDS)
@pytest.mark.parametrize("nbytes", [4 * KiB, 1 * MiB])
def test_each_hazard_runs_its_trials_and_its_copies_verify(gpu_device, kind, nbytes, stream):
    reason = hazard_skip_reason(kind, capabilities(gpu_device), stream, nbytes)
    if reason:
        pytest.skip(reason)
    r = run_hazard(kind, nbytes, gpu_device, TRIALS, stream)  # VerificationError if wrong
    assert (r.kind, r.stream, r.nbytes, r.trials, r.device) == (
        kind, stream, nbytes, TRIALS, gpu_device.name)
    assert 0 <= r.torn <= r.wrong <= r.trials  # 0% is a figure too, not a failure
    assert 0.0 <= r.fraction <= 1.0
    if kind not in UNSAFE:  # the safe fact: a pageable source is read before the call returns
        assert r.wrong == 0, f"{r.label}: {r.wrong} wrong trials"


@pytest.mark.gpu
def test_on_a_busy_stream_an_overwritten_pinned_source_is_wrong_every_time(gpu_device):
    """The copy waits behind the spin, so the overwrite always lands first: deterministic,
    on any device with a spin (the emulated one queues its pinned copies behind it too), and
    on a loaded host too: a try the spin no longer held when the host acted is tried again
    (with 2 spinning processes beside it on 2 cores 18 of 218 tries were, with 6 beside it
    158 of 358, and none of 200 trials came out right either way; before, 8 of 200 did with
    6 beside it)."""
    reason = hazard_skip_reason("pinned_source_modified", capabilities(gpu_device), "busy")
    if reason:
        pytest.skip(reason)
    r = run_hazard("pinned_source_modified", 64 * KiB, gpu_device, 20, "busy")
    assert r.wrong == r.trials == 20


@pytest.mark.gpu
def test_a_busy_trial_the_spin_no_longer_held_is_tried_again_and_said(gpu_device, monkeypatch):
    """A host held up longer than the spin (another process on its core) acts on an idle
    stream: such a try does not count as the busy pattern and is tried again while the retries
    last (one a trial, shared), the trial counted as unheld if its last try was. Here the host
    waits for the spin to end before it acts, every time."""
    from xferbench.devices import synchronize
    from xferbench.practices import hazards

    reason = hazard_skip_reason("pinned_source_modified", capabilities(gpu_device), "busy")
    if reason:
        pytest.skip(reason)
    tries = []
    busy = hazards.busy_stream

    def late(dev, hold):
        after = busy(dev, hold)
        synchronize(dev)  # the host comes back after the spin has ended
        tries.append(after)
        return after

    monkeypatch.setattr(hazards, "busy_stream", late)
    r = run_hazard("pinned_source_modified", 64 * KiB, gpu_device, 3, "busy")
    assert (r.trials, r.unheld, len(tries)) == (3, 3, 3 + 3 * hazards.RETRIES_PER_TRIAL)
    idle = run_hazard("pinned_source_modified", 64 * KiB, gpu_device, 3, "idle")
    assert idle.unheld == 0 and len(tries) == 6 + 3  # tried once each
    safe = run_hazard("pageable_source_modified", 64 * KiB, gpu_device, 3, "busy")
    assert safe.trials == 3 and len(tries) == 9 + 3  # the safe pattern is not tried again


@pytest.mark.gpu
def test_a_deadline_ends_the_trials_and_the_result_says_how_many_ran(gpu_device):
    """A run's budget ends a fixed count of trials at its deadline (the grid then cuts the
    combination, or keeps it marked as capped): at least one trial, never past the deadline
    by more than one. Without a deadline all of them run."""
    import time

    r = run_hazard("pageable_source_modified", 64 * KiB, gpu_device, TRIALS, "idle",
                   deadline=time.time())
    assert r.trials == 1 and r.fraction in (0.0, 1.0)
    assert run_hazard("pageable_source_modified", 64 * KiB, gpu_device, 7).trials == 7


@pytest.mark.gpu
@pytest.mark.cuda_only("kernels queued behind the spin (the emulated device runs them at once)")
def test_on_a_busy_stream_a_read_before_sync_is_wrong_every_time(gpu_device):
    r = run_hazard("d2h_read_before_sync", 64 * KiB, gpu_device, 20, "busy")
    assert r.wrong == r.trials == 20


@pytest.mark.gpu
@pytest.mark.parametrize("kind, observed", [
    ("d2h_read_before_sync", True), ("pinned_source_modified", True),
    ("pageable_source_modified", False)])
def test_the_emulated_device_shows_the_hazards_the_detection_finds(gpu_device, kind, observed):
    """The detection works: on the emulated device, whose pinned non_blocking copies run on a
    worker thread after the call returns (held 2 ms here to widen the window), the same code
    that measures a GPU finds the two unsafe patterns on an idle stream; a pageable copy is
    staged before the call returns there, as in CUDA, so the third finds none."""
    from xferbench.devices import is_emulated

    if not is_emulated(gpu_device):
        pytest.skip("emulated device only: a real GPU's rate is its own figure, 0% included")
    import emu

    with emu.copy_delay(0.002):
        r = run_hazard(kind, 64 * KiB, gpu_device, TRIALS, "idle")
    if observed:
        assert r.wrong > 0, f"{kind}: no wrong trial in {r.trials}: the detection missed it"
    else:
        assert r.wrong == 0, f"{kind}: {r.wrong} wrong trials where the copy is synchronous"


# -- the table the README and `xferbench run` show -----------------------------------------------

def _hazard(kind: str, size: str, value: float, date_ms: int = 0, stream: str = "idle") -> Result:
    return Result(benchmark=HAZARD_BENCHMARK,
                  params=(("hazard", kind), ("stream", stream), ("size", size)),
                  value=value, unit="fraction", machine="m", commit="c", date_ms=date_ms,
                  torch="2.13.0", cuda="13.0", python="3", env_name="e", path="p")


def test_hazard_table_has_a_column_per_size_measured_in_size_order():
    rs = ResultSet([_hazard("d2h_read_before_sync", "64MiB", 0.97),
                    _hazard("d2h_read_before_sync", "4KiB", 1.0),
                    _hazard("d2h_read_before_sync", "4KiB", 0.5, date_ms=1),  # the newest
                    _hazard("d2h_read_before_sync", "4KiB", 1.0, stream="busy"),
                    _hazard("pinned_source_modified", "4KiB", 0.0),
                    _hazard("pageable_source_modified", "4KiB", 0.0),
                    _hazard("pageable_source_modified", "4KiB", float("nan"), stream="busy")],
                   {}, "")
    table = hazard_table(rs)
    assert table[2:] == [
        "| hazard | stream | 4KiB | 64MiB |", "| --- | --- | ---: | ---: |",
        "| d2h_read_before_sync | busy | 100% | n/a |",
        "| d2h_read_before_sync | idle | 50% | 97% |",
        "| pinned_source_modified | busy | n/a | n/a |",
        "| pinned_source_modified | idle | 0% (race not seen) | n/a |",  # never read as safe
        "| pageable_source_modified | busy | n/a | n/a |",
        "| pageable_source_modified | idle | 0% | n/a |"]  # the safe fact: a plain 0%


def test_hazard_table_without_results_says_why():
    rs = ResultSet([], {}, "")
    assert hazard_table(rs)[-1] == (
        "| pageable_source_modified | idle | n/a: not measured in these results |")


def test_a_busy_figure_the_hosts_load_may_have_lowered_is_no_figure(monkeypatch):
    """An unsafe pattern's busy figure below 100% with trials no try of which the spin held
    could be the host's doing (or a device's that runs the work at once, as the emulated one
    runs its kernels): the combination gives no figure, skipped saying why; every trial wrong,
    or the safe pattern, keeps its figure whatever the spin held."""
    from benchmarks import bench_hazards as b
    from benchmarks._asv import NoFigure

    def ran(unheld, wrong):
        def run(kind, nbytes, device, trials, stream, deadline=None):
            return HazardResult(kind, stream, nbytes, trials, wrong, 0, "emu:0", unheld)
        return run

    def figure(kind):
        return b.Hazards().measure(kind, "busy", "1MiB")["track_wrong_fraction"]

    monkeypatch.setattr(b, "run_hazard", ran(2, 99))
    with pytest.raises(NoFigure, match="in 2 of 100 trials, tried again as often") as no:
        figure("pinned_source_modified")
    assert "and 1 came out right: not a figure of the busy pattern" in str(no.value)
    monkeypatch.setattr(b, "run_hazard", ran(2, 100))
    assert figure("pinned_source_modified") == 1.0
    monkeypatch.setattr(b, "run_hazard", ran(2, 0))
    assert figure("pageable_source_modified") == 0.0
    monkeypatch.setattr(b, "run_hazard", ran(0, 97))
    assert figure("d2h_read_before_sync") == 0.97

"""The DataLoader pipeline: the starvation-share arithmetic on constructed timings, every batch
checked against its host source, the same batches in the same order whatever moves them, the
same parameters whatever the variant, skips with reasons, and a dying worker that fails its
own combination only."""

from __future__ import annotations

import json
import multiprocessing
import os
import re

import pytest
import torch

from xferbench.device_memory import DoesNotFit
from xferbench.devices import Capabilities, capabilities, resolve_device
from xferbench.errors import XferbenchError
from xferbench.practices import VerificationError
from xferbench.practices import pipeline as pl
from xferbench.practices.pipeline import (
    INPUT_BOUND,
    STEPS,
    PipelineCase,
    build_pipeline,
    pipeline_skip_reason,
    run_pipeline,
    starvation_skip_reason,
)
from xferbench.practices.pipeline_data import (
    Prefetcher,
    SyntheticImages,
    expected_batch,
    open_loader,
)
from xferbench.practices.pipeline_step import (
    ModelSize,
    Stamps,
    starvation_share,
    starvation_shares,
    starvation_waits,
)

#: The capability probe of a CPU, handed to the benchmarks as `xferbench run` would.
CPU_PROBE = json.dumps({"device": "cpu", "capabilities": {
    "device": "cpu", "pinned_memory": False, "timing_events": False, "side_streams": False,
    "reason": "the CPU has none"}})

# -- the starvation share, on constructed timings ----------------------------------------------


def test_starvation_share_sums_the_waits_over_the_call():
    # step 0 waits 1 s of 3, step 1 waits 2 s of 3: 3 s of 6
    start, ready, done = 0.0, [1.0, 5.0], [3.0, 6.0]
    assert starvation_waits(start, ready, done) == [(1.0, 3.0), (2.0, 3.0)]
    assert starvation_share(start, ready, done) == pytest.approx(0.5)
    assert starvation_shares(start, ready, done) == pytest.approx([1 / 3, 2 / 3])


def test_starvation_share_is_0_without_waits_and_1_without_compute():
    assert starvation_share(2.0, [2.0, 3.0, 4.0], [3.0, 4.0, 5.0]) == 0.0  # back to back
    assert starvation_share(0.0, [1.0, 2.0], [1.0, 2.0]) == 1.0  # steps that take no time


def test_starvation_share_weights_steps_by_their_length():
    # a long compute-bound step and a short starved one: the share is of time, not of steps
    start, ready, done = 0.0, [0.0, 9.5], [9.0, 10.0]
    assert starvation_share(start, ready, done) == pytest.approx(0.05)
    assert starvation_shares(start, ready, done) == pytest.approx([0.0, 0.5])


def test_starvation_stamps_out_of_order_or_unpaired_are_refused():
    with pytest.raises(XferbenchError, match="stamp 2 .* comes before stamp 1"):
        starvation_share(0.0, [2.0], [1.0])  # done before ready
    with pytest.raises(XferbenchError, match="not in step order"):
        starvation_share(0.0, [1.0, 1.5], [2.0, 3.0])  # ready_1 before done_0
    with pytest.raises(XferbenchError, match="2 ready and 1 done"):
        starvation_share(0.0, [1.0, 2.0], [1.5])
    with pytest.raises(XferbenchError, match="at least one step"):
        starvation_share(0.0, [], [])
    with pytest.raises(XferbenchError, match="span no time"):
        starvation_share(1.0, [1.0], [1.0])
    # within the events' resolution a stamp may run backwards: it counts as no wait
    assert starvation_share(0.0, [1.0, 1.9999995], [2.0, 3.0]) == pytest.approx(1 / 3)


def test_cpu_stamps_are_the_host_clock_in_call_order():
    stamps = Stamps(resolve_device("cpu"), 2)
    stamps.start()
    for i in range(2):
        stamps.ready(i)
        stamps.done(i)
    start, ready, done = stamps.times()
    assert start == 0.0 and len(ready) == len(done) == 2
    assert 0 <= starvation_share(start, ready, done) <= 1


# -- the workload on this CPU ------------------------------------------------------------------

@pytest.mark.slow
def test_cpu_pipeline_runs_and_verifies(small_budget):
    result = run_pipeline(PipelineCase(INPUT_BOUND, workers=2), "cpu", small_budget,
                          model_to=True)
    assert 0 < result.step_s < 1
    assert result.samples_per_s == pytest.approx(32 / result.step_s)
    assert len(result.starvation) == pl.STARVATION_CALLS
    assert all(0 <= s <= 1 for s in result.starvation)
    assert result.model_to is not None and result.compile_s is None
    assert result.amp_dtype == "bfloat16"  # CPU autocast
    assert multiprocessing.active_children() == []  # the workers ended with the call


def test_every_batch_arrives_as_its_host_source_in_order():
    work = build_pipeline(PipelineCase(INPUT_BOUND, workers=2), "cpu")
    try:
        for _ in range(2):  # the stream goes on across calls: each call sees batches 0..7
            seen: list = []
            work.run(capture=seen)
            assert len(seen) == STEPS
            for j, got in enumerate(seen):
                want = expected_batch(work.dataset, 32, j)
                assert all(torch.equal(got[k], want[k]) for k in want), j
        # distinct batches: a stream stuck on one batch would pass a weaker check
        assert not torch.equal(seen[0]["images"], seen[1]["images"])
    finally:
        work.close()


@pytest.mark.slow
def test_prefetch_and_blocking_see_identical_batches_in_identical_order():
    """The prefetcher hands batch j to step j, as the blocking path does: same bytes, same
    order, across calls (it keeps one batch ahead between them). On the CPU it fetches one step
    ahead on the host; on an accelerator the same class copies on a side stream (gpu test)."""
    dev = resolve_device("cpu")
    seen: dict[str, list] = {}
    for move in ("blocking", "prefetch"):
        work = build_pipeline(PipelineCase(INPUT_BOUND, workers=2), dev)
        if move == "prefetch":
            work.source.close()
            work.source = Prefetcher(open_loader(work.dataset, 32, 2, False), dev, None)
        try:
            seen[move] = []
            for _ in range(3):
                work.run(capture=seen[move])
        finally:
            work.close()
    assert len(seen["prefetch"]) == len(seen["blocking"]) == 3 * STEPS
    for j, (a, b) in enumerate(zip(seen["prefetch"], seen["blocking"])):
        assert a.keys() == b.keys()
        assert all(torch.equal(a[k], b[k]) for k in a), f"batch {j} differs"


@pytest.mark.parametrize("precision", ["fp32", "amp"])
def test_variants_of_one_configuration_end_on_the_same_parameters(precision):
    params = []
    for workers in (0, 2):
        work = build_pipeline(PipelineCase(INPUT_BOUND, workers=workers, precision=precision),
                              "cpu")
        try:
            work.verify()
            params.append([p.detach().clone() for p in work.params()])
        finally:
            work.close()
    assert all(torch.equal(a, b) for a, b in zip(*params))
    assert all(torch.equal(a, b) for a, b in zip(params[0], work.reference))


@pytest.mark.slow
# torch's own: importing inductor imports torch.utils.mkldnn, which uses torch.jit.script_method
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_compiled_step_reports_its_compile_time_alone_and_verifies(small_budget):
    result = run_pipeline(PipelineCase(INPUT_BOUND, precision="fp32", compile="compiled"),
                          "cpu", small_budget)
    assert result.compile_s is not None
    assert result.compile_s > 20 * result.step_s  # a compile, not a cached step
    assert 0 < result.step_s < 1


def test_model_to_every_step_changes_nothing_but_time():
    work = build_pipeline(PipelineCase(INPUT_BOUND), "cpu")
    try:
        before = [p.data_ptr() for p in work.params()]
        work.model_to_every_step = True
        work.verify()  # same parameters as the reference: the move is a no-op
        assert [p.data_ptr() for p in work.params()] == before
    finally:
        work.close()


def test_a_wrong_batch_or_wrong_parameters_fail_verification():
    work = build_pipeline(PipelineCase(INPUT_BOUND), "cpu")
    try:
        work.expected[3]["images"][0, 0, 0, 0] ^= 1  # the host source says otherwise
        with pytest.raises(VerificationError, match="batch 3 'images' differs"):
            work.verify()
        work.expected[3]["images"][0, 0, 0, 0] ^= 1
        work.reference[0][0, 0] += 1
        with pytest.raises(VerificationError, match="parameter 0 after 8 steps differs"):
            work.verify()
    finally:
        work.close()


def test_bad_cases_say_what_is_accepted():
    with pytest.raises(XferbenchError, match="move 'async' is not one of blocking"):
        PipelineCase("small", move="async")
    with pytest.raises(XferbenchError, match="size 'medium' is not one of small, large"):
        PipelineCase("medium")
    with pytest.raises(XferbenchError, match="workers -1 is not valid"):
        PipelineCase("small", workers=-1)
    with pytest.raises(XferbenchError, match="pinned host memory needs an accelerator"):
        build_pipeline(PipelineCase("small", "pinned"), "cpu")


# -- skips --------------------------------------------------------------------------------------

def test_cpu_runs_the_pageable_blocking_loop_only(cpu_caps):
    runs = [c for c in (PipelineCase(s, h, w, m) for s in pl.MODEL_SIZES for h in pl.HOST_MEMORY
                        for w in pl.WORKERS for m in pl.MOVES)
            if pipeline_skip_reason(c, cpu_caps) is None]
    assert [(c.size, c.host_memory, c.workers, c.move) for c in runs] == [
        ("small", "pageable", 0, "blocking"), ("small", "pageable", 2, "blocking")]
    assert pipeline_skip_reason(PipelineCase("small", move="non_blocking"), cpu_caps) == (
        "non_blocking needs an accelerator: on the CPU the move is a no-op")
    assert pipeline_skip_reason(PipelineCase("small", move="prefetch"), cpu_caps) == (
        "prefetch needs side streams: only an accelerator has them")
    assert "sized to keep an accelerator busy" in pipeline_skip_reason(
        PipelineCase("large"), cpu_caps)
    assert starvation_skip_reason(PipelineCase("small"), cpu_caps) is None  # the host clock


def test_accelerators_run_what_they_have(gpu_caps, mps_caps):
    assert all(pipeline_skip_reason(PipelineCase(s, h, 2, m), gpu_caps) is None
               for s in pl.MODEL_SIZES for h in pl.HOST_MEMORY for m in pl.MOVES)
    assert "prefetch needs side streams, which mps lacks" in pipeline_skip_reason(
        PipelineCase("small", move="prefetch"), mps_caps)
    assert "pinned host memory is not available on mps" in pipeline_skip_reason(
        PipelineCase("small", "pinned"), mps_caps)
    no_events = Capabilities("xpu:0", True, False, True)
    assert "needs timing events" in starvation_skip_reason(PipelineCase("small"), no_events)


def test_a_model_that_does_not_fit_is_refused_before_allocating(monkeypatch):
    monkeypatch.setitem(pl.MODEL_SIZES, "huge", ModelSize(width=2**22, depth=2))  # 50+ GB
    with pytest.raises(DoesNotFit, match="does not fit"):
        build_pipeline(PipelineCase("huge"), "cpu")


# -- through the Grid: failures and misfits are their combination's ------------------------------

class DiesInWorker(SyntheticImages):
    """Sample 40 ends its worker process (as an out-of-memory kill would); fine elsewhere,
    so the main process can still build the expected batches."""

    def __getitem__(self, i):
        if i == 40 and torch.utils.data.get_worker_info() is not None:
            os._exit(3)
        return super().__getitem__(i)


class RaisesInWorker(SyntheticImages):
    def __getitem__(self, i):
        if i == 40 and torch.utils.data.get_worker_info() is not None:
            raise ValueError("sample 40 is corrupt")
        return super().__getitem__(i)


@pytest.fixture
def bench(monkeypatch, tmp_path, fresh_suite):
    """benchmarks.bench_pipeline imported with a CPU probe, quick budgets."""
    monkeypatch.setenv("XFERBENCH_PROBE", CPU_PROBE)
    monkeypatch.setenv("XFERBENCH_QUICK", "1")
    monkeypatch.setenv("XFERBENCH_PROGRESS", str(tmp_path / "progress.jsonl"))
    return fresh_suite("bench_pipeline")


@pytest.mark.slow
def test_a_dying_worker_fails_its_combination_and_the_others_run(bench, monkeypatch):
    datasets = {"0": None, "2": DiesInWorker(256)}  # workers=2: a worker dies mid-stream
    real = bench.run_pipeline

    def run(case, *args, **kwargs):
        data = datasets[str(case.workers)]
        return real(case, *args, dataset=data, **kwargs)

    monkeypatch.setattr(bench, "run_pipeline", run)
    cache = bench.Pipeline().setup_cache()
    ok = ("small", "pageable", "0", "blocking", "amp", "eager")
    dead = ("small", "pageable", "2", "blocking", "amp", "eager")
    assert set(cache) == {ok, dead}
    assert cache[ok]["values"]["track_step_s"]["samples"]
    assert 0 <= min(cache[ok]["values"]["track_starvation_share"]["samples"]) <= 1
    assert "track_step_model_to_s" in cache[ok]["values"]
    # the loader's SIGCHLD handler or its queue's watchdog, whichever notices first
    assert re.match(r"RuntimeError: DataLoader worker \(pid(\(s\))? \d+\) exited unexpectedly",
                    cache[dead]["error"])
    assert multiprocessing.active_children() == []  # the other worker was shut down too

    datasets["2"] = RaisesInWorker(256)
    cache = bench.Pipeline().setup_cache()
    assert cache[dead]["error"].startswith("ValueError: Caught ValueError in DataLoader worker")
    assert "sample 40 is corrupt" in cache[dead]["error"]
    assert "values" in cache[ok]
    assert multiprocessing.active_children() == []


def test_a_size_that_does_not_fit_is_skipped_with_its_reason(bench, monkeypatch):
    def run(case, *args, **kwargs):
        raise DoesNotFit(f"{case.label}: 51200 MiB x4 does not fit in the 22.0 GiB free on cpu")

    monkeypatch.setattr(bench, "run_pipeline", run)
    cache = bench.Pipeline().setup_cache()
    assert all(entry["skip"].endswith("does not fit in the 22.0 GiB free on cpu")
               for entry in cache.values())


def test_describe_counts_the_pipeline_on_this_cpu(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_pipeline",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    found = {c["class"]: c for c in json.loads(proc.stdout)}
    pipe = found["Pipeline"]
    assert (pipe["measured"], pipe["combinations"]) == (2, 24)
    assert pipe["param_names"] == ["size", "host_memory", "workers", "move", "precision",
                                   "compile"]
    assert len(pipe["select"]["track_step_model_to_s"]) == 1  # small, the plain loop
    assert all(row[-1] == "eager: nothing is compiled"
               for row in pipe["skips"]["track_compile_s"])


def test_the_full_sweep_adds_fp32_and_compiled(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_pipeline",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "full"})
    assert proc.returncode == 0, proc.stderr
    pipe = json.loads(proc.stdout)[0]
    assert (pipe["measured"], pipe["combinations"]) == (8, 96)
    assert len(pipe["select"]["track_compile_s"]) == 4


# -- on an accelerator (also the emulated one): correctness and flow; timing on CUDA only ------

@pytest.mark.gpu
@pytest.mark.parametrize("host_memory", ["pageable", "pinned"])
@pytest.mark.parametrize("move", ["blocking", "non_blocking", "prefetch"])
def test_accelerator_variants_verify_and_agree(gpu_device, host_memory, move):
    case = PipelineCase(INPUT_BOUND, host_memory, 2, move, precision="fp32")
    reason = pipeline_skip_reason(case, capabilities(gpu_device))
    if reason:
        pytest.skip(reason)
    blocking = build_pipeline(PipelineCase(INPUT_BOUND, precision="fp32"), gpu_device)
    work = build_pipeline(case, gpu_device)
    try:
        blocking.verify()
        seen_b: list = []
        blocking.run(capture=seen_b)
        work.verify()  # every batch as its host source, parameters as the reference
        seen: list = []
        work.run(capture=seen)
        assert all(torch.equal(a[k].cpu(), b[k].cpu()) for a, b in zip(seen, seen_b)
                   for k in a)
        work.restart()
        work.run()
        work.run()
        stamps = Stamps(gpu_device, STEPS)
        work.run(stamps=stamps)
        assert 0 <= starvation_share(*stamps.times()) <= 1
    finally:
        work.close()
        blocking.close()


@pytest.mark.gpu
def test_cuda_small_loop_starves_more_than_large_prefetched(gpu_device):
    if gpu_device.type != "cuda":  # a timing claim: real GPUs only, not an emulated device
        pytest.skip("timing claims are checked on CUDA/ROCm GPUs only")
    try:
        large = run_pipeline(PipelineCase("large", "pinned", 2, "prefetch"), gpu_device)
    except DoesNotFit as exc:
        pytest.skip(str(exc))
    small = run_pipeline(PipelineCase("small", "pageable", 0, "blocking"), gpu_device)
    assert min(small.starvation) > max(large.starvation)

"""Copies behind queued work: skipped with their reasons where nothing is queued, verified
wherever they run, and on an accelerator (the emulated one in CI) the pageable and strided
non_blocking copies hold the host for the queued work while the pinned one returns at once."""

from __future__ import annotations

import json
import time

import pytest
from conftest import CPU_PROBE, GPU_PROBE

from xferbench.devices import capabilities
from xferbench.errors import XferbenchError
from xferbench.practices.copies import measure_copy
from xferbench.practices.queued import (
    DEFAULT_QUEUED_MS,
    QUEUED_HOST_MEMORY,
    SMOKE_QUEUED_MS,
    QueuedCopyCase,
    build_queued_copy,
    queued_ms,
    queued_skip_reason,
    run_queued_copy,
)
from xferbench.spec import MeasureSpec
from xferbench.timing import measure

LONGEST = SMOKE_QUEUED_MS[-1]


def test_copies_behind_queued_work_need_an_accelerator_a_spin_and_pinned_memory(
        cpu_caps, gpu_caps, mps_caps):
    case = QueuedCopyCase("h2d", "pageable", "non_blocking", LONGEST)
    assert queued_skip_reason(case, cpu_caps).startswith(
        "copies behind queued work need an accelerator: on the CPU nothing is queued")
    assert queued_skip_reason(case, gpu_caps) is None
    assert queued_skip_reason(case, mps_caps) == (
        "known queued work needs a spin to hold the stream, which mps lacks")
    idle = QueuedCopyCase("h2d", "pageable", "non_blocking", 0)
    assert queued_skip_reason(idle, mps_caps) is None  # an idle stream needs no spin
    pinned = QueuedCopyCase("d2h", "pinned_strided", "non_blocking", 0)
    assert "pinned host memory is not available on mps" in queued_skip_reason(pinned, mps_caps)
    blocking = QueuedCopyCase("h2d", "pinned_strided", "blocking", LONGEST)
    assert "the strided view is measured non_blocking" in queued_skip_reason(blocking, gpu_caps)


def test_a_bad_case_is_one_sentence():
    with pytest.raises(XferbenchError, match="host_memory 'mapped' is not one of pageable, "
                                             "pinned, pinned_strided"):
        QueuedCopyCase("h2d", "mapped", "non_blocking", 0)
    with pytest.raises(XferbenchError, match="-1 ms queued"):
        QueuedCopyCase("h2d", "pinned", "non_blocking", -1)
    assert QueuedCopyCase("d2h", "pinned", "blocking", 10).label == (
        "d2h pinned blocking behind 10ms 1MiB")


def test_the_smoke_sweep_keeps_the_idle_stream_and_the_longest_queue(monkeypatch):
    assert queued_ms() == DEFAULT_QUEUED_MS == (0, 1, 10, 50)
    monkeypatch.setenv("XFERBENCH_SWEEP", "smoke")
    assert queued_ms() == SMOKE_QUEUED_MS == (0, DEFAULT_QUEUED_MS[-1])


def test_work_queued_before_each_call_needs_a_host_clock_on_an_accelerator():
    with pytest.raises(XferbenchError, match="work queued before every call needs an "
                                             "accelerator: the CPU queues nothing"):
        measure(lambda: None, device="cpu", behind=lambda: None)


def test_describe_skips_every_queued_copy_on_the_cpu_and_imports_no_torch(run_python):
    proc = run_python("-m", "benchmarks._asv", "bench_queued",
                      env={"XFERBENCH_PROBE": CPU_PROBE, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    (queued,) = json.loads(proc.stdout)
    assert (queued["class"], queued["measured"], queued["headline"]) == ("QueuedCopy", 0, 0)
    assert queued["combinations"] == 2 * 3 * 2 * 4
    assert {row[-1] for row in queued["skips"]["track_enqueue_s"]} == {
        queued_skip_reason(QueuedCopyCase("h2d", "pinned", "blocking", 0),
                           capabilities("cpu"))}


def test_describe_plans_the_claims_five_combinations_first_on_a_gpu(run_python):
    """The claims read h2d non_blocking from pageable and strided pinned memory idle and
    behind the largest queue, and from pinned memory behind it: five measured first."""
    proc = run_python("-m", "benchmarks._asv", "bench_queued",
                      env={"XFERBENCH_PROBE": GPU_PROBE, "XFERBENCH_SWEEP": "default"})
    (queued,) = json.loads(proc.stdout)
    assert (queued["measured"], queued["headline"]) == (2 * 3 * 2 * 4 - 2 * 4, 5)


# -- on an accelerator (the emulated one in CI) ---------------------------------------------

#: Enough calls for a median that a descheduled call does not move; short calls (an idle
#: stream) take many more within the same budget.
SPEC = MeasureSpec(warmup_s=0.01, min_time_s=0.3, max_time_s=0.6, min_samples=8)


def _hold(device, host_memory: str, queued: int, direction: str = "h2d") -> float:
    case = QueuedCopyCase(direction, host_memory, "non_blocking", queued)
    reason = queued_skip_reason(case, capabilities(device))
    if reason:
        pytest.skip(reason)
    m = run_queued_copy(case, device, SPEC)  # VerificationError if a copy is wrong
    return m.stats("enqueue_s").median


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
@pytest.mark.parametrize("host_memory", ["pageable", "pinned_strided"])
def test_a_staged_non_blocking_copy_holds_the_host_for_the_queued_work(gpu_device, host_memory,
                                                                         direction):
    """CUDA stages a pageable copy after a stream synchronise, and a strided view of a pinned
    buffer goes through a pageable temporary: behind 50 ms of queued work the call returns
    only once that work has run, at least five times later than from an idle stream."""
    idle = _hold(gpu_device, host_memory, 0, direction)
    behind = _hold(gpu_device, host_memory, LONGEST, direction)
    assert behind >= 5 * idle, (idle, behind)


@pytest.mark.gpu
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_a_pinned_non_blocking_copy_returns_at_once_behind_queued_work(gpu_device, direction):
    """The call queues the copy and returns: within twice its hold from an idle stream, far
    below the 50 ms of work it is queued behind. The idle stream's call is made, as the
    queued one is, by a host that has just slept for as long (the previous call's
    synchronise waited 50 ms there): a thread that slept starts its next call from cold
    caches, which on a loaded host is tens of microseconds by itself."""
    behind = _hold(gpu_device, "pinned", LONGEST, direction)
    case = QueuedCopyCase(direction, "pinned", "non_blocking", 0)
    work = build_queued_copy(case, gpu_device)
    idle = measure_copy(work, SPEC, clock="completion_s",
                        behind=lambda: time.sleep(LONGEST * 1e-3)).stats("enqueue_s").median
    assert behind <= 2 * idle, (idle, behind)
    assert behind <= 0.1 * LONGEST * 1e-3  # and far below the queued work


@pytest.mark.gpu
@pytest.mark.parametrize("host_memory", QUEUED_HOST_MEMORY)
def test_every_queued_copy_is_done_after_its_queue(gpu_device, host_memory):
    case = QueuedCopyCase("h2d", host_memory, "non_blocking", LONGEST)
    reason = queued_skip_reason(case, capabilities(gpu_device))
    if reason:
        pytest.skip(reason)
    m = run_queued_copy(case, gpu_device, SPEC)
    assert m.label == f"h2d {host_memory} non_blocking behind 50ms 1MiB"
    # the queue, as one spin measured it after the calls, was of the length asked for; and
    # the completion clock waits for it, whatever the host hold was
    assert 0.5 * case.queued_s <= m.extra["queued_s"] <= 2 * case.queued_s
    assert m.stats("completion_s").median >= 0.5 * m.extra["queued_s"]


# -- the claims ------------------------------------------------------------------------------

CLAIMS = ("pageable-waits-for-queue", "pinned-returns-behind-queue")


def test_each_queued_claim_says_why_the_committed_cpu_series_cannot_measure_it():
    from conftest import REPO_ROOT, committed_results

    from xferbench.analysis.claims import NOT_MEASURABLE, evaluate
    from xferbench.analysis.claimtable import load_table
    from xferbench.results import load

    report = evaluate(load(str(committed_results())), load_table(), repo=str(REPO_ROOT))
    why = queued_skip_reason(QueuedCopyCase("h2d", "pinned", "non_blocking", 0),
                             capabilities("cpu"))
    for claim_id in CLAIMS:
        cells = report.cells(claim_id)
        assert cells and {(c.verdict, c.reason) for c in cells} == {(NOT_MEASURABLE, why)}


def _hold_result(host_memory: str, queued: str, samples: list[float]):
    from xferbench.results import Result

    xs = sorted(samples)
    params = (("direction", "h2d"), ("host_memory", host_memory), ("sync", "non_blocking"),
              ("queued", queued), ("size", "1MiB"))
    return Result(benchmark="bench_queued.QueuedCopy.track_enqueue_s", params=params,
                  value=xs[len(xs) // 2], unit="seconds", machine="m", commit="c" * 40,
                  date_ms=1, torch="2.13.0", cuda="13.0", python="3.11", env_name="e",
                  path="/r.json", samples=tuple(samples), q25=xs[len(xs) // 4],
                  q75=xs[3 * len(xs) // 4])


@pytest.mark.parametrize("emulated", [False, True])
def test_the_queued_claims_are_decided_by_the_hold_and_never_on_an_emulated_device(emulated):
    """On a real device: the staged copies held the host 50 ms behind the queue and
    microseconds from an idle stream, the pinned one 20 us: both claims hold. The same
    numbers from an emulated device are host threads' times: neither claim is decided."""
    from xferbench.analysis.claims import HOLDS, NOT_MEASURABLE, evaluate
    from xferbench.analysis.claimtable import ClaimTable, load_table
    from xferbench.devices import Capabilities
    from xferbench.metadata import MachineMetadata
    from xferbench.results import ResultSet
    from xferbench.results.sidecar import Sidecar

    rows = [_hold_result(memory, queued, [s * (1 + i / 50) for i in range(10)])
            for memory in QUEUED_HOST_MEMORY
            for queued, s in (("0", 2e-5), ("50", 2e-5 if memory == "pinned" else 0.05))]
    info = {rows[0].benchmark: {
        "param_names": ["direction", "host_memory", "sync", "queued", "size"],
        "unit": "seconds", "params": [["'h2d'"], [repr(m) for m in QUEUED_HOST_MEMORY],
                                      ["'non_blocking'"], ["'0'", "'50'"], ["'1MiB'"]]}}
    caps = Capabilities("emu:0" if emulated else "cuda:0", True, True, True,
                        reason="emu:0 is emulated on the host" if emulated else "",
                        emulated=emulated)
    side = Sidecar(MachineMetadata(device=caps.device, capabilities=caps, emulated=emulated))
    table = load_table()
    report = evaluate(ResultSet(rows, info, "/r", {"/r.json": side}),
                      ClaimTable(table.path, tuple(table.get(c) for c in CLAIMS)))
    for claim_id in CLAIMS:
        (cell,) = report.cells(claim_id)
        if emulated:
            assert (cell.verdict, cell.reason) == (
                NOT_MEASURABLE, "a claim about time: emu:0 is emulated on the host")
        else:
            assert cell.verdict == HOLDS, (claim_id, cell.reason)

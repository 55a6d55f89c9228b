"""Copies: which cases run where, sizes, the workloads on the CPU (and an accelerator), and
the verification that keeps a wrong copy's numbers out of the results."""

from __future__ import annotations

import importlib
import itertools
import json
from pathlib import Path

import pytest

from xferbench import XferbenchError
from xferbench.device_memory import DoesNotFit
from xferbench.devices import capabilities
from xferbench.practices import (
    DEFAULT_SIZES,
    FULL_SIZES,
    HEADLINE_NBYTES,
    VerificationError,
    headline_nbytes,
    sizes,
)
from xferbench.practices import copies as cp
from xferbench.practices.copies import (
    COPY_HOST_MEMORY,
    DIRECTIONS,
    HOST_MEMORY,
    LAYOUTS,
    MANY_TENSORS,
    SYNCS,
    CopyCase,
    build_copy,
    completion_clock_reason,
    copy_skip_reason,
    device_clock_reason,
    pattern,
    run_copy,
)
from xferbench.spec import MIN_SAMPLES
from xferbench.units import GiB, KiB, MiB, parse_size, size_label

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Every row of the copy grid, d2d included, at one size.
GRID = [
    (d, h, s, lay)
    for d, h, s, lay in itertools.product((*DIRECTIONS, "d2d"), HOST_MEMORY, SYNCS, LAYOUTS)
]


def _runnable(caps) -> set[tuple[str, str, str, str]]:
    return {row for row in GRID if copy_skip_reason(CopyCase(*row, 64 * MiB), caps) is None}


# -- which cases run where ---------------------------------------------------------------------

def test_cpu_runs_exactly_the_pageable_blocking_h2d_rows(cpu_caps):
    assert _runnable(cpu_caps) == {
        ("h2d", "pageable", "blocking", "one"),
        ("h2d", "pageable", "blocking", "many"),
    }


def test_full_accelerator_runs_every_meaningful_row(gpu_caps):
    runnable = _runnable(gpu_caps)
    h2d = {("h2d", h, s, lay) for h in HOST_MEMORY for s in SYNCS for lay in LAYOUTS}
    d2h = {("d2h", h, s, lay) for h in ("pageable", "pinned") for s in SYNCS for lay in LAYOUTS}
    d2d = {("d2d", "pageable", "blocking", lay) for lay in LAYOUTS}
    assert runnable == h2d | d2h | d2d
    assert len(runnable) == 22


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (("h2d", "pinned", "blocking", "one"), "pinned host memory needs an accelerator"),
        (("h2d", "pin_then_copy", "blocking", "many"), "pinned host memory needs an accelerator"),
        (("h2d", "pageable", "non_blocking", "one"), "non_blocking needs an accelerator"),
        (("d2h", "pageable", "blocking", "one"), "on the CPU d2h is the same host copy as h2d"),
        (("d2h", "pin_then_copy", "blocking", "one"), "a d2h copy has none"),
        (("d2d", "pageable", "blocking", "one"), "d2d needs an accelerator"),
    ],
)
def test_cpu_skip_reasons_say_why(cpu_caps, row, words):
    assert words in copy_skip_reason(CopyCase(*row, 4 * KiB), cpu_caps)


@pytest.mark.parametrize(
    ("row", "words"),
    [
        (("d2h", "pin_then_copy", "non_blocking", "one"), "a d2h copy has none"),
        (("d2d", "pinned", "blocking", "one"), "one variant only"),
        (("d2d", "pageable", "non_blocking", "many"), "one variant only"),
    ],
)
def test_accelerator_skip_reasons_say_why(gpu_caps, row, words):
    assert words in copy_skip_reason(CopyCase(*row, 4 * KiB), gpu_caps)


def test_pinned_copy_skipped_on_a_device_without_pinning(mps_caps):
    reason = copy_skip_reason(CopyCase("h2d", "pinned", "non_blocking", "one", MiB), mps_caps)
    assert reason == f"pinned host memory is not available on mps: {mps_caps.reason}"
    assert copy_skip_reason(CopyCase("h2d", "pageable", "non_blocking", "one", MiB),
                            mps_caps) is None


def _clocked(caps, reason) -> set[tuple[str, str, str, str]]:
    return {row for row in GRID if reason(CopyCase(*row, 64 * MiB), caps) is None}


def test_device_time_is_the_figure_of_pinned_non_blocking_and_d2d_copies_alone(gpu_caps):
    assert _clocked(gpu_caps, device_clock_reason) == {
        ("h2d", "pinned", "non_blocking", "one"), ("d2h", "pinned", "non_blocking", "one"),
        ("d2d", "pageable", "blocking", "one")}


@pytest.mark.parametrize(("row", "words"), [
    (("h2d", "pinned", "blocking", "one"), "a blocking copy waits for itself"),
    (("h2d", "pageable", "non_blocking", "one"),
     "staged through a pinned buffer by the host, even when non_blocking"),
    # CUDA's rule: a copy into pageable memory returns once done, never merely staged
    (("d2h", "pageable", "non_blocking", "one"), "returns only once it is done"),
    (("h2d", "pinned", "non_blocking", "many"), "1,000 copies per call overfill one stream"),
    (("d2d", "pageable", "blocking", "many"), "overfill one stream hold"),
])
def test_every_copy_without_device_time_says_which_clock_has_it(gpu_caps, row, words):
    why = device_clock_reason(CopyCase(*row, MiB), gpu_caps)
    assert words in why and "track_completion_s" in why


def test_every_host_copy_has_the_completion_clock_at_every_size(gpu_caps, cpu_caps):
    host = {row for row in GRID if row[0] != "d2d" and row[1] != "pin_then_copy"}
    assert _clocked(gpu_caps, completion_clock_reason) == host & _runnable(gpu_caps)
    assert _clocked(cpu_caps, completion_clock_reason) == _runnable(cpu_caps)
    assert _clocked(cpu_caps, device_clock_reason) == set()
    assert "own benchmark" in completion_clock_reason(
        CopyCase("h2d", "pin_then_copy", "non_blocking", "one", MiB), gpu_caps)


# -- cases, sizes and buffers ----------------------------------------------------------------

def test_copy_case_label_and_non_blocking():
    case = CopyCase("h2d", "pinned", "non_blocking", "many", 64 * MiB)
    assert case.label == "h2d pinned non_blocking many 64MiB"
    assert case.non_blocking
    assert not CopyCase("h2d", "pinned", "blocking", "one", 1).non_blocking


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (("h2h", "pageable", "blocking", "one", 4096),
         "direction 'h2h' is not one of h2d, d2h, d2d"),
        (("h2d", "locked", "blocking", "one", 4096), "host_memory 'locked'"),
        (("h2d", "pageable", "async", "one", 4096), "sync 'async'"),
        (("h2d", "pageable", "blocking", "few", 4096), "layout 'few'"),
        (("h2d", "pageable", "blocking", "one", 0), "size 0 is not a size"),
    ],
)
def test_copy_case_refuses_unknown_values(fields, words):
    with pytest.raises(XferbenchError, match=words):
        CopyCase(*fields)


@pytest.mark.parametrize("nbytes", sorted({*DEFAULT_SIZES, *FULL_SIZES, 1000, 1536, 3 * MiB}))
def test_size_label_round_trips_through_parse_size(nbytes):
    assert parse_size(size_label(nbytes)) == nbytes


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [(1024, "1KiB"), (4096, "4KiB"), (64 * MiB, "64MiB"), (GiB, "1GiB"), (1536, "1536B"),
     (1000, "1000B"), (3 * MiB, "3MiB"), (1, "1B")],
)
def test_size_label_uses_the_largest_exact_unit(nbytes, text):
    assert size_label(nbytes) == text


@pytest.mark.parametrize(("text", "nbytes"),
                         [("4096", 4096), ("4 KiB", 4096), (" 64MiB ", 64 * MiB), ("7B", 7)])
def test_parse_size_accepts_bytes_and_spaces(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["0", "0KiB", "0B"])
def test_parse_size_refuses_zero(text):
    with pytest.raises(XferbenchError, match=rf"size '{text}' is zero"):
        parse_size(text)


@pytest.mark.parametrize("text", ["garbage", "", "-4KiB", "1.5MiB", "64mb", "KiB", "4 TiB"])
def test_parse_size_refuses_garbage_naming_it(text):
    with pytest.raises(XferbenchError, match="is not a size: write it as 4KiB, 64MiB or bytes"):
        parse_size(text)


def test_default_sweep_is_a_few_sizes(monkeypatch):
    monkeypatch.delenv("XFERBENCH_SWEEP", raising=False)
    assert sizes() == DEFAULT_SIZES
    assert 4 <= len(sizes()) <= 6


@pytest.mark.parametrize("value", ["full", "FULL", " full "])
def test_full_sweep_is_every_power_of_two_from_1kib_to_1gib(monkeypatch, value):
    monkeypatch.setenv("XFERBENCH_SWEEP", value)
    got = sizes()
    assert len(got) >= 16
    assert (got[0], got[-1]) == (KiB, GiB)
    assert list(got) == sorted(got)
    assert all(b == 2 * a for a, b in zip(got, got[1:]))


def test_smoke_sweep_is_one_size_that_stands_in_for_the_headline(monkeypatch):
    assert headline_nbytes() == HEADLINE_NBYTES == 64 * MiB
    monkeypatch.setenv("XFERBENCH_SWEEP", "smoke")
    assert sizes() == (MiB,) and headline_nbytes() == MiB


def test_bad_sweep_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv("XFERBENCH_SWEEP", "huge")
    with pytest.raises(XferbenchError, match="XFERBENCH_SWEEP='huge' is not a sweep: use "
                                             "default, smoke or full"):
        sizes()


@pytest.mark.parametrize("nbytes", [1000, 1001, 4 * KiB, 64 * MiB + 7])
def test_many_layout_splits_into_1000_tensors_summing_to_nbytes(nbytes):
    parts = cp._split(nbytes, "many")
    assert len(parts) == MANY_TENSORS == 1000
    assert sum(parts) == nbytes
    assert max(parts) - min(parts) <= 1


def test_one_layout_is_one_tensor():
    assert cp._split(12345, "one") == [12345]


def test_many_layout_refuses_fewer_bytes_than_tensors():
    with pytest.raises(XferbenchError, match="999 bytes cannot be split into 1000 tensors"):
        cp._split(999, "many")


def test_pattern_is_seeded_bytes_mod_251():
    import torch

    p = pattern(600, seed=3)
    assert p.dtype == torch.uint8 and p.shape == (600,)
    assert p[:4].tolist() == [3, 10, 17, 24]
    assert int(p[251]) == (251 * 7 + 3) % 251 == 3
    assert not torch.equal(p, pattern(600, seed=4))
    assert int(p.max()) == 250


# -- the workloads on the CPU ----------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
def test_cpu_copy_runs_and_verifies(layout, small_budget, no_quick):
    case = CopyCase("h2d", "pageable", "blocking", layout, 64 * KiB)
    m = run_copy(case, "cpu", small_budget)
    assert m.device == "cpu"
    assert m.nbytes == 64 * KiB
    assert m.label == f"h2d pageable blocking {layout} 64KiB"
    assert len(m.completion_s) >= 1 and m.device_s == ()
    # Microseconds when quiet; on a loaded host OpenMP threads that wait for each other can
    # stretch one 64 KiB copy_ to milliseconds, so only an absurd time fails here.
    assert 0 < m.median < 0.5
    assert m.gbps == pytest.approx(64 * KiB / m.median / 1e9)


def test_cpu_copy_destination_equals_the_pattern():
    import torch

    work = build_copy(CopyCase("h2d", "pageable", "blocking", "many", 4 * KiB), "cpu")
    work.run()
    got = work.result()
    assert len(got) == 1000
    sent = [pattern(n, seed=i) for i, n in enumerate(cp._split(4 * KiB, "many"))]
    assert torch.equal(torch.cat(got), torch.cat(sent))
    # the destinations are separate buffers, not the sources themselves
    assert got[0].data_ptr() != work.expected[0].data_ptr()
    work.verify()


def test_pinned_copy_skipped_without_accelerator():
    case = CopyCase("h2d", "pinned", "non_blocking", "one", 4 * KiB)
    with pytest.raises(XferbenchError,
                       match=r"^h2d pinned non_blocking one 4KiB on cpu: pinned host memory"):
        build_copy(case, "cpu")


def test_oversized_copy_does_not_fit_before_allocating(monkeypatch):
    monkeypatch.setattr(cp, "check_fits", lambda *a, **k: "64 MiB x2 does not fit")
    monkeypatch.setattr(cp, "pattern", lambda *a, **k: pytest.fail("allocated anyway"))
    with pytest.raises(DoesNotFit, match="h2d pageable blocking one 64MiB: 64 MiB x2 does not"):
        build_copy(CopyCase("h2d", "pageable", "blocking", "one", 64 * MiB), "cpu")


# -- verification: a wrong copy is caught ----------------------------------------------------

@pytest.fixture
def cpu_work():
    def make(layout="one", nbytes=64 * KiB):
        work = build_copy(CopyCase("h2d", "pageable", "blocking", layout, nbytes), "cpu")
        work.run()
        return work
    return make


def test_corrupted_destination_byte_is_caught(cpu_work):
    work = cpu_work()
    work.verify()
    work.result()[0][123] += 1
    with pytest.raises(VerificationError,
                       match=r"destination 0 differs .*\(1 of 65536 bytes wrong\)"):
        work.verify()


def test_corrupted_last_of_1000_tensors_is_caught(cpu_work):
    work = cpu_work("many")
    work.result()[999].zero_()
    with pytest.raises(VerificationError, match="many 64KiB: destination 999 differs"):
        work.verify()


def test_missing_destination_tensor_is_caught(cpu_work):
    work = cpu_work("many")
    full = work.result()
    work.result = lambda: full[:-1]
    with pytest.raises(VerificationError, match="999 tensors arrived, 1000 sent"):
        work.verify()


def test_destination_of_the_wrong_dtype_or_shape_is_caught(cpu_work):
    import torch

    work = cpu_work()
    as_int = [t.to(dtype=torch.int16) for t in work.result()]  # equal values, wrong bytes
    work.result = lambda: as_int
    with pytest.raises(VerificationError, match=r"\(got torch.int16 \(65536,\)\)"):
        work.verify()
    halves = [t.view(2, -1) for t in work.expected]
    work.result = lambda: halves
    with pytest.raises(VerificationError, match=r"\(got torch.uint8 \(2, 32768\)\)"):
        work.verify()


def test_verification_error_is_an_assertion_error():
    assert issubclass(VerificationError, AssertionError)


def _corrupting_build(monkeypatch, after_calls: int):
    """Make run_copy build a workload whose copy writes a wrong byte from call ``after_calls``."""
    real = cp.build_copy
    calls = [0]

    def build(case, device="auto"):
        work = real(case, device)
        good = work.run

        def run():
            good()
            calls[0] += 1
            if calls[0] > after_calls:
                work.result()[0][0] ^= 0xFF
        work.run = run
        return work

    monkeypatch.setattr(cp, "build_copy", build)
    return calls


def test_run_copy_catches_a_wrong_first_copy_before_measuring(monkeypatch, small_budget):
    calls = _corrupting_build(monkeypatch, after_calls=0)
    case = CopyCase("h2d", "pageable", "blocking", "one", 4 * KiB)
    with pytest.raises(VerificationError, match="destination 0 differs"):
        run_copy(case, "cpu", small_budget)
    assert calls[0] == 1  # no measurement ran


def test_run_copy_catches_a_copy_that_goes_wrong_while_measured(monkeypatch, small_budget,
                                                                no_quick):
    calls = _corrupting_build(monkeypatch, after_calls=5)
    case = CopyCase("h2d", "pageable", "blocking", "one", 4 * KiB)
    with pytest.raises(VerificationError, match=r"\(1 of 4096 bytes wrong\)"):
        run_copy(case, "cpu", small_budget)
    assert calls[0] > 5


# -- benchmarks/_asv.py ----------------------------------------------------------------------

@pytest.fixture
def asv_helpers(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    return importlib.import_module("benchmarks._asv")


def test_skipped_lists_the_combinations_with_a_reason(asv_helpers):
    params = (["a", "b"], [1, 2, 3])
    got = asv_helpers.skipped(params, lambda x, n: "odd" if n % 2 else None)
    assert got == [("a", 1), ("a", 3), ("b", 1), ("b", 3)]
    assert asv_helpers.skipped(params, lambda x, n: None) == []


def test_skipped_of_the_copy_grid_on_the_cpu_leaves_the_h2d_pageable_blocking_rows(
        asv_helpers, cpu_caps):
    params = ([*DIRECTIONS, "d2d"], list(COPY_HOST_MEMORY), list(SYNCS), list(LAYOUTS))
    skip = asv_helpers.skipped(
        params, lambda *row: copy_skip_reason(CopyCase(*row, MiB), cpu_caps))
    assert len(skip) == 3 * 2 * 2 * 2 - 2
    assert ("h2d", "pageable", "blocking", "one") not in skip
    assert ("d2h", "pinned", "non_blocking", "many") in skip


def test_asv_samples_are_plain_floats_with_the_call_count(asv_helpers):
    import numpy as np

    got = asv_helpers.asv_samples((np.float64(1e-3), 2e-3), np.int64(10))
    assert got == {"samples": [1e-3, 2e-3], "number": 10}
    assert all(type(x) is float for x in got["samples"]) and type(got["number"]) is int
    assert json.loads(json.dumps(got)) == got
    assert asv_helpers.asv_samples([5.0]) == {"samples": [5.0], "number": 1}


def test_probe_reads_the_capabilities_handed_down(asv_helpers, monkeypatch, gpu_caps):
    monkeypatch.setenv("XFERBENCH_PROBE",
                       json.dumps({"device": "cuda:0", "capabilities": gpu_caps.to_dict()}))
    assert asv_helpers._probe() == ("cuda:0", gpu_caps)


def test_probe_without_a_hand_down_asks_this_machine(asv_helpers, monkeypatch):
    monkeypatch.delenv("XFERBENCH_PROBE", raising=False)
    monkeypatch.setenv("XFERBENCH_DEVICE", "cpu")
    assert asv_helpers._probe() == ("cpu", capabilities("cpu"))


_SKIP_LISTS = """
import itertools
import json
from benchmarks import bench_copies as b

def runs(cls, method):
    skip = set(getattr(cls, method).skip_params)
    return sorted(c for c in itertools.product(*cls.params) if c not in skip)

print(json.dumps({
    "device": runs(b.Copy, "track_device_s"),
    "completion": runs(b.Copy, "track_completion_s"),
    "enqueue": runs(b.Copy, "track_enqueue_s"),
    "sizes": b.SIZES,
    "pin": runs(b.PinMemory, "track_host_s"),
    "pin_then_copy": runs(b.PinThenCopy, "track_completion_s"),
    "overlap": runs(b.Overlap, "track_serialised_fraction"),
}))
"""


@pytest.mark.parametrize("fake", ["cpu_caps", "gpu_caps"])
def test_bench_copies_skips_at_discovery_what_the_probe_cannot_run(fake, request, run_python):
    caps = request.getfixturevalue(fake)
    probe = json.dumps({"device": caps.device, "capabilities": caps.to_dict()})
    proc = run_python("-c", _SKIP_LISTS,
                      env={"XFERBENCH_PROBE": probe, "XFERBENCH_SWEEP": "default"})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    n = len(got["sizes"])
    for clock, reason in (("device", device_clock_reason), ("completion", completion_clock_reason)):
        rows = {tuple(c[:4]) for c in got[clock]}
        assert rows == _clocked(caps, reason), clock
        assert len(got[clock]) == len(rows) * n
    on_cpu = caps.device == "cpu"
    # enqueue: at the headline size, every host<->device copy of an accelerator
    assert {c[4] for c in got["enqueue"]} == (set() if on_cpu else {"64MiB"})
    assert len(got["enqueue"]) == (0 if on_cpu else 16)
    assert len(got["pin"]) == (0 if on_cpu else 2 * n)  # warm and cold
    assert len(got["pin_then_copy"]) == (0 if on_cpu else 2 * 2 * n)  # x one and many
    assert len(got["overlap"]) == (0 if on_cpu else 4)  # pageable/pinned x both orders


# -- on an accelerator -----------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("row", GRID, ids=[" ".join(r) for r in GRID])
def test_accelerator_copy_runs_and_verifies(row, gpu_device, small_budget):
    case = CopyCase(*row, 64 * KiB)
    reason = copy_skip_reason(case, capabilities(gpu_device))
    if reason:
        pytest.skip(reason)
    m = run_copy(case, gpu_device, small_budget)
    assert m.device == gpu_device.name
    assert m.nbytes == 64 * KiB and m.label == case.label
    if device_clock_reason(case, capabilities(gpu_device)):  # read as a user waits for it
        assert m.primary_clock == "completion_s" and m.device_s == ()
        # at least MIN_SAMPLES: a call slow against the budget ends at max_time_s
        assert len(m.completion_s) == len(m.enqueue_s) >= MIN_SAMPLES
    else:  # device time alone: no host batches spent beside it
        assert m.primary_clock == "device_s" and len(m.device_s) >= MIN_SAMPLES
        # the spec's min_samples, unless its max_time_s came first: on a loaded host a held
        # batch waits for the host too, so max_time_s may end it after a few batches
        assert len(m.device_s) >= small_budget.min_samples or m.stop == "max_time_s", m
        assert m.completion_s == () and m.extra["device_clock"].startswith(("held", "unheld"))
    assert m.median > 0 and m.gbps > 0


@pytest.mark.gpu
def test_accelerator_buffers_are_pinned_where_the_case_says(gpu_device):
    if not capabilities(gpu_device).pinned_memory:
        pytest.skip(f"{gpu_device} has no pinned host memory")
    pinned_src = build_copy(CopyCase("h2d", "pinned", "non_blocking", "one", MiB), gpu_device)
    assert pinned_src.keep[0][0].is_pinned()
    pageable_src = build_copy(CopyCase("h2d", "pageable", "non_blocking", "one", MiB), gpu_device)
    assert not pageable_src.keep[0][0].is_pinned()
    # d2h non_blocking into a pageable destination must stay pageable (not silently pinned)
    for host, pinned in (("pageable", False), ("pinned", True)):
        work = build_copy(CopyCase("d2h", host, "non_blocking", "one", MiB), gpu_device)
        work.run()
        work.verify()
        assert work.result()[0].device.type == "cpu"
        assert work.result()[0].is_pinned() is pinned


@pytest.mark.gpu
@pytest.mark.parametrize("row", [("h2d", "pinned", "non_blocking", "one"),
                                 ("h2d", "pageable", "blocking", "many"),
                                 ("d2h", "pinned", "non_blocking", "one"),
                                 ("d2d", "pageable", "blocking", "one")],
                         ids=lambda r: " ".join(r))
def test_accelerator_corrupted_destination_is_caught(row, gpu_device):
    case = CopyCase(*row, 64 * KiB)
    if copy_skip_reason(case, capabilities(gpu_device)):
        pytest.skip(copy_skip_reason(case, capabilities(gpu_device)))
    work = build_copy(case, gpu_device)
    work.run()
    work.verify()
    dst = work.result()[-1]
    dst.view(-1)[0] += 1  # on the device for h2d/d2d, in host memory for d2h
    with pytest.raises(VerificationError, match=rf"destination {len(work.result()) - 1} differs"):
        work.verify()

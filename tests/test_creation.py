"""Creation workloads: every factory and variant runs and verifies; wrong tensors fail."""

from __future__ import annotations

import math

import pytest
import torch

from xferbench.devices import Device
from xferbench.errors import XferbenchError
from xferbench.practices import HEADLINE_NBYTES, VerificationError
from xferbench.practices.creation import (
    FACTORIES,
    FILL_VALUE,
    READY_CLOCK,
    TENSOR_LIST_MAX_NBYTES,
    CreationCase,
    build_creation,
    check_created,
    compare_creation,
    creation_sizes,
    creation_skip_reason,
    draws_on_host,
    reference,
    run_creation,
)
from xferbench.practices.forward import FORWARD_MODES, ForwardCase, build_forward, run_forward
from xferbench.practices.memory import (
    device_peak_bytes,
    device_peak_skip_reason,
    host_peak_bytes,
    host_peak_skip_reason,
)
from xferbench.units import KiB, MiB

SMALL = 4 * KiB


@pytest.mark.parametrize("variant", ["on_device", "to"])
@pytest.mark.parametrize("factory", FACTORIES)
def test_every_factory_runs_and_verifies_on_cpu(factory, variant, small_budget):
    m = run_creation(CreationCase(factory, variant, SMALL), "cpu", small_budget)
    samples = m.samples(READY_CLOCK)
    assert m.device == "cpu"
    assert m.nbytes == SMALL
    assert samples and all(0 < s < 1 for s in samples)
    assert math.isfinite(m.stats(READY_CLOCK).median)


def test_created_tensor_matches_the_cpu_reference_bit_for_bit():
    for factory in FACTORIES:
        work = build_creation(CreationCase(factory, "to", SMALL), "cpu")
        work.run()
        got = work.out[0]
        assert torch.equal(got, reference(work.case, work.data)), factory
        assert got.numel() * got.element_size() == SMALL


def test_reference_values_are_what_each_factory_means():
    n = SMALL
    assert bool((reference(CreationCase("full", "to", n)) == torch.tensor(FILL_VALUE)).all())
    assert torch.equal(reference(CreationCase("empty_fill", "to", n)),
                       reference(CreationCase("full", "to", n)))
    positions = reference(CreationCase("arange", "to", n))
    assert positions.dtype == torch.int64 and int(positions[-1]) == n // 8 - 1
    assert float(reference(CreationCase("ones", "to", n)).sum()) == n // 4
    # a seeded host draw is reproducible, and not constant
    r1, r2 = reference(CreationCase("rand", "to", n)), reference(CreationCase("rand", "to", n))
    assert torch.equal(r1, r2) and float(r1.std()) > 0.1


def test_random_draws_on_the_host_equal_between_variants():
    outs = []
    for variant in ("on_device", "to"):
        work = build_creation(CreationCase("randn", variant, SMALL), "cpu")
        work.run()
        work.run()  # reseeded per call: the second draw equals the first
        outs.append(work.out[0])
    assert torch.equal(outs[0], outs[1])


def test_random_on_accelerator_drawn_on_device_is_checked_for_shape_only():
    gpu = Device("cuda", 0)
    assert not draws_on_host(CreationCase("rand", "on_device", SMALL), gpu)
    assert draws_on_host(CreationCase("rand", "to", SMALL), gpu)
    assert draws_on_host(CreationCase("rand", "on_device", SMALL), Device("cpu"))


def test_corrupted_tensor_fails_verification():
    work = build_creation(CreationCase("zeros", "on_device", SMALL), "cpu")
    work.run()
    work.verify()
    work.out[0][7] = 1.0
    with pytest.raises(VerificationError, match="1 of 1024 elements differ"):
        work.verify()


@pytest.mark.parametrize("bad, match", [
    (lambda t: t.double(), "float64"),
    (lambda t: t[:-1], r"\(1023,\)"),
])
def test_wrong_dtype_or_shape_fails_verification(bad, match):
    case = CreationCase("ones", "to", SMALL)
    with pytest.raises(VerificationError, match=match):
        check_created(case, Device("cpu"), bad(reference(case)))


def test_tensor_on_the_wrong_device_fails_verification():
    case = CreationCase("rand", "on_device", SMALL)
    with pytest.raises(VerificationError, match="expected cuda:0"):
        check_created(case, Device("cuda", 0), reference(case))


def test_non_blocking_skipped_on_cpu_with_reason(cpu_caps, gpu_caps):
    case = CreationCase("zeros", "to_non_blocking", SMALL)
    assert "needs an accelerator" in creation_skip_reason(case, cpu_caps)
    assert creation_skip_reason(case, gpu_caps) is None
    with pytest.raises(XferbenchError, match="needs an accelerator"):
        build_creation(case, "cpu")


def test_tensor_list_capped_above_its_limit(gpu_caps):
    over = CreationCase("tensor_list", "on_device", HEADLINE_NBYTES)
    assert "capped at 4MiB" in creation_skip_reason(over, gpu_caps)
    at_cap = CreationCase("tensor_list", "on_device", TENSOR_LIST_MAX_NBYTES)
    assert creation_skip_reason(at_cap, gpu_caps) is None


def test_bad_cases_are_refused():
    with pytest.raises(XferbenchError, match="factory 'eye'"):
        CreationCase("eye", "to", SMALL)
    with pytest.raises(XferbenchError, match="multiple of 8"):
        CreationCase("arange", "to", 12)


def test_sizes_default_full_and_smoke(monkeypatch):
    monkeypatch.delenv("XFERBENCH_SWEEP", raising=False)
    assert creation_sizes() == (4 * KiB, 64 * MiB)
    monkeypatch.setenv("XFERBENCH_SWEEP", "full")
    full = creation_sizes()
    assert len(full) > 2 and all(n & (n - 1) == 0 for n in full)
    monkeypatch.setenv("XFERBENCH_SWEEP", "smoke")
    assert creation_sizes() == (MiB,)


@pytest.mark.skipif(host_peak_skip_reason() is not None, reason=str(host_peak_skip_reason()))
def test_host_peak_counts_the_host_tensor_and_not_a_wrapped_array():
    # 64 MiB: above glibc's largest mmap threshold (32 MiB), so every call maps fresh pages
    # and freed heap cannot hide the allocation.
    made = host_peak_bytes(CreationCase("zeros", "to", HEADLINE_NBYTES), "cpu")
    assert HEADLINE_NBYTES <= made <= HEADLINE_NBYTES + 4 * MiB
    wrapped = host_peak_bytes(CreationCase("as_tensor", "to", HEADLINE_NBYTES), "cpu")
    assert wrapped < 4 * MiB  # as_tensor shares the ndarray's memory; .to("cpu") is a no-op


def test_device_peak_skipped_on_cpu(cpu_caps, gpu_caps):
    assert "accelerator" in device_peak_skip_reason(cpu_caps)
    assert device_peak_skip_reason(gpu_caps) is None
    with pytest.raises(XferbenchError, match="accelerator"):
        device_peak_bytes(CreationCase("zeros", "to", SMALL), "cpu")


def test_headline_comparison_on_cpu(small_budget):
    result = compare_creation("cpu", nbytes=SMALL, spec=small_budget)
    assert result.factory == "zeros"
    assert result.on_device_s > 0 and result.copied_s > 0
    assert result.ratio == pytest.approx(result.copied_s / result.on_device_s)


@pytest.mark.parametrize("mode", FORWARD_MODES)
def test_forward_modes_run_and_verify_on_cpu(mode, small_budget):
    m = run_forward(ForwardCase(mode, seq=64), "cpu", small_budget)
    assert m.samples(READY_CLOCK) and m.stats(READY_CLOCK).median > 0


def test_forward_modes_give_the_same_output():
    outs = []
    for mode in FORWARD_MODES:
        work = build_forward(ForwardCase(mode, seq=32), "cpu")
        work.run()
        outs.append(work.out[0])
    assert all(torch.equal(outs[0], o) for o in outs[1:])
    assert bool(torch.isfinite(outs[0]).all())


def test_wrong_forward_output_fails_verification():
    work = build_forward(ForwardCase("host_then_move", seq=32), "cpu")
    work.run()
    work.verify()
    work.out[0][0, 0, 0] += 1e-3
    with pytest.raises(VerificationError, match="registered-buffer"):
        work.verify()


@pytest.mark.gpu
def test_on_accelerator_every_variant_verifies(gpu_device, small_budget):
    for factory in ("zeros", "randn", "as_tensor"):
        for variant in ("on_device", "to", "to_non_blocking"):
            m = run_creation(CreationCase(factory, variant, 1 * MiB), gpu_device, small_budget)
            assert m.device == gpu_device.name and m.stats(READY_CLOCK).median > 0
    result = compare_creation(gpu_device, nbytes=4 * MiB, spec=small_budget)
    assert result.on_device_s > 0 and result.copied_s > 0
    made = device_peak_bytes(CreationCase("zeros", "to", HEADLINE_NBYTES), gpu_device)
    assert made >= HEADLINE_NBYTES


@pytest.mark.gpu
@pytest.mark.timing
def test_on_accelerator_copying_costs_more_than_creating(gpu_device, small_budget):
    result = compare_creation(gpu_device, spec=small_budget)
    assert result.ratio > 1  # a 64 MiB copy from pageable memory costs more than a memset


@pytest.mark.gpu
@pytest.mark.parametrize("mode", FORWARD_MODES)
def test_forward_modes_run_and_verify_on_the_accelerator(mode, gpu_device, small_budget):
    # the output is checked against the registered-buffer module's, bit for bit, before and
    # after timing: host_then_move's per-call copies land before the forward reads them
    m = run_forward(ForwardCase(mode, seq=64), gpu_device, small_budget)
    assert m.device == gpu_device.name and m.stats(READY_CLOCK).median > 0

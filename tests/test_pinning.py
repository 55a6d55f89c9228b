"""Pinning measured for what it is: pin_memory() and pin-then-copy with the caching host
allocator warm (a cached block handed back) and cold (emptied before every call), each with
the pinned allocations per call that show which case ran."""

from __future__ import annotations

import pytest

from xferbench import XferbenchError
from xferbench.devices import capabilities
from xferbench.practices.pinning import (
    CACHE_STATES,
    pin_skip_reason,
    run_pin_memory,
    run_pin_then_copy,
)
from xferbench.units import KiB, MiB


def test_pin_memory_skipped_without_pinned_memory(cpu_caps, gpu_caps, mps_caps):
    assert pin_skip_reason(cpu_caps) == "pin_memory() needs an accelerator with pinned host memory"
    assert pin_skip_reason(mps_caps) is not None
    assert pin_skip_reason(gpu_caps) is None


def test_pin_memory_refused_without_accelerator():
    with pytest.raises(XferbenchError, match="pin_memory on cpu: pin_memory\\(\\) needs an"):
        run_pin_memory(MiB, "cpu")


def test_pin_then_copy_refused_without_accelerator():
    with pytest.raises(XferbenchError, match="pin_then_copy non_blocking one 1MiB on cpu"):
        run_pin_then_copy("one", MiB, "cpu")


@pytest.mark.parametrize("run", [run_pin_memory, lambda n, d, cache: run_pin_then_copy(
    "one", n, d, cache=cache)])
def test_an_unknown_cache_state_is_one_sentence(run):
    with pytest.raises(XferbenchError, match="cache 'lukewarm' is not one of warm, cold"):
        run(MiB, "cpu", cache="lukewarm")


def _pinned(gpu_device) -> None:
    if not capabilities(gpu_device).pinned_memory:
        pytest.skip(f"{gpu_device} has no pinned host memory")


@pytest.mark.gpu
@pytest.mark.parametrize("cache", CACHE_STATES)
def test_pin_memory_is_timed_on_the_host_and_counts_its_allocations(gpu_device, small_budget,
                                                                    cache):
    _pinned(gpu_device)
    m = run_pin_memory(MiB, gpu_device, small_budget, cache=cache)
    assert m.device == "cpu"  # pinning is host work: host clock
    assert m.label == f"pin_memory {cache} 1MiB" and m.nbytes == MiB
    assert 0 < m.median < 0.1
    assert m.calls_per_sample == 1 or cache == "warm"  # cold: one call per emptied cache
    per_call = m.extra["host_allocs_per_call"]
    if per_call is None:
        pytest.skip(f"{gpu_device}'s backend keeps no pinned allocation count")
    # warm: the block freed by the previous call is handed back; cold: a fresh one each call
    assert per_call == (0 if cache == "warm" else 1), m.extra


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["one", "many"])
def test_pin_then_copy_cold_allocates_every_call_and_warm_reuses_the_cached_blocks(
        gpu_device, small_budget, layout):
    _pinned(gpu_device)
    warm = run_pin_then_copy(layout, 64 * KiB, gpu_device, small_budget, cache="warm")
    cold = run_pin_then_copy(layout, 64 * KiB, gpu_device, small_budget, cache="cold")
    for m, cache in ((warm, "warm"), (cold, "cold")):
        assert m.primary_clock == "completion_s" and m.device_s == ()
        assert m.extra["host_cache"] == cache and m.label.endswith(cache)
    tensors = 1 if layout == "one" else 1000
    if warm.extra["host_allocs_per_call"] is None:
        pytest.skip(f"{gpu_device}'s backend keeps no pinned allocation count")
    warm_allocs, cold_allocs = (m.extra["host_allocs_per_call"] for m in (warm, cold))
    if layout == "one":  # warm: the block freed by the last call; cold: a fresh one each call
        assert (warm_allocs, cold_allocs) == (0, 1)
    else:
        # a block comes back once the copy that read it is done, so a call allocates only as
        # many as it has copies in flight at once: cold at least one (the cache was emptied),
        # warm only when that number reaches a new peak. How many are in flight follows the
        # host's load, so the two counts are not ordered, and on a loaded host warm may
        # allocate more than cold: no tight bound holds. What the practice claims is reuse:
        # warm allocates a tenth of the tensors at most (a call that reused nothing
        # allocates every one), and cold allocates, one at least and never more than there
        # are
        assert warm_allocs <= tensors / 10, warm.extra
        assert 1 <= cold_allocs <= tensors, cold.extra


@pytest.mark.gpu
@pytest.mark.timing
def test_cold_pinning_costs_more_than_warm(gpu_device):
    """Page-locking (cold) against a memcpy into a recycled block (warm), 64 MiB: cudaHostAlloc
    of 64 MiB costs milliseconds, the memcpy about as much again, so cold is the slower."""
    _pinned(gpu_device)
    warm = run_pin_memory(64 * MiB, gpu_device, cache="warm")
    cold = run_pin_memory(64 * MiB, gpu_device, cache="cold")
    print(f"pin_memory 64 MiB: warm {warm.median * 1e3:.2f} ms, cold {cold.median * 1e3:.2f} ms")
    assert cold.median > warm.median


@pytest.mark.gpu
def test_a_warm_pin_takes_no_sample_of_a_fresh_allocation(gpu_device, small_budget,
                                                           monkeypatch):
    """The warm case's steady state holds two cached blocks (the one the last call keeps,
    the one the next is handed). A warm-up of a single slow call left one, and the
    calibrating call, kept as a sample, allocated the other: one cold sample among the warm.
    No pinned allocation may happen while the warm case is measured."""
    _pinned(gpu_device)
    from xferbench.device_memory import host_allocations
    from xferbench.practices import pinning

    during = []

    def counted(*args, **kwargs):
        before = host_allocations(gpu_device)
        m = measure(*args, **kwargs)
        during.append((before, host_allocations(gpu_device)))
        return m

    measure = pinning.measure
    monkeypatch.setattr(pinning, "measure", counted)
    run_pin_memory(4 * MiB, gpu_device, small_budget.replace(warmup_s=0.0), cache="warm")
    (before, after), = during
    if before is None:
        pytest.skip(f"{gpu_device}'s backend keeps no pinned allocation count")
    assert after == before, f"{after - before} pinned allocation(s) while measuring warm"

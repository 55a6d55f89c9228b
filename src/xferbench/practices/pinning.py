"""Pinning measured for what it is: ``x.pin_memory()`` alone and ``t.pin_memory().to(dev,
non_blocking=True)``, each with the caching host allocator warm (a cached pinned block reused:
the steady state a DataLoader's pin thread sees) and cold (the cache emptied before every call,
outside the timed region: the page-locking cost), with the pinned allocations per call
recorded to show which case ran (host_memory_stats' num_host_alloc).

PyTorch's ``pin_memory()`` goes through its caching host allocator: after the first call a
freed block of the same power-of-two size is handed out again and cudaHostAlloc runs only on a
miss, so a warm figure is a memcpy into a recycled pinned block, not page-locking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..device_memory import DoesNotFit, check_fits, empty_host_cache, host_allocations
from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MeasureSpec
from ..timing import measure
from ..units import size_label
from . import VerificationError
from .copies import CopyCase, build_copy, measure_copy, pattern

# torch loads inside the functions that need it: `import xferbench` stays free of it.

#: The caching host allocator's state when pinning is timed: warm (a cached block reused)
#: or cold (the cache emptied before every call: page-locking paid).
CACHE_STATES = ("warm", "cold")


def host_allocations_per_call(run: Callable[[], Any], device: Device,
                              setup: Callable[[], Any] | None = None,
                              calls: int = 5) -> float | None:
    """Pinned host blocks the caching host allocator allocates per call of ``run`` (after
    ``setup``, where given): about 0 when every call reuses a cached block (warm), about 1 per
    pinned tensor when each call must allocate and page-lock (cold). None where the backend
    keeps no count. Without a ``setup`` two calls run first, uncounted: a measurement cut at
    its budget after a few slow calls may not have brought the cache to its steady state
    (as many blocks as the copies in flight at once need)."""
    if setup is None:
        for _ in range(2):
            run()
            synchronize(device)
    before = host_allocations(device)
    if before is None:
        return None
    for _ in range(calls):
        if setup is not None:
            setup()
        run()
        synchronize(device)
    after = host_allocations(device)
    return None if after is None else (after - before) / calls


def _with_allocations(m: Measurement, per_call: float | None, cache: str) -> Measurement:
    """``m`` with its cache state and pinned allocations per call in its extra."""
    return dataclasses.replace(m, extra={**m.extra, "host_cache": cache,
                                         "host_allocs_per_call": per_call})


def pin_skip_reason(caps: Capabilities) -> str | None:
    if not caps.pinned_memory:
        return "pin_memory() needs an accelerator with pinned host memory"
    return None


def _check_cache(cache: str) -> None:
    if cache not in CACHE_STATES:
        raise XferbenchError(f"cache {cache!r} is not one of {', '.join(CACHE_STATES)}")


def run_pin_memory(nbytes: int, device: str | Device = "auto",
                   spec: MeasureSpec | None = None, *, cache: str = "warm") -> Measurement:
    """Time ``x.pin_memory()`` alone, on the host clock. ``cache`` "warm": the caching host
    allocator's steady state, each call reusing a cached pinned block (what a DataLoader's
    pin thread sees); "cold": the cache emptied before every call, outside the timed region,
    so each call allocates and page-locks (cudaHostAlloc). The pinned allocations per call
    (host_memory_stats) go into the measurement's extra, to show which case ran."""
    import torch

    _check_cache(cache)
    dev = resolve_device(device)
    reason = pin_skip_reason(capabilities(dev))
    if reason:
        raise XferbenchError(f"pin_memory on {dev}: {reason}")
    why = check_fits(nbytes, Device("cpu"), copies=3)
    if why:
        raise DoesNotFit(f"pin_memory {size_label(nbytes)}: {why}")
    src = pattern(nbytes)
    last: list[Any] = []

    def run() -> None:
        last[:] = [src.pin_memory()]

    def cold() -> None:  # the previous block back to the cache, then the cache emptied
        last.clear()
        synchronize(dev)
        empty_host_cache(dev)

    setup = cold if cache == "cold" else None
    if setup is None:
        # warm: two blocks in the cache before any timed call, the one the last call holds
        # and the one the next is handed. A warm-up of one slow call (a large block) left
        # one, and the calibrating call allocated the second: a cold sample among the warm.
        for _ in range(2):
            run()
    m = measure(run, spec or DEFAULT_SPEC, device="cpu", setup=setup, nbytes=nbytes,
                label=f"pin_memory {cache} {size_label(nbytes)}", clock=None)
    if not (last[0].is_pinned() and torch.equal(last[0], src)):
        raise VerificationError("pin_memory(): the pinned copy differs from its source")
    per_call = host_allocations_per_call(run, dev, setup)
    return _with_allocations(m, per_call, cache)


def run_pin_then_copy(layout: str, nbytes: int, device: str | Device = "auto",
                      spec: MeasureSpec | None = None, *, cache: str = "warm") -> Measurement:
    """``t.pin_memory().to(dev, non_blocking=True)`` per tensor, every call (the pattern the
    PyTorch tutorial measures), on the completion clock: pinning is host work and the copy
    device work, so only the host clock sees both. ``cache`` as for ``run_pin_memory``: warm
    reuses cached pinned blocks, cold empties the cache before every call (outside the timed
    region) and pays the page-locking. Verified bit for bit before and after."""
    _check_cache(cache)
    case = CopyCase("h2d", "pin_then_copy", "non_blocking", layout, nbytes)
    dev = resolve_device(device)
    setup = None
    if cache == "cold":
        def setup() -> None:
            synchronize(dev)  # the last call's pinned temporaries are back in the cache
            empty_host_cache(dev)

    work = build_copy(case, dev)
    m = measure_copy(work, spec, clock="completion_s", setup=setup)
    per_call = host_allocations_per_call(work.run, dev, setup)
    work.verify()
    m = dataclasses.replace(m, spec=m.spec.replace(label=f"{case.label} {cache}"))
    return _with_allocations(m, per_call, cache)

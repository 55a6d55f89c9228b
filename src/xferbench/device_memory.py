"""Device and host memory: what is free, what the allocators hold and peaked at, whether a
workload fits, and giving cached memory back between measured cases. Part of the device
layer: every allocator call lives here or in ``devices``."""

from __future__ import annotations

import gc
import os

from .devices import Device, module_of, synchronize
from .errors import XferbenchError

# torch loads inside the functions that need it: `import xferbench` stays free of it.


class DoesNotFit(XferbenchError):
    """A workload's buffers would not fit in free memory; benchmarks skip it, not fail."""


def release_memory(device: Device, *, thorough: bool = False) -> None:
    """Give back what the caching allocators hold on an accelerator, the device's and the
    pinned host memory cache, so that one measured case does not crowd the next.

    The young garbage is collected first (a tensor kept alive by a reference cycle cannot be
    given back); ``thorough`` collects every generation (about 0.1 s with torch loaded). On
    the CPU nothing is done: reference counting frees host buffers and there is no cache.
    """
    if not device.is_accelerator:
        return
    import torch

    gc.collect() if thorough else gc.collect(1)
    synchronize(device)
    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "empty_cache"):
        acc.empty_cache()
    elif hasattr(module_of(device.type), "empty_cache"):
        module_of(device.type).empty_cache()
    empty_host_cache(device)


def empty_host_cache(device: Device) -> None:
    """Return every cached pinned host block to the system (cudaFreeHost), so that the next
    ``pin_memory()`` allocates and page-locks afresh (a miss of the caching host allocator).
    Blocks still in use, or read by queued copies, stay; synchronise first to free those."""
    if not device.is_accelerator:
        return
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "empty_host_cache"):
        acc.empty_host_cache()
    elif hasattr(torch._C, "_host_emptyCache"):  # torch < 2.9: the CUDA host allocator's cache
        torch._C._host_emptyCache()


def host_allocations(device: Device) -> int | None:
    """How many pinned host blocks the caching host allocator has allocated so far (its
    ``num_host_alloc``: a miss allocates, a hit reuses a cached block), or None where the
    backend keeps no such count (``host_memory_stats`` of torch.cuda, or of the backend)."""
    if not device.is_accelerator:
        return None
    stats = getattr(module_of(device.type), "host_memory_stats", None)
    try:
        value = stats().get("num_host_alloc") if callable(stats) else None
    except Exception:  # a backend that has the call but no host allocator behind it
        return None
    return None if value is None else int(value)


def free_memory(device: Device) -> int | None:
    """Free bytes on ``device`` (host RAM for the CPU), or None when unknown."""
    if not device.is_accelerator:
        return host_free_memory()
    try:
        import torch

        acc = getattr(torch, "accelerator", None)
        if acc is not None and hasattr(acc, "get_memory_info"):
            free, _total = acc.get_memory_info(device.torch())
        else:
            free, _total = module_of(device.type).mem_get_info(device.torch())
        return int(free)
    except Exception:
        return None


def host_free_memory() -> int | None:
    """MemAvailable from /proc/meminfo, or None off Linux."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def memory_allocated(device: Device) -> int | None:
    """Bytes held by PyTorch's caching allocator on ``device``; None on the CPU."""
    if not device.is_accelerator:
        return None
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "memory_allocated"):
        return int(acc.memory_allocated(device.torch()))
    mod = module_of(device.type)
    return int(mod.memory_allocated(device.torch())) if hasattr(mod, "memory_allocated") else None


def reset_peak_memory(device: Device) -> None:
    if not device.is_accelerator:
        return
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "reset_peak_memory_stats"):
        acc.reset_peak_memory_stats(device.torch())
    elif hasattr(module_of(device.type), "reset_peak_memory_stats"):
        module_of(device.type).reset_peak_memory_stats(device.torch())


def max_memory_allocated(device: Device) -> int | None:
    if not device.is_accelerator:
        return None
    import torch

    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "max_memory_allocated"):
        return int(acc.max_memory_allocated(device.torch()))
    mod = module_of(device.type)
    if not hasattr(mod, "max_memory_allocated"):
        return None
    return int(mod.max_memory_allocated(device.torch()))


def check_fits(nbytes: int, device: Device, *, copies: int = 2, host_copies: int = 0) -> str | None:
    """Why ``copies`` buffers of ``nbytes`` would not fit, or None when they fit.

    Leaves a 10% margin; unknown free memory counts as fitting.
    """
    need_dev = nbytes * copies
    free = free_memory(device)
    if free is not None and need_dev > 0.9 * free:
        return (
            f"{nbytes / 2**20:.0f} MiB x{copies} does not fit in the "
            f"{free / 2**30:.1f} GiB free on {device.name}"
        )
    if host_copies and device.is_accelerator:
        host_free = host_free_memory()
        if host_free is not None and nbytes * host_copies > 0.9 * host_free:
            return (
                f"{nbytes / 2**20:.0f} MiB x{host_copies} does not fit in the "
                f"{host_free / 2**30:.1f} GiB of free host memory"
            )
    return None

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
    given back); ``thorough`` collects every generation (slower, with torch's objects loaded). On
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

    own = getattr(module_of(device.type), "empty_host_cache", None)
    acc = getattr(torch, "accelerator", None)
    if callable(own):  # the backend's own: torch.accelerator's is a no-op for some of them
        own()
    elif acc is not None and hasattr(acc, "empty_host_cache"):
        acc.empty_host_cache()
    elif hasattr(torch._C, "_host_emptyCache"):  # torch < 2.9: the CUDA host allocator's cache
        torch._C._host_emptyCache()


def host_allocations(device: Device) -> int | None:
    """How many pinned host blocks the caching host allocator has allocated so far (its
    ``num_host_alloc``: a miss allocates, a hit reuses a cached block), or None where the
    backend keeps no such count (``host_memory_stats`` of torch.cuda, or of the backend)."""
    return _host_stat(device, "num_host_alloc")


def host_pinned_bytes(device: Device) -> int | None:
    """Bytes of pinned host memory the caching host allocator holds now, in use and cached
    (its ``allocated_bytes.current``: each block at the size it rounded the request up to),
    or None where the backend keeps no such count."""
    return _host_stat(device, "allocated_bytes.current")


def _host_stat(device: Device, key: str) -> int | None:
    if not device.is_accelerator:
        return None
    stats = getattr(module_of(device.type), "host_memory_stats", None)
    try:
        value = stats().get(key) if callable(stats) else None
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


#: virtio drivers whose bound device lets a microVM's memory grow while it runs (memory
#: hot-plug; a balloon the host deflates): MemAvailable then says what the machine has now,
#: not what it can have (a machine whose memory starts small and grows as it is used).
GROWING_MEMORY_DRIVERS = ("virtio_mem", "virtio_balloon")
#: The host memory a machine whose memory grows has in all, in bytes, where MemTotal does
#: not say it yet.
HOST_MEMORY_VAR = "XFERBENCH_HOST_MEMORY_BYTES"


def host_memory_grows() -> bool:
    """Whether a memory hot-plug or balloon device is bound here (sysfs; False off Linux)."""
    for driver in GROWING_MEMORY_DRIVERS:
        try:
            if any(name.startswith("virtio") for name in
                   os.listdir(f"/sys/bus/virtio/drivers/{driver}")):
                return True
        except OSError:
            pass
    return False


def _mem_total() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def host_memory_limit() -> tuple[int | None, str]:
    """(bytes, what they are) that a workload's host buffers must fit in: MemAvailable; on a
    machine whose memory grows (``host_memory_grows``), the larger of MemAvailable and the
    memory it has in all (HOST_MEMORY_VAR where set, else MemTotal, which a balloon does
    not shrink), so that a microVM that starts small is not refused what it will be given."""
    free = host_free_memory()
    if not host_memory_grows():
        return free, "free host memory"
    declared = os.environ.get(HOST_MEMORY_VAR, "").strip()
    grown: int | None
    if declared:
        if not declared.isdigit():
            raise XferbenchError(f"{HOST_MEMORY_VAR}={declared!r} is not a byte count: give "
                                 "the host memory the machine has in all, in bytes")
        grown, what = int(declared), f"host memory this machine has in all ({HOST_MEMORY_VAR})"
    else:
        grown, what = _mem_total(), "host memory this machine may grow to (MemTotal)"
    if grown is None or (free is not None and free >= grown):
        return free, "free host memory"
    return grown, what


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
        host_free, what = host_memory_limit()
        if host_free is not None and nbytes * host_copies > 0.9 * host_free:
            return (
                f"{nbytes / 2**20:.0f} MiB x{host_copies} does not fit in the "
                f"{host_free / 2**30:.1f} GiB of {what}"
            )
    return None


def memory_zones(path: str = "/proc/zoneinfo") -> list[tuple[int, str, int]]:
    """(NUMA node, zone, bytes it manages) of each memory zone that holds any, from
    /proc/zoneinfo; [] off Linux. Memory hot-plugged into a VM usually comes online in the
    Movable zone, which the kernel keeps free of long-term pins: pinned buffers must fit in
    the others."""
    try:
        with open(path) as fh:
            text = fh.read()
        page = os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return []
    zones, current = [], None
    for line in text.splitlines():
        words = line.replace(",", " ").split()
        if len(words) >= 4 and words[0] == "Node" and words[2] == "zone":
            current = (int(words[1]), words[3])
        elif current and len(words) == 2 and words[0] == "managed" and words[1].isdigit():
            if int(words[1]):
                zones.append((*current, int(words[1]) * page))
            current = None
    return zones


def zones_text(zones: list[tuple[int, str, int]]) -> str:
    """The zones in one line ("node 0: DMA32 2.9 GiB, Normal 9.9 GiB, Movable 96.0 GiB"), with
    what the Movable zone means for pinning where there is one."""
    if not zones:
        return "memory zones: not known here (no /proc/zoneinfo)"
    nodes: dict[int, list[str]] = {}
    for node, zone, nbytes in zones:
        nodes.setdefault(node, []).append(f"{zone} {nbytes / 2**30:.1f} GiB")
    text = "; ".join(f"node {n}: {', '.join(parts)}" for n, parts in sorted(nodes.items()))
    movable = any(zone == "Movable" for _n, zone, _b in zones)
    return f"memory zones: {text}" + (
        " (memory in Movable, hot-plugged memory usually, cannot hold pinned buffers)"
        if movable else "")


def pin_check(nbytes: int, device: Device) -> str | None:
    """Why ``nbytes`` of pinned host memory cannot be had on ``device``'s host, in one
    sentence, or None: the buffer is pinned, touched and given back at once (the caching host
    allocator emptied), before anything is measured."""
    import torch

    try:
        buf = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        buf.fill_(1)
        pinned = buf.is_pinned()
        del buf
        empty_host_cache(device)
    except (RuntimeError, MemoryError) as exc:  # torch.OutOfMemoryError is a RuntimeError
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return (f"pinning {nbytes / 2**30:.3g} GiB of host memory failed ({first}): the grid's "
                "largest pinned buffers would fail as out of memory mid-run; give the machine "
                "memory that can be pinned (not hot-plugged memory, which comes online "
                "movable)")
    if not pinned:
        return (f"{device} hands back no pinned host memory: the grid's pinned copies cannot "
                "run here")
    return None

"""Memory one tensor creation adds at its peak: resident host memory (the host temporary of
``.to(dev)``) and device bytes handed out by the allocator, for the cases of
``practices.creation``."""

from __future__ import annotations

import os

from ..device_memory import max_memory_allocated, memory_allocated, reset_peak_memory
from ..devices import Capabilities, Device, capabilities, resolve_device, synchronize
from ..errors import XferbenchError
from .creation import CreationCase, build_creation

_CLEAR_REFS = "/proc/self/clear_refs"


def host_peak_skip_reason() -> str | None:
    """Why the host peak cannot be read here (it needs Linux's resettable VmHWM), or None."""
    if not os.path.exists(_CLEAR_REFS) or not os.access(_CLEAR_REFS, os.W_OK):
        return "host peak memory needs a writable /proc/self/clear_refs (Linux)"
    return None


def _status_kib(field_name: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise XferbenchError(f"/proc/self/status has no {field_name}")


def host_peak_bytes(case: CreationCase, device: str | Device = "auto") -> int:
    """Peak resident host memory one call of ``case`` adds, in bytes (page-granular).

    Method: after a warm-up call, drop its result, reset the process's high-water mark
    (writing 5 to /proc/self/clear_refs sets VmHWM to the current VmRSS), run one call and
    synchronise, and return VmHWM minus the resident set before the call. Everything the
    call touches counts: the host temporary of ``.to(dev)``, staging, allocator growth.
    """
    reason = host_peak_skip_reason()
    if reason:
        raise XferbenchError(reason)
    work = build_creation(case, device)
    work.run()  # the first call pays one-off costs (library loading, allocator growth)
    work.verify()
    work.out.clear()
    synchronize(work.device)
    with open(_CLEAR_REFS, "w") as fh:
        fh.write("5")
    before = _status_kib("VmRSS")
    work.run()
    synchronize(work.device)
    peak = _status_kib("VmHWM")
    work.verify()
    return max(0, peak - before) * 1024


def device_peak_skip_reason(caps: Capabilities) -> str | None:
    if caps.device == "cpu":
        return "device memory counters need an accelerator: on the CPU see host peak memory"
    return None


def device_peak_bytes(case: CreationCase, device: str | Device = "auto") -> int:
    """Peak device memory one call of ``case`` allocates (allocator counters), in bytes."""
    dev = resolve_device(device)
    reason = device_peak_skip_reason(capabilities(dev))
    if reason:
        raise XferbenchError(f"{case.label} on {dev}: {reason}")
    work = build_creation(case, dev)
    work.run()
    work.verify()
    work.out.clear()
    synchronize(dev)
    reset_peak_memory(dev)
    before = memory_allocated(dev) or 0
    work.run()
    synchronize(dev)
    peak = max_memory_allocated(dev) or 0
    work.verify()
    return max(0, peak - before)

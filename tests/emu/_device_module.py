"""``torch.emu``: the device module torch and the device layer look up by the device's name.

``torch.accelerator`` asks it ``is_available()`` and ``device_count()``; ``torch.manual_seed``
calls ``manual_seed_all``; code written for ``torch.cuda`` finds the same names here. Most
entries delegate to ``torch.accelerator``, which reaches the C++ backend directly.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

Stream = torch.Stream
Event = torch.Event


def _ops() -> Any:
    return torch.ops.xferbench_emu


def is_available() -> bool:
    return device_count() > 0


def device_count() -> int:
    return int(_ops().device_count())


def is_emulated() -> bool:
    """Read by xferbench's device layer (``devices.is_emulated``): this device is emulated on
    the host, so results made on it are marked and its times are never taken as measurements."""
    return True


def is_initialized() -> bool:
    return True  # nothing to initialise: the library registered itself when loaded


def _lazy_init() -> None:
    pass


def _is_in_bad_fork() -> bool:
    return False  # a forked child that uses started streams gets an error from C++ instead


def current_device() -> int:
    return torch.accelerator.current_device_index()


def set_device(device: Any) -> None:
    torch.accelerator.set_device_index(device)


def device(device: Any) -> Any:
    """``with torch.emu.device(1):`` makes emu:1 current for the block."""
    return torch.accelerator.device_index(torch.accelerator._utils._get_device_index(device))


def synchronize(device: Any = None) -> None:
    torch.accelerator.synchronize(device)


def current_stream(device: Any = None) -> torch.Stream:
    return torch.accelerator.current_stream(device)


def default_stream(device: Any = None) -> torch.Stream:
    current = torch.accelerator.current_stream(device)
    return torch.Stream(stream_id=0, device_index=current.device_index,
                        device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    torch.accelerator.set_stream(stream)


@contextlib.contextmanager
def stream(stream: torch.Stream | None) -> Iterator[None]:
    """``with torch.emu.stream(s):`` as ``torch.cuda.stream``; None leaves the stream as is."""
    if stream is None:
        yield
        return
    with stream:
        yield


def can_device_access_peer(device: Any, peer_device: Any) -> bool:
    """As ``torch.cuda.can_device_access_peer``: whether ``device`` can access
    ``peer_device``'s memory directly (False for a device and itself). Every pair of two
    devices can, but those XFERBENCH_EMU_NO_PEER or ``emu.set_peer_access`` turned off."""
    get = torch.accelerator._utils._get_device_index
    return bool(torch.ops.xferbench_emu.can_access_peer(get(device, optional=True),
                                                        get(peer_device, optional=True)))


DEVICE_NAME = "xferbench emulated accelerator"


#: What the device properties call its L2 cache. Nothing is cached: it stands in for a GPU's
#: L2 (tens of MiB) at a size that keeps buffers sized past it small on a shared host.
L2_CACHE_BYTES = 4 * 2**20


@dataclass(frozen=True)
class DeviceProperties:
    """What ``torch.cuda.get_device_properties`` would say, where it means something here."""

    name: str
    total_memory: int
    L2_cache_size: int = L2_CACHE_BYTES


def get_device_name(device: Any = None) -> str:
    return DEVICE_NAME


def get_device_properties(device: Any = None) -> DeviceProperties:
    return DeviceProperties(DEVICE_NAME, torch.accelerator.get_memory_info(device)[1])


# Kernels on emu tensors run on the CPU with the CPU's generator (see device.cpp), so the
# random state is the CPU's.
def manual_seed(seed: int) -> None:
    torch.default_generator.manual_seed(int(seed))


manual_seed_all = manual_seed


def get_rng_state(device: Any = None) -> torch.Tensor:
    return torch.get_rng_state()


def set_rng_state(new_state: torch.Tensor, device: Any = None) -> None:
    torch.set_rng_state(new_state)


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def memory_allocated(device: Any = None) -> int:
    return torch.accelerator.memory_allocated(device)


def max_memory_allocated(device: Any = None) -> int:
    return torch.accelerator.max_memory_allocated(device)


def memory_reserved(device: Any = None) -> int:
    return torch.accelerator.memory_reserved(device)


def max_memory_reserved(device: Any = None) -> int:
    return torch.accelerator.max_memory_reserved(device)


def memory_stats(device: Any = None) -> dict[str, Any]:
    return dict(torch.accelerator.memory_stats(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    torch.accelerator.reset_peak_memory_stats(device)


def empty_cache() -> None:
    torch.accelerator.empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    return torch.accelerator.get_memory_info(device)


def host_memory_stats() -> dict[str, int]:
    """The pinned host allocator's statistics under ``torch.cuda.host_memory_stats()``'s flat
    keys: ``num_host_alloc``/``num_host_free`` (fresh blocks allocated, cached blocks
    returned), ``allocations.*`` and ``allocated_bytes.*`` (blocks owned: in use and cached),
    ``active_requests.*`` and ``active_bytes.*`` (blocks in use), each ``.current``,
    ``.peak``, ``.allocated``, ``.freed``; ``host_alloc_time.*``/``host_free_time.*`` in
    microseconds (``.total``, ``.max``, ``.min``, ``.count``, ``.avg``). Bytes are the
    power-of-two sizes blocks are rounded up to."""
    return dict(sorted(torch.ops.xferbench_emu.host_stats().items()))


def empty_host_cache() -> None:
    """Return every cached pinned block (``num_host_free`` grows); the next pin of that size
    allocates afresh and pays the pinning cost. ``torch.accelerator.empty_host_cache()`` does
    the same."""
    torch.ops.xferbench_emu.empty_host_cache()


def reset_peak_host_memory_stats() -> None:
    torch.ops.xferbench_emu.reset_host_stats(False)


def reset_accumulated_host_memory_stats() -> None:
    torch.ops.xferbench_emu.reset_host_stats(True)


def _sleep(cycles: int) -> None:
    """As ``torch.cuda._sleep``: queue on the current stream of the current device a spin that
    ends once ``cycles`` cycles of the device's SM clock have passed. The clock idles at
    345 MHz and ramps to 1980 under load, so the same cycles take up to 5.7x less time on a
    warm device than on an idle one."""
    torch.ops.xferbench_emu._sleep(int(cycles))


#: What each clock_info() read costs beyond its own work, in seconds (emu.set_clock_read_delay,
#: else XFERBENCH_EMU_CLOCK_READ_S): NVML's calls can be slow in a microVM.
_CLOCK_READ_S: list[float] = [float(os.environ.get("XFERBENCH_EMU_CLOCK_READ_S") or 0.0)]


def set_clock_read_delay(seconds: float) -> None:
    if not seconds >= 0:
        raise ValueError(f"a clock read delay of {seconds} s is not a delay: give seconds >= 0")
    _CLOCK_READ_S[0] = float(seconds)


def clock_info(device: Any = None) -> dict[str, Any]:
    """The SM clock now: ``{"sm_clock_mhz": ..., "max_sm_clock_mhz": 1980.0,
    "throttle_reasons": [...]}`` (reasons as emu.set_throttle set them; none by default).
    Slowed by emu.set_clock_read_delay, as NVML's reads in a microVM can be."""
    if _CLOCK_READ_S[0]:
        time.sleep(_CLOCK_READ_S[0])
    index = torch.accelerator._utils._get_device_index(device, optional=True)
    mhz, max_mhz, reasons = torch.ops.xferbench_emu.clock_info(index)
    return {"sm_clock_mhz": float(mhz), "max_sm_clock_mhz": float(max_mhz),
            "throttle_reasons": list(reasons)}

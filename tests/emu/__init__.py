"""An emulated accelerator, "emu", so CPU-only CI runs the accelerator code paths.

``load()`` builds the C++ backend if this torch has no build of these sources yet (see
``_build.py``), loads it, names PrivateUse1 "emu" and registers ``torch.emu``. After it,
``torch.accelerator.current_accelerator()`` is ``device(type='emu')`` for the rest of the
process: load it only in a process meant to run on the emulated device.

    import emu                 # tests/ on sys.path, as under pytest
    emu.load()                 # raises emu.BuildUnavailable (one line) if it cannot be built
    x = torch.ones(4, device="emu")

Test knobs: ``set_copy_delay(seconds)`` (or ``with copy_delay(seconds):``) holds every queued
copy that long before it runs, so the window between a non_blocking call returning and its
data landing is wide enough to observe; ``pending(device)`` counts queued jobs.
Environment: XFERBENCH_EMU_DEVICES (number of devices, 1..8, default 1),
XFERBENCH_EMU_MEMORY_BYTES (each device's total for get_memory_info, default half the RAM),
XFERBENCH_EMU_CACHE (where builds are kept, default <venv>/xferbench-emu).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ._build import BuildUnavailable, build, built_library

__all__ = ["DEVICE_TYPE", "BuildUnavailable", "build", "built_library", "copy_delay",
           "is_loaded", "load", "pending", "set_copy_delay", "set_memory_total"]

#: The device type the backend registers as: torch.device("emu"), "emu:0".
DEVICE_TYPE = "emu"

MAX_DEVICES = 8  # emu.h's kMaxDevices

_loaded = False


def is_loaded() -> bool:
    return _loaded


def _check_environment() -> None:
    text = os.environ.get("XFERBENCH_EMU_DEVICES")
    if text is not None and not (text.isdigit() and 1 <= int(text) <= MAX_DEVICES):
        raise ValueError(
            f"XFERBENCH_EMU_DEVICES='{text}' is not a device count: use 1 to {MAX_DEVICES}")
    text = os.environ.get("XFERBENCH_EMU_MEMORY_BYTES")
    if text is not None and not (text.isdigit() and int(text) > 0):
        raise ValueError(
            f"XFERBENCH_EMU_MEMORY_BYTES='{text}' is not a positive number of bytes")


def load() -> None:
    """Build if needed, load the backend and register "emu"; a no-op the second time."""
    global _loaded
    if _loaded:
        return
    _check_environment()
    library = build()
    import torch
    import torch.utils

    from . import _device_module

    torch.ops.load_library(str(library))
    torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
    torch._register_device_module(DEVICE_TYPE, _device_module)
    # tensor.emu(), tensor.is_emu, module.emu(), ... like their cuda counterparts.
    torch.utils.generate_methods_for_privateuse1_backend()
    _loaded = True


def set_copy_delay(seconds: float) -> None:
    """Hold every copy queued from now on ``seconds`` before it runs (0: no hold)."""
    import torch

    torch.ops.xferbench_emu.set_copy_delay(float(seconds))


@contextlib.contextmanager
def copy_delay(seconds: float) -> Iterator[None]:
    """``with copy_delay(0.005):`` copies queued in the block are held that long."""
    import torch

    previous = torch.ops.xferbench_emu.copy_delay()
    set_copy_delay(seconds)
    try:
        yield
    finally:
        set_copy_delay(previous)


def pending(device: int = 0) -> int:
    """Jobs queued on emu:``device``'s streams that have not finished."""
    import torch

    return int(torch.ops.xferbench_emu.pending(device))


def set_memory_total(nbytes: int) -> None:
    """Each device's total memory (get_memory_info, and where allocation fails)."""
    import torch

    torch.ops.xferbench_emu.set_memory_total(int(nbytes))

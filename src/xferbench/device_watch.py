"""The device calls the audit makes (``xferbench.auditing``): whether a host tensor is pinned,
the explicit synchronise calls a backend has (so the audit can see them: the dispatcher does
not), and torch's own sync debug count (CUDA and ROCm) as a cross-check.

Part of the device layer with ``devices.py``: nothing else in the package names a backend.
torch is imported inside the functions, never at module import.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from .devices import Device, privateuse1_type, sync_debug_warnings


def is_pinned(tensor: Any) -> bool:
    """Whether a host tensor sits in page-locked (pinned) memory of the current accelerator;
    False for device tensors, and where the backend cannot say."""
    if tensor.device.type != "cpu":
        return False
    try:
        return bool(tensor.is_pinned())
    except RuntimeError:  # a build without any accelerator's host allocator
        return False


#: Host-blocking synchronise calls by where they live: (module path, attribute). The
#: PrivateUse1 backend's module (``torch.emu``) is added at run time. The device-generic
#: ``torch.Stream``/``torch.Event`` are immutable C types: their ``synchronize`` cannot be
#: wrapped (see ``synchronize_calls``).
_SYNCHRONIZE_CALLS = (
    ("torch.accelerator", "synchronize"),
    ("torch.cuda", "synchronize"),
    ("torch.cuda.Stream", "synchronize"),
    ("torch.cuda.Event", "synchronize"),
    ("torch.xpu", "synchronize"),
    ("torch.xpu.Stream", "synchronize"),
    ("torch.xpu.Event", "synchronize"),
    ("torch.mps", "synchronize"),
    ("torch.mps.Event", "synchronize"),
)


def synchronize_calls() -> list[tuple[Any, str, str]]:
    """The explicit synchronise calls this torch has, as (owner, attribute, dotted name):
    the device-wide ones of ``torch.accelerator`` and each backend module, and the
    ``synchronize`` of each backend's Python ``Stream`` and ``Event`` classes. The immutable
    ``torch.Stream``/``torch.Event`` are left out: nothing can wrap their methods."""
    import torch

    paths = list(_SYNCHRONIZE_CALLS)
    extra = privateuse1_type()
    if extra is not None:
        paths.append((f"torch.{extra}", "synchronize"))
    found = []
    for path, attr in paths:
        owner: Any = torch
        for part in path.split(".")[1:]:
            owner = getattr(owner, part, None)
            if owner is None:
                break
        if owner is None or not callable(getattr(owner, attr, None)):
            continue
        if isinstance(owner, type) and owner.__flags__ & (1 << 8):  # Py_TPFLAGS_IMMUTABLETYPE
            continue
        found.append((owner, attr, f"{path}.{attr}"))
    return found


#: What torch's sync debug mode says for each synchronising call it sees
#: (c10/cuda/CUDAFunctions.cpp, warn_or_error_on_sync).
SYNC_DEBUG_WARNING = "called a synchronizing CUDA operation"


@contextlib.contextmanager
def sync_debug_count(device: Device) -> Iterator[list[int]]:
    """Within the block, count the synchronisations torch's own sync debug mode reports on
    ``device`` (CUDA and ROCm only): yields a one-element list holding the count so far.
    The debug mode's warnings are counted and not shown; every other warning passes on as
    before, and the mode is restored."""
    count = [0]
    shown = warnings.showwarning
    # Python's own chain (warnings._showwarnmsg): a replaced showwarning is called, else
    # _showwarnmsg_impl, which catch_warnings(record=True) (pytest's) points at its log.
    original = getattr(warnings, "_showwarning_orig", None)
    impl = getattr(warnings, "_showwarnmsg_impl", None)

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
             line: Any = None) -> None:
        if SYNC_DEBUG_WARNING in str(message):
            count[0] += 1
        elif shown is original and impl is not None:
            impl(warnings.WarningMessage(message, category, filename, lineno, file, line))
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings(), sync_debug_warnings(device):
        # always: no de-duplication by call site, and never an error (pytest -W error)
        warnings.filterwarnings("always", message=f".*{SYNC_DEBUG_WARNING}")
        warnings.showwarning = show
        yield count

"""xferbench: benchmarks for PyTorch host-device transfer practices.

``import xferbench`` stays cheap: torch loads only inside the functions that need it, so
asv's per-benchmark processes and ``xferbench --help`` start fast and never touch CUDA.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import XferbenchError
from .version import __version__

__all__ = ["Audit", "MeasureSpec", "Measurement", "XferbenchError", "audit", "measure",
           "resolve_device",
           "__version__"]

if TYPE_CHECKING:
    from .auditing.auditor import Audit, audit
    from .devices import resolve_device
    from .measurement import Measurement
    from .spec import MeasureSpec
    from .timing import measure

_LAZY = {
    "measure": ("timing", "measure"),
    "Measurement": ("measurement", "Measurement"),
    "MeasureSpec": ("spec", "MeasureSpec"),
    "resolve_device": ("devices", "resolve_device"),
    "audit": ("auditing.auditor", "audit"),
    "Audit": ("auditing.auditor", "Audit"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module 'xferbench' has no attribute {name!r}")

"""What the audit records: one immutable event per copy, wait, create-then-move or pinning,
each with the user's source line (``CallSite``) it came from."""

from __future__ import annotations

import os
from dataclasses import dataclass

#: Copy directions.
H2D, D2H, D2D = "h2d", "d2h", "d2d"
DIRECTIONS = (H2D, D2H, D2D)
#: The host side of a copy (the source of an H2D copy, the destination of a D2H one).
PINNED, PAGEABLE = "pinned", "pageable"


@dataclass(frozen=True)
class CallSite:
    """A line of the user's code: the first frame outside torch, xferbench and the standard
    library when the event happened."""

    file: str
    line: int
    function: str
    code: str = ""  # the source line, stripped; "" where it cannot be read

    @property
    def label(self) -> str:
        """``train.py:42``: the file's name relative to the working directory where it is
        below it, else as recorded."""
        try:
            rel = os.path.relpath(self.file)
        except ValueError:  # another drive (Windows)
            rel = self.file
        return f"{self.file if rel.startswith('..') else rel}:{self.line}"

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "function": self.function,
                "code": self.code}


#: Where no frame outside torch was found (work torch does on its own threads, say).
UNKNOWN_SITE = CallSite("<unknown>", 0, "<unknown>")


@dataclass(frozen=True)
class CopyEvent:
    """A copy between host and device, or between two devices."""

    direction: str  # H2D, D2H or D2D
    nbytes: int  # what lands at the destination
    host_memory: str | None  # PINNED or PAGEABLE; None for D2D
    non_blocking: bool  # asked for
    asynchronous: bool  # could run without the host waiting (non_blocking and pinned host side)
    src: str  # devices, as torch names them
    dst: str
    call: str  # what the user's code called: ".to()", ".copy_()", "torch.tensor(device=)"
    site: CallSite
    module_move: bool = False  # made by nn.Module.to() / .cuda() moving its parameters
    host_made: bool = False  # the source is a host factory's tensor (a MoveEvent says more)


@dataclass(frozen=True)
class SyncEvent:
    """A point where the host waits for the device: a value read back, a device-to-host copy
    it must wait for, an op whose output size depends on device data, or an explicit
    synchronise."""

    kind: str  # see ops.SYNC_KINDS
    device: str  # the device waited for ("cpu" on a CPU-only run)
    paid: bool  # False on a CPU-only run: an accelerator would wait here, the CPU does not
    call: str  # what the user's code called
    op: str  # the aten op (or the synchronise call) that waits
    site: CallSite


@dataclass(frozen=True)
class MoveEvent:
    """A tensor a host factory made (``torch.zeros(n)``...) and the code then moved to a
    device: ``device=`` in the factory makes it there and skips the copy."""

    factory: str  # "torch.zeros"
    factory_site: CallSite
    nbytes: int
    device: str
    paid: bool  # False on a CPU-only run, where the move is a no-op
    site: CallSite  # the move's line


@dataclass(frozen=True)
class PinEvent:
    """Host memory pinned inside the step (``t.pin_memory()``, a loader pinning on the main
    thread): a host-side copy into page-locked memory, paid before the transfer."""

    nbytes: int
    site: CallSite


Event = CopyEvent | SyncEvent | MoveEvent | PinEvent


@dataclass(frozen=True)
class Mark:
    """A step boundary seen at ``position`` (the number of events recorded before it)."""

    position: int
    source: str  # "optimizer" (the global optimizer-step hook) or "manual" (Audit.step())
    optimizer: int | None = None  # id() of the optimizer that stepped

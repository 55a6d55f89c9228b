"""What the recorder keeps about a call and a tensor: the call the user's code made (``Call``),
where a host tensor came from (``Origin``), a copy of it made to a device (``Move``), and small
helpers about frames and ops."""

from __future__ import annotations

from dataclasses import dataclass
from types import FrameType
from typing import Any

from .events import CallSite
from .frames import is_internal

# torch loads inside the functions that need it: the package imports without it.

_OVERRIDES = ("overrides.py",)


class Call:
    """A call the user's code (or torch's own) made into torch, seen by the function mode.
    (A plain class with slots: one is made per call, so it is kept cheap.)"""

    __slots__ = ("func", "name", "label", "_frame", "_resolved", "device_given", "waited",
                 "copied")

    def __init__(self, func: Any, name: str, label: str, frame: FrameType | None,
                 device_given: bool) -> None:
        self.func = func
        self.name = name  # "item", "__bool__", "to"
        self.label = label  # ".item()", "bool()", ".to()"
        self._frame = frame  # the frame the mode's handler was called from
        self._resolved = False
        self.device_given = device_given  # called with device= (a factory told where)
        self.waited = False  # a wait was recorded inside it
        self.copied: set[tuple[int, str]] | None = None  # (source pointer, destination)

    @property
    def frame(self) -> FrameType | None:
        """The frame that made the call, past torch's own dispatch frames."""
        if not self._resolved:
            self._frame = caller_frame(self._frame, self.func)
            self._resolved = True
        return self._frame

    @property
    def by_user(self) -> bool:
        """Called from the user's code, not from inside torch."""
        frame = self.frame
        return frame is not None and not is_internal(frame.f_code.co_filename)


@dataclass(frozen=True)
class Origin:
    """Where a host tensor came from: the factory that made it (or the data it was made of)
    and the line of the op that produced this very tensor."""

    factory: str
    from_data: bool
    factory_site: CallSite
    made_site: CallSite


@dataclass(frozen=True)
class Move:
    """A copy of a host tensor made to a device: its line and the copy, held weakly."""

    site: CallSite
    device: str
    result: Any  # weakref.ref to the device tensor


def caller_frame(frame: FrameType | None, func: Any) -> FrameType | None:
    """The frame that called ``func``: past torch's own dispatch frames (torch/overrides.py
    and ``func``'s own body, for functions written in Python)."""
    code = getattr(func, "__code__", None)
    while frame is not None and (frame.f_code is code
                                 or frame.f_code.co_filename.endswith(_OVERRIDES)):
        frame = frame.f_back
    return frame


def is_view(func: Any) -> bool:
    """Whether an aten op returns a view of its input (its schema's return aliases it)."""
    returns = func._schema.returns
    alias = returns[0].alias_info if returns else None
    return alias is not None and not alias.is_write


def names_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a ``.to(...)`` call names a device (not only a dtype)."""
    import torch

    if "device" in kwargs:
        return True
    for a in args:
        if isinstance(a, (torch.device, torch.Tensor, int)) and not isinstance(a, bool):
            return True
        if isinstance(a, str):
            return True
    return False

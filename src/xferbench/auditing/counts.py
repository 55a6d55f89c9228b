"""The figures of one step (or their mean, maximum or total over steps), flat so a test can
budget them: ``assert audit.per_step.syncs <= 1``, ``audit.per_step.h2d_pageable_bytes == 0``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .events import (
    D2D,
    D2H,
    H2D,
    PAGEABLE,
    PINNED,
    CopyEvent,
    Event,
    MoveEvent,
    PinEvent,
    SyncEvent,
)


@dataclass(frozen=True)
class Counts:
    """Counts and bytes of one step; over several steps, their mean, maximum or sum.

    Copies by direction (``h2d``, ``d2h``, ``d2d``), each with its bytes, and split by the
    host side's memory (``_pinned``, ``_pageable``: the source of an H2D copy, the
    destination of a D2H one). ``non_blocking``: copies that asked for it;
    ``non_blocking_refused``: of those, the ones that could not be asynchronous (pageable
    host side). ``synchronous_copies``: host-device copies the host waits for. ``syncs``:
    waits for the device (``sync_kinds`` by kind), including, on a CPU-only run, those an
    accelerator would pay (``syncs_paid`` counts only the ones paid here).
    ``created_then_moved``: host factories' tensors moved to a device. ``pinned_in_step``:
    host memory pinned inside the step. ``module_moves``: copies made by ``module.to()``.
    """

    copies: float = 0
    copy_bytes: float = 0
    h2d: float = 0
    h2d_bytes: float = 0
    h2d_pinned: float = 0
    h2d_pinned_bytes: float = 0
    h2d_pageable: float = 0
    h2d_pageable_bytes: float = 0
    d2h: float = 0
    d2h_bytes: float = 0
    d2h_pinned: float = 0
    d2h_pinned_bytes: float = 0
    d2h_pageable: float = 0
    d2h_pageable_bytes: float = 0
    d2d: float = 0
    d2d_bytes: float = 0
    non_blocking: float = 0
    non_blocking_refused: float = 0
    synchronous_copies: float = 0
    module_moves: float = 0
    syncs: float = 0
    syncs_paid: float = 0
    sync_kinds: dict[str, float] = field(default_factory=dict)
    created_then_moved: float = 0
    created_then_moved_bytes: float = 0
    pinned_in_step: float = 0
    pinned_in_step_bytes: float = 0

    @classmethod
    def of(cls, events: tuple[Event, ...] | list[Event]) -> Counts:
        """The counts of one step's events."""
        n: dict[str, Any] = {f.name: 0 for f in fields(cls) if f.name != "sync_kinds"}
        kinds: dict[str, float] = {}
        for e in events:
            if isinstance(e, CopyEvent):
                _add_copy(n, e)
            elif isinstance(e, SyncEvent):
                n["syncs"] += 1
                n["syncs_paid"] += e.paid
                kinds[e.kind] = kinds.get(e.kind, 0) + 1
            elif isinstance(e, MoveEvent):
                n["created_then_moved"] += 1
                n["created_then_moved_bytes"] += e.nbytes
            elif isinstance(e, PinEvent):
                n["pinned_in_step"] += 1
                n["pinned_in_step_bytes"] += e.nbytes
        return cls(**n, sync_kinds=dict(sorted(kinds.items())))

    @classmethod
    def combine(cls, steps: list[Counts], how: str) -> Counts:
        """The ``how`` ("mean", "max" or "sum") of each figure over ``steps``."""
        if not steps:
            return cls()
        reducers: dict[str, Callable[[list[Any]], Any]] = {
            "mean": lambda xs: sum(xs) / len(steps), "max": max, "sum": sum}
        reduce = reducers[how]
        n = {f.name: reduce([getattr(s, f.name) for s in steps])
             for f in fields(cls) if f.name != "sync_kinds"}
        names = sorted({k for s in steps for k in s.sync_kinds})
        kinds = {k: reduce([s.sync_kinds.get(k, 0) for s in steps]) for k in names}
        return cls(**n, sync_kinds=kinds)

    def to_dict(self) -> dict[str, Any]:
        return {k: _number(v) if not isinstance(v, dict) else
                {kk: _number(vv) for kk, vv in v.items()} for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Counts:
        return cls(**{f.name: d.get(f.name, {} if f.name == "sync_kinds" else 0)
                      for f in fields(cls)})

    @property
    def faults(self) -> float:
        """What the audit flags: waits, copies from or into pageable memory, refused
        ``non_blocking``, create-then-move (pinning inside the step is information only)."""
        return (self.syncs + self.h2d_pageable + self.d2h_pageable + self.created_then_moved)


def _add_copy(n: dict[str, Any], e: CopyEvent) -> None:
    n["copies"] += 1
    n["copy_bytes"] += e.nbytes
    d = e.direction
    n[d] += 1
    n[f"{d}_bytes"] += e.nbytes
    if d in (H2D, D2H) and e.host_memory in (PINNED, PAGEABLE):
        n[f"{d}_{e.host_memory}"] += 1
        n[f"{d}_{e.host_memory}_bytes"] += e.nbytes
    if e.non_blocking:
        n["non_blocking"] += 1
        n["non_blocking_refused"] += not e.asynchronous
    if d != D2D and not e.asynchronous:
        n["synchronous_copies"] += 1
    n["module_moves"] += e.module_move


def _number(v: float) -> float | int:
    """Whole numbers as ints (a single step's counts), others as floats (means)."""
    return int(v) if float(v).is_integer() else float(v)

"""The audit's findings: the events that cost something, grouped by the user's line and
kind, each priced with the suite's measurements (the same ``PriceBook`` as ``xferbench
lint``: GPU figures only, never a CPU one quoted as a GPU's) and named by its lint code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis.prices import PriceBook
from ..units import format_seconds, format_value
from .events import H2D, PAGEABLE, CallSite, CopyEvent, Event, MoveEvent, PinEvent, SyncEvent
from .ops import SYNC_KINDS

WARNING, INFO = "warning", "info"
#: Finding kinds, and the price key (analysis/prices.py) and lint code of each.
SYNC, PAGEABLE_COPY, CREATED_THEN_MOVED, PINNED_IN_STEP, MODULE_MOVE = (
    "sync", "pageable_copy", "created_then_moved", "pinned_in_step", "module_move")
PRICE_KEYS = {SYNC: "item_per_epoch", PAGEABLE_COPY: "pinned_vs_pageable",
              CREATED_THEN_MOVED: "create_on_device", PINNED_IN_STEP: "pin_then_copy",
              MODULE_MOVE: "model_move_in_loop"}
#: The fix and lint code of each kind of wait: XB101 is lint's host read of a device tensor.
_READ = ("read once per epoch or every N steps; keep the value on the device (accumulate "
         "there)", "XB101")
_SHAPE = ("keep the shape fixed: torch.where(mask, x, 0) or masked_fill instead of x[mask], "
          "nonzero_static(size=...), output_size= for repeat_interleave", None)
SYNC_FIXES: dict[str, tuple[str, str | None]] = {
    **dict.fromkeys(("item", "bool", "float", "int", "tolist", "numpy", "cpu", "print",
                     "to_host"), _READ),
    **dict.fromkeys(("nonzero", "boolean_mask", "masked_select", "unique",
                     "repeat_interleave", "bincount", "equal"), _SHAPE),
    "synchronize": ("leave synchronising to the end of the epoch, or to a timing "
                    "measurement outside the step", None),
}
_RANK = {SYNC: 0, PAGEABLE_COPY: 1, CREATED_THEN_MOVED: 2, MODULE_MOVE: 3, PINNED_IN_STEP: 4}


@dataclass(frozen=True)
class StepPrice:
    """What one finding costs per step, by the suite's measurements (GPU figures only)."""

    key: str
    gpu: bool  # False: no GPU price, ``text`` says why
    text: str  # the measured figure with its machine and PyTorch, or the reason
    cite: str = ""  # the `xferbench cite ...` command of the figure
    cost_s: float | None = None  # seconds per step this finding costs
    saving_s: float | None = None  # seconds per step the fix saves

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "gpu": self.gpu, "text": self.text, "cite": self.cite or None,
                "cost_s_per_step": self.cost_s, "saving_s_per_step": self.saving_s}


@dataclass(frozen=True)
class AuditFinding:
    """Events of one kind at one user line: how many, per step, and what they cost."""

    kind: str
    severity: str
    site: CallSite
    what: str  # one line: "H2D copy from pageable memory, non_blocking asked: it cannot be
    fix: str
    count: int  # over every counted event
    per_step: float  # over the steps
    steps_seen: int  # steps with at least one
    nbytes: int  # over every counted event
    lint: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    price: StepPrice | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "site": self.site.to_dict(),
                "what": self.what, "fix": self.fix, "count": self.count,
                "per_step": self.per_step, "steps_seen": self.steps_seen,
                "bytes": self.nbytes, "lint": self.lint, "details": self.details,
                "price": self.price.to_dict() if self.price else None}


def _key(e: Event) -> tuple[Any, ...] | None:
    """The group an event belongs to, or None for one that costs nothing worth a finding
    (a pinned or device-to-device copy)."""
    if isinstance(e, SyncEvent):
        return (SYNC, e.site, e.kind, e.paid)
    if isinstance(e, CopyEvent):
        if e.module_move:
            return (MODULE_MOVE, e.site)
        if e.host_made and not e.non_blocking:
            return None  # its create-then-move finding says it all
        if e.host_memory == PAGEABLE and (e.direction == H2D or e.non_blocking):
            return (PAGEABLE_COPY, e.site, e.direction, e.non_blocking, e.host_memory)
        if e.non_blocking and not e.asynchronous and e.direction != "d2d":
            return (PAGEABLE_COPY, e.site, e.direction, True, e.host_memory)  # staged
        return None
    if isinstance(e, MoveEvent):
        return (CREATED_THEN_MOVED, e.site, e.factory, e.factory_site, e.paid)
    if isinstance(e, PinEvent):
        return (PINNED_IN_STEP, e.site)
    return None


def _nbytes(e: Event) -> int:
    return getattr(e, "nbytes", 0)


def _describe(kind: str, key: tuple[Any, ...], first: Event, steps_seen: int
              ) -> tuple[str, str, str, str | None, dict[str, Any]]:
    """(severity, what, fix, lint code, details) of a group."""
    if kind == SYNC:
        assert isinstance(first, SyncEvent)
        paid = "" if first.paid else " (CPU run: not paid here, an accelerator waits)"
        kind = SYNC_KINDS.get(first.kind, first.kind)
        via = "" if first.call in kind else f" in {first.call}"
        fix, lint = SYNC_FIXES.get(first.kind, SYNC_FIXES["item"])
        return (WARNING, f"host waits for the device: {kind}{via}{paid}", fix, lint,
                {"sync_kind": first.kind, "call": first.call, "op": first.op,
                 "device": first.device, "paid": first.paid})
    if kind == PAGEABLE_COPY:
        assert isinstance(first, CopyEvent)
        side = "from" if first.direction == H2D else "into"
        what = f"{first.direction.upper()} copy {side} {first.host_memory} host memory"
        fix = ("pin the host memory (DataLoader(pin_memory=True), or a pinned buffer reused "
               "every step)")
        if first.host_memory != PAGEABLE:  # pinned, but strided or broadcast: staged
            what += (": non_blocking asked, but the pinned side is not contiguous (or is "
                     "broadcast), so torch stages it in pageable memory")
            fix = "copy a contiguous tensor (pin after .contiguous())"
        elif first.non_blocking:
            what += ": non_blocking asked, but it cannot be asynchronous"
        severity = WARNING if first.non_blocking else INFO
        lint = ("XB105" if first.non_blocking and first.direction == H2D
                and first.host_memory == PAGEABLE else None)
        return (severity, what, fix, lint, _copy_details(first))
    if kind == CREATED_THEN_MOVED:
        assert isinstance(first, MoveEvent)
        moved = (f"then moved to {first.device}" if first.paid else "then moved with .to() "
                 "(CPU run: a no-op here, a copy to an accelerator)")
        return (WARNING, f"made on the host by {first.factory}(...) at "
                f"{first.factory_site.label}, {moved}",
                f"create it on the device: {first.factory}(..., device=...)", "XB102",
                {"factory": first.factory, "factory_site": first.factory_site.to_dict(),
                 "device": first.device, "paid": first.paid})
    if kind == PINNED_IN_STEP:
        return (INFO, "host memory pinned inside the step, before its copy",
                "pin once (a buffer reused every step), or let a DataLoader's pin thread do "
                "it; a plain .to() is often faster than pinning per batch", "XB108", {})
    assert isinstance(first, CopyEvent)
    repeated = steps_seen > 1
    return (WARNING if repeated else INFO,
            "module moved to the device" + (" in several steps" if repeated else " (once)"),
            "move the model once, before the loop", "XB104" if repeated else None,
            _copy_details(first))


def _copy_details(e: CopyEvent) -> dict[str, Any]:
    return {"direction": e.direction, "host_memory": e.host_memory,
            "non_blocking": e.non_blocking, "asynchronous": e.asynchronous, "src": e.src,
            "dst": e.dst, "call": e.call}


def group(steps: tuple[tuple[Event, ...], ...], after: tuple[Event, ...]) -> list[dict[str, Any]]:
    """Events grouped by ``_key``: count, per step, steps seen, bytes, the first event."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for index, events in [*enumerate(steps), (None, after)]:
        for e in events:
            key = _key(e)
            if key is None:
                continue
            g = groups.setdefault(key, {"events": 0, "in_steps": 0, "steps": set(),
                                        "nbytes": 0, "sizes": set(), "first": e, "key": key})
            g["events"] += 1
            g["nbytes"] += _nbytes(e)
            g["sizes"].add(_nbytes(e))
            if index is not None:
                g["in_steps"] += 1
                g["steps"].add(index)
    return list(groups.values())


def findings(steps: tuple[tuple[Event, ...], ...], after: tuple[Event, ...],
             book: PriceBook | None) -> list[AuditFinding]:
    """The findings, priced, grouped by line, the worst first: by seconds per step where
    priced on a GPU, else waits, then pageable copies, create-then-move, module moves and
    pinning, each by how often it happens; a line's findings follow its worst."""
    n_steps = max(len(steps), 1)
    out = []
    for g in group(steps, after):
        kind, first = g["key"][0], g["first"]
        severity, what, fix, lint, details = _describe(kind, g["key"], first, len(g["steps"]))
        if g["nbytes"]:
            details = {**details, "bytes_range": [min(g["sizes"]), max(g["sizes"])]}
        finding = AuditFinding(kind, severity, first.site, what, fix, g["events"],
                          g["in_steps"] / n_steps, len(g["steps"]), g["nbytes"], lint, details)
        out.append(_priced(finding, book) if book is not None else finding)
    ranked = sorted(out, key=_order)
    sites = list(dict.fromkeys(f.site for f in ranked))  # each line where its worst ranks
    return sorted(ranked, key=lambda f: sites.index(f.site))


def _order(f: AuditFinding) -> tuple[Any, ...]:
    cost = f.price.cost_s if f.price is not None and f.price.cost_s is not None else None
    return (cost is None, -(cost or 0.0), _RANK[f.kind], -f.per_step, -f.nbytes,
            f.site.file, f.site.line)


def _priced(f: AuditFinding, book: PriceBook) -> AuditFinding:
    key = PRICE_KEYS[f.kind]
    per_step_bytes = f.nbytes * (f.per_step / f.count) if f.count else 0.0
    price: StepPrice | None = None
    if f.kind in (PAGEABLE_COPY, CREATED_THEN_MOVED):
        direction = f.details.get("direction", H2D)
        price = _copy_price(book, key, direction, f.nbytes // max(f.count, 1), per_step_bytes,
                            fixed=None if f.kind == CREATED_THEN_MOVED else "pinned")
    if price is None:
        p = book.get(key)
        if p is None:
            price = StepPrice(key, False, book.reason(key))
        else:
            price = _ratio_price(key, p, f, per_step_bytes)
    return _with_price(f, price)


def _with_price(f: AuditFinding, price: StepPrice) -> AuditFinding:
    return AuditFinding(f.kind, f.severity, f.site, f.what, f.fix, f.count, f.per_step,
                   f.steps_seen, f.nbytes, f.lint, f.details, price)


def _ratio_price(key: str, p: Any, f: AuditFinding, per_step_bytes: float) -> StepPrice:
    """From a practice's two medians: a wait costs the difference per step (per wait, where
    the benchmark counted them); pinning costs it per byte; a module move per step."""
    extra = max(p.baseline_s - p.practice_s, 0.0)
    if f.kind == SYNC:
        waits = (p.baseline_count or 1.0) - (p.practice_count or 0.0)
        cost = f.per_step * extra / max(waits, 1e-9)
    elif f.kind == PINNED_IN_STEP and p.nbytes:
        cost = per_step_bytes * extra / p.nbytes
    else:
        cost = extra * min(f.per_step, 1.0) if f.kind == MODULE_MOVE else None
    return StepPrice(key, True, p.text(), p.command, cost, cost)


def _copy_price(book: PriceBook, key: str, direction: str, bytes_each: int,
                per_step_bytes: float, fixed: str | None) -> StepPrice | None:
    """Bytes at the measured GB/s of a pageable copy at the nearest size, and (``fixed``)
    at a pinned one's: the saving is the difference. None where no GPU rate was measured."""
    slow = book.copy_gbps(direction, PAGEABLE, bytes_each)
    if slow is None:
        return None
    cost = per_step_bytes / (slow.gbps * 1e9)
    text = slow.text()
    saving = cost
    if fixed is not None:
        fast = book.copy_gbps(direction, fixed, bytes_each)
        if fast is None:
            return StepPrice(key, True, text, slow.command, cost, None)
        saving = cost - per_step_bytes / (fast.gbps * 1e9)
        text += f"; {fast.text()}"
    return StepPrice(key, True, text, slow.command, cost, saving)


def price_line(p: StepPrice | None) -> str:
    """A finding's price in one line, or why there is none."""
    if p is None:
        return "price: not priced"
    if not p.gpu:
        return "price: (no GPU price yet)"
    money = ""
    if p.cost_s is not None:
        money = f"costs {format_seconds(p.cost_s)}/step"
        if p.saving_s is not None:
            money += f", the fix saves {format_seconds(p.saving_s)}/step"
        money += "; "
    return f"price: {money}{p.text} [{p.cite}]"


def bytes_text(n: float) -> str:
    """Bytes for people: "512 bytes", "1.5 MiB"."""
    return format_value(float(n), "bytes")

"""The audit's report: built once from an ``Audit`` into a JSON-ready dict with a stable,
versioned schema (``data/audit.schema.json``), and formatted as text from that dict alone.

Schema changelog: 1: first version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..analysis.prices import PriceBook
from ..devices import is_emulated
from ..errors import XferbenchError
from ..version import __version__
from .counts import Counts
from .events import D2H, H2D, CopyEvent, SyncEvent
from .findings import StepPrice, bytes_text, findings, price_line
from .ops import SYNC_KINDS

SCHEMA_VERSION = 1
SCHEMA_RESOURCE = "audit.schema.json"  # in the package's data/ folder
#: How the report says where steps end.
BOUNDARY_TEXT = {
    "optimizer": "a step ends at each optimizer step",
    "manual": "a step ends at each a.step()",
    "none": "no step boundary was seen (no optimizer step, no a.step()): the whole run "
            "counts as one step",
}


@dataclass(frozen=True)
class AuditReport:
    """The report as data (``to_dict``) and as text (``lines``)."""

    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def lines(self) -> list[str]:
        return format_report(self.data)


def _load_book(results: str | None) -> tuple[PriceBook | None, str | None]:
    try:
        return PriceBook.load(results), None
    except XferbenchError as exc:
        return None, str(exc)


def _sync_debug(audit: Any, events: list[Any]) -> dict[str, Any]:
    """torch's sync debug count beside the audit's comparable figure: the debug mode also
    flags blocking host-device copies, and misses a device's or an event's synchronize and
    copies into pageable memory asked as non_blocking."""
    blocking_h2d = sum(1 for e in events if isinstance(e, CopyEvent) and e.direction == H2D
                       and not e.non_blocking)
    refused_d2h = sum(1 for e in events if isinstance(e, CopyEvent) and e.direction == D2H
                      and e.non_blocking and not e.asynchronous)
    # the debug mode reports a stream's synchronize, not a device's or an event's
    waits = sum(1 for e in events if isinstance(e, SyncEvent) and e.paid
                and (e.kind != "synchronize" or ".Stream." in e.call)) - refused_d2h
    count = audit.sync_debug_count
    reason = None
    if count is None:
        device = audit.device
        reason = (f"torch's sync debug mode exists for CUDA and ROCm only, not {device}"
                  if device is None or device.type != "cuda" else "turned off")
    return {"count": count, "audit_comparable": max(waits, 0) + blocking_h2d, "reason": reason}


def build_report(audit: Any, book: PriceBook | None = None) -> AuditReport:
    """The report of what ``audit`` counted, priced from ``book`` (default: the audit's
    ``results`` folder, else the shipped price table)."""
    import torch

    price_error = None
    if book is None:
        book, price_error = _load_book(audit.results)
    seg = audit.segments
    steps = [Counts.of(s) for s in seg.steps]
    total = audit.total
    found = findings(seg.steps, seg.after, book)
    device = audit.device
    assert device is not None
    keys = sorted({f.price.key for f in found if f.price is not None})
    reasons = sorted({book.reason(k) for k in keys if book is not None and book.reason(k)})
    data = {
        "schema_version": SCHEMA_VERSION,
        "xferbench": __version__,
        "torch": str(torch.__version__),
        "device": str(device),
        "accelerator": device.is_accelerator,
        "emulated": is_emulated(device),
        "cpu_run": not device.is_accelerator,
        "boundary": seg.boundary,
        "optimizers": seg.optimizers,
        "steps_limit": audit.limit,
        "stopped_at_limit": audit.stopped,
        "step_count": len(steps),
        "per_step": Counts.combine(steps, "mean").to_dict(),
        "max_per_step": Counts.combine(steps, "max").to_dict(),
        "total": total.to_dict(),
        "steps": [c.to_dict() for c in steps],
        "after_last_step": Counts.of(seg.after).to_dict() if seg.after else None,
        "findings": [{**f.to_dict(), "bytes_each": f.nbytes // f.count if f.count else 0}
                     for f in found],
        "notes": audit.notes,
        "sync_debug": _sync_debug(audit, audit.events),
        "prices": {"source": book.source if book is not None else None,
                   "error": price_error, "no_gpu_price": reasons},
        "aten_calls": audit.aten_calls,
    }
    return AuditReport(data)


# torch loads inside the functions that need it.

# -- text -------------------------------------------------------------------------------------

def _n(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}"


def _with_bytes(count: float, nbytes: float) -> str:
    return _n(count) if not count else f"{_n(count)} ({bytes_text(nbytes)})"


def _copy_rows(per: dict[str, Any], tot: dict[str, Any]) -> list[str]:
    rows = []
    for d, name in (("h2d", "host to device"), ("d2h", "device to host"),
                    ("d2d", "device to device")):
        row = (f"  copies {name:<16} {_with_bytes(per[d], per[d + '_bytes']):>20}   "
               f"{_with_bytes(tot[d], tot[d + '_bytes']):>20}")
        if d != "d2d" and tot[d]:
            pageable = _with_bytes(per[d + "_pageable"], per[d + "_pageable_bytes"])
            pinned = _with_bytes(per[d + "_pinned"], per[d + "_pinned_bytes"])
            row += f"   per step: pageable {pageable}, pinned {pinned}"
        rows.append(row)
    if tot["non_blocking"]:
        rows.append(f"  non_blocking asked {_n(per['non_blocking'])} per step, of which "
                    f"{_n(per['non_blocking_refused'])} could not be asynchronous (pageable)")
    return rows


def _count_rows(d: dict[str, Any]) -> list[str]:
    per, tot = d["per_step"], d["total"]
    kinds = ", ".join(f"{SYNC_KINDS.get(k, k)} {_n(v)}" for k, v in tot["sync_kinds"].items())
    rows = [f"  {'':<23} {'per step':>20}   {'total':>20}", *_copy_rows(per, tot),
            f"  {'waits (syncs)':<23} {_n(per['syncs']):>20}   {_n(tot['syncs']):>20}"
            + (f"   {kinds}" if kinds else "")]
    made = _with_bytes(per["created_then_moved"], per["created_then_moved_bytes"])
    rows.append(f"  {'created on host, moved':<23} {made:>20}   "
                f"{_n(tot['created_then_moved']):>20}")
    pinned = _with_bytes(per["pinned_in_step"], per["pinned_in_step_bytes"])
    rows.append(f"  {'pinned inside the step':<23} {pinned:>20}   {_n(tot['pinned_in_step']):>20}")
    if 1 < len(d["steps"]) <= 40:
        rows.append("  waits by step: " + " ".join(_n(s["syncs"]) for s in d["steps"]))
    return rows


def _header(d: dict[str, Any]) -> list[str]:
    kind = " (emulated)" if d["emulated"] else ""
    steps = f"{d['step_count']} step{'s' if d['step_count'] != 1 else ''}"
    lines = [f"xferbench audit: {steps} on {d['device']}{kind}, torch {d['torch']}; "
             f"{BOUNDARY_TEXT[d['boundary']]}"]
    if d["stopped_at_limit"]:
        lines.append(f"  counting stopped after {d['steps_limit']} steps (the limit asked)")
    if d["cpu_run"]:
        lines.append("  CPU run: nothing waits for a device here; the waits an accelerator "
                     "would pay are counted, marked 'not paid'")
    if d["after_last_step"] and d["after_last_step"]["syncs"] + d["after_last_step"]["copies"]:
        a = d["after_last_step"]
        lines.append(f"  after the last step: {_n(a['copies'])} copies, {_n(a['syncs'])} waits "
                     "(in the total, not in the per-step figures)")
    return lines


def _finding_lines(d: dict[str, Any]) -> list[str]:
    if not d["findings"]:
        return ["findings: none"]
    lines = ["findings, the worst first:"]
    last_site = None
    for f in d["findings"]:
        site = f"{f['site']['file']}:{f['site']['line']}"
        if site != last_site:
            lines.append(f"  {_short(f['site']['file'])}:{f['site']['line']}  "
                         f"`{f['site']['code']}`")
            last_site = site
        low, high = f["details"].get("bytes_range", (0, 0))
        size = "" if not f["bytes"] else (f", {bytes_text(low)} each" if low == high
                                          else f", {bytes_text(low)} to {bytes_text(high)}")
        code = f" {f['lint']}" if f["lint"] else ""
        when = (f"{_n(f['per_step'])} per step ({f['count']} in all, in {f['steps_seen']} of "
                f"{d['step_count']} steps)" if f["steps_seen"]
                else f"after the last step ({f['count']} in all)")
        lines.append(f"    {f['severity']}{code}: {f['what']}; {when}{size}")
        lines.append(f"      fix: {f['fix']}")
        price = f["price"]
        if price is not None:
            lines.append(f"      {_price_text(price)}")
    return lines


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _price_text(p: dict[str, Any]) -> str:
    return price_line(StepPrice(p["key"], p["gpu"], p["text"], p["cite"] or "",
                            p["cost_s_per_step"], p["saving_s_per_step"]))


def _footer(d: dict[str, Any]) -> list[str]:
    lines = []
    prices = d["prices"]
    if prices["error"]:
        lines.append(f"prices: none ({prices['error']})")
    elif d["findings"]:
        for reason in prices["no_gpu_price"]:
            lines.append(f"prices: {reason}; from {prices['source']}")
    dbg = d["sync_debug"]
    if dbg["count"] is not None:
        lines.append(f"cross-check: torch's sync debug mode counted {dbg['count']}; the audit's "
                     f"comparable figure is {dbg['audit_comparable']} (its paid waits but "
                     "a device's or an event's synchronize and non_blocking copies into "
                     "pageable memory, plus the blocking host-to-device copies)")
    for note in d["notes"]:
        lines += ["note on a device-mismatch error:", *("  " + ln for ln in note.splitlines())]
    script = d.get("script")
    if script is not None and script["exit_status"] != 0:
        lines.append(f"the script exited with status {script['exit_status']}: this reports "
                     "the steps that ran")
    return lines


def format_report(d: dict[str, Any]) -> list[str]:
    """The report as text, from its dict (no arithmetic here)."""
    return [*_header(d), *_count_rows(d), *_finding_lines(d), *_footer(d)]

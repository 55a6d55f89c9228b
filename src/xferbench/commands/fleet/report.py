"""What fleet prints: the tasks' states, what each node measured once merged, and what to do
about the tasks that did not finish (formatting only)."""

from __future__ import annotations

import os
from typing import Any

from ...results import Result, ResultSet, load_file
from ...results.merging import Merged
from ...units import format_value
from .job import QUEUED, RUNNING, TaskState

#: Rows of the table of measured values printed after a merge; publish shows them all.
ROWS_SHOWN = 12


def _rel(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def format_states(plan: dict[str, Any], current: list[TaskState]) -> list[str]:
    head = (f"fleet job {plan['folder']}: {plan['executor']}, {len(current)} task"
            f"{'s' if len(current) != 1 else ''}, xferbench run {' '.join(plan['run_args'])}"
            .rstrip())
    rows = [("task", "job", "state", "node", "machine", "detail")]
    for s in current:
        rows.append((str(s.index), s.job_id or "-", s.state, s.node or "-", s.machine or "-",
                     s.reason or ""))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return [head, *("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[5]
                    for r in rows)]


def hints(plan: dict[str, Any], failed: list[TaskState],
          current: list[TaskState] | None = None) -> list[str]:
    """One line per failed task, with why; then the command that finishes the job."""
    folder = plan["folder"]
    out = [f"xferbench fleet: {s.line()}" for s in failed]
    if failed:
        out.append(f"xferbench fleet: {len(failed)} task{'s' if len(failed) != 1 else ''} did "
                   f"not finish; their results are lost, every other task's are kept: "
                   f"'xferbench fleet run --resume {folder}' runs them again")
    waiting = [s for s in current or [] if s.state in (QUEUED, RUNNING)]
    if waiting:
        out.append(f"xferbench fleet: {len(waiting)} task{'s' if len(waiting) != 1 else ''} "
                   f"still queued or running: 'xferbench fleet status {folder}' follows them")
    return out


def format_merged(done: list[Merged]) -> list[str]:
    """A line per node (where its results went, what it measured), then the measured values
    side by side, one column per machine."""
    out: list[str] = []
    sets: list[tuple[str, ResultSet]] = []
    for m in done:
        p = m.placement
        if p.note:
            out.append(f"xferbench fleet: {p.note}")
        for path in m.files:
            rs = load_file(path)
            measured = sum(r.ok for r in rs)
            skipped = sum(1 for r in rs if r.value is not None and not r.ok)
            kept = f"; {m.kept} kept, newer in the destination" if m.kept else ""
            out.append(f"{p.source.label} -> {p.target}: torch {', '.join(rs.torch_versions())}"
                       f", {measured} measured, {skipped} skipped, "
                       f"{sum(r.value is None for r in rs)} failed{kept}: {_rel(path)}")
            sets.append((f"{p.target} ({', '.join(rs.torch_versions())})", rs))
    if sets:
        if len({name.split(" (")[0] for name, _ in sets}) == len(sets):  # a series per machine
            sets = [(name.split(" (")[0], rs) for name, rs in sets]
        out += ["", *measured_table(sets)]
    return out


def measured_table(sets: list[tuple[str, ResultSet]]) -> list[str]:
    """Each measured benchmark and parameters, a column per machine (Markdown)."""
    machines = list(dict.fromkeys(name for name, _ in sets))
    values: dict[str, dict[str, Result]] = {}
    for name, rs in sets:
        for r in rs:
            if r.ok:
                values.setdefault(r.label(), {})[name] = r
    if not values:
        return ["no node measured anything"]
    lines = ["| benchmark | " + " | ".join(machines) + " |",
             "| --- | " + " | ".join("---:" for _ in machines) + " |"]
    for label in sorted(values)[:ROWS_SHOWN]:
        cells = [format_value(values[label][m].value, values[label][m].unit)
                 if m in values[label] else "" for m in machines]
        lines.append(f"| {label.split('.', 1)[-1]} | " + " | ".join(cells) + " |")
    if len(values) > ROWS_SHOWN:
        lines.append(f"... and {len(values) - ROWS_SHOWN} more: 'xferbench publish' shows "
                     "every one, machine by machine")
    return lines


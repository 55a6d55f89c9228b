"""A results folder holding one change of the suite, as a pull request's run files it: the
committed torch 2.13.0 results of cpu-2core-vm and of its repeat cpu-2core-vm-rerun, each
filed again under a second suite commit a day later, with one benchmark made slower there.
Deterministic: the same arguments write the same bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_compare import measured, scale

MACHINE, RERUN = "cpu-2core-vm", "cpu-2core-vm-rerun"
TORCH = "torch2.13.0-"
#: The second suite commit (the pull request's), filed a day after the committed one.
HEAD = "5eed0c0ffee15c0ffee25c0ffee35c0ffee45c0f"
DAY_MS = 86_400_000


def write_change(template: Path, dest: Path, factor: float = 1.3,
                 repeat_factor: float | None = None) -> tuple[str, str, str]:
    """Write the folder under ``dest`` from the committed results ``template``; returns the
    two commits (the committed one, ``HEAD``) and the benchmark made ``factor`` times
    slower at HEAD (its first measured combination), ``repeat_factor`` times (default:
    ``factor``) in the repeat."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template / "benchmarks.json", dest / "benchmarks.json")
    base, slower = "", ""
    for machine in (MACHINE, RERUN):
        source = next(p for p in sorted((template / machine).glob("*.json")) if TORCH in p.name)
        (dest / machine).mkdir()
        for path in (template / machine / "machine.json", source, source.with_suffix(".metadata")):
            shutil.copy2(path, dest / machine / path.name)
        raw = json.loads(source.read_text(encoding="utf-8"))
        base = raw["commit_hash"]
        slower, index = next((n, i) for n, i in measured(raw) if "Copy.track_completion_s" in n)
        raw["date"] += DAY_MS
        scale(raw, slower, index, factor if machine == MACHINE or repeat_factor is None
              else repeat_factor)
        name = HEAD[:8] + source.name[len(base[:8]):]
        text = json.dumps(raw).replace(base, HEAD)
        (dest / machine / name).write_text(text, encoding="utf-8")
        meta = source.with_suffix(".metadata").read_text(encoding="utf-8").replace(base, HEAD)
        (dest / machine / name).with_suffix(".metadata").write_text(meta, encoding="utf-8")
    return base, HEAD, slower

"""A generated results folder with many PyTorch versions: the committed results' first file
and sidecar, relabelled once per version with values that drift and one step change, so the
site can be built (and bounded) at the scale of twenty releases. Deterministic: the same
arguments write the same bytes."""

from __future__ import annotations

import calendar
import json
import math
import shutil
from pathlib import Path

#: The benchmark whose values step up (20% slower) from the middle version on.
STEPPED = "bench_creation.Creation.track_ready_s"


def versions(n: int) -> list[str]:
    """``n`` PyTorch versions in release order: 2.4.0+cu128, 2.5.0+cu128, ..."""
    return [f"2.{4 + i}.0+cu128" for i in range(n)]


def _factor(version_index: int, name: str, combo: int, n: int) -> float:
    """A smooth, seeded drift of a few percent, plus the step of ``STEPPED``."""
    seed = sum(ord(c) for c in name) + 7 * combo
    drift = 1 + 0.04 * math.sin(0.7 * version_index + seed)
    step = 1.2 if name == STEPPED and version_index >= n // 2 else 1.0
    return drift * step


def _scale(column: list | None, factors: list[float]) -> list | None:
    if not isinstance(column, list):
        return column
    out = []
    for x, f in zip(column, factors):
        if isinstance(x, list):
            out.append([v * f for v in x])
        elif isinstance(x, (int, float)) and x is not None and math.isfinite(x):
            out.append(x * f)
        else:
            out.append(x)
    return out


def first_results(template: Path, dest: Path) -> tuple[Path, Path, dict, dict]:
    """(its machine folder, its first results file, that file's JSON and its sidecar's) of
    the results folder ``template``, whose benchmarks.json is copied into ``dest`` (made)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template / "benchmarks.json", dest / "benchmarks.json")
    machine_dir = next(p.parent for p in sorted(template.glob("*/machine.json")))
    source = next(p for p in sorted(machine_dir.glob("*.json")) if p.name != "machine.json")
    return (machine_dir, source, json.loads(source.read_text(encoding="utf-8")),
            json.loads(source.with_suffix(".metadata").read_text(encoding="utf-8")))


def write_many_versions(template: Path, dest: Path, n: int = 20) -> list[str]:
    """Write ``n`` versions' results under ``dest`` (a new results folder) from the first
    results file of ``template`` (a results folder); returns the versions."""
    machine_dir, source, raw, meta = first_results(template, dest)
    out_dir = dest / "gpu-synthetic"
    out_dir.mkdir(parents=True, exist_ok=True)
    machine = json.loads((machine_dir / "machine.json").read_text(encoding="utf-8"))
    machine["machine"] = "gpu-synthetic"
    (out_dir / "machine.json").write_text(json.dumps(machine, indent=4), encoding="utf-8")
    names = versions(n)
    for i, version in enumerate(names):
        data = json.loads(json.dumps(raw))
        data["params"].update({"torch": version, "cuda": "12.8", "device": "cuda:0",
                               "machine": "gpu-synthetic"})
        env = f"existing-py_synthetic_torch{version.replace('+', '-')}-cuda12.8_python"
        data["env_name"] = env
        data["requirements"] = {"torch": version}
        columns = data["result_columns"]
        day = 1 + i
        # measured within the run its sidecar records (below), as a real run's numbers are
        started = calendar.timegm((2026, 10, day, 10, 1, 0)) * 1000
        for name, row in data["results"].items():
            cols = dict(zip(columns, row))
            if "started_at" in cols:
                cols["started_at"] = started
            count = len(cols.get("result") or [])
            factors = [_factor(i, name, k, n) for k in range(count)]
            for key in ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
                        "stats_q_75", "samples"):
                if key in cols:
                    cols[key] = _scale(cols[key], factors)
            data["results"][name] = [cols[c] for c in columns[: len(row)]]
        (out_dir / f"{env}.json").write_text(json.dumps(data), encoding="utf-8")
        side = json.loads(json.dumps(meta))
        side["metadata"].update({
            "torch": version, "cuda": "12.8", "device": "cuda:0", "gpu_name": "NVIDIA H200",
            "driver": "580.65.06", "accelerator": "cuda", "torch_threads": 16,
            "pcie_theoretical_bytes_per_s": 63.015e9, "pcie_gen": 5, "pcie_width": 16,
            "pcie_gen_max": 5, "pcie_width_max": 16})
        for run in [side["run"], *side.get("runs", [])]:
            run.update({"machine": "gpu-synthetic", "device": "cuda:0", "threads": None,
                        "started_at": f"2026-10-{day:02d}T10:00:00Z",
                        "finished_at": f"2026-10-{day:02d}T10:30:00Z"})
        side["benchmarks"] = {k: f"2026-10-{day:02d}T10:00:00Z" for k in side["benchmarks"]}
        (out_dir / f"{env}.metadata").write_text(json.dumps(side, indent=1, sort_keys=True),
                                                 encoding="utf-8")
    return names

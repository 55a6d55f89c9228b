"""A results folder as a GPU machine would leave it, built from the committed results: their
first file and sidecar relabelled to a GPU (results params, sidecar metadata, capability
probe and runs all name the same device, torch and CUDA, so the guards against a CPU figure
under a GPU's name hold), with the copies given here set to their rates, measured within the
run the sidecar records. Deterministic: the same arguments write the same bytes."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

from conftest import committed_results
from manyversions import first_results

from xferbench.units import parse_size

COMPLETION = "bench_copies.Copy.track_completion_s"
DEVICE = "bench_copies.Copy.track_device_s"
#: The link an H200 trains to under load when all is well.
GEN5 = {"pcie_gen": 5, "pcie_width": 16, "pcie_gen_max": 5, "pcie_width_max": 16,
        "pcie_gen_load": 5, "pcie_width_load": 16, "pcie_theoretical_bytes_per_s": 63.015e9}
MACHINE = "node1-nvidia-h200"
STARTED = "2026-12-01T06:22:10Z"


def copy(direction: str, host_memory: str, sync: str = "blocking", size: str = "64MiB",
         layout: str = "one") -> tuple[str, str, str, str, str]:
    """A Copy combination in its declared order (direction, host_memory, sync, layout, size)."""
    return (direction, host_memory, sync, layout, size)


def write_gpu_results(dest: Path, rates: dict[tuple[str, str], float], *,
                      gpu: str = "NVIDIA H200", meta: dict | None = None,
                      machine: str = MACHINE) -> Path:
    """A results folder under ``dest`` holding one GPU series: ``rates`` maps (benchmark,
    combination) to GB/s; ``meta`` changes the sidecar's metadata (the link under load, ...).
    Returns the results file."""
    source_dir, source, data, side = first_results(committed_results(), dest)
    out_dir = dest / machine
    out_dir.mkdir(exist_ok=True)
    record = json.loads((source_dir / "machine.json").read_text(encoding="utf-8"))
    record.update({"machine": machine, "cpu": f"{record['cpu']}; GPU {gpu}"})
    (out_dir / "machine.json").write_text(json.dumps(record, indent=4), encoding="utf-8")
    data["params"].update({"device": "cuda:0", "machine": machine})
    _set_rates(data, rates)
    _relabel_sidecar(side, gpu, machine, {**GEN5, **(meta or {})}, rates)
    path = out_dir / source.name
    path.write_text(json.dumps(data), encoding="utf-8")
    path.with_suffix(".metadata").write_text(json.dumps(side, indent=1, sort_keys=True),
                                             encoding="utf-8")
    return path


def _set_rates(data: dict, rates: dict[tuple[str, str], float]) -> None:
    columns = data["result_columns"]
    for (name, combo), gbps in rates.items():
        row = data["results"][name]
        cols = dict(zip(columns, row))
        values = [[json.loads(v.replace("'", '"')) for v in vs] for vs in cols["params"]]
        i = list(itertools.product(*values)).index(tuple(combo))
        seconds = parse_size(combo[-1]) / (gbps * 1e9)
        count = len(cols["result"])
        for key, value in (("result", seconds), ("stats_q_25", seconds * 0.99),
                           ("stats_q_75", seconds * 1.01), ("stats_ci_99_a", seconds * 0.98),
                           ("stats_ci_99_b", seconds * 1.02), ("stats_number", 1),
                           ("stats_repeat", 12),
                           ("samples", [seconds * (1 + 0.01 * math.sin(k)) for k in range(12)])):
            if not isinstance(cols.get(key), list):
                cols[key] = [None] * count
            cols[key][i] = value
        data["results"][name] = [cols.get(c) for c in columns]


def _relabel_sidecar(side: dict, gpu: str, machine: str, link: dict,
                     rates: dict[tuple[str, str], float]) -> None:
    side["metadata"].update({
        "device": "cuda:0", "accelerator": "cuda", "gpu_name": gpu, "driver": "580.65.06",
        "compute_capability": "9.0", "nvml": "ok", "gpu_numa_node": 0,
        "gpu_numa_cpus": "0-1", "cpu_affinity": "0-1", "virtualized": False,
        "capabilities": {"device": "cuda:0", "pinned_memory": True, "timing_events": True,
                         "side_streams": True, "reason": "", "emulated": False,
                         "stream_hold": True, "devices": 1},
        **link})
    for run in [side["run"], *side.get("runs", [])]:
        run.update({"machine": machine, "device": "cuda:0"})
    names = ("direction", "host_memory", "sync", "layout", "size")
    for (name, combo) in rates:  # a combination with a number has no outcome
        wanted = dict(zip(names, combo))
        side["outcomes"][name] = [o for o in side["outcomes"].get(name, [])
                                  if o["params"] != wanted]

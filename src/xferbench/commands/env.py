"""``xferbench env``: the metadata recorded with every result, and the device's capabilities."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ExitCode
from ..metadata import collect
from .options import add_device, add_format

#: Fields whose None means "there is none" (a CPU build has no CUDA, a CPU no GPU), not
#: "could not be read": the table says "none" for them, "unknown" for the others.
ABSENT_WHEN_NONE = {
    "accelerator": "device", "cuda": "torch", "hip": "torch", "gpu_name": "device",
    "compute_capability": "device", "multiprocessors": "device", "device_memory_bytes": "device",
    "pci_bus_id": "device", "gpu_numa_node": "device", "gpu_numa_cpus": "device",
    "pcie_theoretical_bytes_per_s": "device",
}


def register_cli(sub: Any) -> None:
    env = sub.add_parser(
        "env", allow_abbrev=False,
        help="print the machine's metadata and the device's capabilities",
        description="What is recorded with every result: PyTorch and its build, CUDA/HIP, "
                    "driver, GPU, PCIe link, NUMA node, CPU, threads, OS, Python, and the "
                    "device's capabilities. Exit status 2 when the device is absent.")
    add_device(env)
    add_format(env, help="a table (default) or JSON")
    env.add_argument("--json", dest="format", action="store_const", const="json",
                     help="the same as --format json")
    env.set_defaults(func=cmd_env, needs_torch=True)


def cmd_env(args: argparse.Namespace) -> ExitCode:
    meta = collect(args.device).to_dict()
    if args.format == "json":
        print(json.dumps(meta, indent=2, sort_keys=True, default=str))
        return ExitCode.OK
    cpu_only = meta.get("accelerator") is None
    width = max(len(k) for k in meta)
    for key in sorted(meta):
        value = meta[key]
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        if value is None:
            absent = key in ABSENT_WHEN_NONE and (
                cpu_only or ABSENT_WHEN_NONE[key] == "torch")
            value = "none" if absent else "unknown"
        print(f"{key:<{width}}  {value}")
    return ExitCode.OK

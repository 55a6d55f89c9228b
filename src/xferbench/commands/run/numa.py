"""``xferbench run --numa auto``: run the benchmark processes on the CPUs of the device's NUMA
node, as nvbandwidth does. The run pins itself (asv and the benchmark processes it starts
inherit the affinity), says where it runs, records it in the series' metadata
(``cpu_affinity``), and gives the affinity back afterwards. Where the machine does not say
(no PCI bus id, no NUMA information), it says it could not place the process and goes on."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import replace
from typing import TextIO

from ...telemetry import numa_cpus
from .plan import RunPlan

NUMA_MODES = ("off", "auto")


def ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    spans: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if spans and spans[-1][1] + 1 == cpu:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


@contextlib.contextmanager
def placed(plan: RunPlan, mode: str, out: TextIO) -> Iterator[RunPlan]:
    """The plan as run under ``--numa mode``: pinned to the device's node for the block (its
    metadata saying so), or as it was, with a line saying why it could not be placed."""
    setter = getattr(os, "sched_setaffinity", None)
    if mode != "auto":
        yield plan
        return
    node, cpus, why = numa_cpus(plan.meta.pci_bus_id)
    if cpus is not None and setter is None:
        cpus, why = None, "this platform cannot set a process's CPU affinity"
    if cpus is None:
        print(f"xferbench run: --numa auto could not place the process for {plan.device}: "
              f"{why}; it runs on the CPUs it has", file=out, flush=True)
        yield plan
        return
    before = os.sched_getaffinity(0)
    try:
        setter(0, cpus)  # type: ignore[misc]
    except OSError as exc:
        print(f"xferbench run: --numa auto could not place the process for {plan.device}: "
              f"{exc.strerror or exc}; it runs on the CPUs it has", file=out, flush=True)
        yield plan
        return
    print(f"xferbench run: --numa auto: {plan.device} is on NUMA node {node}; the benchmark "
          f"processes run on its CPUs {ranges(cpus)}", file=out, flush=True)
    try:
        yield replace(plan, meta=replace(plan.meta, cpu_affinity=ranges(cpus)))
    finally:
        os.sched_setaffinity(0, before)

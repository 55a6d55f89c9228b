"""The suite's benchmarks as its own discovery declares them, on any machine: ``python -m
benchmarks._asv`` in a child process under a capability probe handed down (no torch is
imported: the probe says what the device can do) and a sweep: each benchmark's parameter
names and values, its unit, and every combination skipped at discovery with its reason.

What a claims table may name (the full sweep's grid, the largest), and why a figure that a
series' results lack would have been skipped on that series' device (its recorded probe)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..devices import Capabilities
from ..errors import XferbenchError
from ..flags import without_run_vars
from .resultset import ResultSet
from .suite import find_suite

#: The probe a table is checked under when no series recorded one: a CPU's.
CPU_CAPABILITIES = Capabilities("cpu", False, False, False,
                                reason="the CPU has no pinned host memory, timing events or "
                                       "side streams")


@dataclass(frozen=True)
class Declared:
    """One benchmark as declared: parameter names, each one's values as text, the unit, and
    (from a discovery) each skipped combination's reason."""

    name: str
    param_names: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    unit: str
    skips: Mapping[tuple[str, ...], str] = field(
        default_factory=lambda: MappingProxyType({}))

    def values_of(self, param: str) -> tuple[str, ...]:
        return self.values[self.param_names.index(param)]


def suite_repo() -> str | None:
    """The suite's folder (asv.conf.json and benchmarks/: a clone's, else the one the package
    carries), or None where there is none."""
    try:
        return find_suite().root
    except XferbenchError:
        return None


@functools.lru_cache(maxsize=16)
def _describe(repo: str, probe: str, sweep: str) -> tuple[Declared, ...] | None:
    env = {**without_run_vars(os.environ), "XFERBENCH_PROBE": probe, "XFERBENCH_SWEEP": sweep}
    try:
        proc = subprocess.run([sys.executable, "-m", "benchmarks._asv"], cwd=repo,
                              env=env, capture_output=True, text=True, check=False, timeout=120)
        data: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None  # a suite that does not describe itself here: the results' list only
    out = []
    for cls in data:
        names = tuple(cls.get("param_names") or ())
        values = tuple(tuple(v) for v in cls.get("params") or ())
        for method in cls.get("methods") or ():
            skips = {tuple(row[:-1]): row[-1] for row in cls.get("skips", {}).get(method, [])}
            out.append(Declared(f"{cls['file']}.{cls['class']}.{method}", names, values,
                                str((cls.get("units") or {}).get(method, "unknown")),
                                MappingProxyType(skips)))
    return tuple(out)


def describe_suite(repo: str | None, caps: Capabilities | None = None,
                   sweep: str = "full") -> dict[str, Declared] | None:
    """{benchmark: Declared} as the suite in ``repo`` declares it under ``caps`` (default: a
    CPU's) and ``sweep``; None where there is no repository or it does not describe itself."""
    if repo is None:
        return None
    caps = caps or CPU_CAPABILITIES
    probe = json.dumps({"device": caps.device, "capabilities": caps.to_dict()}, sort_keys=True)
    found = _describe(os.path.abspath(repo), probe, sweep)
    return None if found is None else {d.name: d for d in found}


def declared_in_results(rs: ResultSet) -> dict[str, Declared]:
    """{benchmark: Declared} from the results folder's benchmarks.json (asv's own list of the
    suite that made them), without skips."""
    out = {}
    for name, info in rs.benchmarks.items():
        names = tuple(str(n) for n in info.get("param_names") or ())
        values = tuple(tuple(str(v) for v in vs) for vs in rs.declared_params(name).values())
        out[name] = Declared(name, names, values, str(info.get("unit") or "unknown"))
    return out

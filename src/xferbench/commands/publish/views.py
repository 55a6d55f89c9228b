"""What the published site shows, computed from results (no plotting, no HTML): the
(machine, PyTorch) series, bandwidth curves, headline rows, the steps between consecutive
PyTorch versions and one panel per other benchmark."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...comparison import BETTER, WORSE, compare_results
from ...headline import HEADLINES, headlines
from ...results import ResultSet, version_key
from ...sitemap import BANDWIDTH_BENCHMARK, figure_path


@dataclass(frozen=True)
class Series:
    """One line or bar group: results of one machine and one PyTorch version."""

    machine: str
    torch: str
    results: ResultSet


def series(rs: ResultSet) -> list[Series]:
    """The (machine, torch) series in ``rs``, newest result per key, versions in order."""
    newest = rs.newest()
    out = []
    for machine in newest.machines():
        on = newest.filter(machine=machine)
        for version in on.torch_versions():
            out.append(Series(machine, version, on.filter(torch=version)))
    return out


@dataclass(frozen=True)
class Curve:
    """Bandwidth against size for one practice (host memory, sync) and one series."""

    host_memory: str
    sync: str
    torch: str
    points: tuple[tuple[int, str, float], ...]  # (nbytes, size label, GB/s)


@dataclass(frozen=True)
class BandwidthPanel:
    machine: str
    direction: str
    layout: str
    curves: tuple[Curve, ...]
    peak_gbps: float | None  # the PCIe link's theoretical rate, where known

    @property
    def path(self) -> str:
        return figure_path(BANDWIDTH_BENCHMARK, {"direction": self.direction,
                                                 "layout": self.layout}, self.machine)


def bandwidth_panels(rs: ResultSet) -> list[BandwidthPanel]:
    """One panel per machine, direction and layout that has a measured copy."""
    groups: dict[tuple[str, str, str], dict[tuple[str, str, str], list]] = {}
    order = param_order(rs, BANDWIDTH_BENCHMARK)
    for s in series(rs):
        for r in s.results.filter(benchmark=f"^{re.escape(BANDWIDTH_BENCHMARK)}$"):
            p = r.param_dict
            bw = r.gbps
            if bw is None or "direction" not in p:
                continue
            panel = groups.setdefault((s.machine, str(p["direction"]), str(p.get("layout"))), {})
            panel.setdefault((str(p.get("host_memory")), str(p.get("sync")), s.torch), []).append(
                (r.nbytes, str(p["size"]), bw))
    panels = []
    for (machine, direction, layout), curves in groups.items():
        built = tuple(
            Curve(h, sy, t, tuple(sorted(points)))
            for (h, sy, t), points in sorted(curves.items(), key=lambda kv: (
                order.get(("host_memory", kv[0][0]), 99), order.get(("sync", kv[0][1]), 99),
                version_key(kv[0][2])))
        )
        peak = None if direction == "d2d" else peak_gbps(rs, machine)
        panels.append(BandwidthPanel(machine, direction, layout, built, peak))
    panels.sort(key=lambda p: (p.machine, order.get(("direction", p.direction), 99),
                               order.get(("layout", p.layout), 99)))
    return panels


def param_order(rs: ResultSet, benchmark: str) -> dict[tuple[str, str], int]:
    """(param name, value as text) -> position in the benchmark's declared values."""
    return {(name, str(v)): i for name, values in rs.declared_params(benchmark).items()
            for i, v in enumerate(values)}


def peak_gbps(rs: ResultSet, machine: str) -> float | None:
    for side in rs.metadata.values():
        peak = side.get("metadata", {}).get("pcie_theoretical_bytes_per_s")
        if peak and side.get("run", {}).get("machine", machine) == machine:
            return float(peak) / 1e9
    return None


@dataclass(frozen=True)
class HeadlineRow:
    key: str
    title: str
    cells: tuple[tuple[str, str, Any], ...]  # (machine, torch, HeadlineValue)

    @property
    def measured(self) -> bool:
        return any(v.ratio is not None for _, _, v in self.cells)


def headline_rows(rs: ResultSet) -> list[HeadlineRow]:
    """Each headline's value per series (machine, PyTorch version)."""
    cells: dict[str, list] = {}
    heads = HEADLINES
    for s in series(rs):
        for v in headlines(s.results, heads):
            cells.setdefault(v.headline.key, []).append((s.machine, s.torch, v))
    return [HeadlineRow(h.key, h.title, tuple(cells.get(h.key, ()))) for h in heads]


@dataclass(frozen=True)
class Step:
    """Compare rows between two consecutive PyTorch versions on one machine."""

    machine: str
    a: str
    b: str
    rows: tuple[Any, ...]

    @property
    def regressions(self) -> list[Any]:
        return [r for r in self.rows if r.mark == WORSE]

    @property
    def improvements(self) -> list[Any]:
        return [r for r in self.rows if r.mark == BETTER]


def version_steps(rs: ResultSet, threshold: float) -> list[Step]:
    by_machine: dict[str, list[Series]] = {}
    for s in series(rs):
        by_machine.setdefault(s.machine, []).append(s)
    steps = []
    for machine, ss in sorted(by_machine.items()):
        for a, b in zip(ss, ss[1:]):
            rows, _ = compare_results(a.results, b.results, threshold=threshold)
            steps.append(Step(machine, a.torch, b.torch, tuple(rows)))
    return steps


@dataclass(frozen=True)
class BenchPanel:
    """Every measured parameter combination of one benchmark on one machine, per version."""

    benchmark: str
    machine: str
    unit: str
    combos: tuple[tuple[tuple[str, Any], ...], ...]
    versions: tuple[str, ...]
    values: dict[tuple[tuple[tuple[str, Any], ...], str], float]  # (params, torch) -> value

    @property
    def path(self) -> str:
        return figure_path(self.benchmark, {}, self.machine)


def bench_panels(rs: ResultSet) -> list[BenchPanel]:
    panels = []
    newest = rs.newest()
    for machine in newest.machines():
        on = newest.filter(machine=machine)
        for name in sorted({r.benchmark for r in on}):
            if name == BANDWIDTH_BENCHMARK:
                continue
            results = [r for r in on if r.benchmark == name and r.ok]
            if not results:
                continue
            order = param_order(rs, name)
            combos = sorted({r.params for r in results}, key=lambda ps: [
                order.get((k, str(v)), 99) for k, v in ps])
            versions = tuple(sorted({r.torch for r in results}, key=version_key))
            values = {(r.params, r.torch): float(r.value) for r in results}  # type: ignore[arg-type]
            panels.append(BenchPanel(name, machine, results[0].unit, tuple(combos), versions,
                                     values))
    return panels


def panel_param_names(panel: BenchPanel) -> list[str]:
    return [k for k, _ in panel.combos[0]] if panel.combos else []

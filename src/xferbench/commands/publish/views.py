"""What the published site shows, computed from results (no plotting, no HTML): the
(machine, PyTorch) series and their provenance, the headlines with their verdicts and
citations, the copy table, the steps between consecutive PyTorch versions, and per benchmark
one trend per parameter combination with every combination left without a number.

What every view reads of the results is read once, into a ``Catalog`` (``catalog.py``), and
``page_views`` computes every view from it in one pass (the steps between versions are
``changes.py``'s): the views never go back to the results folder."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...analysis.citation import Citation
from ...analysis.headline import HEADLINES, HeadlineValue, headlines
from ...analysis.sitemap import BANDWIDTH_BENCHMARKS, bandwidth_figure_path, clock_of, figure_path
from ...analysis.stats import THRESHOLD, Verdict, significance, verdict
from ...practices import HEADLINE_NBYTES
from ...results import Result, ResultSet, version_key
from ...units import size_label
from .catalog import Catalog, SeriesView, catalog, cite_of
from .changes import Step, version_steps
from .unmeasured import Gap, gaps

Params = tuple[tuple[str, Any], ...]


# -- headlines ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class HeadlineCell:
    series: SeriesView
    value: HeadlineValue
    verdict: Verdict | None  # the practice against its baseline (None: not measured)
    cites: tuple[Citation, ...]  # the practice's and the baseline's


@dataclass(frozen=True)
class HeadlineRow:
    key: str
    title: str
    cells: tuple[HeadlineCell, ...]

    @property
    def measured(self) -> bool:
        return any(c.verdict is not None for c in self.cells)


def headline_rows(cat: Catalog, alpha: float,
                  threshold: float = THRESHOLD) -> list[HeadlineRow]:
    """Each headline's value per series, with the verdict of the practice against its
    baseline (the test compare runs) and both citations."""
    cells: dict[str, list[HeadlineCell]] = {}
    for s in cat.series:
        for v in headlines(s.results, HEADLINES):
            if v.practice is None or v.baseline is None:
                cell = HeadlineCell(s, v, None, ())
            else:
                cell = HeadlineCell(s, v, verdict(v.baseline, v.practice, alpha, threshold),
                                    (cite_of(cat, v.practice), cite_of(cat, v.baseline)))
            cells.setdefault(v.headline.key, []).append(cell)
    return [HeadlineRow(h.key, h.title, tuple(cells.get(h.key, ()))) for h in HEADLINES]


# -- the copy table ----------------------------------------------------------------------------

@dataclass(frozen=True)
class CopyRow:
    result: Result
    share_of_pcie: float | None
    cite: Citation

    device: str | None = None  # the series' device ("cpu": a host copy on the host clock)

    @property
    def clock(self) -> str:
        return clock_of(self.result.benchmark, self.device)


def copy_table(cat: Catalog, s: SeriesView) -> list[CopyRow]:
    """Every measured copy of the series at the headline size, in declared order, on the
    completion clock first, then on device time."""
    size = size_label(HEADLINE_NBYTES)
    rows: list[CopyRow] = []
    for benchmark in BANDWIDTH_BENCHMARKS.values():
        order = cat.order(benchmark)
        found = [r for r in s.results.find(benchmark, size=size) if r.ok]
        found.sort(key=lambda r: [order.get((k, str(v)), 99) for k, v in r.params])
        for r in found:
            meta = s.results.metadata_for(r)
            row_clock = clock_of(benchmark, meta.device)
            if row_clock == "host" and any(c.clock == "host" and c.result.params == r.params
                                           for c in rows):
                continue  # a CPU's host copy, once (older runs stored it twice)
            share = None
            if r.param_dict.get("direction") != "d2d":
                share = meta.share_of_link(r.gbps)
            rows.append(CopyRow(r, share, cite_of(cat, r), meta.device))
    return rows


# -- bandwidth against size --------------------------------------------------------------------

@dataclass(frozen=True)
class Curve:
    """Bandwidth against size for one practice (host memory, sync)."""

    host_memory: str
    sync: str
    points: tuple[tuple[int, str, float, float, float], ...]  # nbytes, label, GB/s, IQR lo, hi


@dataclass(frozen=True)
class BandwidthPanel:
    machine: str
    torch: str  # the newest release on the machine: the trends show the others
    direction: str
    layout: str
    curves: tuple[Curve, ...]
    peak_gbps: float | None  # the PCIe link's theoretical rate, where known
    clock: str = "completion"  # the clock the curves read (sitemap.CLOCK_NAMES)

    @property
    def path(self) -> str:
        return bandwidth_figure_path(self.machine, self.direction, self.layout, self.clock)


def bandwidth_panels(cat: Catalog) -> list[BandwidthPanel]:
    """One panel per trend (a machine, and a mode other than the default apart), clock,
    direction and layout measured in the trend's newest series."""
    newest = {s.trend: s for s in cat.series}  # series come in version order
    panels = []
    for _, s in sorted(newest.items()):
        for clock, benchmark in BANDWIDTH_BENCHMARKS.items():
            panels += _panels(cat.order(benchmark), s, clock, benchmark)
    clocks = list(BANDWIDTH_BENCHMARKS)
    order = cat.order(BANDWIDTH_BENCHMARKS["completion"])
    panels.sort(key=lambda p: (p.machine, clocks.index(p.clock),
                               order.get(("direction", p.direction), 99),
                               order.get(("layout", p.layout), 99)))
    return panels


def _panels(order: dict[tuple[str, str], int], s: SeriesView, clock: str,
            benchmark: str) -> list[BandwidthPanel]:
    groups: dict[tuple[str, str], dict[tuple[str, str], list]] = {}
    for r in s.results.find(benchmark):
        p = r.param_dict
        if r.gbps is None or r.nbytes is None or "direction" not in p:
            continue
        lo = r.nbytes / r.q75 / 1e9 if r.q75 else r.gbps
        hi = r.nbytes / r.q25 / 1e9 if r.q25 else r.gbps
        panel = groups.setdefault((str(p["direction"]), str(p.get("layout"))), {})
        panel.setdefault((str(p.get("host_memory")), str(p.get("sync"))), []).append(
            (r.nbytes, str(p["size"]), r.gbps, lo, hi))
    out = []
    for (direction, layout), curves in groups.items():
        built = tuple(Curve(h, sy, tuple(sorted(pts))) for (h, sy), pts in sorted(
            curves.items(), key=lambda kv: (order.get(("host_memory", kv[0][0]), 99),
                                            order.get(("sync", kv[0][1]), 99))))
        peak = None if direction == "d2d" else peak_gbps(s)
        out.append(BandwidthPanel(s.trend, s.torch, direction, layout, built, peak, clock))
    return out


def peak_gbps(s: SeriesView) -> float | None:
    for r in s.results:
        peak = s.results.metadata_for(r).link_bytes_per_s
        if peak:
            return float(peak) / 1e9
    return None


# -- every benchmark: trends and gaps ----------------------------------------------------------

@dataclass(frozen=True)
class Point:
    torch: str
    value: float
    q25: float | None
    q75: float | None
    n: int | None  # samples
    machine: str = ""  # the machine (of the chart's repeats) that measured it


@dataclass(frozen=True)
class Line:
    """One machine's values in a trend chart, in version order: of its CPU-only builds
    (+cpu) apart from its other builds, where it has both, so that no step joins a CPU build
    to an accelerator build as if it were a release's change."""

    machine: str
    points: tuple[Point, ...]
    steps: tuple[bool, ...]  # between consecutive points: significant at alpha (compare's)
    label: str = ""  # the legend's: the machine, "(+cpu builds)" where it has two lines

    @property
    def name(self) -> str:
        return self.label or self.machine


@dataclass(frozen=True)
class Trend:
    """One benchmark at one parameter combination on one machine, across its versions, with
    the repeats of that machine (the same host under other names: a second sweep) drawn as
    lines of their own beside it, so that a release's change is seen against run-to-run
    noise."""

    benchmark: str
    machine: str  # the chart's trend: its first machine's name, with a mode not the default
    unit: str
    params: Params
    versions: tuple[str, ...]  # every version of the machines: the x axis
    lines: tuple[Line, ...]  # one per machine that measured it, the chart's first

    @property
    def path(self) -> str:
        return figure_path(self.benchmark, dict(self.params), self.machine)

    @property
    def points(self) -> tuple[Point, ...]:
        return tuple(p for line in self.lines for p in line.points)

    @property
    def machines(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(line.machine for line in self.lines))


@dataclass(frozen=True)
class BenchmarkView:
    name: str
    unit: str
    params: dict[str, list[str]]  # declared names and values
    trends: tuple[Trend, ...]
    gaps: tuple[Gap, ...]
    combos: int  # declared combinations, per series
    series: tuple[SeriesView, ...]

    @property
    def shown_params(self) -> dict[str, list[str]]:
        """The parameters whose measured values differ: the reader chooses among these."""
        seen: dict[str, list[str]] = {}
        for t in self.trends:
            for k, v in t.params:
                if str(v) not in seen.setdefault(k, []):
                    seen[k].append(str(v))
        return {k: [v for v in self.params.get(k, []) if v in vs]
                for k, vs in seen.items() if len(vs) > 1}

    def default_choice(self, most: int = 12) -> dict[str, str]:
        """The first values of the first parameters, fixed until at most ``most`` trends
        are left to show: the page's initial selection ("" = every value)."""
        choice = {k: "" for k in self.shown_params}
        for k, values in self.shown_params.items():
            if sum(1 for t in self.trends if _matches(t, choice)) <= most:
                break
            choice[k] = values[0]
        return choice


def _matches(t: Trend, choice: dict[str, str]) -> bool:
    p = {k: str(v) for k, v in t.params}
    return all(not v or p.get(k) == v for k, v in choice.items())


def benchmark_views(cat: Catalog, alpha: float) -> list[BenchmarkView]:
    """Every benchmark asv knows, measured or not: its trends and its unmeasured combinations
    with their reasons."""
    views = []
    charts = sorted({cat.chart_of(s.key) for s in cat.series})
    for name in cat.names():
        declared = {k: [str(v) for v in vs] for k, vs in cat.declared.get(name, {}).items()}
        combos = 1
        for values in declared.values():
            combos *= len(values)
        trends = []
        for chart in charts:
            on = [s for s in cat.series if cat.chart_of(s.key) == chart]
            trends += _trends(cat.order(name), name, chart, on, alpha)
        info = cat.rs.benchmarks.get(name, {})
        unit = str(info.get("unit") or (trends[0].unit if trends else "unknown"))
        views.append(BenchmarkView(name, unit, declared, tuple(trends),
                                   tuple(gaps(cat.declared.get(name, {}), cat.missing, name)),
                                   combos, cat.series))
    return views


def _trends(order: dict[tuple[str, str], int], name: str, chart: str, on: list[SeriesView],
            alpha: float) -> list[Trend]:
    """``name``'s trends on the machines ``on`` (one host's names measured one way, drawn in
    the trend ``chart``): one chart per combination, a line per machine."""
    versions = tuple(sorted({s.torch for s in on}, key=version_key))
    by_combo: dict[Params, dict[tuple[str, bool], list[Result]]] = {}
    for s in on:
        for r in s.results.find(name):
            if r.ok:
                cpu_build = r.torch.partition("+")[2] == "cpu"
                by_combo.setdefault(r.params, {}).setdefault((s.machine, cpu_build), []).append(r)
    out = []
    for params in sorted(by_combo, key=lambda ps: [order.get((k, str(v)), 99) for k, v in ps]):
        lines = []
        both = {m for m, cpu in by_combo[params] if cpu and (m, False) in by_combo[params]}
        for machine, cpu in sorted(by_combo[params]):  # the chart's own name sorts first
            results = sorted(by_combo[params][(machine, cpu)], key=lambda r: version_key(r.torch))
            points = tuple(Point(r.torch, float(r.value), r.q25, r.q75,  # type: ignore[arg-type]
                                 len(r.samples) if r.samples else None, machine)
                           for r in results)
            steps = tuple(significance(a, b, alpha).significant
                          for a, b in zip(results, results[1:]))
            label = f"{machine} (+cpu builds)" if cpu and machine in both else ""
            lines.append(Line(machine, points, steps, label))
        unit = next(iter(by_combo[params].values()))[0].unit
        out.append(Trend(name, chart, unit, params, versions, tuple(lines)))
    return out


# -- the page, computed once -------------------------------------------------------------------

@dataclass(frozen=True)
class PageViews:
    """Every view the index shows, computed from one ``Catalog``."""

    catalog: Catalog
    headlines: list[HeadlineRow]
    copies: list[tuple[SeriesView, list[CopyRow]]]
    bandwidth: list[BandwidthPanel]
    steps: list[Step]
    benchmarks: list[BenchmarkView]

    @property
    def series(self) -> list[SeriesView]:
        return list(self.catalog.series)


def page_views(rs: ResultSet, alpha: float, threshold: float) -> PageViews:
    cat = catalog(rs)
    return PageViews(cat, headline_rows(cat, alpha, threshold),
                     [(s, copy_table(cat, s)) for s in cat.series], bandwidth_panels(cat),
                     version_steps(cat, threshold, alpha), benchmark_views(cat, alpha))

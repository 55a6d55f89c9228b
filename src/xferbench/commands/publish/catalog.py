"""What every view of the page reads of a results folder, read once: the series (machine,
PyTorch, how measured: each mode a trend of its own) with their newest results and
provenance, each benchmark's declared parameters and their order, every combination without
a number, the releases in order; and the citation of a value as the site shows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...analysis.citation import Citation, citation
from ...analysis.provenance import Provenance, series_provenance
from ...analysis.repeats import chart_machines, chart_trend
from ...analysis.sitemap import figure_path
from ...results import Result, ResultSet, version_key
from ...results.series import SeriesKey
from .unmeasured import Unmeasured, unmeasured


@dataclass(frozen=True)
class SeriesView:
    """One series (machine, PyTorch version, how measured): its newest results and where
    they came from."""

    machine: str
    torch: str
    results: ResultSet
    provenance: Provenance

    @property
    def key(self) -> SeriesKey:
        return self.provenance.key

    @property
    def trend(self) -> str:
        """What the page draws across releases as one line: the machine, with the series'
        mode where it is not the default (a quick run is never a point of a full run's
        trend)."""
        return self.key.trend


def series(rs: ResultSet) -> list[SeriesView]:
    """The series in ``rs``, newest result per key: by machine, then host, then mode (the
    default first), versions in order."""
    newest = rs.newest()
    keys = sorted(rs.series(), key=lambda k: (k.machine, k.host, k.mode, version_key(k.torch)))
    return [SeriesView(k.machine, k.torch, newest.filter(series=k), series_provenance(rs, k))
            for k in keys]


@dataclass(frozen=True)
class Catalog:
    """What the views read of a results folder, read once."""

    rs: ResultSet  # every result: a citation names the runs behind a value
    series: tuple[SeriesView, ...]
    declared: dict[str, dict[str, list[Any]]]  # benchmark -> its parameters' declared values
    missing: tuple[Unmeasured, ...]  # every combination without a number
    versions: tuple[str, ...]  # every PyTorch release, in order
    #: machine -> the machine whose trend charts draw it (itself, or the first name of the
    #: host it repeats: repeats.chart_machines)
    charts: dict[str, str] = field(default_factory=dict)
    _orders: dict[str, dict[tuple[str, str], int]] = field(default_factory=dict, repr=False)

    def order(self, benchmark: str) -> dict[tuple[str, str], int]:
        """(param name, value as text) -> position in the benchmark's declared values."""
        if benchmark not in self._orders:
            self._orders[benchmark] = {(name, str(v)): i for name, values in
                                       self.declared.get(benchmark, {}).items()
                                       for i, v in enumerate(values)}
        return self._orders[benchmark]

    def chart_of(self, key: SeriesKey) -> str:
        """The trend whose charts draw a series: its chart machine, with its mode."""
        return chart_trend(self.charts, key)

    def names(self) -> list[str]:
        """Every benchmark asv knows or a series measured, in name order."""
        return sorted(set(self.rs.benchmarks) | {r.benchmark for s in self.series
                                                  for r in s.results})


def catalog(rs: ResultSet) -> Catalog:
    return Catalog(rs, tuple(series(rs)),
                   {name: rs.declared_params(name) for name in rs.benchmarks},
                   tuple(unmeasured(rs)), tuple(rs.torch_versions()), chart_machines(rs))


def cite_of(cat: Catalog, r: Result) -> Citation:
    """The citation ``xferbench cite`` prints for ``r``, with its figure as the site has it."""
    chart = cat.chart_of(r.series)
    return citation(cat.rs, r, figure=figure_path(r.benchmark, r.param_dict, chart),
                    chart=chart)

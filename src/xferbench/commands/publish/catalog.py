"""What every view of the page reads of a results folder, read once: the (machine, PyTorch)
series with their newest results and provenance, each benchmark's declared parameters and
their order, every combination without a number, the releases in order; and the citation
of a value as the site shows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...analysis.citation import Citation, citation
from ...analysis.provenance import Provenance, repeats, series_provenance
from ...analysis.sitemap import figure_path
from ...results import Result, ResultSet
from .unmeasured import Unmeasured, unmeasured


@dataclass(frozen=True)
class SeriesView:
    """One machine and one PyTorch version: its newest results and where they came from."""

    machine: str
    torch: str
    results: ResultSet
    provenance: Provenance


def series(rs: ResultSet) -> list[SeriesView]:
    """The (machine, torch) series in ``rs``, newest result per key, versions in order."""
    newest = rs.newest()
    out = []
    for machine in newest.machines():
        on = newest.filter(machine=machine)
        for version in on.torch_versions():
            out.append(SeriesView(machine, version, on.filter(torch=version),
                                  series_provenance(rs, machine, version)))
    return out


@dataclass(frozen=True)
class Catalog:
    """What the views read of a results folder, read once."""

    rs: ResultSet  # every result: a citation names the runs behind a value
    series: tuple[SeriesView, ...]
    declared: dict[str, dict[str, list[Any]]]  # benchmark -> its parameters' declared values
    missing: tuple[Unmeasured, ...]  # every combination without a number
    versions: tuple[str, ...]  # every PyTorch release, in order
    #: machine -> the machine whose trend charts draw it (itself, or the first name of the
    #: host it repeats: provenance.repeats)
    charts: dict[str, str] = field(default_factory=dict)
    _orders: dict[str, dict[tuple[str, str], int]] = field(default_factory=dict, repr=False)

    def order(self, benchmark: str) -> dict[tuple[str, str], int]:
        """(param name, value as text) -> position in the benchmark's declared values."""
        if benchmark not in self._orders:
            self._orders[benchmark] = {(name, str(v)): i for name, values in
                                       self.declared.get(benchmark, {}).items()
                                       for i, v in enumerate(values)}
        return self._orders[benchmark]

    def names(self) -> list[str]:
        """Every benchmark asv knows or a series measured, in name order."""
        return sorted(set(self.rs.benchmarks) | {r.benchmark for s in self.series
                                                  for r in s.results})


def catalog(rs: ResultSet) -> Catalog:
    return Catalog(rs, tuple(series(rs)),
                   {name: rs.declared_params(name) for name in rs.benchmarks},
                   tuple(unmeasured(rs)), tuple(rs.torch_versions()), repeats(rs))


def cite_of(cat: Catalog, r: Result) -> Citation:
    """The citation ``xferbench cite`` prints for ``r``, with its figure as the site has it."""
    return citation(cat.rs, r, figure=figure_path(r.benchmark, r.param_dict,
                                                  cat.charts.get(r.machine, r.machine)))

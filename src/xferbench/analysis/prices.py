"""The price table: what each practice that ``xferbench lint`` and ``audit`` look for costs,
read from measured results (the ratio, both medians, the machine, GPU and PyTorch, and the
``xferbench cite`` command that prints the provenance).

``PRICES`` names, per practice key, the comparison it reads (``comparisons.py``) and the words
a finding quotes. ``build_table`` turns a ``ResultSet`` into a compact JSON table;
``scripts/make-prices`` writes it from the committed ``results/`` into the package
(``data/prices.json``), and ``PriceBook.load`` reads it (or builds it from ``--results DIR``),
so both paths compute the same way.

A price from a CPU-only, emulated or quick run is never quoted as a GPU figure: ``get`` returns
GPU prices only, and ``reason`` says why there is none ("no GPU price yet (...)"). The GPU is
the one that measured the figure (``ResultSet.gpu_for``: a CPU run on a GPU machine names
none), and a price comes only from a series whose mode may be cited (``series.MODES``: never a
quick run, a smoke sweep or a cap), the default mode first.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from importlib import resources
from typing import Any

from ..errors import XferbenchError
from ..results import Result, ResultSet, load, version_key
from ..units import format_seconds, gbps, size_label
from .citation import citation, command
from .comparisons import ComparisonSpec, comparison
from .stats import ratio_spread

#: The shipped table's format. Changelog: 1: first version (series, prices, rates).
TABLE_VERSION = 1
TABLE_RESOURCE = "prices.json"  # in the package's data/ folder
COPY_BENCHMARK = "bench_copies.Copy.track_completion_s"  # what a caller waits for


@dataclass(frozen=True)
class PriceSpec:
    """One priced practice, the comparison ``key`` (``comparisons.py``) in lint's words: its
    baseline is the pattern lint flags, its practice what lint recommends; the ratio is
    baseline time / practice time (above 1: the practice is faster)."""

    key: str  # a comparison's id
    flagged: str  # the flagged pattern, as a finding names it
    fixed: str  # the recommended practice
    measure: str  # what the ratio compares ("steps/s", "speed", "H2D GB/s")

    @property
    def comparison(self) -> ComparisonSpec:
        return comparison(self.key)


PRICES: tuple[PriceSpec, ...] = (
    PriceSpec("item_per_epoch", "per-batch `.item()`", "one read per epoch", "steps/s"),
    PriceSpec("create_on_device", "created on the host, then moved",
              "`device=` in the factory", "speed"),
    PriceSpec("model_move_in_loop", "`model.to(device)` every step", "the model moved once",
              "steps/s"),
    PriceSpec("pinned_vs_pageable", "a pageable source", "a pinned one", "H2D GB/s"),
    # a DataLoader without pin_memory feeding non_blocking copies (lint's XB110): the pipeline
    # headline's pageable + blocking loop against pinned + prefetch
    PriceSpec("pinned_prefetch", "pageable batches, `non_blocking` copies that block",
              "`pin_memory=True`, copies that overlap", "steps/s"),
    PriceSpec("pin_then_copy", "`.pin_memory().to(dev, non_blocking=True)`",
              "a plain `.to(dev)`", "speed"),
    PriceSpec("sync_per_step", "`torch.cuda.synchronize()` every step",
              "no synchronise in the step", "steps/s"),
)
PRICE_KEYS = tuple(p.key for p in PRICES)


@dataclass(frozen=True)
class Series:
    """Where a figure was measured: one (machine, PyTorch) series of a results folder."""

    machine: str
    torch: str
    device: str
    gpu: str | None  # the GPU's name; None on a CPU-only machine
    emulated: bool = False

    @property
    def is_gpu(self) -> bool:
        """A real accelerator measured it (not a CPU, not the emulated device)."""
        return bool(self.gpu) and not self.device.startswith("cpu") and not self.emulated

    @property
    def where(self) -> str:
        if self.is_gpu:
            return f"{self.gpu} ({self.machine})"
        what = "the emulated device" if self.emulated else "a CPU, no GPU"
        return f"{self.machine} ({what})"


@dataclass(frozen=True)
class Price:
    """One practice's measured cost, from one full (not quick) series."""

    key: str
    flagged: str
    fixed: str
    measure: str
    ratio: float  # baseline time / practice time: above 1, the recommended practice is faster
    practice_s: float  # medians, seconds per call
    baseline_s: float
    noise: float | None  # the ratio's relative spread (both IQR/median, in quadrature)
    series: Series
    command: str  # the `xferbench cite` line that prints the flagged figure's provenance
    practice_count: float | None = None
    baseline_count: float | None = None
    counts_unit: str = ""
    nbytes: int | None = None
    unit: str = "seconds"

    @property
    def is_gpu(self) -> bool:
        return self.series.is_gpu

    @property
    def quick(self) -> bool:
        """Always False: a quick run's numbers are never prices (build_table drops them)."""
        return False

    def text(self) -> str:
        """One line, e.g. "per-batch `.item()`: steps/s 0.52x of one read per epoch (2.1 ms
        vs 1.1 ms, ±4%) on <device> (<machine>), torch <version>"."""
        figures = f"{self._figure(self.baseline_s)} vs {self._figure(self.practice_s)}"
        if self.baseline_count is not None and self.practice_count is not None:
            figures += (f"; {self.baseline_count:.2f} vs {self.practice_count:.2f} "
                        f"{self.counts_unit}")
        if self.noise is not None:
            figures += f", ±{self.noise:.0%}"
        return (f"{self.flagged}: {self.measure} {1 / self.ratio:.2f}x of {self.fixed} "
                f"({figures}) on {self.series.where}, torch {self.series.torch}")

    def _figure(self, seconds: float) -> str:
        if self.nbytes:
            return f"{gbps(self.nbytes, seconds):.1f} GB/s"
        return format_seconds(seconds)


@dataclass(frozen=True)
class Rate:
    """Copy bandwidth at one size: direction x host memory x sync, one tensor."""

    direction: str
    host_memory: str
    sync: str
    nbytes: int
    seconds: float
    noise: float | None
    series: Series
    command: str

    @property
    def gbps(self) -> float:
        """Decimal GB/s (10^9 bytes/s)."""
        return gbps(self.nbytes, self.seconds)

    @property
    def is_gpu(self) -> bool:
        return self.series.is_gpu

    def text(self) -> str:
        return (f"{self.direction} {self.host_memory} {self.sync} copy of "
                f"{size_label(self.nbytes)}: {self.gbps:.1f} GB/s on {self.series.where}, "
                f"torch {self.series.torch}")


# -- from results to the table --------------------------------------------------------------

def _series(rs: ResultSet, r: Result) -> Series:
    meta = rs.metadata_for(r)
    device = r.device if r.device != "unknown" else str(meta.device or "unknown")
    return Series(machine=r.machine, torch=r.torch, device=device, gpu=rs.gpu_for(r),
                  emulated=bool(meta.emulated))


def _full(rs: ResultSet) -> ResultSet:
    """Only series whose mode may be cited: a quick run's, a smoke sweep's or a capped run's
    number is never a price."""
    return ResultSet([r for r in rs if not r.series.reasons()], rs.benchmarks, rs.root,
                     rs.sidecars)


def _cite(rs: ResultSet, r: Result) -> str:
    return command(citation(rs, r, figure=""))


def _price(rs: ResultSet, spec: PriceSpec) -> Price | None:
    c = spec.comparison
    practice = rs.latest(c.practice.benchmark, **c.practice.param_dict)
    baseline = rs.latest(c.baseline.benchmark, **c.baseline.param_dict)
    if practice is None or baseline is None or not practice.value or not baseline.value:
        return None
    counts: list[float | None] = [None, None]
    if c.counts:
        for i, figure in enumerate((c.practice, c.baseline)):
            r = rs.latest(c.counts, **figure.param_dict)
            counts[i] = r.value if r else None
    return Price(
        key=spec.key, flagged=spec.flagged, fixed=spec.fixed, measure=spec.measure,
        ratio=baseline.value / practice.value, practice_s=practice.value,
        baseline_s=baseline.value, noise=ratio_spread(practice, baseline),
        series=_series(rs, baseline), command=_cite(rs, baseline),
        practice_count=counts[0], baseline_count=counts[1], counts_unit=c.counts_unit,
        nbytes=c.nbytes, unit=practice.unit)


def _each_series(rs: ResultSet) -> list[ResultSet]:
    """Full runs per series: GPU series first, then the default mode, the newest release,
    the newest run."""
    full = _full(rs)
    groups = [full.filter(series=key) for key in full.series()]

    def order(g: ResultSet) -> tuple:
        first = next(iter(g))
        return (_series(g, first).is_gpu, first.series.is_default, version_key(first.torch),
                max(r.date_ms for r in g))

    return sorted(groups, key=order, reverse=True)


def _rates(series: ResultSet) -> list[Rate]:
    out = []
    for r in series.find(COPY_BENCHMARK, layout="one"):
        p = r.param_dict
        if not r.ok or not r.value or r.nbytes is None or p.get("direction") == "d2d":
            continue
        out.append(Rate(str(p["direction"]), str(p["host_memory"]), str(p["sync"]), r.nbytes,
                        float(r.value), r.spread, _series(series, r), _cite(series, r)))
    return out


def build_table(rs: ResultSet) -> dict[str, Any]:
    """The compact table: every series seen, and per key (and per copy combination) the best
    GPU figure and the best CPU one (each marked; only GPU ones are quoted as prices)."""
    groups = _each_series(rs)
    prices: dict[tuple[str, bool], Price] = {}
    rates: dict[tuple, Rate] = {}
    for g in groups:  # best first: keep the first found per (key, is_gpu)
        for spec in PRICES:
            p = _price(g, spec)
            if p is not None:
                prices.setdefault((p.key, p.is_gpu), p)
        for rate in _rates(g):
            rates.setdefault((rate.direction, rate.host_memory, rate.sync, rate.nbytes,
                              rate.is_gpu), rate)
    every = [{**asdict(_series(rs, next(r for r in rs if r.series == key))),
              "quick": bool(key.reasons())} for key in rs.series()]
    return {"schema_version": TABLE_VERSION, "series": every,
            "prices": [asdict(p) for p in prices.values()],
            "rates": [asdict(r) for r in rates.values()]}


# -- the book ---------------------------------------------------------------------------------

def _series_from(d: dict[str, Any]) -> Series:
    return Series(str(d["machine"]), str(d["torch"]), str(d["device"]), d.get("gpu"),
                  bool(d.get("emulated")))


@dataclass(frozen=True)
class PriceBook:
    """The prices of one results folder (or of the shipped table), looked up by key."""

    source: str  # "the shipped table (results/ at release)" or the results folder
    prices: tuple[Price, ...] = ()
    rates: tuple[Rate, ...] = ()
    series: tuple[dict[str, Any], ...] = field(default=())  # every series seen, with "quick"

    @classmethod
    def load(cls, results_dir: str | None = None) -> PriceBook:
        """From ``results_dir`` (read with ``results.load``), else the table shipped in the
        package; raises XferbenchError for a broken folder or table."""
        if results_dir is not None:
            return cls.from_table(build_table(load(results_dir)), source=results_dir)
        try:
            text = (resources.files("xferbench") / "data" / TABLE_RESOURCE).read_text(
                encoding="utf-8")
            table = json.loads(text)
        except (OSError, ValueError) as exc:
            raise XferbenchError(f"the shipped price table cannot be read ({exc}): "
                                 "reinstall xferbench or pass --results DIR") from None
        return cls.from_table(table, source="the shipped price table")

    @classmethod
    def from_table(cls, table: dict[str, Any], source: str) -> PriceBook:
        if table.get("schema_version") != TABLE_VERSION:
            raise XferbenchError(
                f"price table {source} has version {table.get('schema_version')!r}: this "
                f"xferbench reads version {TABLE_VERSION} (reinstall xferbench; in a clone, "
                "scripts/make-prices regenerates it)")
        try:
            prices = tuple(Price(**{**p, "series": _series_from(p["series"])})
                           for p in table["prices"])
            rates = tuple(Rate(**{**r, "series": _series_from(r["series"])})
                          for r in table["rates"])
            series = tuple(dict(s) for s in table["series"])
        except (KeyError, TypeError) as exc:
            raise XferbenchError(f"price table {source} is malformed ({exc}): reinstall "
                                 "xferbench, or in a clone regenerate it with "
                                 "scripts/make-prices") from None
        return cls(source, prices, rates, series)

    def get(self, key: str, *, allow_cpu: bool = False) -> Price | None:
        """The GPU price of ``key``; with ``allow_cpu``, a CPU figure where there is no GPU
        one (its ``is_gpu`` is False and its text says so: never quote it as a GPU figure)."""
        if key not in PRICE_KEYS:
            raise KeyError(f"{key!r} is not a price key: {', '.join(PRICE_KEYS)}")
        found = [p for p in self.prices if p.key == key and (p.is_gpu or allow_cpu)]
        return max(found, key=lambda p: p.is_gpu) if found else None

    def reason(self, key: str) -> str:
        """Why ``key`` has no GPU price ("" where it has one)."""
        if self.get(key) is not None:
            return ""
        full = [s for s in self.series if not s["quick"]]
        gpus = [s for s in full if _series_from(s).is_gpu]
        if gpus:
            where = "; ".join(f"{s['machine']}, torch {s['torch']}" for s in gpus)
            return f"no GPU price yet (not measured on a GPU: {where} has no figure for it)"
        if full:
            where = "; ".join(f"{s['machine']}, torch {s['torch']}" for s in full)
            return f"no GPU price yet (the results hold only CPU runs: {where})"
        if self.series:
            return "no GPU price yet (the results hold only quick runs: smoke tests)"
        return "no GPU price yet (no results)"

    def describe(self, key: str) -> str:
        """The price's sentence and its cite command, or why there is no GPU price."""
        p = self.get(key)
        return f"{p.text()} [{p.command}]" if p else self.reason(key)

    def copy_gbps(self, direction: str, host_memory: str, nbytes: int,
                  sync: str = "blocking", *, allow_cpu: bool = False) -> Rate | None:
        """The measured copy at the size nearest ``nbytes`` (GPU only unless ``allow_cpu``):
        its ``gbps``, its series and cite command; None where none was measured."""
        found = [r for r in self.rates
                 if (r.direction, r.host_memory, r.sync) == (direction, host_memory, sync)
                 and (r.is_gpu or allow_cpu)]
        if not found:
            return None
        best_gpu = max(r.is_gpu for r in found)
        found = [r for r in found if r.is_gpu == best_gpu]
        return min(found, key=lambda r: (abs(math.log(r.nbytes / max(nbytes, 1))), r.nbytes))


def table_text(rs: ResultSet) -> str:
    """The price table built from ``rs``, as the JSON text ``data/prices.json`` holds
    (``scripts/make-prices`` writes it from the committed results, or checks it is current)."""
    return json.dumps(build_table(rs), indent=1, sort_keys=True) + "\n"

"""The figures as other tools take them (``xferbench export``): every measured value of a
results folder, one ``ExportRow`` each, with its interval, samples, unit, clock, the series it
belongs to (machine, PyTorch, device) and the suite commit, computed once here; the command
formats them as CSV, Bencher Metric Format or PyTorch HUD v3 records.

The interval is asv's 99% confidence interval of the median (what asv stores beside it), and
the quartiles are given apart: an interval and a spread are different things, and neither
stands in for the other. GB/s (10^9 bytes/s) is derived where the size parameter says how
many bytes moved, its interval from the time's (inverted: the slow end is the low rate).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ..errors import XferbenchError
from ..results import Result, ResultSet
from ..results.series import host_option
from .provenance import Provenance, series_provenance
from .sitemap import clock_of

#: The clocks a figure is read on, as the export names them (a count has none).
CLOCKS = {
    "device": "device time from events on the device's stream",
    "completion": "host clock from the call until the work is done (synchronised)",
    "enqueue": "host clock until the call returns (the work may still run)",
    "host": "host clock of a CPU (no device: the work is done when the call returns)",
    "none": "not a time (a fraction, a count or bytes)",
}
#: Benchmarks timed by events on the device's stream though their name does not end in
#: ``_device_s`` (their class docstrings say so).
DEVICE_TIMED = ("bench_contention.Contention.",)


def figure_clock(benchmark: str, unit: str, device: str | None) -> str:
    """The clock ``benchmark``'s figure is read on (a key of CLOCKS): a copy's from its name
    (``sitemap.clock_of``), every figure on a CPU the host's, a figure in any other unit than
    seconds none."""
    if unit != "seconds":
        return "none"
    if str(device or "").startswith("cpu"):
        return "host"
    if benchmark.endswith("_enqueue_s"):
        return "enqueue"
    if benchmark.startswith(DEVICE_TIMED):
        return "device"
    return clock_of(benchmark, device)


@dataclass(frozen=True)
class ExportRow:
    """One measured value, as exported: numbers as stored (seconds, bytes)."""

    benchmark: str
    params: tuple[tuple[str, str], ...]
    value: float  # the median of the samples
    unit: str
    clock: str  # a key of CLOCKS
    ci99: tuple[float, float] | None  # asv's 99% confidence interval of the median
    q25: float | None
    q75: float | None
    samples: tuple[float, ...]  # raw, as recorded ("--record-samples"); () where none were
    number: int | None  # calls per sample
    gbps: float | None
    gbps_ci99: tuple[float, float] | None
    machine: str
    hardware: str  # the GPU's name, or "CPU <model>"
    device: str
    torch: str
    cuda: str
    python: str
    commit: str  # the suite commit, 40 hex digits
    commit_date_ms: int  # that commit's date, as asv files it
    measured_ms: int  # when asv started this benchmark (else the commit's date)
    quick: bool  # a quick run's: shortened budgets, a smoke test
    not_for_citation: tuple[str, ...]  # the page's reasons, where it says not to cite
    results_file: str  # below the results folder
    #: how it was measured: "default" (the default grid, in full), or "quick", "2 threads",
    #: "full sweep", "capped"...
    mode: str = "default"
    host: str = ""  # what measured it, as --host takes it, where its machine holds several
    #: the host's CPU model, its core count and the device's memory, as the sidecar recorded
    #: them (None where it did not)
    cpu: str | None = None
    cores: int | None = None
    device_memory_bytes: int | None = None

    @property
    def series(self) -> str:
        """"torch 2.13.0+cpu on vm-cpu" (" (quick, 2 threads)" where not measured the default
        way; the host in brackets where the machine holds several)."""
        how = f" ({self.mode})" if self.mode != "default" else ""
        host = f" [{self.host}]" if self.host else ""
        return f"torch {self.torch} on {self.machine}{host}{how}"

    @property
    def name(self) -> str:
        """The benchmark with its parameters: bench_copies.Copy.track_completion_s(direction=h2d,
        ...)."""
        args = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.benchmark}({args})" if args else self.benchmark


def iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _gbps_interval(r: Result) -> tuple[float, float] | None:
    n = r.nbytes
    if n is None or r.ci_99 is None or r.gbps is None or min(r.ci_99) <= 0:
        return None
    low, high = sorted(r.ci_99)
    return (n / high / 1e9, n / low / 1e9)


def figure(rs: ResultSet, r: Result, prov: Provenance) -> ExportRow:
    """The exported figure of the measured result ``r`` of ``rs``, of the series ``prov``."""
    meta = rs.metadata_for(r)
    device = str(meta.device or prov.device)
    return ExportRow(
        benchmark=r.benchmark, params=tuple((k, str(v)) for k, v in r.params),
        value=float(r.value),  # type: ignore[arg-type]
        unit=r.unit, clock=figure_clock(r.benchmark, r.unit, device),
        ci99=tuple(sorted(r.ci_99)) if r.ci_99 else None,  # type: ignore[arg-type]
        q25=r.q25, q75=r.q75, samples=tuple(r.samples or ()), number=r.number,
        gbps=r.gbps, gbps_ci99=_gbps_interval(r), machine=r.machine,
        hardware=prov.hardware, device=device, torch=r.torch, cuda=r.cuda,
        python=r.python, commit=r.commit, commit_date_ms=r.date_ms,
        measured_ms=r.started_ms or r.date_ms, quick=r.quick,
        not_for_citation=tuple(prov.reasons()),
        results_file=os.path.relpath(r.path, rs.root), mode=prov.key.how,
        host=host_option(r.host), cpu=meta.cpu_model,
        cores=meta.cpu_count if isinstance(meta.cpu_count, int) else None,
        device_memory_bytes=meta.device_memory_bytes)


def figures(rs: ResultSet) -> list[ExportRow]:
    """Every measured value of ``rs`` (a skipped or failed combination has none: ``list``
    counts them, the page says why), by machine, PyTorch, benchmark and parameters."""
    series = {key: series_provenance(rs, key) for key in rs.series()}
    out = [figure(rs, r, series[r.series]) for r in rs if r.ok]
    return sorted(out, key=lambda f: (f.machine, f.torch, f.mode, f.benchmark, f.params,
                                      f.results_file))


def one_series(found: list[ExportRow],
               why: str = "a Bencher report is one testbed's") -> list[ExportRow]:
    """``found`` where it is one series' (one report to a service that tracks a testbed over
    time), the newest run's figure of each combination; one sentence naming the series
    otherwise, opening with ``why``, and the options that choose one."""
    series = sorted({f.series for f in found})
    if not series:
        raise XferbenchError("no measured figure matches: nothing to export (xferbench list "
                             "shows what the results hold)")
    if len(series) > 1:
        raise XferbenchError(
            f"{why}, and these results hold {len(series)} series: "
            f"{'; '.join(series)}: choose one with --machine, --torch, --mode and --host")
    newest: dict[tuple, ExportRow] = {}
    for f in found:
        key = (f.benchmark, f.params)
        if key not in newest or f.measured_ms > newest[key].measured_ms:
            newest[key] = f
    return [f for f in found if newest[(f.benchmark, f.params)] is f]

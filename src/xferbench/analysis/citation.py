"""Citations: one measured value with everything needed to quote it (value and spread, the
software and hardware, the suite commit and date, the published figure that shows it), and
its sentence and table. ``xferbench cite`` prints them; ``xferbench publish`` puts the same
sentence beside each headline and copy-table row, so the page and the command never differ."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from ..metadata import share_of_link
from ..results import Result, ResultSet
from ..results.series import (
    Selection,
    host_labels,
    host_option,
    labels,
    mode_option,
    parse_host,
)
from ..units import D2D_COPIED, format_value, share_text
from .cautions import noise_caution, value_caution
from .choice import choose, kv
from .provenance import CAPPED, cache_caution, link_caution, over_link_caution, series_provenance
from .reference import Assessment, assess_result, not_a_record
from .repeats import chart_machines, chart_trend
from .sitemap import figure_path


@dataclass(frozen=True)
class Citation:
    """One measured value with everything needed to quote it; numbers as stored (seconds)."""

    benchmark: str
    params: dict[str, Any]
    value: float
    unit: str
    q25: float | None
    q75: float | None
    ci_99: tuple[float, float] | None
    n_samples: int | None
    nbytes: int | None
    gbps: float | None  # nbytes / value / 1e9, where the size parameter gives the bytes
    torch: str
    cuda: str
    driver: str
    gpu: str
    device: str
    pcie_gen: int | None
    pcie_width: int | None
    pcie_gen_max: int | None
    pcie_width_max: int | None
    pcie_theoretical_bytes_per_s: float | None
    machine: str
    commit: str
    measured_ms: int
    results_file: str
    figure: str
    figure_exists: bool
    others: tuple[str, ...]  # other series that measured it ("torch X on M")
    quick: bool = False  # a quick run's number (shortened budgets), cited only when asked
    #: how this number was sampled under a budget cap (--budget --cap), None where it was not
    capped: str | None = None
    #: what a quote must say with it (a degraded link, a fraction outside 0 to 1), or None
    caution: str | None = None
    pcie_under_load: bool = False  # pcie_gen/width were read while copies ran (not at idle)
    #: why the page bans this series from citation (a CPU run, no metadata...): the same words
    not_for_citation: tuple[str, ...] = ()
    mode: str = "default"  # how it was measured, as --mode takes it ("quick,threads=2")
    how: str = ""  # the same, as a series' label says it ("quick, 2 threads"; "" by default)
    reference: Assessment | None = None  # a GPU's copy beside its published range and verdict
    read: str | None = None  # its clock and event batches (Diagnostics.text), where recorded
    read_warnings: tuple[str, ...] = ()  # the measurement's warnings, where recorded
    #: what measured it, as --host takes it, where its machine name holds several hosts
    host: str = ""
    #: the trend whose chart is ``figure``, where it is not this series' own (a repeat drawn
    #: in the chart of the machine it repeats)
    chart: str = ""

    @property
    def spread(self) -> float | None:
        if self.q25 is None or self.q75 is None or not self.value:
            return None
        return (self.q75 - self.q25) / self.value

    @property
    def share_of_pcie(self) -> float | None:
        """Of the PCIe link's theoretical rate; None for d2d, which crosses no link."""
        if self.params.get("direction") == "d2d":
            return None
        return share_of_link(self.gbps, self.pcie_theoretical_bytes_per_s)


def _display_path(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def cite(rs: ResultSet, benchmark: str, params: dict[str, str] | None = None, *,
         site: str = "site", allow_quick: bool = False, **selection: Any) -> Citation:
    """The citation ``xferbench cite`` prints: the newest measured value of ``benchmark`` at
    ``params``, among the series ``selection`` leaves (``Selection``'s fields: machine,
    torch, mode, host), its figure under ``site``."""
    sel = Selection(**selection)
    r, others = choose(rs, benchmark, params or {}, torch=sel.torch, machine=sel.machine,
                       allow_quick=allow_quick, mode=sel.mode, host=sel.host)
    # the chart that draws this series (with the machine's repeats: repeats.chart_machines)
    chart = chart_trend(chart_machines(rs), r.series)
    figure = os.path.join(site, figure_path(r.benchmark, r.param_dict, chart))
    return citation(rs, r, figure=_display_path(os.path.abspath(figure)),
                    figure_exists=os.path.isfile(figure),
                    others=sorted({_other(o, r) for o in others}), chart=chart)


def _other(o: Result, r: Result) -> str:
    """Another number of the figure: its series, or its run where the series is the same."""
    if o.series != r.series:
        return o.series.label
    return f"{o.series.label}, another run ({os.path.basename(o.path)})"


def citation(rs: ResultSet, r: Result, *, figure: str, figure_exists: bool = True,
             others: list[str] | tuple[str, ...] = (), chart: str = "") -> Citation:
    """The citation of the measured result ``r`` of ``rs``, with ``figure`` as the figure's
    path as the reader should see it, drawn in trend ``chart``'s chart (empty: its own)."""
    meta = rs.metadata_for(r)
    gpu = rs.gpu_for(r)  # the sidecar's GPU only where an accelerator measured the value

    def text(key: str) -> str:
        value = getattr(meta, key)
        return "unknown" if value in (None, "") else str(value)

    def integer(key: str) -> int | None:
        value = getattr(meta, key) if gpu else None  # a CPU run crossed no PCIe link
        return int(value) if isinstance(value, (int, float)) else None

    return Citation(
        benchmark=r.benchmark, params=r.param_dict, value=float(r.value),  # type: ignore[arg-type]
        unit=r.unit, q25=r.q25, q75=r.q75, ci_99=r.ci_99,
        n_samples=len(r.samples) if r.samples else None,
        nbytes=r.nbytes, gbps=r.gbps,
        torch=r.torch, cuda=r.cuda, driver=text("driver"), gpu=gpu or "unknown",
        device=r.device if r.device != "unknown" else str(meta.device or "unknown"),
        pcie_gen=integer("pcie_gen_load") or integer("pcie_gen"),
        pcie_width=integer("pcie_width_load") or integer("pcie_width"),
        pcie_under_load=integer("pcie_gen_load") is not None,
        pcie_gen_max=max(integer("pcie_gen_max") or 0, integer("pcie_gen_gpu_max") or 0) or None,
        pcie_width_max=integer("pcie_width_max"),
        pcie_theoretical_bytes_per_s=meta.link_bytes_per_s if gpu else None,
        machine=r.machine, commit=r.commit, measured_ms=r.started_ms or r.date_ms,
        results_file=_display_path(r.path), figure=figure, figure_exists=figure_exists,
        others=tuple(others), quick=r.quick,
        caution="; ".join(filter(None, (
            link_caution(meta) if gpu else None, value_caution(r), noise_caution(r),
            cache_caution(r, meta), over_link_caution(meta.share_of_link(r.gbps))
            if gpu and r.param_dict.get("direction") != "d2d" else None))) or None,
        not_for_citation=_not_for_citation(rs, r), capped=r.capped,
        mode=mode_option(r.mode), how=labels(r.mode), reference=assess_result(rs, r),
        read=r.diagnostics.text() if r.diagnostics else None,
        read_warnings=r.diagnostics.warnings if r.diagnostics else (),
        host=host_option(r.host), chart="" if chart in ("", r.series.trend) else chart,
    )


def _not_for_citation(rs: ResultSet, r: Result) -> tuple[str, ...]:
    """The series' reasons, this number's own cap where it was sampled under one, why it is
    no ordinary figure where every event batch was discarded, and a rate above its link's (a
    measurement problem)."""
    reasons = series_provenance(rs, r.series).reasons()
    if r.capped and CAPPED not in reasons:
        reasons.append(CAPPED)
    return (tuple(reasons) + ((r.not_citable,) if r.not_citable else ())
            + tuple(filter(None, [not_a_record(assess_result(rs, r))])))


def command(c: Citation) -> str:
    """The ``xferbench cite`` command line that prints ``c``."""
    short = c.benchmark.split(".", 1)[-1]
    parts = ["xferbench cite", short]
    if c.params:
        parts.append("--params " + ",".join(f"{k}={v}" for k, v in c.params.items()))
    parts += [f"--torch {c.torch}", f"--machine {c.machine}"]
    if c.mode != "default":
        parts.append(f"--mode {c.mode}")
    if c.host:
        parts.append(f"--host '{c.host}'")
    return " ".join(parts)


# -- formatting --------------------------------------------------------------------------------

def _value(v: float | None, unit: str) -> str:
    return format_value(v, unit)


def _date(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000))


def _pcie(c: Citation) -> str:
    def link(gen: int | None, width: int | None) -> str | None:
        return f"Gen{gen} x{width}" if gen and width else None

    now, best = link(c.pcie_gen, c.pcie_width), link(c.pcie_gen_max, c.pcie_width_max)
    parts = []
    if now:
        parts.append(f"{now} {'under load' if c.pcie_under_load else 'at the time'}")
    if best and best != now:
        parts.append(f"up to {best}")
    if c.pcie_theoretical_bytes_per_s:
        parts.append(f"{c.pcie_theoretical_bytes_per_s / 1e9:.1f} GB/s theoretical per direction")
    return ", ".join(parts) if parts else "unknown"


def _drawn(c: Citation) -> str:  # a figure filed under another trend's name says why
    return f" ({c.chart}'s chart, which draws {c.machine} beside it)" if c.chart else ""


def _where(c: Citation) -> str:  # the machine, and its host where it holds several
    return f"{c.machine} [{host_labels(parse_host(c.host))}]" if c.host else c.machine


def _gpu(c: Citation) -> str:
    if c.gpu == "unknown" and str(c.device).startswith("cpu"):
        return "none (a CPU run)"
    return c.gpu if c.gpu != "unknown" else f"unknown (device {c.device})"


def rows(c: Citation) -> list[tuple[str, str]]:
    """The table: (field, text)."""
    out = [("not for citation", "; ".join(c.not_for_citation))] if c.not_for_citation else []
    out += [("benchmark", f"`{c.benchmark}`"), ("parameters", kv(c.params) or "none"),
           ("median", _value(c.value, c.unit))]
    if c.q25 is not None and c.q75 is not None:
        spread = "" if c.spread is None else f" ({c.spread:.1%} of the median)"
        out.append(("IQR", f"{_value(c.q25, c.unit)} to {_value(c.q75, c.unit)}{spread}"))
    if c.ci_99:
        out.append(("99% CI", f"{_value(c.ci_99[0], c.unit)} to {_value(c.ci_99[1], c.unit)}"))
    out.append(("samples", str(c.n_samples) if c.n_samples else "not recorded"))
    if c.gbps is not None:
        bw = f"{c.gbps:.2f} GB/s (10^9 bytes/s; {c.nbytes} bytes / median)"
        if c.params.get("direction") == "d2d":
            bw += f"; {D2D_COPIED}"
        if c.share_of_pcie is not None:
            bw += f", {share_text(c.share_of_pcie)} of the PCIe link's theoretical rate"
        bw += f"; expected {c.reference.sentence()}" if c.reference else ""
        out.append(("bandwidth", bw))
    if c.read:
        out.append(("read on", c.read))
    if c.read_warnings:
        out.append(("warnings", "; ".join(c.read_warnings)))
    out += [("measured as", c.how or "the default way"),
            ("PyTorch", c.torch), ("CUDA", c.cuda), ("driver", c.driver), ("GPU", _gpu(c)),
            ("PCIe link", _pcie(c)), ("machine", _where(c)), ("suite commit", c.commit),
            ("measured", _date(c.measured_ms)), ("results file", f"`{c.results_file}`"),
            ("figure", f"`{c.figure}`" + _drawn(c) + (
                "" if c.figure_exists else " (not built yet: run `xferbench publish`)"))]
    if c.caution:
        out.append(("caution", c.caution))
    return out


def sentence(c: Citation) -> str:
    short = c.benchmark.split(".", 1)[-1]
    what = f"`{short}` ({kv(c.params)})" if c.params else f"`{short}`"
    spread = []
    if c.q25 is not None and c.q75 is not None:
        spread.append(f"IQR {_value(c.q25, c.unit)} to {_value(c.q75, c.unit)}")
    if c.n_samples:
        spread.append(f"{c.n_samples} samples")
    bw = f", {c.gbps:.2f} GB/s" if c.gbps is not None else ""
    if bw and c.params.get("direction") == "d2d":
        bw += " copied (its memory traffic, read and write, is twice that)"
    gpu = f"GPU {c.gpu}, PCIe {_pcie(c)}" if c.gpu != "unknown" else f"no GPU, device {c.device}"
    banned = ("Not for citation: " + "; ".join(c.not_for_citation) + ". ") \
        if c.not_for_citation else ""
    return (f"{banned}{what} measured a median of {_value(c.value, c.unit)}"
            f"{' (' + ', '.join(spread) + ')' if spread else ''}{bw} on {_where(c)} ({gpu}) "
            f"with PyTorch {c.torch}, CUDA {c.cuda}, driver {c.driver}; xferbench suite commit "
            f"{c.commit[:8]}, {_date(c.measured_ms)}; figure `{c.figure}`{_drawn(c)}."
            + (f" Measured as: {c.how}." if c.how else "")
            + (f" Expected: {c.reference.sentence()}." if c.reference else "")
            + (f" Read on {c.read}." if c.read else "")
            + (f" Warnings: {'; '.join(c.read_warnings)}." if c.read_warnings else "")
            + (f" Caution: {c.caution}." if c.caution else ""))


def format_markdown(c: Citation) -> list[str]:
    lines = [sentence(c), "", "| | |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in rows(c)]
    if c.others:
        lines += ["", f"Also measured for {', '.join(c.others)} "
                  f"(choose with --torch/--machine/--mode{'/--host' if c.host else ''})."]
    return lines


def as_dict(c: Citation) -> dict[str, Any]:
    out = asdict(c)
    out["ci_99"] = list(c.ci_99) if c.ci_99 else None
    out["others"] = list(c.others)
    out["spread"] = c.spread
    out["measured"] = _date(c.measured_ms)
    out["sentence"] = sentence(c)
    out["not_for_citation"] = list(c.not_for_citation)
    out["read_warnings"] = list(c.read_warnings)
    out["gpu"] = None if c.gpu == "unknown" and str(c.device).startswith("cpu") else c.gpu
    return {k: v for k, v in out.items() if k not in ("host", "chart") or v}



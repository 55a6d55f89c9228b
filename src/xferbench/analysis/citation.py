"""Citations: one measured value with everything needed to quote it (value and spread, the
software and hardware, the suite commit and date, the published figure that shows it), and
its sentence and table. ``xferbench cite`` prints them; ``xferbench publish`` puts the same
sentence beside each headline and copy-table row, so the page and the command never differ."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import XferbenchError
from ..metadata import share_of_link
from ..results import Result, ResultSet
from ..results.series import Mode, labels, mode_option, reasons
from ..units import D2D_COPIED, format_value, share_text
from .provenance import (
    CAPPED,
    cache_caution,
    link_caution,
    over_link_caution,
    series_provenance,
    value_caution,
)
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


# -- choosing the result -----------------------------------------------------------------------

def resolve_benchmark(rs: ResultSet, name: str) -> str:
    names = sorted(set(rs.benchmarks) | {r.benchmark for r in rs})
    if name in names:
        return name
    found = [n for n in names if n.endswith("." + name)]
    if len(found) == 1:
        return found[0]
    if found:
        raise XferbenchError(f"benchmark {name!r} is ambiguous: it ends {', '.join(found)}")
    raise XferbenchError(f"benchmark {name!r} is not in {rs.root}: it holds {', '.join(names)}")


def _declared(rs: ResultSet, benchmark: str) -> dict[str, list[str]]:
    return {k: [str(v) for v in values] for k, values in rs.declared_params(benchmark).items()}


def _check_params(rs: ResultSet, benchmark: str, params: dict[str, str]) -> None:
    declared = _declared(rs, benchmark)
    for key, value in params.items():
        if key not in declared:
            raise XferbenchError(
                f"{key!r} is not a parameter of {benchmark}: it takes "
                f"{', '.join(declared) or 'none'}")
        if value not in declared[key]:
            raise XferbenchError(
                f"{key}={value} is not a value of {benchmark}: use {', '.join(declared[key])}")


def choose(rs: ResultSet, benchmark: str, params: dict[str, str], *, torch: str | None = None,
           machine: str | None = None, allow_quick: bool = False,
           mode: Mode | None = None) -> tuple[Result, list[Result]]:
    """The newest measured result of ``benchmark`` at ``params``, and the other series' ones.
    The series measured the default way are chosen first (``series.pick``'s rule); another
    mode only where ``mode`` names it, or where it is the only one that measured it, and then
    a mode whose figures are not for citation (quick, a smoke sweep, a cap) only with
    ``allow_quick``."""
    benchmark = resolve_benchmark(rs, benchmark)
    _check_params(rs, benchmark, params)
    pool = rs
    if machine is not None:  # first: a version is matched among this machine's
        if machine not in rs.machines():
            raise XferbenchError(
                f"machine {machine!r} is not in {rs.root}: it holds {', '.join(rs.machines())}")
        pool = pool.filter(machine=machine)
    if torch is not None:
        pool = pool.filter(torch=pool.match_torch(torch))
    found = pool.find(benchmark, **params)
    everywhere = [r for r in found if r.ok]
    label = benchmark + (f" ({_kv(params)})" if params else "")
    measured = _in_mode(everywhere, label, mode, allow_quick)
    # a capped number, or one of discarded batches alone, only where there is nothing else
    measured = [r for r in measured if not (r.capped or r.not_citable)] or measured
    if not measured:
        where = f" for torch {torch}" if torch else ""
        where += f" on {machine}" if machine else ""
        why = "skipped or failed in every run" if found else "not in the results"
        raise XferbenchError(f"{label} has no measured value{where}: {why}")
    combos = {r.params for r in measured}
    if len(combos) > 1:
        declared = _declared(rs, benchmark)
        seen = {k: {str(dict(c).get(k)) for c in combos} for k in declared}
        hints = "; ".join(
            f"{k}= ({', '.join(v for v in values if v in seen[k])})"
            for k, values in declared.items() if k not in params and len(seen[k]) > 1)
        raise XferbenchError(
            f"{label} matches {len(combos)} measured parameter combinations: "
            f"give also {hints}")
    newest = max(measured, key=lambda r: (r.date_ms, r.started_ms or 0, r.torch))
    others = [r for r in everywhere if r.series != newest.series and r.params == newest.params]
    return newest, others


def _in_mode(measured: list[Result], label: str, mode: Mode | None,
             allow_quick: bool) -> list[Result]:
    """The results of the one mode a citation reads (see ``choose``)."""
    modes = sorted({r.mode for r in measured})
    if mode is not None:
        chosen = [r for r in measured if r.mode == mode]
        if measured and not chosen:
            raise XferbenchError(
                f"{label} was not measured as --mode {mode_option(mode)}: it was measured as "
                f"{'; '.join(mode_option(m) for m in modes)}")
        return chosen
    if not measured or () in modes:
        return [r for r in measured if not r.mode]
    if len(modes) > 1:
        raise XferbenchError(
            f"{label} was measured only in modes other than the default "
            f"({'; '.join(labels(m) for m in modes)}): choose one with --mode "
            f"({' or '.join(mode_option(m) for m in modes)})")
    if reasons(modes[0]) and not allow_quick:
        what = labels(modes[0])
        raise XferbenchError(
            f"{label} has only numbers measured as {what}, which are not for citation: run "
            f"the suite the default way, or pass --mode {mode_option(modes[0])} (or "
            "--allow-quick) to cite one anyway")
    return measured


def _kv(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _display_path(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def cite(rs: ResultSet, benchmark: str, params: dict[str, str] | None = None, *,
         torch: str | None = None, machine: str | None = None,
         site: str = "site", allow_quick: bool = False, mode: Mode | None = None) -> Citation:
    """The citation ``xferbench cite`` prints: the newest measured value of ``benchmark`` at
    ``params`` (narrowed by ``torch``, ``machine`` and ``mode``), its figure under ``site``."""
    r, others = choose(rs, benchmark, params or {}, torch=torch, machine=machine,
                       allow_quick=allow_quick, mode=mode)
    # the chart that draws this series (with the machine's repeats: repeats.chart_machines)
    chart = chart_trend(chart_machines(rs), r.series)
    figure = os.path.join(site, figure_path(r.benchmark, r.param_dict, chart))
    return citation(rs, r, figure=_display_path(os.path.abspath(figure)),
                    figure_exists=os.path.isfile(figure),
                    others=sorted({o.series.label for o in others}))


def citation(rs: ResultSet, r: Result, *, figure: str, figure_exists: bool = True,
             others: list[str] | tuple[str, ...] = ()) -> Citation:
    """The citation of the measured result ``r`` of ``rs``, with ``figure`` as the figure's
    path as the reader should see it."""
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
            link_caution(meta) if gpu else None, value_caution(r), cache_caution(r, meta),
            over_link_caution(meta.share_of_link(r.gbps))
            if gpu and r.param_dict.get("direction") != "d2d" else None))) or None,
        not_for_citation=_not_for_citation(rs, r), capped=r.capped,
        mode=mode_option(r.mode), how=labels(r.mode), reference=assess_result(rs, r),
        read=r.diagnostics.text() if r.diagnostics else None,
        read_warnings=r.diagnostics.warnings if r.diagnostics else ())


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


def _gpu(c: Citation) -> str:
    if c.gpu == "unknown" and str(c.device).startswith("cpu"):
        return "none (a CPU run)"
    return c.gpu if c.gpu != "unknown" else f"unknown (device {c.device})"


def rows(c: Citation) -> list[tuple[str, str]]:
    """The table: (field, text)."""
    out = [("not for citation", "; ".join(c.not_for_citation))] if c.not_for_citation else []
    out += [("benchmark", f"`{c.benchmark}`"), ("parameters", _kv(c.params) or "none"),
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
            ("PCIe link", _pcie(c)), ("machine", c.machine), ("suite commit", c.commit),
            ("measured", _date(c.measured_ms)), ("results file", f"`{c.results_file}`"),
            ("figure", f"`{c.figure}`" + ("" if c.figure_exists
                                          else " (not built yet: run `xferbench publish`)"))]
    if c.caution:
        out.append(("caution", c.caution))
    return out


def sentence(c: Citation) -> str:
    short = c.benchmark.split(".", 1)[-1]
    what = f"`{short}` ({_kv(c.params)})" if c.params else f"`{short}`"
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
            f"{' (' + ', '.join(spread) + ')' if spread else ''}{bw} on {c.machine} ({gpu}) "
            f"with PyTorch {c.torch}, CUDA {c.cuda}, driver {c.driver}; xferbench suite commit "
            f"{c.commit[:8]}, {_date(c.measured_ms)}; figure `{c.figure}`."
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
                  "(choose with --torch/--machine/--mode)."]
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
    return out



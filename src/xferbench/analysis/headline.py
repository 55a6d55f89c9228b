"""The headline ratios: one figure per practice, read from results, each with its noise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..devices import Capabilities
from ..practices import HEADLINE_NBYTES
from ..practices.copies import COPY_HOST_MEMORY, DIRECTIONS, SYNCS, CopyCase, copy_skip_reason
from ..practices.hazards import HAZARDS, STREAMS, TRIALS, UNSAFE, hazard_skip_reason
from ..practices.pipeline import INPUT_BOUND, PipelineCase, pipeline_skip_reason
from ..results import Result, ResultSet, version_key
from ..units import (
    D2D_COPIED,
    format_seconds,
    gbps,
    parse_size,
    rate_text,
    share_text,
    size_label,
)
from .cautions import noise_text
from .comparisons import ComparisonSpec, H, comparison
from .reference import assess_result, legend
from .sitemap import BANDWIDTH_BENCHMARKS, clock_of
from .stats import ratio_spread


@dataclass(frozen=True)
class Headline:
    """The comparison ``key`` (``comparisons.py``) as a headline: its title and its two sides'
    short names; baseline / practice above 1 means the practice is faster."""

    key: str  # a comparison's id
    title: str
    practice_name: str
    baseline_name: str
    reason: Callable[[Capabilities], str | None] | None = None

    @property
    def comparison(self) -> ComparisonSpec:
        return comparison(self.key)

    @property
    def benchmark(self) -> str:
        return self.comparison.practice.benchmark

    @property
    def practice(self) -> dict[str, str]:
        return self.comparison.practice.param_dict

    @property
    def baseline(self) -> dict[str, str]:
        return self.comparison.baseline.param_dict

    @property
    def nbytes(self) -> int | None:
        return self.comparison.nbytes

    @property
    def counts(self) -> str | None:
        return self.comparison.counts

    @property
    def counts_unit(self) -> str:
        return self.comparison.counts_unit


def _copy_reason(host_memory: str, sync: str, layout: str) -> Callable[[Capabilities], str | None]:
    def reason(caps: Capabilities) -> str | None:
        return copy_skip_reason(CopyCase("h2d", host_memory, sync, layout, HEADLINE_NBYTES), caps)

    return reason


def _pipeline_reason(caps: Capabilities) -> str | None:
    return pipeline_skip_reason(PipelineCase(INPUT_BOUND, "pinned", 2, "prefetch"), caps)


HEADLINES: tuple[Headline, ...] = (
    Headline("pinned_vs_pageable", f"pinned vs pageable H2D, one {H} tensor",
             "pinned", "pageable", reason=_copy_reason("pinned", "blocking", "one")),
    Headline("non_blocking_many",
             f"non_blocking vs blocking H2D, 1,000 pinned tensors, {H} in all",
             "non_blocking", "blocking", reason=_copy_reason("pinned", "non_blocking", "many")),
    Headline("create_on_device", f"torch.zeros(n, device=dev) vs torch.zeros(n).to(dev), {H}",
             "on device", "copied"),
    Headline("item_per_epoch", "loss read once per epoch vs .item() every batch, per step",
             "per epoch", "per batch"),
    Headline("pinned_prefetch", "pinned + prefetch vs pageable + blocking, DataLoader with 2 "
             "workers, small model, per step", "pinned + prefetch", "pageable + blocking",
             reason=_pipeline_reason),
)


@dataclass(frozen=True)
class HeadlineValue:
    headline: Headline
    practice: Result | None
    baseline: Result | None
    note: str = ""
    practice_count: float | None = None
    baseline_count: float | None = None

    @property
    def ratio(self) -> float | None:
        if self.practice is None or self.baseline is None:
            return None
        return self.baseline.value / self.practice.value  # type: ignore[operator]

    def gbps(self, r: Result | None) -> float | None:
        """Decimal GB/s of ``r``'s seconds where the headline's bytes are known."""
        if r is None or not r.ok or not self.headline.nbytes or r.unit != "seconds":
            return None
        return gbps(self.headline.nbytes, r.value)  # type: ignore[arg-type]

    @property
    def noise(self) -> float | None:
        """Relative spread of the ratio: the two IQR/median figures added in quadrature."""
        if self.practice is None or self.baseline is None:
            return None
        return ratio_spread(self.practice, self.baseline)


def recorded_capabilities(rs: ResultSet) -> Capabilities | None:
    """The capability probe recorded with the runs in ``rs`` (the first one found)."""
    for r in rs:
        caps = rs.metadata_for(r).capabilities
        if caps:
            return caps
    return None


def headlines(rs: ResultSet, which: tuple[Headline, ...] | None = None) -> list[HeadlineValue]:
    """The latest value of each headline in ``rs`` (filter ``rs`` to one series first)."""
    out = []
    for h in which or HEADLINES:
        c = h.comparison
        practice = rs.latest(c.practice.benchmark, **c.practice.param_dict)
        baseline = rs.latest(c.baseline.benchmark, **c.baseline.param_dict)
        note = ""
        if practice is None or baseline is None:
            caps = recorded_capabilities(rs)
            why = h.reason(caps) if (h.reason and caps) else None
            note = why or "not measured in these results"
        counts: list[float | None] = [None, None]
        if h.counts:
            for i, params in enumerate((h.practice, h.baseline)):
                r = rs.latest(h.counts, **params)
                counts[i] = r.value if r else None
        out.append(HeadlineValue(h, practice, baseline, note, *counts))
    return out


def format_headlines(values: list[HeadlineValue]) -> list[str]:
    """A Markdown table: ratio (practice faster than baseline by), noise, and the two figures."""
    lines = ["| headline | ratio | noise | figures |", "| --- | ---: | ---: | --- |"]
    for v in values:
        h = v.headline
        if v.ratio is None:
            lines.append(f"| {h.title} | n/a | | {v.note} |")
            continue
        noise = "" if v.noise is None else f"±{v.noise:.0%}"
        lines.append(f"| {h.title} | {v.ratio:.2f}x | {noise} | {_figures(v)} |")
    lines.append("")
    lines.append("ratio: baseline time / practice time (above 1: the practice is faster); "
                 "noise: IQR/median of both, in quadrature; GB/s = 10^9 bytes/s")
    return lines


def _figures(v: HeadlineValue) -> str:
    h = v.headline
    parts = []
    for name, r, count in ((h.practice_name, v.practice, v.practice_count),
                           (h.baseline_name, v.baseline, v.baseline_count)):
        assert r is not None and r.value is not None
        text = f"{name} {format_seconds(r.value)}"
        gbps = v.gbps(r)
        if gbps is not None:
            text += f" ({gbps:.1f} GB/s)"
        if count is not None:
            text += f", {count:.2f} {h.counts_unit}"
        parts.append(text)
    return " vs ".join(parts)


def copy_rows(rs: ResultSet, nbytes: int = HEADLINE_NBYTES,
              layout: str = "one") -> list[dict[str, Any]]:
    """Per clock x direction x host memory x sync at ``nbytes``: GB/s, its noise and share of
    the PCIe link's theoretical rate. The completion clock (every host<->device copy) first,
    then device time (the copies that have one)."""
    size = size_label(nbytes)
    rows: list[dict[str, Any]] = []
    for benchmark in BANDWIDTH_BENCHMARKS.values():
        for direction in (*DIRECTIONS, "d2d"):
            for host_memory in COPY_HOST_MEMORY:
                for sync in SYNCS:
                    r = rs.latest(benchmark, direction=direction, host_memory=host_memory,
                                  sync=sync, layout=layout, size=size)
                    clock = clock_of(benchmark, rs.metadata_for(r).device if r else None)
                    if r is None or any(row["clock"] == clock == "host" and row["direction"] ==
                                        direction and row["host_memory"] == host_memory
                                        and row["sync"] == sync for row in rows):
                        continue  # a CPU's host copy, once (older runs stored it twice)
                    rate = gbps(nbytes, r.value)  # type: ignore[arg-type]
                    share = rs.metadata_for(r).share_of_link(rate) if direction != "d2d" \
                        else None
                    rows.append({
                        "clock": clock, "direction": direction, "host_memory": host_memory,
                        "sync": sync, "gbps": rate, "noise": r.spread, "share_of_pcie": share,
                        "reference": assess_result(rs, r),
                    })
    return rows


def format_copy_rows(rows: list[dict[str, Any]], nbytes: int = HEADLINE_NBYTES) -> list[str]:
    if not rows:
        return [f"no copy results at {size_label(nbytes)}"]
    judged = any(r.get("reference") for r in rows)  # a GPU's copies: beside their ranges
    out = [f"Copies of one {size_label(nbytes)} tensor, each on its clock: completion (host, "
           "from the call until the copy is done, from an idle device) or device (events "
           "around calls queued back to back); GB/s = 10^9 bytes/s; noise = IQR/median; "
           "share = of the PCIe link's theoretical rate; host: a CPU's host copy"
           + (f"; {D2D_COPIED}." if any(r["direction"] == "d2d" for r in rows) else ".")
           + (f" {legend()}" if judged else ""),
           "",
           "| direction | host memory | sync | clock | GB/s | noise | share of PCIe |"
           + (" expected | verdict |" if judged else ""),
           "| --- | --- | --- | --- | ---: | ---: | ---: |" + (" --- | --- |" if judged else "")]
    for r in rows:
        noise = noise_text(r["noise"])
        share = share_text(r["share_of_pcie"])
        a = r.get("reference")
        out.append(f"| {r['direction']} | {r['host_memory']} | {r['sync']} | {r['clock']} "
                   f"| {rate_text(r['gbps'], r['direction'])} | {noise} | {share} |"
                   + (f" {a.expected} | {a.verdict} |" if a else " n/a | n/a |" if judged else ""))
    notes = [f"{r['direction']} {r['host_memory']} {r['sync']} ({r['clock']}): "
             f"{r['reference'].verdict}: {r['reference'].cause}"
             for r in rows if r.get("reference") and r["reference"].worse]
    return out + (["", *notes] if notes else [])


HAZARD_BENCHMARK = "bench_hazards.Hazards.track_wrong_fraction"


def hazard_table(rs: ResultSet) -> list[str]:
    """Markdown: per hazard and stream, the fraction of trials in which the pattern saw wrong
    data, one column per size measured; where none was, why (from the recorded capability
    probe). An idle-stream 0% of an unsafe pattern reads "0% (race not seen)", never as safe."""
    sizes = sorted({str(r.param_dict["size"]) for r in rs.find(HAZARD_BENCHMARK) if r.ok},
                   key=parse_size)
    out = [f"non_blocking hazards: the fraction of {TRIALS} trials in which the pattern saw "
           "wrong data (checked against the right value); busy: a spin queued before the "
           "work, so an unsafe pattern fails every time; idle: a race, where 0% means not "
           "seen, not safe. pageable_source_modified is the safe pattern (expected 0%).", ""]
    if not sizes:
        caps = recorded_capabilities(rs)
        out += ["| hazard | stream | fraction wrong |", "| --- | --- | --- |"]
        for kind in HAZARDS:
            for stream in STREAMS:
                why = hazard_skip_reason(kind, caps, stream) if caps else None
                out.append(f"| {kind} | {stream} | n/a: "
                           f"{why or 'not measured in these results'} |")
        return out
    out += ["| hazard | stream | " + " | ".join(sizes) + " |",
            "| --- | --- |" + " ---: |" * len(sizes)]
    for kind in HAZARDS:
        for stream in STREAMS:
            cells = []
            for size in sizes:
                r = rs.latest(HAZARD_BENCHMARK, hazard=kind, stream=stream, size=size)
                cells.append(_hazard_cell(kind, stream, r))
            out.append(f"| {kind} | {stream} | " + " | ".join(cells) + " |")
    return out


def series_tables(rs: ResultSet, ran: frozenset[str] | None = None) -> list[str]:
    """The copy table, the headlines and the hazards of one series, a blank line between:
    what ``xferbench run`` prints at its end and this module's command line for each series.
    ``ran``: the benchmarks a run measured (its ``--bench``); a table none of whose figures
    it measured is left out, so that ``--bench Loop`` prints no hazards (None: every table)."""
    def measured(name: str) -> bool:
        return ran is None or name in ran

    chosen = [v for v in headlines(rs) if measured(v.headline.benchmark)]
    blocks = [block for block, wanted in (
        (format_copy_rows(copy_rows(rs)), any(map(measured, BANDWIDTH_BENCHMARKS.values()))),
        (format_headlines(chosen), bool(chosen)),
        (hazard_table(rs), measured(HAZARD_BENCHMARK))) if wanted]
    out: list[str] = []
    for block in blocks:
        out += ["", "\n".join(block)]  # an empty block is an empty line
    return out[1:]


def _hazard_cell(kind: str, stream: str, r: Result | None) -> str:
    if r is None:
        return "n/a"
    if kind in UNSAFE and stream == "idle" and r.value == 0:
        return "0% (race not seen)"
    return f"{r.value:.0%}"


def all_series_tables(rs: ResultSet) -> list[str]:
    """Per series of ``rs`` (machine, PyTorch, how measured), its heading and
    ``series_tables``."""
    out: list[str] = []
    for key in sorted(rs.series(), key=lambda k: (k.machine, k.host, k.mode,
                                                  version_key(k.torch))):
        tail = f" ({key.how})" if key.mode else ""
        out += [f"#### {key.where}, torch {key.torch}{tail}\n",
                *series_tables(rs.filter(series=key)), ""]
    return out

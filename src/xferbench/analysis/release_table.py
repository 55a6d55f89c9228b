"""The README's figures: per machine, one table with a column per PyTorch release, each cell a
headline ratio or a copy's rate with its noise; the figures no release measured there are one
sentence each, with the reason; then why its series are not for citation (the site's banner).
``xferbench table`` prints it; ``xferbench run`` and ``xferbench table --per-series`` print
the per-series tables of ``headline.py`` instead."""

from __future__ import annotations

from ..practices import HEADLINE_NBYTES
from ..practices.hazards import HAZARDS, STREAMS, hazard_skip_reason
from ..results import ResultSet
from ..results.series import SeriesKey
from ..units import parse_size, size_label
from .cautions import noise_text
from .headline import (
    HAZARD_BENCHMARK,
    HeadlineValue,
    copy_rows,
    headlines,
    recorded_capabilities,
)
from .provenance import banner, provenance

LEGEND = ("ratio: baseline time / practice time (above 1: the practice is faster); ±: the "
          "noise, IQR/median (for a ratio, of both in quadrature); GB/s = 10^9 bytes/s; a "
          "copy's clock: completion (host, call to done), device (events) or host (a CPU's "
          "host copy)")


def _ratio_cell(v: HeadlineValue) -> str:
    if v.ratio is None:
        return "n/a"
    return f"{v.ratio:.2f}x" + ("" if v.noise is None else f" ±{v.noise:.0%}")


def _rows(series: dict[str, ResultSet]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(figure, a cell per release) for every figure some release measured; and a sentence
    per headline none did, with its reason."""
    rows: dict[str, list[str]] = {}
    blank = ["n/a"] * len(series)
    for i, rs in enumerate(series.values()):
        for row in copy_rows(rs):
            name = (f"{row['direction']} {row['host_memory']} {row['sync']} copy, "
                    f"{size_label(HEADLINE_NBYTES)}, {row['clock']} clock (GB/s)")
            noise = "" if row["noise"] is None else f" ±{noise_text(row['noise'])}"
            rows.setdefault(name, list(blank))[i] = f"{row['gbps']:.2f}{noise}"
    missing: dict[str, str] = {}
    for i, rs in enumerate(series.values()):
        for v in headlines(rs):
            if v.ratio is None:
                missing.setdefault(v.headline.title, v.note)
            else:
                rows.setdefault(v.headline.title, list(blank))[i] = _ratio_cell(v)
    for i, rs in enumerate(series.values()):
        for kind in HAZARDS:
            for stream in STREAMS:
                found = [r for r in rs.find(HAZARD_BENCHMARK, hazard=kind, stream=stream)
                         if r.ok]
                if found:
                    r = max(found, key=lambda r: parse_size(str(r.param_dict["size"])))
                    name = f"{kind}, {stream} stream, {r.param_dict['size']} (wrong reads)"
                    rows.setdefault(name, list(blank))[i] = f"{r.value:.0%}"
    gone = [f"{title} ({why})" for title, why in missing.items() if title not in rows]
    return list(rows.items()), gone


def machine_table(machine: str, series: dict[str, ResultSet]) -> list[str]:
    """Markdown for one machine: ``series`` is {torch version: its results}, oldest first."""
    rows, gone = _rows(series)
    out = [f"#### {machine}: {len(series)} PyTorch release{'s' * (len(series) != 1)}", ""]
    if rows:
        out += ["| figure | " + " | ".join(series) + " |",
                "| --- |" + " ---: |" * len(series)]
        out += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows]
        out.append("")
    if not any(r.ok for rs in series.values() for r in rs.find(HAZARD_BENCHMARK)):
        caps = recorded_capabilities(next(reversed(series.values())))
        why = hazard_skip_reason(HAZARDS[0], caps, STREAMS[0]) if caps else None
        gone.append(f"the non_blocking hazards ({why or 'not measured in these results'})")
    if gone:
        out += ["Not measured here: " + "; ".join(gone) + ".", ""]
    reasons = banner([p for rs in series.values() for p in provenance(rs)])
    if reasons:
        out += ["Not for citation: " + "; ".join(reason for reason, _ in reasons) + ".", ""]
    return out


def readme_tables(rs: ResultSet) -> list[str]:
    """Every trend's table in ``rs`` (a machine, one per host where it holds several and one
    per mode: a quick run's figures never share a default run's table), then the legend
    once."""
    trends: dict[tuple, list[SeriesKey]] = {}
    for key in rs.series():  # releases in order
        trends.setdefault((key.machine, key.host, key.mode), []).append(key)
    out: list[str] = []
    for _, keys in sorted(trends.items()):
        out += machine_table(keys[0].trend, {k.torch: rs.filter(series=k) for k in keys})
    return out + [LEGEND]

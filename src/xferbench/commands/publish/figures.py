"""The site's figures: matplotlib, drawn to SVG with text kept as text and ids salted, so a
rebuild from the same results is byte-identical."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from ...results import version_key
from ...units import GBPS
from .views import BandwidthPanel, BenchPanel, HeadlineRow, panel_param_names

# matplotlib loads inside the functions that draw: `import xferbench` stays free of it.

_LINESTYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P")


def _new_figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def _save(fig: Any, path: str) -> None:
    import matplotlib

    os.makedirs(os.path.dirname(path), exist_ok=True)
    # text stays text (searchable, small), ids are salted for byte-identical rebuilds
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "xferbench"}):
        fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    _strip_svg(path)


def _strip_svg(path: str) -> None:
    """Drop the DOCTYPE and RDF block: they name external URLs the page never needs."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text, count=1)
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def plot_headline(row: HeadlineRow, versions: list[str], path: str) -> None:
    fig, ax = _new_figure(6.4, 3.4)
    x_of = {v: i for i, v in enumerate(versions)}
    machines = sorted({m for m, _, _ in row.cells})
    for i, machine in enumerate(machines):
        pts = [(x_of[t], v.ratio, (v.noise or 0) * v.ratio) for m, t, v in row.cells
               if m == machine and v.ratio is not None]
        if not pts:
            continue
        pts.sort()
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts],
                    marker=_MARKERS[i % len(_MARKERS)], capsize=4, label=machine)
    ax.axhline(1.0, color="0.5", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(versions)), [f"torch {v}" for v in versions])
    ax.set_xlim(-0.5, len(versions) - 0.5)
    ax.set_ylabel("speed-up (baseline time / practice time)")
    ax.set_title(row.title, fontsize=10)
    ax.legend(title="machine", fontsize=8)
    _save(fig, path)


def plot_bandwidth(panel: BandwidthPanel, path: str) -> None:
    fig, ax = _new_figure(7.2, 4.2)
    versions = sorted({c.torch for c in panel.curves}, key=version_key)
    practices = list(dict.fromkeys((c.host_memory, c.sync) for c in panel.curves))
    colors = [f"C{i}" for i in range(10)]
    ticks: dict[int, str] = {}
    for c in panel.curves:
        vi, pi = versions.index(c.torch), practices.index((c.host_memory, c.sync))
        ax.plot([p[0] for p in c.points], [p[2] for p in c.points],
                color=colors[pi % len(colors)], linestyle=_LINESTYLES[vi % len(_LINESTYLES)],
                marker=_MARKERS[vi % len(_MARKERS)], markersize=4,
                label=f"{c.host_memory}, {c.sync}, torch {c.torch}")
        ticks.update({p[0]: p[1] for p in c.points})
    if panel.peak_gbps:
        ax.axhline(panel.peak_gbps, color="0.4", linewidth=0.8, linestyle="--",
                   label=f"PCIe theoretical {panel.peak_gbps:.1f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(ticks), [ticks[k] for k in sorted(ticks)])
    ax.minorticks_off()
    ax.set_xlabel("size")
    ax.set_ylabel(GBPS)
    ax.set_ylim(bottom=0)
    ax.set_title(f"{panel.direction} copies, layout {panel.layout}, on {panel.machine}",
                 fontsize=10)
    ax.legend(fontsize=7, loc="best")
    _save(fig, path)


def _scale(unit: str, values: Iterable[float]) -> tuple[float, str]:
    """(divisor, axis unit) that keeps the largest value readable: seconds and bytes only."""
    biggest = max((abs(v) for v in values), default=1.0)
    if unit == "seconds":
        steps = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
    elif unit == "bytes":
        steps = (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0), ("bytes", 1.0))
    else:
        return 1.0, unit
    return next(((scale, name) for name, scale in steps if biggest >= scale),
                (steps[-1][1], steps[-1][0]))


def plot_bench(panel: BenchPanel, path: str) -> None:
    n_rows = len(panel.combos)
    n_ver = len(panel.versions)
    fig, ax = _new_figure(7.2, 1.2 + 0.22 * n_rows * max(n_ver, 1))
    scale, unit = _scale(panel.unit, panel.values.values())
    height = 0.8 / max(n_ver, 1)
    for vi, version in enumerate(panel.versions):
        ys, xs = [], []
        for ri, combo in enumerate(panel.combos):
            value = panel.values.get((combo, version))
            if value is not None:
                ys.append(ri + (vi - (n_ver - 1) / 2) * height)
                xs.append(value / scale)
        ax.barh(ys, xs, height=height * 0.9, color=f"C{vi % 10}", label=f"torch {version}")
    ax.set_yticks(range(n_rows), [", ".join(str(v) for _, v in c) or "(no parameters)"
                                  for c in panel.combos], fontsize=7)
    ax.invert_yaxis()
    positive = [v for v in panel.values.values() if v > 0]
    if positive and max(positive) / min(positive) > 100:
        ax.set_xscale("log")
    ax.set_xlabel(f"{unit} ({'higher' if unit.endswith('/s') else 'lower'} is better)")
    names = panel_param_names(panel)
    ax.set_title(f"{panel.benchmark} on {panel.machine}"
                 + (f"\n({', '.join(names)})" if names else ""), fontsize=9)
    ax.legend(fontsize=7)
    _save(fig, path)

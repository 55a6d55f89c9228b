"""The site's figures: matplotlib, drawn to SVG with text kept as text and ids salted, so a
rebuild from the same results is byte-identical.

Every figure is at most ``WIDTH`` inches wide with text of at least 7 pt: on a 390 px phone
it is shown at its own size (3.6 in = 346 px), so its smallest text is 9.3 px; on a wide
screen the page lays several side by side. Its size does not grow with the number of
PyTorch versions (their labels turn upright past a few). Tick labels are plain text, never
mathtext, whose exponents would be drawn at 70% of the size.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable
from typing import Any

from ...analysis.stats import Verdict
from ...results.safefiles import write_text_safely
from .views import BandwidthPanel, HeadlineRow, Trend

# matplotlib loads inside the functions that draw: `import xferbench` stays free of it.

WIDTH = 3.6  # inches
SMALLEST_PT = 7.0
STYLE = {"font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
         "font.size": 8.0, "axes.titlesize": 8.0, "axes.labelsize": 7.5,
         "xtick.labelsize": SMALLEST_PT, "ytick.labelsize": SMALLEST_PT,
         "legend.fontsize": SMALLEST_PT, "legend.title_fontsize": SMALLEST_PT,
         "svg.fonttype": "none", "svg.hashsalt": "xferbench", "axes.grid": True,
         "grid.color": "0.9", "grid.linewidth": 0.6}
_MARKERS = ("o", "s", "^", "D", "v", "P")
MUTED = "0.6"


def _new_figure(width: float, height: float, *, left: float = 0.62, right: float = 0.12,
                top: float = 0.42, bottom: float = 0.45) -> Any:
    """A figure with one axes and fixed margins (inches): a laid-out figure costs a second
    draw, and the sizes here are known."""
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    fig = Figure(figsize=(width, height))
    fig.subplots_adjust(left=left / width, right=1 - right / width, top=1 - top / height,
                        bottom=bottom / height)
    return fig, fig.add_subplot()


def _save(fig: Any, path: str) -> None:
    svg = io.StringIO()
    fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    write_text_safely(path, _strip_svg(svg.getvalue()), parents=True)


def _strip_svg(text: str) -> str:
    """Drop the DOCTYPE and RDF block: they name external URLs the page never needs."""
    text = re.sub(r"<!DOCTYPE[^>]*>\s*", "", text, count=1)
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)


def draw(fn: Any, *args: Any) -> None:
    """Run a plot function with the site's style."""
    import matplotlib

    with matplotlib.rc_context(STYLE):
        fn(*args)


def _version_margin(versions: list[str]) -> float:
    """The bottom margin (inches) the version labels need: upright past three versions."""
    if len(versions) > 3:
        return 0.2 + 0.056 * max((len(v) for v in versions), default=4)
    return 0.3


def _title_margin(title: str) -> float:
    return 0.1 + 0.145 * (title.count("\n") + 1)


def _version_axis(ax: Any, versions: list[str]) -> None:
    """Versions as categories, in release order; upright labels past three of them (three
    of the longest, "2.14.1+cu130", fit side by side)."""
    ax.set_xticks(range(len(versions)))
    ax.set_xticklabels(versions, rotation=90 if len(versions) > 3 else 0)
    ax.set_xlim(-0.5, len(versions) - 0.5)
    ax.grid(False, axis="x")


def _nice_ticks(lo: float, hi: float) -> list[float]:
    """Ticks at 1, 2, 5 x 10^k within [lo, hi] (more mantissas where that gives under 3)."""
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0**k for k in range(math.floor(math.log10(lo)) - 1,
                                            math.ceil(math.log10(hi)) + 1)
                 for m in mantissas if lo <= m * 10.0**k <= hi]
        if len(ticks) >= 3:
            return ticks
    return ticks


def _log_axis(ax: Any, lo: float, hi: float, label: Any, axis: str = "y") -> None:
    """A log axis with plain-text labels at 1-2-5 ticks."""
    from matplotlib.ticker import NullLocator

    pad = (hi / lo) ** 0.06 if hi > lo else 1.2
    lo, hi = lo / pad, hi * pad
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    (ax.set_ylim if axis == "y" else ax.set_xlim)(lo, hi)
    ticks = _nice_ticks(lo, hi)
    target.set_minor_locator(NullLocator())
    target.set_ticks(ticks, [label(t) for t in ticks])


def _plain(value: float) -> str:
    """3 significant digits, no exponent for the values an axis in scaled units shows."""
    if value == 0:
        return "0"
    if abs(value) >= 100 or abs(value) < 1e-4:
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1e}"
    return f"{value:.3g}"


def _plain_axis(ax: Any) -> None:
    """A linear value axis with plain labels (no offset or exponent text above it)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda t, _pos: _plain(t)))


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


def _wrap(text: str, width: int = 48) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join([*lines, line])


def plot_headline(row: HeadlineRow, versions: list[str], path: str) -> None:
    """The speed-up per version and machine with its interval: points only, never a line,
    and hollow grey where the test finds no difference."""
    title = _wrap(row.title)
    fig, ax = _new_figure(WIDTH, 2.1 + _version_margin(versions), top=_title_margin(title),
                          bottom=_version_margin(versions))
    x_of = {v: i for i, v in enumerate(versions)}
    machines = sorted({c.series.lane for c in row.cells})
    finite: list[float] = [1.0]
    drawn: list[tuple[float, float, float, float, bool, int]] = []
    for mi, machine in enumerate(machines):
        cells = [c for c in row.cells if c.series.lane == machine and c.verdict is not None]
        for c in cells:
            v: Verdict = c.verdict  # type: ignore[assignment]
            if v.speedup is None:
                continue
            lo, hi = v.speedup_interval or (v.speedup, v.speedup)
            finite += [x for x in (v.speedup, lo, hi) if 0 < x < math.inf]
            offset = (mi - (len(machines) - 1) / 2) * 0.12
            drawn.append((x_of[c.series.torch] + offset, v.speedup, lo, hi, v.significant, mi))
    bottom, top = min(finite) / 1.1, max(finite) * 1.1
    for x, y, lo, hi, significant, mi in drawn:
        color = f"C{mi % 10}" if significant else MUTED
        lo, hi = max(lo, bottom), min(hi, top)  # an unbounded side runs to the edge
        ax.errorbar([x], [y], yerr=[[y - lo], [hi - y]], color=color, capsize=3, linewidth=1,
                    marker=_MARKERS[mi % len(_MARKERS)], markersize=5,
                    markerfacecolor=color if significant else "white")
    ax.axhline(1.0, color="0.4", linewidth=0.8, linestyle="--")
    ax.set_ylim(bottom, top)
    if top / bottom > 10:
        _log_axis(ax, bottom * 1.1, top / 1.1, lambda t: f"{t:.3g}x")
    else:
        from matplotlib.ticker import FuncFormatter

        ax.yaxis.set_major_formatter(FuncFormatter(lambda t, _pos: f"{t:.3g}x"))
    _version_axis(ax, versions)
    ax.set_ylabel("speed-up (above 1: faster)")
    ax.set_title(title)
    if len(machines) > 1:
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color=f"C{i % 10}", marker=_MARKERS[i % len(_MARKERS)],
                          linestyle="none", label=m) for i, m in enumerate(machines)]
        ax.legend(handles=handles, title="machine", loc="best")
    _save(fig, path)


def plot_bandwidth(panel: BandwidthPanel, path: str) -> None:
    """GB/s against size for the newest release, log on both axes, IQR as a band."""
    from matplotlib.ticker import NullLocator

    title = _wrap(f"{panel.direction} copies, layout {panel.layout}, {panel.clock} clock: "
                  f"torch {panel.torch} on {panel.machine}")
    rows = math.ceil((len(panel.curves) + (1 if panel.peak_gbps else 0)) / 2)
    legend = 0.14 * rows + 0.1
    fig, ax = _new_figure(WIDTH, 2.0 + 0.45 + legend + _title_margin(title),
                          top=_title_margin(title), bottom=0.45 + legend)
    ticks: dict[int, str] = {}
    values: list[float] = []
    for i, c in enumerate(panel.curves):
        xs = [p[0] for p in c.points]
        color = f"C{i % 10}"
        ax.fill_between(xs, [p[3] for p in c.points], [p[4] for p in c.points], color=color,
                        alpha=0.2, linewidth=0)
        ax.plot(xs, [p[2] for p in c.points], color=color, marker=_MARKERS[i % len(_MARKERS)],
                markersize=3.5, linewidth=1.2, label=f"{c.host_memory}, {c.sync}")
        ticks.update({p[0]: p[1] for p in c.points})
        values += [v for p in c.points for v in p[2:] if v > 0 and math.isfinite(v)]
    if panel.peak_gbps:
        ax.axhline(panel.peak_gbps, color="0.4", linewidth=0.8, linestyle="--",
                   label=f"PCIe theoretical {panel.peak_gbps:.1f}")
        values.append(panel.peak_gbps)
    if values:
        _log_axis(ax, min(values), max(values), _plain)
    ax.set_xscale("log", base=2)
    shown = sorted(ticks)
    step = max(1, math.ceil(len(shown) / 7))  # at most 7 size labels fit the width
    ax.set_xticks(shown[::step], [ticks[k] for k in shown[::step]])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("size")
    ax.set_ylabel("GB/s (10^9 bytes/s)")
    ax.set_title(title)
    fig.legend(loc="lower center", ncols=2, frameon=False, borderaxespad=0.1)
    _save(fig, path)


def plot_trend(trend: Trend, path: str) -> None:
    """One combination's value against the PyTorch version: the median, the IQR as a band;
    a step drawn solid where compare's test finds the two versions differ, dotted grey where
    it does not."""
    combo = ", ".join(str(v) for _, v in trend.params) or "no parameters"
    title = _wrap(f"{trend.benchmark.split('.', 1)[-1]}: {combo}")
    versions = list(trend.versions)
    fig, ax = _new_figure(WIDTH, 1.45 + _title_margin(title) + _version_margin(versions),
                          top=_title_margin(title), bottom=_version_margin(versions))
    values = [v for p in trend.points for v in (p.value, p.q25, p.q75)
              if v is not None and math.isfinite(v)]
    scale, unit = _scale(trend.unit, values)
    x_of = {v: i for i, v in enumerate(trend.versions)}
    xs = [x_of[p.torch] for p in trend.points]
    ys = [p.value / scale for p in trend.points]
    lo = [(p.q25 if p.q25 is not None else p.value) / scale for p in trend.points]
    hi = [(p.q75 if p.q75 is not None else p.value) / scale for p in trend.points]
    ax.fill_between(xs, lo, hi, color="C0", alpha=0.22, linewidth=0, label="IQR")
    for i, significant in enumerate(trend.steps):
        ax.plot(xs[i:i + 2], ys[i:i + 2], color="C0" if significant else MUTED,
                linestyle="-" if significant else ":", linewidth=1.4 if significant else 1.0)
    ax.plot(xs, ys, linestyle="none", marker="o", markersize=3.5, color="C0")
    positive = [v / scale for v in values if v > 0]
    if positive and max(positive) / min(positive) > 10:
        _log_axis(ax, min(positive), max(positive), _plain)
    else:
        _plain_axis(ax)
    _version_axis(ax, versions)
    better = "higher" if trend.unit.strip().endswith("/s") else "lower"
    ax.set_ylabel(f"{unit} ({better} is better)")
    ax.set_title(title)
    _save(fig, path)


#: The helpers a figure drawn in another module of publish (peer.py's heat maps) shares.
new_figure, save = _new_figure, _save

"""The site's figures: matplotlib, drawn to SVG with text kept as text and ids salted, so a
rebuild from the same results is byte-identical.

Every figure is at most ``WIDTH`` inches wide with text of at least 7 pt: on a 390 px phone
it is shown at its own size (3.6 in = 346 px), so its smallest text is 9.3 px; on a wide
screen the page lays several side by side, and a headline is drawn a second time
``WIDE`` inches wide for it, its versions side by side where they fit. Legends sit outside
the axes, under them, never over a point. A log axis ends at 1-2-5 ticks just outside the
data, each labelled, so the smallest and largest points can be read; size labels that would
run into each other are left out, the smallest and largest kept. Its size does not grow
with the number of PyTorch versions (their labels turn upright past a few). Tick labels are
plain text, never mathtext, whose exponents would be drawn at 70% of the size.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...analysis.stats import UNCHANGED, Verdict
from ...results.safefiles import write_text_safely
from .views import BandwidthPanel, HeadlineRow, Trend

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# matplotlib loads inside the functions that draw: `import xferbench` stays free of it.

WIDTH = 3.6  # inches
WIDE = 7.6  # inches: a headline on a wide screen (730 px at 96 px per inch)
SMALLEST_PT = 7.0
#: The width of one character of 7 pt text, in inches, generously (DejaVu Sans averages
#: 0.55 em; digits and "MiB" run wider): what decides whether labels collide.
CHAR_IN = SMALLEST_PT * 0.66 / 72
#: The most ticks a log axis labels: past it, the decades and its two ends.
MAX_LOG_TICKS = 8
STYLE: dict[RcKeyType, Any] = {
    "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
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


def _upright(versions: list[str], axes_in: float) -> bool:
    """Version labels turn upright where they would not fit side by side in ``axes_in``
    inches of axis (three of the longest, "2.14.1+cu130", fit a 3.6 in figure)."""
    longest = max((len(v) for v in versions), default=4) * CHAR_IN
    return longest > 0.92 * axes_in / max(len(versions), 1)


def _version_margin(versions: list[str], axes_in: float = WIDTH - 0.74) -> float:
    """The bottom margin (inches) the version labels need: more where they stand upright."""
    if _upright(versions, axes_in):
        return 0.2 + 0.056 * max((len(v) for v in versions), default=4)
    return 0.3


def _title_margin(title: str) -> float:
    return 0.1 + 0.145 * (title.count("\n") + 1)


def _version_axis(ax: Any, versions: list[str], axes_in: float = WIDTH - 0.74) -> None:
    """Versions as categories, in release order, upright where they would not fit."""
    ax.set_xticks(range(len(versions)))
    ax.set_xticklabels(versions, rotation=90 if _upright(versions, axes_in) else 0)
    ax.set_xlim(-0.5, len(versions) - 0.5)
    ax.grid(False, axis="x")


def _legend_height(entries: int, columns: int) -> float:
    """The inches a legend of ``entries`` in ``columns`` takes under the axes."""
    return 0.16 * math.ceil(entries / columns) + 0.08 if entries else 0.0


def log_ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    """(low limit, high limit, ticks) of a log axis for data in [lo, hi]: the limits are the
    1-2-5 values just outside the data, so the smallest and largest points lie between
    labelled ticks, with every 1-2-5 value between them; past MAX_LOG_TICKS, the decades
    and the two ends (thinned to every other decade if there are still too many)."""
    ladder = [m * 10.0**k for k in range(math.floor(math.log10(lo)) - 1,
                                         math.ceil(math.log10(hi)) + 2) for m in (1, 2, 5)]
    below = max(t for t in ladder if t <= lo * (1 + 1e-9))
    above = min(t for t in ladder if t >= hi * (1 - 1e-9))
    if above <= below:  # one value: the ladder steps on either side of it
        below = max(t for t in ladder if t < below * (1 - 1e-9))
        above = min(t for t in ladder if t > above * (1 + 1e-9))
    ticks = [t for t in ladder if below * (1 - 1e-9) <= t <= above * (1 + 1e-9)]
    step = 1
    while len(ticks) > MAX_LOG_TICKS:
        decades = [t for t in ticks if _is_decade(t, step)]
        ticks = sorted({below, above, *decades})
        step += 1
    return below, above, ticks


def _is_decade(t: float, step: int = 1) -> bool:
    k = math.log10(t)
    return abs(k - round(k)) < 1e-9 and round(k) % step == 0


def _log_axis(ax: Any, lo: float, hi: float, label: Any, axis: str = "y") -> None:
    """A log axis with plain-text labels (``log_ticks``)."""
    from matplotlib.ticker import NullLocator

    low, high, ticks = log_ticks(lo, hi)
    target = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log")
    (ax.set_ylim if axis == "y" else ax.set_xlim)(low / 1.02, high * 1.02)
    target.set_minor_locator(NullLocator())
    target.set_ticks(ticks, [label(t) for t in ticks])


def spaced(positions_in: list[float], labels: list[str], gap_in: float = 0.06) -> list[int]:
    """Indices of the labels to show at ``positions_in`` (inches along an axis, ascending)
    so that none runs into another: the first and last always, the others left to right
    where they keep ``gap_in`` from every label kept."""
    if len(labels) <= 2:
        return list(range(len(labels)))
    half = [len(t) * CHAR_IN / 2 for t in labels]

    def clear(i: int, j: int) -> bool:
        return abs(positions_in[i] - positions_in[j]) >= half[i] + half[j] + gap_in

    kept = [0, len(labels) - 1]
    for i in range(1, len(labels) - 1):
        if all(clear(i, j) for j in kept):
            kept.append(i)
    return sorted(kept)


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


def _legend_below(fig: Any, handles: list[Any], columns: int) -> None:
    """The figure's legend under the axes and their labels, off every point."""
    if handles:
        fig.legend(handles=handles, loc="lower center", ncols=columns, frameon=False,
                   borderaxespad=0.1, handletextpad=0.4, columnspacing=1.2)


#: A wide headline's text, larger than a phone's (it is shown at its own size on a wide
#: screen, where 7 pt would read as the small print it is on a phone).
WIDE_STYLE: dict[RcKeyType, Any] = {
    "font.size": 9.5, "axes.titlesize": 10.0, "axes.labelsize": 9.0, "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5, "legend.fontsize": 8.5}


def plot_headline(row: HeadlineRow, versions: list[str], path: str, width: float = WIDTH
                  ) -> Any:
    """The speed-up per version and machine with its interval: points only, never a line,
    and hollow grey where it shows no change (same or ambiguous). ``width``: WIDTH for a
    phone (and the page's narrow screens), WIDE for a wide screen, in larger type."""
    import matplotlib

    with matplotlib.rc_context(WIDE_STYLE if width > WIDTH else {}):
        return _headline(row, versions, path, width)


def _headline(row: HeadlineRow, versions: list[str], path: str, width: float) -> Any:
    from matplotlib.lines import Line2D

    title = _wrap(row.title, 48 if width <= WIDTH else 100)
    machines = sorted({c.series.trend for c in row.cells})
    columns = 2 if width <= WIDTH else 4
    handles = [Line2D([], [], color=f"C{i % 10}", marker=_MARKERS[i % len(_MARKERS)],
                      linestyle="none", label=m) for i, m in enumerate(machines)]
    if len(machines) == 1:
        handles = []  # the title's series: no legend needed for the one colour
    handles.append(Line2D([], [], color=MUTED, marker="o", markerfacecolor="white",
                          linestyle="none", label="hollow grey: same or ambiguous"))
    grow = WIDE_STYLE["xtick.labelsize"] / SMALLEST_PT if width > WIDTH else 1.0  # its type
    axes_in = (width - 0.74) / grow  # as much axis as 7 pt labels would have
    legend = _legend_height(len(handles), columns) * grow
    bottom_margin = _version_margin(versions, axes_in) * grow + legend
    fig, ax = _new_figure(width, (2.1 if width <= WIDTH else 2.6) + bottom_margin
                          + _title_margin(title), top=_title_margin(title),
                          bottom=bottom_margin)
    x_of = {v: i for i, v in enumerate(versions)}
    finite: list[float] = [1.0]
    drawn: list[tuple[float, float, float, float, bool, int]] = []
    for mi, machine in enumerate(machines):
        cells = [c for c in row.cells if c.series.trend == machine and c.verdict is not None]
        for c in cells:
            v: Verdict = c.verdict  # type: ignore[assignment]
            if v.speedup is None:
                continue
            lo, hi = v.speedup_interval or (v.speedup, v.speedup)
            finite += [x for x in (v.speedup, lo, hi) if 0 < x < math.inf]
            offset = (mi - (len(machines) - 1) / 2) * 0.12
            changed = v.word not in UNCHANGED
            drawn.append((x_of[c.series.torch] + offset, v.speedup, lo, hi, changed, mi))
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
    _version_axis(ax, versions, axes_in)
    ax.set_ylabel("speed-up (above 1: faster)")
    ax.set_title(title)
    _legend_below(fig, handles, columns)
    _save(fig, path)
    return fig


def _size_axis(ax: Any, ticks: dict[int, str], axes_in: float) -> None:
    """Sizes on a log2 axis, each label where it runs into no other (``spaced``)."""
    from matplotlib.ticker import NullFormatter, NullLocator

    shown = sorted(ticks)
    lo, hi = shown[0] / 2**0.5, shown[-1] * 2**0.5
    ax.set_xscale("log", base=2)
    ax.set_xlim(lo, hi)
    span = math.log2(hi) - math.log2(lo)
    at = [(math.log2(n) - math.log2(lo)) / span * axes_in for n in shown]
    keep = [shown[i] for i in spaced(at, [ticks[n] for n in shown])]
    ax.set_xticks(keep, [ticks[n] for n in keep])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks([n for n in shown if n not in keep], minor=True)  # a mark, no label
    ax.xaxis.set_minor_formatter(NullFormatter())


def plot_bandwidth(panel: BandwidthPanel, path: str) -> Any:
    """GB/s against size for the newest release, log on both axes, IQR as a band."""
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
    if ticks:
        _size_axis(ax, ticks, WIDTH - 0.74)
    ax.set_xlabel("size")
    ax.set_ylabel("GB/s copied (10^9 bytes/s; traffic 2x)" if panel.direction == "d2d"
                  else "GB/s (10^9 bytes/s)")
    ax.set_title(title)
    fig.legend(loc="lower center", ncols=2, frameon=False, borderaxespad=0.1)
    _save(fig, path)
    return fig


def plot_trend(trend: Trend, path: str) -> Any:
    """One combination's value against the PyTorch version, a line per machine (a host's
    repeats under other names beside it): the median, the IQR as a band; a step drawn solid
    where compare's test finds the two versions differ, dotted grey where it does not."""
    from matplotlib.lines import Line2D

    combo = ", ".join(str(v) for _, v in trend.params) or "no parameters"
    title = _wrap(f"{trend.benchmark.split('.', 1)[-1]}: {combo}")
    versions = list(trend.versions)
    several = len(trend.lines) > 1
    legend = _legend_height(len(trend.lines), 2) if several else 0.0
    fig, ax = _new_figure(WIDTH, 1.45 + _title_margin(title) + _version_margin(versions)
                          + legend, top=_title_margin(title),
                          bottom=_version_margin(versions) + legend)
    values = [v for p in trend.points for v in (p.value, p.q25, p.q75)
              if v is not None and math.isfinite(v)]
    scale, unit = _scale(trend.unit, values)
    x_of = {v: i for i, v in enumerate(trend.versions)}
    handles = []
    for li, line in enumerate(trend.lines):
        color, marker = f"C{li % 10}", _MARKERS[li % len(_MARKERS)]
        shift = (li - (len(trend.lines) - 1) / 2) * 0.08  # side by side, never hidden
        xs = [x_of[p.torch] + shift for p in line.points]
        ys = [p.value / scale for p in line.points]
        lo = [(p.q25 if p.q25 is not None else p.value) / scale for p in line.points]
        hi = [(p.q75 if p.q75 is not None else p.value) / scale for p in line.points]
        ax.fill_between(xs, lo, hi, color=color, alpha=0.22 if not several else 0.15,
                        linewidth=0)
        for i, significant in enumerate(line.steps):
            ax.plot(xs[i:i + 2], ys[i:i + 2], color=color if significant else MUTED,
                    linestyle="-" if significant else ":",
                    linewidth=1.4 if significant else 1.0)
        ax.plot(xs, ys, linestyle="none", marker=marker if several else "o", markersize=3.5,
                color=color)
        handles.append(Line2D([], [], color=color, marker=marker, linestyle="none",
                              label=line.name))
    positive = [v / scale for v in values if v > 0]
    if positive and max(positive) / min(positive) > 10:
        _log_axis(ax, min(positive), max(positive), _plain)
    else:
        _plain_axis(ax)
    _version_axis(ax, versions)
    better = "higher" if trend.unit.strip().endswith("/s") else "lower"
    ax.set_ylabel(f"{unit} ({better} is better)")
    ax.set_title(title)
    if several:
        _legend_below(fig, handles, 2)
    _save(fig, path)
    return fig


#: The helpers a figure drawn in another module of publish (peer.py's heat maps) shares.
new_figure, save = _new_figure, _save

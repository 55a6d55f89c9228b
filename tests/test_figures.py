"""The site's figures as a reader sees them, drawn from the committed results and measured
after rendering (matplotlib's own text extents): size labels that never run into each other,
the smallest and largest sizes labelled; log axes ending at labelled ticks outside the data;
legends off the axes; a headline drawn wide for a wide screen with its versions side by side;
a host's repeats drawn in one trend chart, a line each."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import committed_results, slow_fixture

from xferbench.commands.publish.figures import (
    MAX_LOG_TICKS,
    WIDE,
    WIDTH,
    draw,
    log_ticks,
    plot_bandwidth,
    plot_headline,
    plot_trend,
    spaced,
)
from xferbench.commands.publish.views import page_views
from xferbench.results import load


@pytest.fixture(scope="module")
@slow_fixture
def views():
    return page_views(load(str(committed_results())), 0.05, 0.10)


def rendered(fn, *args):
    """Draw ``fn(*args)`` with the site's style and render it: the figure, for measuring."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    out: list = []
    draw(lambda *a: out.append(fn(*a)), *args)
    fig = out[0]
    FigureCanvasAgg(fig).draw()
    return fig


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _labels(axis) -> list:
    return [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]


@pytest.mark.parametrize(("lo", "hi"), [(2.6, 33.0), (0.0025, 6.4), (5.0, 5.0), (1.0, 1e12),
                                        (0.83, 1.21), (3e-6, 4e-6), (0.2, 0.2)])
def test_a_log_axis_ends_at_labelled_ticks_just_outside_the_data(lo, hi):
    below, above, ticks = log_ticks(lo, hi)
    assert below <= lo and above >= hi and below < above
    assert ticks[0] == below and ticks[-1] == above  # the smallest and largest can be read
    assert 2 <= len(ticks) <= MAX_LOG_TICKS
    mantissa = {round(t / 10 ** math.floor(math.log10(t)), 6) for t in ticks}
    assert mantissa <= {1.0, 2.0, 5.0}
    decades = [10.0**k for k in range(math.ceil(math.log10(below)),
                                      math.floor(math.log10(above)) + 1)]
    if len(decades) <= MAX_LOG_TICKS - 2:  # every decade, unless there are too many
        assert all(any(math.isclose(d, t) for t in ticks) for d in decades)
    assert log_ticks(2.6, 33.0) == (2.0, 50.0, [2.0, 5.0, 10.0, 20.0, 50.0])


def test_spaced_keeps_the_ends_and_drops_what_would_collide():
    # the committed grid on a 2.86 in axis: 64MiB sits two octaves from 256MiB
    sizes = [2**12, 2**18, 2**22, 2**26, 2**28]
    labels = ["4KiB", "256KiB", "4MiB", "64MiB", "256MiB"]
    lo, hi = math.log2(sizes[0]) - 0.5, math.log2(sizes[-1]) + 0.5
    at = [(math.log2(n) - lo) / (hi - lo) * 2.86 for n in sizes]
    kept = spaced(at, labels)
    assert kept[0] == 0 and kept[-1] == 4 and 3 not in kept
    assert spaced([0.0, 0.1], ["a", "b"]) == [0, 1]  # two labels: both, always


def test_bandwidth_size_labels_never_collide_and_the_ends_are_labelled(views, tmp_path: Path):
    assert views.bandwidth
    for panel in views.bandwidth:
        fig = rendered(plot_bandwidth, panel, str(tmp_path / "b.svg"))
        ax = fig.axes[0]
        labels = _labels(ax.xaxis)
        boxes = [t.get_window_extent() for t in labels]
        assert all(not _overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), \
            [t.get_text() for t in labels]
        sizes = [p[1] for c in panel.curves for p in c.points]
        shown = [t.get_text() for t in labels]
        assert min(sizes, key=_bytes) in shown and max(sizes, key=_bytes) in shown
        low, high = ax.get_ylim()
        ticks = [t for t in ax.get_yticks() if low <= t <= high]
        values = [v for c in panel.curves for p in c.points for v in p[2:] if v > 0]
        assert min(ticks) <= min(values) and max(ticks) >= max(values)  # both ends labelled
        legend = fig.legends[0].get_window_extent()
        assert not _overlap(legend, ax.get_window_extent())


def _bytes(label: str) -> int:
    from xferbench.units import parse_size

    return parse_size(label)


@pytest.mark.parametrize("width", [WIDTH, WIDE])
def test_headline_legend_sits_off_the_points_and_a_wide_one_sets_versions_side_by_side(
        views, width, tmp_path: Path):
    measured = [row for row in views.headlines if row.measured]
    assert measured
    versions = list(views.catalog.versions)
    for row in measured:
        fig = rendered(plot_headline, row, versions, str(tmp_path / "h.svg"), width)
        ax = fig.axes[0]
        assert fig.get_figwidth() == pytest.approx(width)
        (legend,) = fig.legends
        assert not _overlap(legend.get_window_extent(), ax.get_window_extent())
        names = {t.get_text() for t in legend.get_texts()}
        assert {"cpu-2core-vm", "cpu-2core-vm-rerun"} <= names
        rotations = {t.get_rotation() for t in _labels(ax.xaxis)}
        assert rotations == ({0.0} if width == WIDE else {90.0})  # six releases fit wide
        version_boxes = [t.get_window_extent() for t in _labels(ax.xaxis)]
        assert all(not _overlap(a, b) for i, a in enumerate(version_boxes)
                   for b in version_boxes[i + 1:])
        assert all(not _overlap(legend.get_window_extent(), b) for b in version_boxes)


def test_the_repeats_of_one_host_share_a_trend_chart_a_line_each(views, tmp_path: Path):
    trends = [t for v in views.benchmarks for t in v.trends]
    # the rerun is drawn in cpu-2core-vm's charts; the Intel host (other hardware) in its own
    assert trends and {t.machine for t in trends} == {"cpu-2core-vm", "cpu-2core-vm-intel"}
    both = [t for t in trends if t.machines == ("cpu-2core-vm", "cpu-2core-vm-rerun")]
    assert both, "no chart draws both sweeps of the VM"
    t = both[0]
    assert {p.machine for p in t.points} == {"cpu-2core-vm", "cpu-2core-vm-rerun"}
    fig = rendered(plot_trend, t, str(tmp_path / "t.svg"))
    ax = fig.axes[0]
    (legend,) = fig.legends
    assert {x.get_text() for x in legend.get_texts()} == set(t.machines)
    assert not _overlap(legend.get_window_extent(), ax.get_window_extent())

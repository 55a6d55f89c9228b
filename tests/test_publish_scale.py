"""publish at the scale of twenty PyTorch versions (a generated dataset, tests/manyversions.py):
the build stays within its time, every figure within a fixed size whatever the number of
versions, each trend chart shows every version, and a step change shows as a regression."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import MANY_VERSIONS
from manyversions import STEPPED

pytestmark = pytest.mark.slow

#: Bounds. The build (20 versions, 69 figures, 19 comparisons, asv publish included) takes a
#: fraction of this; the bound leaves room for a loaded machine.
BUILD_S = 45.0
#: Every figure is 3.6 in wide (346 px: its 7 pt text is 9.3 px on a 390 px phone) and its
#: height does not grow with the versions: 4.2 in holds 2 title lines and upright labels. A
#: headline is drawn a second time 7.6 in wide, for a wide screen (headline-<key>.svg; the
#: phone's is headline-<key>-narrow.svg).
WIDTH_IN, WIDE_IN, HEIGHT_IN = 3.6, 7.6, 4.2
#: The largest figure measured 33 KB (a headline with 20 points and intervals).
FIGURE_BYTES = 60_000
#: index.html measured 0.78 MB (every comparison's rows, every citation); asv-data.js 0.74 MB.
PAGE_BYTES = 1_500_000


def svg_inches(path: Path) -> tuple[float, float]:
    head = path.read_text(encoding="utf-8")[:600]
    width, height = (float(re.search(rf'{k}="([\d.]+)pt"', head).group(1)) / 72
                     for k in ("width", "height"))
    return width, height


def test_twenty_versions_build_within_bounds(many_versions_site):
    site, seconds, versions = many_versions_site
    assert len(versions) == MANY_VERSIONS
    assert seconds <= BUILD_S, f"publish took {seconds:.1f} s for {MANY_VERSIONS} versions"
    figures = sorted((site / "figures").rglob("*.svg"))
    assert len(figures) > MANY_VERSIONS  # a chart per combination, not per version
    sizes = {f: (svg_inches(f), f.stat().st_size) for f in figures}
    wide = {f for f in figures if f.name.startswith("headline-")
            and not f.name.endswith("-narrow.svg")}
    assert wide and all(f.with_name(f.stem + "-narrow.svg") in sizes for f in wide)
    too_big = {f.name: s for f, s in sizes.items()
               if s[0][0] > (WIDE_IN if f in wide else WIDTH_IN) + 1e-6
               or s[0][1] > HEIGHT_IN or s[1] > FIGURE_BYTES}
    assert too_big == {}
    for name in ("index.html", "asv-data.js"):
        assert (site / name).stat().st_size <= PAGE_BYTES, name


def test_every_trend_chart_shows_every_version(many_versions_site):
    site, _, versions = many_versions_site
    trends = sorted((site / "figures" / "trend").rglob("*.svg"))
    assert trends
    for path in trends:
        text = path.read_text(encoding="utf-8")
        assert all(f">{v}<" in text for v in versions), path.name
        # labels are plain text: no mathtext exponent drawn at 70% of the size
        sizes = [float(x) for x in re.findall(r"font-size: ([\d.]+)px", text)]
        assert min(sizes) >= 7.0, path.name


def test_the_middle_step_change_is_suspected_without_a_repeat(many_versions_site):
    site, _, versions = many_versions_site
    page = (site / "index.html").read_text(encoding="utf-8")
    a, b = versions[MANY_VERSIONS // 2 - 1], versions[MANY_VERSIONS // 2]
    start = page.index(f"torch {a} → torch {b} on gpu-synthetic")
    step = page[start:page.index("</details>", page.index("<h4>Suspected", start))]
    # one sweep, no repeat: the step is a change at every size, none of them confirmed
    assert "<h4>Regressions (0)" in step and "No repeat of these two series" in step
    suspected = step[step.index("<h4>Suspected"):]
    short = STEPPED.split(".", 1)[1]
    assert suspected.count(short) >= 10, "the 20% step should be a change at every size"
    assert "slower" in suspected and "no repeat of both series was measured" in suspected

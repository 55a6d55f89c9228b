"""The site's pages: plain HTML over the views and figures (formatting only, no arithmetic)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from ...results import ResultSet, version_key
from ...sitemap import BANDWIDTH_BENCHMARK, headline_figure_path
from ...units import GBPS, format_seconds, format_value
from .views import BandwidthPanel, BenchPanel, HeadlineRow, Series, Step, panel_param_names


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _page(title: str, body: list[str], scripts: Iterable[str] = ()) -> str:
    head = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # no favicon request: nothing is loaded that the site does not hold
        '<link rel="icon" href="data:,">',
        f"<title>{_e(title)}</title>", '<link rel="stylesheet" href="style.css">', "</head>",
        "<body>",
        '<nav><a href="index.html">cross-version view</a> <a href="asv.html">asv data</a></nav>',
    ]
    tail = [f'<script src="{_e(s)}"></script>' for s in scripts] + ["</body>", "</html>", ""]
    return "\n".join(head + body + tail)


def _series_tags(pairs: Iterable[tuple[str, str]]) -> str:
    return ", ".join(
        f'<span class="series" data-machine="{_e(m)}" data-torch="{_e(t)}">'
        f"torch {_e(t)} on {_e(m)}</span>" for m, t in pairs)


def _figure(path: str, caption: str, pairs: Iterable[tuple[str, str]]) -> list[str]:
    return [f'<figure data-figure="{_e(path)}">',
            f'<img src="{_e(path)}" alt="{_e(caption)}">',
            f"<figcaption>{_e(caption)}. Series: {_series_tags(pairs)}. "
            f'<a href="{_e(path)}">{_e(path)}</a></figcaption>', "</figure>"]


def render_index(rs: ResultSet, all_series: list[Series], heads: list[HeadlineRow],
                 bw: list[BandwidthPanel], steps: list[Step], benches: list[BenchPanel],
                 threshold: float, warnings: list[str]) -> str:
    pairs = [(s.machine, s.torch) for s in all_series]
    body = ["<header>", "<h1>xferbench: PyTorch device-transfer practices across versions</h1>",
            f"<p>Machines: {_e(', '.join(rs.machines()))}. PyTorch versions: "
            f"{_e(', '.join(rs.torch_versions()))}. Suite commits: "
            f"{_e(', '.join(c[:8] for c in rs.commits()))}. Series: {_series_tags(pairs)}.</p>",
            f"<p>Values are asv's medians. Times are stored in seconds; bandwidth is shown in "
            f"{GBPS}, bytes over the median time.</p>"]
    body += [f'<p class="warning">{_e(w)}</p>' for w in warnings]
    body += ["</header>", "<section id=\"headlines\">", "<h2>Headlines</h2>",
             "<p>Speed-up of each practice over its baseline (baseline time / practice time; "
             "above 1: the practice is faster), per PyTorch version and machine; ± is the "
             "IQR/median of both figures in quadrature.</p>",
             '<table class="headlines"><thead><tr><th>headline</th>']
    body += [f"<th>torch {_e(t)}<br><small>{_e(m)}</small></th>" for m, t in pairs]
    body += ["</tr></thead><tbody>"]
    for row in heads:
        cells = {(m, t): v for m, t, v in row.cells}
        tds = []
        for pair in pairs:
            v = cells.get(pair)
            if v is None or v.ratio is None:
                tds.append(f'<td class="na" title="{_e(v.note if v else "")}">n/a</td>')
            else:
                noise = "" if v.noise is None else f" ±{v.noise:.0%}"
                detail = (f"{v.headline.practice_name} {format_seconds(v.practice.value)} vs "
                          f"{v.headline.baseline_name} {format_seconds(v.baseline.value)}")
                tds.append(f'<td title="{_e(detail)}">{v.ratio:.2f}x{_e(noise)}</td>')
        body.append(f"<tr><th>{_e(row.title)}</th>{''.join(tds)}</tr>")
    body.append("</tbody></table>")
    for row in heads:
        if row.measured:
            body += _figure(headline_figure_path(row.key), row.title,
                            [(m, t) for m, t, v in row.cells if v.ratio is not None])
        else:
            notes = sorted({v.note for _, _, v in row.cells if v.note})
            body.append(f'<p class="na">{_e(row.title)}: not measured '
                        f"({_e('; '.join(notes) or 'no results')}).</p>")
    body += ["</section>", '<section id="bandwidth">', "<h2>Bandwidth against size</h2>",
             f"<p>{_e(BANDWIDTH_BENCHMARK)}: {GBPS} per direction and layout; colour: host "
             "memory and sync; line style: PyTorch version.</p>"]
    if not bw:
        body.append('<p class="na">No copy was measured.</p>')
    for panel in bw:
        versions = sorted({c.torch for c in panel.curves}, key=version_key)
        body += _figure(panel.path, f"{panel.direction} copies, layout {panel.layout}, on "
                                    f"{panel.machine}", [(panel.machine, v) for v in versions])
    body += ["</section>", '<section id="regressions">',
             "<h2>Regressions between consecutive PyTorch versions</h2>",
             f"<p>Significantly worse (Mann-Whitney U on the samples, p &lt; 0.05) by more than "
             f"{threshold:.0%}, as <code>xferbench compare A B</code> reports.</p>"]
    if not steps:
        body.append('<p class="na">One PyTorch version per machine: nothing to compare.</p>')
    for step in steps:
        body.append(f"<h3>torch {_e(step.a)} → torch {_e(step.b)} on {_e(step.machine)}</h3>")
        compared = sum(1 for r in step.rows if r.ratio is not None)
        body.append(f"<p>{compared} compared, {len(step.regressions)} regressions, "
                    f"{len(step.improvements)} improvements beyond {threshold:.0%}.</p>")
        if step.regressions:
            body.append('<table class="regressions"><thead><tr><th>benchmark</th>'
                        f"<th>torch {_e(step.a)}</th><th>torch {_e(step.b)}</th>"
                        "<th>worse by</th><th>p</th></tr></thead><tbody>")
            for r in step.regressions:
                p = "" if r.p_value is None else f"{r.p_value:.2g}"
                body.append(f"<tr><td>{_e(r.label())}</td><td>{_e(format_value(r.a.value, r.unit))}"
                            f"</td><td>{_e(format_value(r.b.value, r.unit))}</td>"
                            f"<td>{r.worse_by:.2f}x</td><td>{_e(p)}</td></tr>")
            body.append("</tbody></table>")
    body += ["</section>", '<section id="benchmarks">', "<h2>Every benchmark</h2>",
             f"<p>Each benchmark's medians per parameter combination and PyTorch version "
             f"(beyond {_e(BANDWIDTH_BENCHMARK)}, drawn above).</p>"]
    if not benches:
        body.append('<p class="na">No other benchmark was measured.</p>')
    for panel in benches:
        names = panel_param_names(panel)
        caption = f"{panel.benchmark} on {panel.machine}" + (
            f" ({', '.join(names)})" if names else "")
        body += _figure(panel.path, caption, [(panel.machine, v) for v in panel.versions])
    body.append("</section>")
    return _page("xferbench results", body)


def render_asv_page() -> str:
    body = ["<h1>asv data</h1>",
            "<p>What <code>asv publish</code> wrote (raw files under <code>asv/</code>), read by "
            "this page without any library. asv's own dashboard is not shipped: it loads its "
            "scripts from CDNs.</p>",
            '<p><label>benchmark <select id="benchmark"></select></label></p>',
            '<div id="asv-view"><p>loading…</p></div>']
    return _page("xferbench: asv data", body, scripts=["asv-data.js", "asv.js"])

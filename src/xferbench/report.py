"""``xferbench publish``: asv's published data plus a cross-version view, as one static site
that renders with no network.

asv's stock front end (``index.html``) loads jQuery, flot and bootstrap from CDNs, so it is
not shipped. The site holds instead:

  index.html        the cross-version view: headline ratios per PyTorch version per machine,
                    bandwidth against size per direction, regressions between consecutive
                    PyTorch versions, and one figure per benchmark (matplotlib SVG)
  asv.html          a small self-contained page over asv's data (no library, no fetch: the
                    data travels as asv-data.js, so it works from file:// as well)
  asv/              what ``asv publish`` wrote, less its front end: index.json, graphs/, ...
  figures/*.svg     the figures; figure_path() names them, and ``xferbench cite`` quotes it
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ._errors import XferbenchError
from .results import Result, ResultSet, version_key

#: The size sweep drawn as bandwidth against size; other benchmarks get one figure each.
BANDWIDTH_BENCHMARK = "bench_copies.Copy.track_device_s"
#: A file in every site publish builds: publish replaces only a folder that holds it.
SITE_MARKER = ".xferbench-site"
#: What asv publish writes that is data; the rest is its CDN front end, not shipped.
ASV_DATA = ("index.json", "info.json", "graphs", "regressions.json", "regressions.xml")
GBPS = "GB/s (10^9 bytes/s)"


def register_cli(sub: Any) -> None:
    from .compare import THRESHOLD, _threshold

    p = sub.add_parser("publish", allow_abbrev=False,
                       help="build the static site (asv's data and the cross-version view)",
                       description="asv publish plus the cross-version view, as one static "
                                   "site that needs no network.")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="results folder (default: results)")
    p.add_argument("--out", default="site", metavar="DIR",
                   help="where the site goes (default: site); replaced as a whole")
    p.add_argument("--threshold", type=_threshold, default=THRESHOLD, metavar="PCT",
                   help="smallest change listed as a regression (default: 10%%)")
    p.set_defaults(func=cmd_publish)


# -- paths shared with cite --------------------------------------------------------------------

def figure_path(benchmark: str, params: dict[str, Any], machine: str) -> str:
    """The site-relative path of the figure that shows ``benchmark`` at ``params`` on
    ``machine`` (one scheme for publish and cite)."""
    from .runner import slug as _slug

    if benchmark == BANDWIDTH_BENCHMARK and "direction" in params and "layout" in params:
        return (f"figures/bandwidth-{_slug(machine)}-{_slug(params['direction'])}-"
                f"{_slug(params['layout'])}.svg")
    return f"figures/{_slug(benchmark)}-{_slug(machine)}.svg"


def headline_figure_path(key: str) -> str:
    from .runner import slug

    return f"figures/headline-{slug(key)}.svg"


# -- what the site shows (computing only) ------------------------------------------------------

@dataclass(frozen=True)
class Series:
    """One line or bar group: results of one machine and one PyTorch version."""

    machine: str
    torch: str
    results: ResultSet


def series(rs: ResultSet) -> list[Series]:
    """The (machine, torch) series in ``rs``, newest result per key, versions in order."""
    newest = rs.newest()
    out = []
    for machine in newest.machines():
        on = newest.filter(machine=machine)
        for version in on.torch_versions():
            out.append(Series(machine, version, on.filter(torch=version)))
    return out


def nbytes_of(params: dict[str, Any]) -> int | None:
    from .practices import parse_size

    if "size" not in params:
        return None
    try:
        return parse_size(str(params["size"]))
    except XferbenchError:
        return None


def gbps(r: Result) -> float | None:
    """Bytes per second / 1e9, where the size parameter says how many bytes moved."""
    n = nbytes_of(r.param_dict)
    if n is None or not r.ok or r.unit != "seconds" or not r.value:
        return None
    return n / r.value / 1e9


@dataclass(frozen=True)
class Curve:
    """Bandwidth against size for one practice (host memory, sync) and one series."""

    host_memory: str
    sync: str
    torch: str
    points: tuple[tuple[int, str, float], ...]  # (nbytes, size label, GB/s)


@dataclass(frozen=True)
class BandwidthPanel:
    machine: str
    direction: str
    layout: str
    curves: tuple[Curve, ...]
    peak_gbps: float | None  # the PCIe link's theoretical rate, where known

    @property
    def path(self) -> str:
        return figure_path(BANDWIDTH_BENCHMARK, {"direction": self.direction,
                                                 "layout": self.layout}, self.machine)


def bandwidth_panels(rs: ResultSet) -> list[BandwidthPanel]:
    """One panel per machine, direction and layout that has a measured copy."""
    groups: dict[tuple[str, str, str], dict[tuple[str, str, str], list]] = {}
    order = _param_order(rs, BANDWIDTH_BENCHMARK)
    for s in series(rs):
        for r in s.results.filter(benchmark=f"^{re.escape(BANDWIDTH_BENCHMARK)}$"):
            p = r.param_dict
            bw = gbps(r)
            if bw is None or "direction" not in p:
                continue
            panel = groups.setdefault((s.machine, str(p["direction"]), str(p.get("layout"))), {})
            panel.setdefault((str(p.get("host_memory")), str(p.get("sync")), s.torch), []).append(
                (nbytes_of(p), str(p["size"]), bw))
    panels = []
    for (machine, direction, layout), curves in groups.items():
        built = tuple(
            Curve(h, sy, t, tuple(sorted(points)))
            for (h, sy, t), points in sorted(curves.items(), key=lambda kv: (
                order.get(("host_memory", kv[0][0]), 99), order.get(("sync", kv[0][1]), 99),
                version_key(kv[0][2])))
        )
        peak = None if direction == "d2d" else _peak_gbps(rs, machine)
        panels.append(BandwidthPanel(machine, direction, layout, built, peak))
    panels.sort(key=lambda p: (p.machine, order.get(("direction", p.direction), 99),
                               order.get(("layout", p.layout), 99)))
    return panels


def _param_order(rs: ResultSet, benchmark: str) -> dict[tuple[str, str], int]:
    """(param name, value as text) -> position in the benchmark's declared values."""
    return {(name, str(v)): i for name, values in rs.declared_params(benchmark).items()
            for i, v in enumerate(values)}


def _peak_gbps(rs: ResultSet, machine: str) -> float | None:
    for side in rs.metadata.values():
        peak = side.get("metadata", {}).get("pcie_theoretical_bytes_per_s")
        if peak and side.get("run", {}).get("machine", machine) == machine:
            return float(peak) / 1e9
    return None


@dataclass(frozen=True)
class HeadlineRow:
    key: str
    title: str
    cells: tuple[tuple[str, str, Any], ...]  # (machine, torch, HeadlineValue)

    @property
    def measured(self) -> bool:
        return any(v.ratio is not None for _, _, v in self.cells)


def headline_rows(rs: ResultSet) -> list[HeadlineRow]:
    """Each headline's value per series (machine, PyTorch version)."""
    from .headline import HEADLINES, headlines

    cells: dict[str, list] = {}
    heads = HEADLINES
    for s in series(rs):
        for v in headlines(s.results, heads):
            cells.setdefault(v.headline.key, []).append((s.machine, s.torch, v))
    return [HeadlineRow(h.key, h.title, tuple(cells.get(h.key, ()))) for h in heads]


@dataclass(frozen=True)
class Step:
    """Compare rows between two consecutive PyTorch versions on one machine."""

    machine: str
    a: str
    b: str
    rows: tuple[Any, ...]

    @property
    def regressions(self) -> list[Any]:
        from .compare import WORSE

        return [r for r in self.rows if r.mark == WORSE]

    @property
    def improvements(self) -> list[Any]:
        from .compare import BETTER

        return [r for r in self.rows if r.mark == BETTER]


def version_steps(rs: ResultSet, threshold: float) -> list[Step]:
    from .compare import compare_results

    by_machine: dict[str, list[Series]] = {}
    for s in series(rs):
        by_machine.setdefault(s.machine, []).append(s)
    steps = []
    for machine, ss in sorted(by_machine.items()):
        for a, b in zip(ss, ss[1:]):
            rows, _ = compare_results(a.results, b.results, threshold=threshold)
            steps.append(Step(machine, a.torch, b.torch, tuple(rows)))
    return steps


@dataclass(frozen=True)
class BenchPanel:
    """Every measured parameter combination of one benchmark on one machine, per version."""

    benchmark: str
    machine: str
    unit: str
    combos: tuple[tuple[tuple[str, Any], ...], ...]
    versions: tuple[str, ...]
    values: dict[tuple[tuple[tuple[str, Any], ...], str], float]  # (params, torch) -> value

    @property
    def path(self) -> str:
        return figure_path(self.benchmark, {}, self.machine)


def bench_panels(rs: ResultSet) -> list[BenchPanel]:
    panels = []
    newest = rs.newest()
    for machine in newest.machines():
        on = newest.filter(machine=machine)
        for name in sorted({r.benchmark for r in on}):
            if name == BANDWIDTH_BENCHMARK:
                continue
            results = [r for r in on if r.benchmark == name and r.ok]
            if not results:
                continue
            order = _param_order(rs, name)
            combos = sorted({r.params for r in results}, key=lambda ps: [
                order.get((k, str(v)), 99) for k, v in ps])
            versions = tuple(sorted({r.torch for r in results}, key=version_key))
            values = {(r.params, r.torch): float(r.value) for r in results}  # type: ignore[arg-type]
            panels.append(BenchPanel(name, machine, results[0].unit, tuple(combos), versions,
                                     values))
    return panels


# -- figures (matplotlib, SVG) -----------------------------------------------------------------

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


def panel_param_names(panel: BenchPanel) -> list[str]:
    return [k for k, _ in panel.combos[0]] if panel.combos else []


# -- HTML (formatting only) --------------------------------------------------------------------

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
    from .compare import format_value
    from .measurement import format_seconds

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


# -- asv publish -------------------------------------------------------------------------------

def _git_branches(repo: str, wanted: list[str]) -> list[str]:
    """Configured branches that exist here; else HEAD (a detached CI checkout)."""
    found = []
    for b in wanted:
        try:
            ok = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{b}"],
                                cwd=repo, capture_output=True).returncode == 0
        except OSError:
            raise XferbenchError("publish needs git: asv orders results by the suite's "
                                 "history") from None
        if ok:
            found.append(b)
    return found or ["HEAD"]


def run_asv_publish(repo: str, results_dir: str, html_dir: str, work: str) -> None:
    from .runner import _asv_config

    conf_path = _asv_config(repo, results_dir, work)
    with open(conf_path) as fh:
        conf = json.load(fh)
    conf["html_dir"] = html_dir
    conf["branches"] = _git_branches(repo, list(conf.get("branches") or ["main"]))
    with open(conf_path, "w") as fh:
        json.dump(conf, fh)
    proc = subprocess.run([sys.executable, "-m", "asv", "publish", "--config", conf_path],
                          cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "HOME": work})
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise XferbenchError(f"asv publish failed (exit {proc.returncode}): {last[0]}")
    for name in os.listdir(html_dir):  # its front end needs CDNs: keep the data only
        if name not in ASV_DATA:
            path = os.path.join(html_dir, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def asv_bundle(html_dir: str) -> dict[str, Any]:
    """asv's index and every graph it wrote, as one object for asv.html."""
    from asv.graph import Graph

    with open(os.path.join(html_dir, "index.json"), encoding="utf-8") as fh:
        index = json.load(fh)
    series_out = []
    for params in index.get("graph_param_list", []):
        graphs = {}
        for name in index.get("benchmarks", {}):
            rel = Graph.get_file_path(params, name) + ".json"
            path = os.path.join(html_dir, rel)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as fh:
                    graphs[name] = json.load(fh)
        if graphs:
            series_out.append({"params": params, "graphs": graphs})
    series_out.sort(key=lambda s: (str(s["params"].get("machine")),
                                   version_key(str(s["params"].get("torch", "")))))
    benchmarks = {name: {k: info.get(k) for k in ("params", "param_names", "unit", "type")}
                  for name, info in index.get("benchmarks", {}).items()}
    return {"revision_to_hash": index.get("revision_to_hash", {}),
            "revision_to_date": index.get("revision_to_date", {}),
            "benchmarks": benchmarks, "series": series_out}


# -- the whole site ----------------------------------------------------------------------------

@dataclass
class Site:
    out: str
    figures: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    asv_series: int = 0
    warnings: list[str] = field(default_factory=list)


def _check_out(out: str) -> None:
    if not os.path.exists(out):
        return
    if not os.path.isdir(out):
        raise XferbenchError(f"--out {out} is a file: give a folder for the site")
    if os.listdir(out) and not os.path.exists(os.path.join(out, SITE_MARKER)):
        raise XferbenchError(
            f"--out {out} holds files that publish did not write: give an empty or new folder"
        )


def _asset(name: str) -> str:
    from importlib.resources import files

    return files("xferbench").joinpath("site", name).read_text(encoding="utf-8")


def build(rs: ResultSet, out_dir: str, *, repo: str, threshold: float) -> Site:
    """Write the site into ``out_dir`` (which must not exist yet)."""
    site = Site(out_dir)
    os.makedirs(out_dir)
    with tempfile.TemporaryDirectory(prefix="xferbench-publish-") as work:
        asv_dir = os.path.join(out_dir, "asv")
        run_asv_publish(repo, rs.root, asv_dir, work)
    bundle = asv_bundle(asv_dir)
    site.asv_series = len(bundle["series"])
    shown = set(bundle["revision_to_hash"].values())
    lost = [c for c in rs.commits() if c not in shown]
    if lost:
        site.warnings.append(
            f"asv's data leaves out results at suite commit {', '.join(c[:8] for c in lost)}: "
            "not on a branch of this clone's history (a shallow clone?); the cross-version "
            "view (index.html) still shows them")
    with open(os.path.join(out_dir, "asv-data.js"), "w", encoding="utf-8") as fh:
        fh.write("window.XFERBENCH_ASV = ")
        json.dump(bundle, fh, separators=(",", ":"), allow_nan=False, default=str)
        fh.write(";\n")

    all_series = series(rs)
    versions = rs.torch_versions()
    heads = headline_rows(rs)
    for row in heads:
        if row.measured:
            path = headline_figure_path(row.key)
            plot_headline(row, versions, os.path.join(out_dir, path))
            site.figures.append(path)
    bw = bandwidth_panels(rs)
    for panel in bw:
        plot_bandwidth(panel, os.path.join(out_dir, panel.path))
        site.figures.append(panel.path)
    benches = bench_panels(rs)
    for bp in benches:
        plot_bench(bp, os.path.join(out_dir, bp.path))
        site.figures.append(bp.path)
    steps = version_steps(rs, threshold)

    pages = {
        "index.html": render_index(rs, all_series, heads, bw, steps, benches, threshold,
                                   site.warnings),
        "asv.html": render_asv_page(),
        "style.css": _asset("style.css"),
        "asv.js": _asset("asv.js"),
        SITE_MARKER: "built by xferbench publish; publish replaces this folder as a whole\n",
    }
    for name, text in pages.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as fh:
            fh.write(text)
        site.pages.append(name)
    return site


def publish(results: str = "results", out: str = "site", *, threshold: float | None = None,
            repo: str | None = None) -> Site:
    """Build the site next to ``out`` and swap it in: on any error nothing is written."""
    from .compare import THRESHOLD
    from .results import load
    from .runner import find_repo

    rs = load(results)  # bad input stops here, before anything is written
    out = os.path.abspath(out)
    _check_out(out)
    repo = repo or find_repo()
    parent = os.path.dirname(out)
    made = _missing_parents(parent)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}-new-", dir=parent)
    try:
        site = build(rs, os.path.join(staging, "site"), repo=repo,
                     threshold=THRESHOLD if threshold is None else threshold)
        if os.path.exists(out):  # an earlier site (it holds SITE_MARKER): goes with staging
            os.replace(out, os.path.join(staging, "old"))
        os.replace(os.path.join(staging, "site"), out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in made:  # innermost first: only the folders made here, if still empty
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        raise
    shutil.rmtree(staging, ignore_errors=True)
    site.out = out
    return site


def _missing_parents(folder: str) -> list[str]:
    """``folder`` and its ancestors that do not exist yet, innermost first."""
    out = []
    while folder and not os.path.exists(folder):
        out.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return out


def format_site(site: Site) -> list[str]:
    rel = os.path.relpath(site.out)
    if rel.startswith(".."):
        rel = site.out
    lines = [f"site: {rel}/index.html ({len(site.figures)} figures; asv data for "
             f"{site.asv_series} series in {rel}/asv.html)"]
    lines += [f"warning: {w}" for w in site.warnings]
    lines.append(f"open {rel}/index.html in a browser, or serve it: "
                 f"python -m http.server -d {rel}")
    return lines


def cmd_publish(args: argparse.Namespace) -> int:
    site = publish(args.results, args.out, threshold=args.threshold)
    for line in format_site(site):
        print(line)
    return 0

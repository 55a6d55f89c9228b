"""Building the site: ``asv publish`` for asv's data (its CDN front end dropped), then the
figures and pages, written into a staging folder and swapped in whole, so that a failed
build leaves the previous site untouched.

  index.html        the cross-version view: a banner where the metadata says the numbers are
                    not for citation, each series' provenance, the headlines with interval,
                    samples, verdict and citation, the copy table, bandwidth against size,
                    the changes between consecutive PyTorch versions, and per benchmark one
                    trend chart per parameter combination with what was not measured and why
  asv.html          a small self-contained page over asv's data (no library, no fetch: the
                    data travels as asv-data.js, so it works from file:// as well)
  asv/              what ``asv publish`` wrote, less its front end: index.json, graphs/, ...
  figures/          the figures, matplotlib SVG (paths from ``xferbench.analysis.sitemap``, which
                    ``cite`` quotes); site.js picks the trend charts to show
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from ...analysis.provenance import Provenance
from ...analysis.sitemap import headline_figure_path
from ...analysis.stats import ALPHA, THRESHOLD
from ...errors import XferbenchError
from ...practices import HEADLINE_NBYTES
from ...results import ResultSet, load, version_key
from ...results.asvfiles import ASV_FORMAT_VERSION
from ...results.filesystem import why_failed
from ...results.repo import git_branches, load_asv_config, write_asv_config
from ...results.safefiles import (
    UnwritableError,
    load_json,
    remove_file,
    remove_tree,
    write_json_safely,
    write_text_safely,
)
from ...results.series import Selection, SeriesKey, mode_of
from ...results.suite import CLONE, Suite, find_suite
from .figures import WIDE, WIDTH, draw, plot_bandwidth, plot_headline, plot_trend
from .pages import IndexPage, render_asv_page, render_index
from .peer import draw_peer, peer_page
from .sitefolder import (
    SITE_MARKER,
    SiteFolder,
    check_site_folder,
    clean_staging,
    swap_in,
    write_marker,
)
from .views import Catalog, PageViews, page_views

# asv loads inside the functions that need it: `import xferbench` stays free of it.

__all__ = ["SITE_MARKER", "Site", "build", "format_site", "publish"]

#: What asv publish writes that is data; the rest is its CDN front end, not shipped.
ASV_DATA = ("index.json", "info.json", "graphs", "regressions.json", "regressions.xml")


def run_asv_publish(suite: Suite, results_dir: str, html_dir: str, work: str) -> None:
    conf_path = write_asv_config(suite, results_dir, work)
    with open(conf_path) as fh:
        conf = json.load(fh)
    conf["html_dir"] = html_dir
    if suite.source == CLONE:  # the package's listing has the one branch
        conf["branches"] = git_branches(suite.root, list(conf.get("branches") or ["main"]))
    write_json_safely(conf_path, conf)
    proc = subprocess.run([sys.executable, "-m", "asv", "publish", "--config", conf_path],
                          cwd=suite.root, capture_output=True, text=True,
                          env={**os.environ, "HOME": work})
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        m = re.search(r"\[Errno (\d+)\] ([^:']+)", last[0])
        if m:  # the disk, not asv: said as any write of the site is, naming where
            exc = OSError(int(m.group(1)), m.group(2).strip())
            raise UnwritableError(f"cannot write the site's asv data {html_dir}: "
                                  f"{why_failed(exc)}", exc.errno, html_dir)
        raise XferbenchError(f"asv publish failed (exit {proc.returncode}): {last[0]}")
    for name in os.listdir(html_dir):  # its front end needs CDNs: keep the data only
        if name not in ASV_DATA:
            path = os.path.join(html_dir, name)
            remove_tree(path) if os.path.isdir(path) else remove_file(path)


def stage_for_asv(rs: ResultSet, dest: str) -> list[str]:
    """A results folder for ``asv publish`` at ``dest``: the files of ``rs``'s series, with
    the benchmark list every command reads (``asvfiles.load_benchmarks``). asv's publish
    drops a result whose benchmark version (a hash of its code) is not the list's, so an
    older run vanishes from its view once a newer suite has run: such a file is copied
    without its versions, which asv keeps; every other file is linked. Returns the files so
    copied."""
    os.makedirs(dest)
    write_json_safely(os.path.join(dest, "benchmarks.json"),
                      {**rs.benchmarks, "version": ASV_FORMAT_VERSION})
    older = []
    for path in sorted({r.path for r in rs}):
        folder = os.path.join(dest, os.path.basename(os.path.dirname(path)))
        if not os.path.isdir(folder):
            os.makedirs(folder)
            _link(os.path.join(os.path.dirname(path), "machine.json"), folder)
        data = load_json(path, "results file")
        columns = data.get("result_columns") or []
        column = columns.index("version") if "version" in columns else None
        kept = False
        for name, row in data.get("results", {}).items():
            version = (rs.benchmarks.get(name) or {}).get("version")
            if column is not None and column < len(row) and row[column] not in (None, version):
                row[column], kept = None, True
        if kept:
            write_json_safely(os.path.join(folder, os.path.basename(path)), data)
            older.append(path)
        else:
            _link(path, folder)
    return older


def _link(path: str, folder: str) -> None:
    """``path`` into ``folder`` as a link (a copy where links cannot be made)."""
    target = os.path.join(folder, os.path.basename(path))
    try:
        os.symlink(os.path.abspath(path), target)
    except OSError:
        shutil.copyfile(path, target)


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


@dataclass
class Site:
    out: str
    figures: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    asv_series: int = 0
    warnings: list[str] = field(default_factory=list)


def _asset(name: str) -> str:
    return (files(__package__) / "static" / name).read_text(encoding="utf-8")


def commit_url(index: dict[str, Any]) -> str | None:
    """The prefix a commit hash is appended to for a link (asv's ``show_commit_url``), or
    None where asv.conf.json sets none."""
    url = str(index.get("show_commit_url") or "")
    return url if url.startswith(("https://", "http://")) else None


def series_of(cat: Catalog, params: dict[str, Any]) -> Provenance | None:
    """The catalog's series (its provenance) of one of asv's graph series: the one of its
    machine and torch, or, where several modes share them, the one its params' mode names
    (files older than those params have one series per machine and torch)."""
    machine, torch = str(params.get("machine")), str(params.get("torch"))
    found = [s.provenance for s in cat.series if (s.machine, s.torch) == (machine, torch)]
    if len(found) > 1:
        found = [p for p in found if p.key == SeriesKey(machine, torch, mode_of(params))]
    return found[0] if len(found) == 1 else None


def add_outcomes(bundle: dict[str, Any], cat: Catalog) -> None:
    """Give each series of asv.html its combinations without a number and why, and its
    device (asv's graph parameters name the CUDA build, not the device it ran on)."""
    by_series: dict[tuple[str, str], dict[str, list]] = {}
    reasons: dict[str, int] = {}  # "status: reason" -> its index in bundle["reasons"]
    for u in cat.missing:
        combo = [str(v) for _, v in u.params]
        why = reasons.setdefault(f"{u.status}: {u.reason}", len(reasons))
        by_series.setdefault((u.machine, u.torch), {}).setdefault(u.benchmark, []).append(
            [combo, why])
    bundle["reasons"] = list(reasons)
    for s in bundle["series"]:
        p = series_of(cat, s["params"])
        key = (p.key.trend, p.torch) if p else ("", "")
        s["outcomes"] = by_series.get(key, {})
        s["label"] = p.label if p else ", ".join(f"{k} {v}" for k, v in s["params"].items())
        s["device"] = f"{p.hardware} ({p.device})" if p else "unknown"
        s["quick"] = bool(p and p.quick)
    bundle["all_benchmarks"] = sorted(cat.rs.benchmarks)


def build(rs: ResultSet, out_dir: str, *, suite: Suite, threshold: float,
          alpha: float = ALPHA) -> Site:
    """Write the site into ``out_dir`` (which must not exist yet)."""
    site = Site(out_dir)
    os.makedirs(out_dir)
    # the results asv reads are staged inside the site being built (its disk and its
    # messages), and gone before the site is marked
    staged = os.path.join(out_dir, ".asv-results")
    with tempfile.TemporaryDirectory(prefix="xferbench-publish-") as work:
        asv_dir = os.path.join(out_dir, "asv")
        older = stage_for_asv(rs, staged)
        run_asv_publish(suite, staged, asv_dir, work)
    remove_tree(staged)
    if older:
        site.warnings.append(older_code_warning(rs, older))
    bundle = asv_bundle(asv_dir)
    with open(os.path.join(asv_dir, "index.json"), encoding="utf-8") as fh:
        link = commit_url(json.load(fh))
    site.asv_series = len(bundle["series"])
    shown = set(bundle["revision_to_hash"].values())
    lost = [c for c in rs.commits() if c not in shown]
    if lost:
        site.warnings.append(
            f"asv's data leaves out results at suite commit {', '.join(c[:8] for c in lost)}: "
            "not on a branch of this clone's history (a shallow clone?); the cross-version "
            "view (index.html) still shows them")
    views, peers = page_views(rs, alpha, threshold), peer_page(rs)  # computed, then drawn
    add_outcomes(bundle, views.catalog)
    data = json.dumps(bundle, separators=(",", ":"), allow_nan=False, default=str)
    write_text_safely(os.path.join(out_dir, "asv-data.js"), f"window.XFERBENCH_ASV = {data};\n")
    site.figures += draw_figures(views, out_dir)
    draw_peer(peers, out_dir, draw, site.figures)
    pages = {
        "index.html": render_index(IndexPage(
            views, threshold=threshold, alpha=alpha, warnings=site.warnings, commit_url=link,
            headline_nbytes=HEADLINE_NBYTES, peers=peers)),
        "asv.html": render_asv_page([s.provenance for s in views.series]),
        "style.css": _asset("style.css"),
        "asv.js": _asset("asv.js"),
        "site.js": _asset("site.js"),
    }
    for name, text in pages.items():
        write_text_safely(os.path.join(out_dir, name), text)
        site.pages.append(name)
    write_marker(out_dir)
    return site


def older_code_warning(rs: ResultSet, older: list[str]) -> str:
    """The page's sentence on the series measured by an older version of some benchmarks'
    code than the suite's list: which (per trend, its releases), and why asv.html still
    draws them."""
    trends: dict[str, set[str]] = {}
    for key in {r.series for r in rs if r.path in set(older)}:
        trends.setdefault(key.trend, set()).add(key.torch)
    which = "; ".join(f"{t}: {', '.join(sorted(v, key=version_key))}"
                      for t, v in sorted(trends.items()))
    return (f"{sum(map(len, trends.values()))} series were measured by an older version of "
            f"some benchmarks' code than the suite that ran last ({which}): asv's own publish "
            "would leave them out of its view; asv.html keeps them, and a change along one of "
            "their lines at that commit may be the benchmark's, not PyTorch's")


def draw_figures(views: PageViews, out_dir: str) -> list[str]:
    """Every figure of the index under ``out_dir``: the headlines measured, the bandwidth
    panels, each benchmark's trends; their paths, as the page names them."""
    paths = []
    for row in views.headlines:
        if row.measured:  # wide for a wide screen, narrow for a phone (the page picks)
            for path, width in ((headline_figure_path(row.key), WIDE),
                                (headline_figure_path(row.key, narrow=True), WIDTH)):
                draw(plot_headline, row, list(views.catalog.versions),
                     os.path.join(out_dir, path), width)
                paths.append(path)
    for panel in views.bandwidth:
        draw(plot_bandwidth, panel, os.path.join(out_dir, panel.path))
        paths.append(panel.path)
    for view in views.benchmarks:
        for trend in view.trends:
            draw(plot_trend, trend, os.path.join(out_dir, trend.path))
            paths.append(trend.path)
    return paths


def publish(results: str = "results", out: str = "site", *, threshold: float | None = None,
            alpha: float = ALPHA, suite: Suite | None = None,
            selection: Selection | None = None) -> Site:
    """Build the site of the series ``selection`` leaves (every one where None) next to
    ``out`` and swap it in: on any error nothing is written, and what is the user's in
    ``out`` is refused before the build, never deleted."""
    rs = load(results).select(selection or Selection())  # bad input stops here
    folder = check_site_folder(out)
    suite = suite or find_suite()
    load_asv_config(suite.root)  # a damaged asv.conf.json is said now, not after the figures
    made = _missing_parents(folder.parent)
    os.makedirs(folder.parent, exist_ok=True)
    clean_staging(folder)
    staging = tempfile.mkdtemp(prefix=f".{folder.base}-new-{os.getpid()}-", dir=folder.parent)
    try:
        site = _built(rs, folder, staging, suite,
                      THRESHOLD if threshold is None else threshold, alpha)
        swap_in(folder, os.path.join(staging, "site"), staging)
    except BaseException:
        remove_tree(staging)
        for parent in made:  # innermost first: only the folders made here, if still empty
            with contextlib.suppress(OSError):
                os.rmdir(parent)
        raise
    remove_tree(staging)
    site.out = os.path.abspath(out)
    return site


def _built(rs: ResultSet, folder: SiteFolder, staging: str, suite: Suite, threshold: float,
           alpha: float) -> Site:
    """``build`` into ``staging``; a file it cannot write is named as the site's, not as the
    staging folder's (which the user never sees)."""
    built = os.path.join(staging, "site")
    try:
        return build(rs, built, suite=suite, threshold=threshold, alpha=alpha)
    except UnwritableError as exc:
        raise UnwritableError(str(exc).replace(built, folder.given.rstrip(os.sep)),
                              exc.errno, folder.real) from None


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

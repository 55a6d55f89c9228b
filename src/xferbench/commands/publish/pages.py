"""The site's pages as wholes: ``index.html`` (its sections, top to bottom, from ``sections``
and ``across``) and ``asv.html``. Formatting only, no arithmetic."""

from __future__ import annotations

from dataclasses import dataclass

from ...analysis.provenance import Provenance
from ...units import GBPS, size_label
from .across import bandwidth_section, benchmark_section, changes_section
from .claims import claims_section
from .machines import machine_tables
from .markup import e, page
from .peer import PeerPage, peer_sections
from .sections import (
    banner_html,
    copy_section,
    headline_section,
    machines_section,
    provenance_section,
)
from .views import PageViews


@dataclass(frozen=True)
class IndexPage:
    """What index.html shows: the views (``views.page_views``) and how they were judged."""

    views: PageViews
    threshold: float
    alpha: float
    warnings: list[str]
    commit_url: str | None  # a commit hash appended to it is the commit's page; None: no links
    headline_nbytes: int
    peers: PeerPage | None = None  # peer matrices and stream copies under contention (peer.py)


def _header(p: IndexPage, side_by_side: bool) -> list[str]:
    provs = [s.provenance for s in p.views.series]
    machines = sorted({prov.machine for prov in provs})
    versions = list(dict.fromkeys(prov.torch for prov in provs))
    body = ["<header>", "<h1>xferbench: PyTorch device-transfer practices across versions</h1>",
            *banner_html(provs),
            f"<p>{len(provs)} series: PyTorch {e(', '.join(versions))} on "
            f"{e(', '.join(machines))}. Values are medians of the recorded samples; times are "
            f"stored in seconds; bandwidth is {GBPS}. Every number below links to the "
            "sentence <code>xferbench cite</code> prints for it.</p>",
            '<p class="jump"><a href="#headlines">headlines</a> <a href="#series">series</a> '
            '<a href="#copies">copies</a> '
            + ('<a href="#machines">machines</a> ' if side_by_side else "")
            + '<a href="#bandwidth">bandwidth</a> '
            + ('<a href="#peer">peer copies</a> ' if p.peers and p.peers.views else "")
            + ('<a href="#contention">contention</a> ' if p.peers and p.peers.contention
               else "")
            + '<a href="#changes">changes</a> <a href="#benchmarks">every benchmark</a></p>']
    body += [f'<p class="warning">{e(w)}</p>' for w in p.warnings]
    body.append("</header>")
    return body


def sections(p: IndexPage) -> list[list[str]]:
    """The index's sections, top to bottom: the headlines first (on a phone the first one
    is then a screen or so down, not below every series' provenance), each series'
    provenance after them, then the copies, the machines side by side, bandwidth, peer
    copies, the changes between releases and every benchmark; the claims, a summary of the
    advice with its verdicts, before all."""
    v = p.views
    size = size_label(p.headline_nbytes)
    return [claims_section(v.catalog, p.alpha),  # the advice and its verdicts come first
            headline_section(v.headlines, p.alpha),
            provenance_section(v.series, p.commit_url),
            copy_section(v.copies, size),
            machines_section(machine_tables(v.series, v.headlines, v.copies), size),
            bandwidth_section(v.bandwidth),
            peer_sections(p.peers),
            changes_section(v.steps, p.threshold, p.alpha),
            benchmark_section(v.benchmarks, p.alpha)]


def render_index(p: IndexPage) -> str:
    parts = sections(p)
    side_by_side = any('<section id="machines">' in line for part in parts for line in part[:1])
    body = _header(p, side_by_side)
    for part in parts:
        body += part
    return page("xferbench results", body, scripts=["site.js"])


def render_asv_page(series: list[Provenance]) -> str:
    body = ["<h1>asv data</h1>", *banner_html(series),
            "<p>What <code>asv publish</code> wrote (raw files under <code>asv/</code>), read by "
            "this page without any library: one column per series, the value at its newest "
            "commit. asv's own dashboard is not shipped: it loads its scripts from CDNs.</p>",
            '<p><label>benchmark <select id="benchmark"></select></label></p>',
            '<div id="asv-view"><p>loading…</p></div>']
    return page("xferbench: asv data", body, scripts=["asv-data.js", "asv.js"])

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
    peers: PeerPage | None = None  # peer matrices and contention lanes (peer.py), if any


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
            '<p class="jump"><a href="#series">series</a> <a href="#headlines">headlines</a> '
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


def render_index(p: IndexPage) -> str:
    v = p.views
    side_by_side = machines_section(machine_tables(v.series, v.headlines, v.copies),
                                    size_label(p.headline_nbytes))
    body = _header(p, bool(side_by_side))
    body += claims_section(v.catalog, p.alpha)  # the advice and its verdicts come first
    body += provenance_section(v.series, p.commit_url)
    body += headline_section(v.headlines, p.alpha)
    body += copy_section(v.copies, size_label(p.headline_nbytes))
    body += side_by_side
    body += bandwidth_section(v.bandwidth)
    body += peer_sections(p.peers)
    body += changes_section(v.steps, p.threshold, p.alpha)
    body += benchmark_section(v.benchmarks, p.alpha)
    return page("xferbench results", body, scripts=["site.js"])


def render_asv_page(series: list[Provenance]) -> str:
    body = ["<h1>asv data</h1>", *banner_html(series),
            "<p>What <code>asv publish</code> wrote (raw files under <code>asv/</code>), read by "
            "this page without any library: one column per series, the value at its newest "
            "commit. asv's own dashboard is not shipped: it loads its scripts from CDNs.</p>",
            '<p><label>benchmark <select id="benchmark"></select></label></p>',
            '<div id="asv-view"><p>loading…</p></div>']
    return page("xferbench: asv data", body, scripts=["asv-data.js", "asv.js"])

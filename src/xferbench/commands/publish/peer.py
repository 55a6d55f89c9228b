"""The peer-copy matrices on the site: one heat map per machine and layout (GB/s per ordered
pair of devices; "no peer access" cells marked, a pair no series measured marked n/a), and a
table of every cell with its peer access, its first copy and the citation ``xferbench cite``
prints for it. The matrices are the results layer's (``xferbench.analysis.peermatrix``)."""

from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass
from typing import Any

from ...analysis.citation import Citation, citation, command, sentence
from ...analysis.peermatrix import (
    ContentionRow,
    PeerCell,
    PeerMatrix,
    contention_rows,
    peer_access_note,
    peer_matrices,
)
from ...results import ResultSet
from ...results.series import mode_option
from ...units import GBPS, size_label
from .figures import WIDTH, new_figure, save
from .markup import (
    anchor,
    cells,
    citations,
    cite_entry,
    cite_link,
    code,
    e,
    figure,
    self_link,
    table,
)

# matplotlib loads inside the functions that draw: `import xferbench` stays free of it.

NO_PEER = "no peer access"
HEADERS = ["source", "destination", GBPS, "peer access", "first copy", "samples"]


@dataclass(frozen=True)
class PeerRow:
    """A measured cell with its citation and the note a quote of it must carry."""

    cell: PeerCell
    cite: Citation | None
    note: str | None


@dataclass(frozen=True)
class PeerView:
    matrix: PeerMatrix
    rows: tuple[PeerRow, ...]


def peer_views(rs: ResultSet) -> list[PeerView]:
    """Every machine's matrices, each cell with its citation (where it has a number)."""
    out = []
    for m in peer_matrices(rs):
        rows = []
        for c in m.cells:
            r = c.result
            cite = citation(rs, r, figure=m.path) if r is not None and r.ok else None
            rows.append(PeerRow(c, cite, peer_access_note(rs, r) if r is not None else None))
        out.append(PeerView(m, tuple(rows)))
    return out


def _label(cell: PeerCell) -> str:
    """The text in a heat map cell."""
    value = "n/a" if cell.gbps is None else f"{cell.gbps:.3g}"
    return value + ("\nno peer" if cell.peer_access is False else "")


def plot_peer(m: PeerMatrix, path: str) -> None:
    """The heat map: rows the source device, columns the destination, colour GB/s; the
    diagonal (a copy within one device: d2d) grey, a pair without peer access hatched."""
    from matplotlib.patches import Rectangle

    n = len(m.devices)
    grid = [[math.nan] * n for _ in range(n)]
    for c in m.cells:
        if c.gbps is not None:
            grid[m.devices.index(c.src)][m.devices.index(c.dst)] = c.gbps
    side = min(WIDTH - 1.5, 0.55 * n + 0.6)
    title = "\n".join([f"peer copies, {m.layout} {size_label(m.nbytes)}, torch {m.torch}",
                       *textwrap.wrap(m.machine, 44)])
    top = 0.25 + 0.15 * (title.count("\n") + 1)
    fig, ax = new_figure(WIDTH, side + top + 0.55, left=0.75, right=WIDTH - 0.75 - side,
                         top=top, bottom=0.55)
    image = ax.imshow(grid, cmap="viridis", vmin=0)
    fig.colorbar(image, ax=ax, fraction=0.08, pad=0.04).set_label(GBPS)
    names = [f"{m.device_type}:{i}" for i in m.devices]
    ax.set_xticks(range(n), names, rotation=90 if n > 4 else 0)
    ax.set_yticks(range(n), names)
    ax.set_xlabel("destination")
    ax.set_ylabel("source")
    ax.grid(False)
    for i in range(n):
        ax.add_patch(Rectangle((i - 0.5, i - 0.5), 1, 1, color="0.85"))
        ax.text(i, i, "d2d", ha="center", va="center", fontsize=7, color="0.35")
    peak = max((c.gbps for c in m.cells if c.gbps is not None), default=0.0) or 1.0
    for c in m.cells:
        x, y = m.devices.index(c.dst), m.devices.index(c.src)
        if c.peer_access is False:
            ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, hatch="///",
                                   edgecolor="white", linewidth=0))
        light = c.gbps is None or c.gbps / peak > 0.6  # viridis is light at its top
        ax.text(x, y, _label(c), ha="center", va="center", fontsize=7,
                color="black" if light else "white")
    ax.set_title(title)
    save(fig, path)


def _row(v: PeerView, row: PeerRow) -> tuple[str, str | None]:
    """The cell's table row and its citation (None where it has no number)."""
    c, m = row.cell, v.matrix
    ident = anchor("peer", m.machine, m.layout, str(c.src), str(c.dst))
    access = "n/a" if c.peer_access is None else ("yes" if c.peer_access else NO_PEER)
    first = "n/a" if c.first_copy_s is None else f"{c.first_copy_s * 1e3:.3g} ms"
    r = c.result
    n = len(r.samples) if r is not None and r.samples else None
    rate = f"{c.gbps:.2f}" if c.gbps is not None else f'<span class="na">n/a: {e(c.reason)}</span>'
    link = f" {cite_link(ident)}" if row.cite is not None else ""
    html_row = (f'<tr id="{e(ident)}"' + (' class="no-peer"' if c.peer_access is False else "")
                + ">" + cells(HEADERS, [
                    f"{self_link(ident)} {e(m.device_type)}:{c.src}{link}",
                    f"{e(m.device_type)}:{c.dst}", rate, e(access), e(first),
                    str(n) if n else "n/a"]) + "</tr>")
    if row.cite is None:
        return html_row, None
    cmd = f"{command(row.cite)} --device {m.device_type}:{c.src}"
    note = f" Note: {row.note}." if row.note else ""
    return html_row, cite_entry(
        ident, f"{e(m.device_type)}:{c.src} to {e(m.device_type)}:{c.dst}",
        f'<p class="sentence">{code(sentence(row.cite))}{e(note)}</p>'
        f"<pre><code>{e(cmd)}</code></pre>")


def peer_section(views: list[PeerView]) -> list[str]:
    """The heat maps and their cells; nothing where no peer copy was measured."""
    if not views:
        return []
    body = ['<section id="peer">', "<h2>Peer copies between devices</h2>",
            f"<p><code>dst.copy_(src)</code> from each device (row) to each other device "
            f"(column), {GBPS} from device time on the source's stream at the size named; "
            f"hatched cells and rows marked \u201c{NO_PEER}\u201d are pairs whose "
            "<code>can_device_access_peer</code> was False (the copy is staged through host "
            "memory); the first copy of a pair (it enables peer access) is timed apart.</p>"]
    for v in views:
        m = v.matrix
        caption = (f"{m.machine}, torch {m.torch}: peer copies, {m.layout} "
                   f"{size_label(m.nbytes)}, {GBPS}")
        body += figure(m.path, caption, attrs=f' id="{e(anchor("peer", m.machine, m.layout))}"')
        made = [_row(v, row) for row in v.rows]
        body += table("peer", HEADERS, [html_row for html_row, _ in made])
        body += citations([entry for _, entry in made if entry])
    body.append("</section>")
    return body


CONTENTION_HEADERS = ["series", "mode", "stream", f"alone ({GBPS})", f"together ({GBPS})",
                      "together / alone"]


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _contention_cite(row: ContentionRow, ident: str) -> str | None:
    r = row.together
    if r is None:
        return None
    params = ",".join(f"{k}={v}" for k, v in r.params)
    cmd = (f"xferbench cite Contention.track_together_s --params {params} --torch {row.torch} "
           f"--machine {row.machine} --device {row.device}"
           + (f" --mode {mode_option(r.mode)}" if r.mode else ""))
    return cite_entry(ident, f"{e(row.machine)}, {e(row.device)}: stream {e(row.stream)}",
                      f"<pre><code>{e(cmd)}</code></pre>")


def contention_section(rows: list[ContentionRow]) -> list[str]:
    """Each stream copy alone and together, and per mode the sum over its copies."""
    if not rows:
        return []
    body = ['<section id="contention">', "<h2>The host link under contention</h2>",
            "<p>Pinned <code>non_blocking</code> copies, each on a stream of its own, "
            "device time: together (every copy of the mode at once: host-to-all, all-to-host "
            "over the chosen devices; bidirectional, both directions on one device) and alone "
            "(the others idle). Together over alone is the loss to contention; the sum row "
            "adds a mode's copies.</p>"]
    out: list[str] = []
    cites: list[str] = []
    groups: dict[tuple[str, str, str, str], list[ContentionRow]] = {}
    for row in rows:
        groups.setdefault((row.machine, row.torch, row.device, row.mode), []).append(row)
    for (machine, torch, device, mode), copies in groups.items():
        series = f"{machine}, torch {torch}, {device}"
        for row in copies:
            ratio = "n/a" if row.ratio is None else f"{row.ratio:.2f}x"
            ident = anchor("contention", machine, torch, device, mode, row.stream)
            entry = _contention_cite(row, ident)
            link = f" {cite_link(ident)}" if entry else ""
            out.append(f'<tr id="{e(ident)}">' + cells(CONTENTION_HEADERS, [
                e(series) + link, e(mode), e(row.stream), _rate(row.alone_gbps),
                _rate(row.together_gbps), ratio]) + "</tr>")
            cites += [entry] if entry else []
        alone = [r.alone_gbps for r in copies if r.alone_gbps is not None]
        together = [r.together_gbps for r in copies if r.together_gbps is not None]
        if len(copies) > 1 and alone and together:
            out.append('<tr class="sum">' + cells(CONTENTION_HEADERS, [
                e(series), e(mode), "sum", _rate(sum(alone)), _rate(sum(together)),
                f"{sum(together) / sum(alone):.2f}x"]) + "</tr>")
    body += table("contention", CONTENTION_HEADERS, out)
    body += citations(cites)
    body.append("</section>")
    return body


@dataclass(frozen=True)
class PeerPage:
    """What the index shows of several devices: the peer matrices and the stream copies
    under contention."""

    views: tuple[PeerView, ...] = ()
    contention: tuple[ContentionRow, ...] = ()


def peer_page(rs: ResultSet) -> PeerPage:
    return PeerPage(tuple(peer_views(rs)), tuple(contention_rows(rs)))


def draw_peer(p: PeerPage, out_dir: str, draw: Any, figures: list[str]) -> PeerPage:
    """Draw each heat map under ``out_dir`` with ``draw`` (the site's style), adding its path
    to ``figures``; the page, to show."""
    for v in p.views:
        draw(plot_peer, v.matrix, os.path.join(out_dir, v.matrix.path))
        figures.append(v.matrix.path)
    return p


def peer_sections(p: PeerPage | None) -> list[str]:
    """The peer section and the contention section; nothing where neither was measured."""
    if p is None:
        return []
    return peer_section(list(p.views)) + contention_section(list(p.contention))

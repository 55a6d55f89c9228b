"""The site's pages: plain HTML over the views and figures (formatting only, no arithmetic).
This module holds the page shell, the banner, the series' provenance, the headlines and the
copy table; ``sections`` the changes between versions, bandwidth and every benchmark."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable
from typing import Any

from ...asvrepo import slug
from ...citation import Citation, command, sentence
from ...provenance import Provenance, banner, cautions
from ...sitemap import headline_figure_path
from ...stats import NO_DIFFERENCE, Verdict
from ...units import GBPS, format_seconds, format_value
from .views import CopyRow, HeadlineRow, Series


def e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def page(title: str, body: list[str], scripts: Iterable[str] = ()) -> str:
    head = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # no favicon request: nothing is loaded that the site does not hold
        '<link rel="icon" href="data:,">',
        f"<title>{e(title)}</title>", '<link rel="stylesheet" href="style.css">', "</head>",
        "<body>",
        '<nav><a href="index.html">cross-version view</a> <a href="asv.html">asv data</a></nav>',
    ]
    tail = [f'<script src="{e(s)}"></script>' for s in scripts] + ["</body>", "</html>", ""]
    return "\n".join(head + body + tail)


def anchor(*parts: str) -> str:
    return "-".join(slug(p) for p in parts)


def self_link(ident: str) -> str:
    return f'<a class="self" href="#{e(ident)}" title="link to this row">#</a>'


def figure(path: str, caption: str, attrs: str = "", lazy: bool = False) -> list[str]:
    """A figure that links to its SVG; ``lazy`` ones load when scrolled to (and never while
    the trend picker hides them)."""
    load = ' loading="lazy"' if lazy else ""
    return [f'<figure{attrs} data-figure="{e(path)}">',
            f'<a href="{e(path)}"><img src="{e(path)}" alt="{e(caption)}"{load}></a>',
            f"<figcaption>{e(caption)}</figcaption>", "</figure>"]


def table(cls: str, headers: list[str], rows: list[str]) -> list[str]:
    """A table whose cells carry their header (data-label): narrow screens stack the rows."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    return [f'<table class="{cls} stack"><thead><tr>{head}</tr></thead><tbody>', *rows,
            "</tbody></table>"]


def cells(headers: list[str], values: list[str]) -> str:
    labels = [" ".join(re.sub(r"<[^>]+>", " ", h).split()) for h in headers]
    return "".join(f'<td data-label="{e(label)}">{v}</td>' for label, v in zip(labels, values))


# -- numbers -----------------------------------------------------------------------------------

def times(x: float | None) -> str:
    if x is None:
        return "n/a"
    return "inf" if math.isinf(x) else f"{x:.3f}x" if x < 10 else f"{x:.3g}x"


def interval(iv: tuple[float, float] | None, alpha: float, test: str) -> str:
    """"0.981x to 1.004x (95%)"; an open side says so; where there are too few samples,
    "unbounded"."""
    if iv is None:
        return "n/a (no samples)" if test != "99% CI" else "n/a"
    lo, hi = iv
    level = "asv's 99% CIs" if test == "99% CI" else f"{1 - alpha:.0%}"
    if lo <= 0 and math.isinf(hi):
        return f"unbounded ({level}: too few samples)"
    if lo <= 0:
        return f"up to {times(hi)} ({level})"
    if math.isinf(hi):
        return f"from {times(lo)} ({level})"
    return f"{times(lo)} to {times(hi)} ({level})"


def samples(*counts: int | None) -> str:
    return " / ".join("not recorded" if n is None else str(n) for n in counts)


def verdict_cell(v: Verdict) -> str:
    p = "" if v.p_value is None else f", p = {v.p_value:.2g}"
    cls = "ns" if v.word == NO_DIFFERENCE else "sig"
    return f'<span class="verdict {cls}" title="{e(v.test)}{e(p)}">{e(v.word)}</span>'


def row_class(v: Verdict | None) -> str:
    return ' class="ns"' if v is None or not v.significant else ""


def code(text: str) -> str:
    """Escape ``text`` and set `backticked` spans as code, as the sentence is written."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", e(text))


def cite_block(cites: Iterable[Citation]) -> str:
    """The sentence ``xferbench cite`` prints, the command that prints it and the figure."""
    out = ['<details class="cite"><summary>cite</summary>']
    for c in cites:
        out += [f'<p class="sentence">{code(sentence(c))}</p>',
                f"<pre><code>{e(command(c))}</code></pre>",
                f'<p class="figure-link">figure: <a href="{e(c.figure)}">{e(c.figure)}</a></p>']
    out.append("</details>")
    return "".join(out)


# -- header, banner, provenance ----------------------------------------------------------------

def banner_html(series: list[Provenance]) -> list[str]:
    """The "not for citation" banner, from the metadata; empty when every series may be
    cited."""
    reasons = banner(series)
    out = []
    if reasons:
        out += ['<div class="banner" id="not-for-citation" role="note">',
                "<p><strong>Not for citation.</strong> What the metadata says about these "
                "results:</p><ul>"]
        for reason, hit in reasons:
            who = ("every series" if len(hit) == len(series)
                   else ", ".join(p.label for p in hit))
            out.append(f"<li>{e(who)}: {e(reason)}.</li>")
        out += ["</ul></div>"]
    warned = cautions(series)
    if warned:
        out += ['<div class="banner caution" id="caution" role="note">',
                "<p><strong>Caution.</strong> These series may be cited with this said:</p>"
                "<ul>"]
        out += [f"<li>{e(p.label)}: {e(text)}.</li>" for text, p in warned]
        out += ["</ul></div>"]
    return out


def commit_link(commit: str, commit_url: str | None) -> str:
    if not commit_url:
        return f"<code>{e(commit[:8])}</code>"
    return f'<a class="commit" href="{e(commit_url + commit)}"><code>{e(commit[:8])}</code></a>'


PROVENANCE_HEADERS = ["series", "measured", "suite commit", "device", "driver", "CUDA",
                      "torch build", "threads", "Python", "OS", "run"]


def provenance_section(series: list[Series], commit_url: str | None) -> list[str]:
    rows = []
    for s in series:
        p = s.provenance
        build = p.torch + (f" (git {p.torch_git[:8]})" if p.torch_git else "")
        run = ("quick" if p.quick else "full") + (", cut short" if p.complete is False else "")
        values = [f'<span class="series" data-machine="{e(p.machine)}" data-torch='
                  f'"{e(p.torch)}">{e(p.label)}</span>', e(p.date),
                  ", ".join(commit_link(c, commit_url) for c in p.commits or (p.commit,)),
                  e(p.hardware + (f" ({p.device})" if p.device != "unknown" else "")),
                  e(p.driver or "none"),
                  e(p.cuda + (" (the build's; unused on a CPU)" if p.cpu_only else "")
                    if p.cuda else "none (CPU build)"), e(build),
                  e(p.threads if p.threads is not None else "not recorded"),
                  e(p.python or "unknown"), e(p.os or "unknown"), e(run)]
        rows.append(f'<tr id="{e(anchor("series", p.machine, p.torch))}">'
                    f"{cells(PROVENANCE_HEADERS, values)}</tr>")
    return ['<section id="series">', "<h2>Series</h2>",
            "<p>One series per machine and PyTorch build: where and how its numbers were "
            "measured (threads: torch's intra-op threads in the benchmark processes).</p>",
            *table("provenance", PROVENANCE_HEADERS, rows), "</section>"]


# -- headlines ---------------------------------------------------------------------------------

HEADLINE_HEADERS = ["series", "speed-up", "interval", "samples<br><small>practice / baseline"
                    "</small>", "verdict", "medians"]


def headline_section(heads: list[HeadlineRow], alpha: float) -> list[str]:
    body = ['<section id="headlines">', "<h2>Headlines</h2>",
            "<p>Speed-up of each practice over its baseline: baseline time / practice time "
            "(above 1: the practice is faster). The interval is every speed-up the "
            f"Mann-Whitney U test on the samples does not reject at {1 - alpha:.0%} (the test "
            "<code>xferbench compare</code> runs); the verdict is that test's. Rows the test "
            "cannot tell from 1 are grey, and the figures draw points, never a trend.</p>"]
    for row in heads:
        ident = anchor("headline", row.key)
        body += [f'<section class="headline" id="{e(ident)}">',
                 f"<h3>{e(row.title)} {self_link(ident)}</h3>"]
        if not row.measured:
            notes = sorted({c.value.note for c in row.cells if c.value.note})
            body += [f'<p class="na">Not measured: {e("; ".join(notes) or "no results")}.</p>',
                     "</section>"]
            continue
        body += ['<div class="figures">',
                 *figure(headline_figure_path(row.key), row.title + ": speed-up per version"),
                 "</div>"]
        rows = []
        for c in row.cells:
            h = c.value.headline
            ident = anchor("headline", row.key, c.series.machine, c.series.torch)
            label = f"{self_link(ident)} {e(c.series.provenance.label)}"
            v = c.verdict
            if v is None:
                rows.append(f'<tr id="{e(ident)}" class="ns">' + cells(HEADLINE_HEADERS, [
                    label, "n/a", "", "", "not measured", e(c.value.note)]) + "</tr>")
                continue
            practice, base = c.value.practice, c.value.baseline
            medians = (f"{e(h.practice_name)} {e(format_seconds(practice.value))} vs "  # type: ignore[union-attr,arg-type]
                       f"{e(h.baseline_name)} {e(format_seconds(base.value))}")  # type: ignore[union-attr,arg-type]
            rows.append(f'<tr id="{e(ident)}"{row_class(v)}>' + cells(HEADLINE_HEADERS, [
                label, times(v.speedup), e(interval(v.speedup_interval, alpha, v.test)),
                samples(v.n_b, v.n_a), verdict_cell(v), medians]) + "</tr>")
            rows.append(f'<tr class="cite-row"><td colspan="{len(HEADLINE_HEADERS)}">'
                        f"{cite_block(c.cites)}</td></tr>")
        body += table("headlines", HEADLINE_HEADERS, rows)
        body.append("</section>")
    body.append("</section>")
    return body


# -- the copy table ----------------------------------------------------------------------------

COPY_HEADERS = ["copy", "clock", "GB/s", "median", "IQR / median", "of PCIe", "samples"]


def copy_section(tables: list[tuple[Series, list[CopyRow]]], size: str) -> list[str]:
    body = ['<section id="copies">', f"<h2>Copies of {e(size)}</h2>",
            f"<p>Every measured copy at {e(size)}, per series: {GBPS}, bytes over the "
            "median time on the clock the row names (completion: host, from the call until "
            "the copy is done; device: events around calls queued back to back); the share "
            "of the PCIe link's theoretical rate where the link is known. The newest release "
            "of each machine is open.</p>"]
    newest = {s.machine: s.torch for s, _ in tables}
    for s, rows in tables:
        ident = anchor("copies", s.machine, s.torch)
        opened = " open" if newest[s.machine] == s.torch else ""
        body.append(f'<details class="series-block" id="{e(ident)}"{opened}><summary>'
                    f"{e(s.provenance.label)}: {len(rows)} copies</summary>")
        if not rows:
            body += ['<p class="na">No copy was measured at this size.</p>', "</details>"]
            continue
        out = []
        for row in rows:
            r = row.result
            ident = anchor("copy", s.machine, s.torch, row.clock,
                           *(str(v) for k, v in r.params if k != "size"))
            what = ", ".join(str(v) for k, v in r.params if k != "size")
            share = "n/a" if row.share_of_pcie is None else f"{row.share_of_pcie:.0%}"
            spread = "n/a" if r.spread is None else f"{r.spread:.1%}"
            n = len(r.samples) if r.samples else None
            out.append(f'<tr id="{e(ident)}">' + cells(COPY_HEADERS, [
                f"{self_link(ident)} {e(what)}", e(row.clock),
                f"{r.gbps:.2f}" if r.gbps else "n/a",
                e(format_value(r.value, r.unit)), spread, share, samples(n)]) + "</tr>")
            out.append(f'<tr class="cite-row"><td colspan="{len(COPY_HEADERS)}">'
                       f"{cite_block([row.cite])}</td></tr>")
        body += table("copies", COPY_HEADERS, out)
        body.append("</details>")
    body.append("</section>")
    return body

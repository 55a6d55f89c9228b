"""The sections at the top of the site's index page: the banner, each series' provenance, the
headlines, the copy table and the machines side by side (``across`` has the rest: the changes
between consecutive PyTorch versions, bandwidth against size and every benchmark). Formatting
only, no arithmetic: the numbers come from ``views`` and ``machines``."""

from __future__ import annotations

from ...analysis.cautions import noise_text
from ...analysis.provenance import Provenance, banner, cautions
from ...analysis.sitemap import headline_figure_path
from ...results import Result
from ...units import D2D_COPIED, GBPS, format_seconds, format_value, rate_text, share_text
from .catalog import SeriesView
from .machines import MachineTable
from .markup import (
    anchor,
    cells,
    citations,
    cite_body,
    cite_entry,
    cite_link,
    e,
    figure,
    interval,
    row_class,
    samples,
    self_link,
    table,
    times,
    verdict_cell,
)
from .views import CopyRow, HeadlineCell, HeadlineRow


def banner_html(series: list[Provenance]) -> list[str]:
    """The "not for citation" banner, from the metadata, and the cautions a citation carries;
    empty when every series may be cited as it is."""
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


def provenance_section(series: list[SeriesView], commit_url: str | None) -> list[str]:
    rows = []
    for s in series:
        p = s.provenance
        build = p.torch + (f" (git {p.torch_git[:8]})" if p.torch_git else "")
        run = p.how + ((", still going" if p.running else ", cut short")
                       if p.complete is False else "") \
            + (", sampled under a budget cap" if p.capped and "capped" not in p.how else "")
        values = [f'<span class="series" data-machine="{e(p.machine)}" data-torch='
                  f'"{e(p.torch)}">{e(p.label)}</span>', e(p.date),
                  ", ".join(commit_link(c, commit_url) for c in p.commits or (p.commit,)),
                  e(p.hardware + (f" ({p.device})" if p.device != "unknown" else "")),
                  e(p.driver or "none"),
                  e(p.cuda + (" (the build's; unused on a CPU)" if p.cpu_only else "")
                    if p.cuda else "none (CPU build)"), e(build),
                  e(p.threads if p.threads is not None else "not recorded"),
                  e(p.python or "unknown"), e(p.os or "unknown"), e(run)]
        rows.append(f'<tr id="{e(anchor("series", p.key.trend, p.torch))}">'
                    f"{cells(PROVENANCE_HEADERS, values)}</tr>")
    machines = sorted({s.provenance.machine for s in series})
    return ['<section id="series">', "<h2>Series</h2>",
            "<p>One series per machine, PyTorch build and way of measuring (run: full, or "
            "the mode that keeps its figures apart: quick, a thread count, a sweep, a "
            "device, a cap): where and how its numbers were measured (threads: torch's "
            "intra-op threads in the benchmark processes).</p>",
            f'<details class="series-table" open><summary>{len(series)} series on '
            f"{e(', '.join(machines))}: date, suite commit, device, driver, CUDA, build, "
            "threads, Python, OS</summary>",
            *table("provenance", PROVENANCE_HEADERS, rows), "</details>", "</section>"]


# -- headlines ---------------------------------------------------------------------------------

HEADLINE_HEADERS = ["series", "speed-up", "interval", "samples<br><small>practice / baseline"
                    "</small>", "verdict", "medians", ""]  # the last: the row's cite link


def headline_section(heads: list[HeadlineRow], alpha: float) -> list[str]:
    body = ['<section id="headlines">', "<h2>Headlines</h2>",
            "<p>Speed-up of each practice over its baseline: baseline time / practice time "
            "(above 1: the practice is faster). The interval is every speed-up the "
            f"Mann-Whitney U test on the samples does not reject at {1 - alpha:.0%} (the test "
            "<code>xferbench compare</code> runs); the verdict is that test's: faster or "
            "slower beyond the threshold, same where the whole interval lies within it, "
            "ambiguous where neither can be shown. Rows without a change shown are grey, and "
            "the figures draw points, never a trend.</p>"]
    # the measured first, each with its figure and table; the others after them, a line each
    for row in [h for h in heads if h.measured]:
        ident = anchor("headline", row.key)
        body += [f'<section class="headline" id="{e(ident)}">',
                 f"<h3>{e(row.title)} {self_link(ident)}</h3>"]
        body += ['<div class="figures wide">',
                 *figure(headline_figure_path(row.key), row.title + ": speed-up per version",
                         attrs=' class="wide"',
                         narrow=headline_figure_path(row.key, narrow=True)),
                 "</div>"]
        rows, cites = [], []
        for c in row.cells:
            h = c.value.headline
            ident = anchor("headline", row.key, c.series.trend, c.series.torch)
            label = f"{self_link(ident)} {e(c.series.provenance.label)}"
            v = c.verdict
            if v is None:
                rows.append(f'<tr id="{e(ident)}" class="ns">' + cells(HEADLINE_HEADERS, [
                    label, "n/a", "", "", "not measured", e(c.value.note), ""]) + "</tr>")
                continue
            practice, base = c.value.practice, c.value.baseline
            medians = (f"{e(h.practice_name)} {e(format_seconds(practice.value))} vs "  # type: ignore[union-attr,arg-type]
                       f"{e(h.baseline_name)} {e(format_seconds(base.value))}")  # type: ignore[union-attr,arg-type]
            rows.append(f'<tr id="{e(ident)}"{row_class(v)}>' + cells(HEADLINE_HEADERS, [
                label, times(v.speedup), e(interval(v.speedup_interval, v.level, v.test)),
                samples(v.n_b, v.n_a), verdict_cell(v), medians, cite_link(ident)]) + "</tr>")
            cites.append(cite_entry(ident, e(c.series.provenance.label), cite_body(c.cites)))
        body += table("headlines", HEADLINE_HEADERS, rows)
        body += citations(cites)
        body.append("</section>")
    unmeasured = [h for h in heads if not h.measured]
    if unmeasured:
        body.append('<section class="headline-na"><h3>Not measured here</h3><ul>')
        for row in unmeasured:
            ident = anchor("headline", row.key)
            notes = sorted({c.value.note for c in row.cells if c.value.note})
            body.append(f'<li class="na" id="{e(ident)}">{e(row.title)}: '
                        f'{e("; ".join(notes) or "no results")} {self_link(ident)}</li>')
        body.append("</ul></section>")
    body.append("</section>")
    return body


# -- the copy table ----------------------------------------------------------------------------

COPY_HEADERS = ["copy", "clock", "GB/s", "median", "IQR / median", "of PCIe", "samples", ""]
#: Beside a GPU's copies: the published range for its GPU and link, and the verdict.
REFERENCE_HEADERS = ["expected", "verdict"]


def copy_section(tables: list[tuple[SeriesView, list[CopyRow]]], size: str) -> list[str]:
    body = ['<section id="copies">', f"<h2>Copies of {e(size)}</h2>",
            f"<p>Every measured copy at {e(size)}, per series: {GBPS}, bytes over the "
            "median time on the clock the row names (completion: host, from the call until "
            "the copy is done; device: events around calls queued back to back); the share "
            "of the PCIe link's theoretical rate where the link is known; "
            f"{e(D2D_COPIED)}. The newest release of each machine is open.</p>"]
    newest = {s.trend: s.torch for s, _ in tables}
    for s, rows in tables:
        ident = anchor("copies", s.trend, s.torch)
        opened = " open" if newest[s.trend] == s.torch else ""
        body.append(f'<details class="series-block" id="{e(ident)}"{opened}><summary>'
                    f"{e(s.provenance.label)}: {len(rows)} copies</summary>")
        if not rows:
            body += ['<p class="na">No copy was measured at this size.</p>', "</details>"]
            continue
        out, cites = [], []
        judged = any(row.cite.reference for row in rows)
        headers = COPY_HEADERS[:-1] + REFERENCE_HEADERS * judged + COPY_HEADERS[-1:]
        for row in rows:
            r = row.result
            ident = anchor("copy", s.trend, s.torch, row.clock,
                           *(str(v) for k, v in r.params if k != "size"))
            what = ", ".join(str(v) for k, v in r.params if k != "size")
            share = share_text(row.share_of_pcie)
            spread = e(noise_text(r.spread))
            n = len(r.samples) if r.samples else None
            out.append(f'<tr id="{e(ident)}">' + cells(headers, [
                f"{self_link(ident)} {e(what)}", e(row.clock),
                rate_text(r.gbps, r.param_dict.get("direction")) if r.gbps else "n/a",
                e(format_value(r.value, r.unit)),
                spread, share, samples(n), *(reference_cells(row) if judged else ()),
                cite_link(ident)]) + "</tr>")
            cites.append(cite_entry(ident, f"{e(what)}, {e(row.clock)} clock",
                                    cite_body([row.cite])))
        body += table("copies", headers, out)
        body += citations(cites)
        body.append("</details>")
    body.append("</section>")
    return body


def reference_cells(row: CopyRow) -> list[str]:
    """The expected range and the verdict of a copy (its citation's), the verdict marked
    where the machine or the measurement is not right; its sentence in the title."""
    a = row.cite.reference
    if a is None:
        return ["n/a", "n/a"]
    cls = "sig" if a.worse else "ns"
    return [e(a.expected),
            f'<span class="verdict {cls}" title="{e(a.sentence())}">{e(a.verdict)}</span>']


MACHINE_NOTE = ("One PyTorch release at a time (its builds may differ: each column names "
                "its own), a column per machine; each machine's own rows, with intervals and "
                "citations, are in the sections above.")


def machines_section(tables: list[MachineTable], size: str) -> list[str]:
    """Each release two machines or more measured: headlines, copies, every value."""
    if not tables:
        return []
    body = ['<section id="machines">', "<h2>Machines side by side</h2>",
            f"<p>{e(MACHINE_NOTE)}</p>"]
    for i, t in enumerate(tables):
        machines = [f"{e(s.trend)}<br><small>torch {e(s.torch)}</small>" for s in t.series]
        opened = " open" if i == 0 else ""
        body.append(f'<details class="release" id="{e(anchor("machines", t.release))}"'
                    f"{opened}><summary>PyTorch {e(t.release)} on "
                    f"{e(', '.join(s.trend for s in t.series))}</summary>")
        if t.headlines:
            headers = ["headline: speed-up", *machines]
            rows = [f"<tr>{cells(headers, [e(title), *[_speedup(c) for c in row]])}</tr>"
                    for title, row in t.headlines]
            body += table("machines", headers, rows)
        if t.copies:
            headers = [f"copy of {e(size)}: {GBPS}", *machines]
            rows = [f"<tr>{cells(headers, [e(what), *[_rate(c) for c in row]])}</tr>"
                    for what, row in t.copies]
            body += table("machines", headers, rows)
        headers = ["benchmark (parameters)", *machines]
        rows = [f"<tr>{cells(headers, [e(label), *[_value(r) for r in row]])}</tr>"
                for label, row in t.values]
        body += [f"<details open><summary>Every measured value ({len(rows)})</summary>",
                 *table("machines", headers, rows), "</details>", "</details>"]
    body.append("</section>")
    return body


def _speedup(c: HeadlineCell | None) -> str:
    if c is None or c.verdict is None:
        return "n/a"
    return f"{times(c.verdict.speedup)} {verdict_cell(c.verdict)}"


def _rate(c: CopyRow | None) -> str:
    if c is None or not c.result.gbps:
        return "n/a"
    spread = "" if c.result.spread is None else f" (±{noise_text(c.result.spread)})"
    return f"{rate_text(c.result.gbps, c.result.param_dict.get('direction'))}{spread}"


def _value(r: Result | None) -> str:
    return "" if r is None else e(format_value(r.value, r.unit))

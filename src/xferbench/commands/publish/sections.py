"""The sections of the site's index page, top to bottom: the banner, each series'
provenance, the headlines, the copy table, bandwidth against size, the changes between
consecutive PyTorch versions and every benchmark (its trends and what was not measured, with
why). Formatting only, no arithmetic: the numbers come from ``views``."""

from __future__ import annotations

import json

from ...comparison import FAILED_IN_B, NOT_SIGNIFICANT, WITHIN
from ...outcomes import Gap
from ...provenance import Provenance, banner
from ...sitemap import headline_figure_path
from ...units import GBPS, format_seconds, format_value
from .markup import (
    anchor,
    cells,
    cite_block,
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
from .views import (
    BandwidthPanel,
    BenchmarkView,
    CopyRow,
    HeadlineRow,
    Series,
    Step,
    StepRow,
)


def banner_html(series: list[Provenance]) -> list[str]:
    """The "not for citation" banner, from the metadata; empty when every series may be
    cited."""
    reasons = banner(series)
    if not reasons:
        return []
    out = ['<div class="banner" id="not-for-citation" role="note">',
           "<p><strong>Not for citation.</strong> What the metadata says about these "
           "results:</p><ul>"]
    for reason, hit in reasons:
        who = ("every series" if len(hit) == len(series)
               else ", ".join(p.label for p in hit))
        out.append(f"<li>{e(who)}: {e(reason)}.</li>")
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

COPY_HEADERS = ["copy", "GB/s", "median", "IQR / median", "of PCIe", "samples"]


def copy_section(tables: list[tuple[Series, list[CopyRow]]], size: str) -> list[str]:
    body = ['<section id="copies">', f"<h2>Copies of {e(size)}</h2>",
            f"<p>Every measured copy at {e(size)}, per series: {GBPS}, bytes over the "
            "median time; the share of the PCIe link's theoretical rate where the link is "
            "known. The newest release of each machine is open.</p>"]
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
            ident = anchor("copy", s.machine, s.torch, *(str(v) for k, v in r.params
                                                         if k != "size"))
            what = ", ".join(str(v) for k, v in r.params if k != "size")
            share = "n/a" if row.share_of_pcie is None else f"{row.share_of_pcie:.0%}"
            spread = "n/a" if r.spread is None else f"{r.spread:.1%}"
            n = len(r.samples) if r.samples else None
            out.append(f'<tr id="{e(ident)}">' + cells(COPY_HEADERS, [
                f"{self_link(ident)} {e(what)}", f"{r.gbps:.2f}" if r.gbps else "n/a",
                e(format_value(r.value, r.unit)), spread, share, samples(n)]) + "</tr>")
            out.append(f'<tr class="cite-row"><td colspan="{len(COPY_HEADERS)}">'
                       f"{cite_block([row.cite])}</td></tr>")
        body += table("copies", COPY_HEADERS, out)
        body.append("</details>")
    body.append("</section>")
    return body


STEP_HEADERS = ["benchmark", "A", "B", "B/A", "interval", "samples<br><small>A / B</small>",
                "verdict"]


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _step_rows(rows: list[StepRow], alpha: float) -> list[str]:
    out = []
    for sr in rows:
        r, v = sr.row, sr.verdict
        a = format_value(r.a.value if r.a else None, r.unit)
        b = format_value(r.b.value if r.b else None, r.unit)
        if v is None:
            out.append('<tr class="ns">' + cells(STEP_HEADERS, [
                e(r.label()), e(a), e(b), "", "", "", e(r.mark if not r.note else r.note)])
                + "</tr>")
            continue
        out.append(f"<tr{row_class(v)}>" + cells(STEP_HEADERS, [
            e(r.label()), e(a), e(b), times(v.ratio) + ("†" if v.ratio_outside else ""),
            e(interval(v.interval, alpha, v.test)), samples(v.n_a, v.n_b), verdict_cell(v)])
            + "</tr>")
    return out


def changes_section(steps: list[Step], threshold: float, alpha: float) -> list[str]:
    body = ['<section id="changes">', "<h2>Changes between consecutive PyTorch versions</h2>",
            f"<p>B against A for every benchmark both measured, as <code>xferbench compare A "
            f"B --threshold {threshold:.0%} --alpha {alpha:g}</code> marks it: a regression "
            f"or an improvement is significant (Mann-Whitney U, p &lt; {alpha:g}) and beyond "
            f"{threshold:.0%}. B/A below 1: B takes less (for times, B is faster). The "
            f"interval is the {1 - alpha:.0%} interval of B/A from the same test; † marks a "
            "ratio of medians outside it (the two differ in shape, not only by a factor). "
            "The samples are within one run each: noise between runs is not in them.</p>"]
    if not steps:
        body.append('<p class="na">One PyTorch version per machine: nothing to compare.</p>')
    newest = {s.machine: s for s in steps}
    for step in steps:
        ident = anchor("changes", step.machine, step.a.torch, step.b.torch)
        counts = (f"{plural(len(step.regressions), 'regression')}, "
                  f"{plural(len(step.improvements), 'improvement')}, {step.count(WITHIN)} "
                  f"within {threshold:.0%}, {step.count(NOT_SIGNIFICANT)} no detectable "
                  "difference")
        opened = " open" if newest[step.machine] is step else ""
        body.append(f'<details class="step" id="{e(ident)}"{opened}><summary>torch '
                    f"{e(step.a.torch)} → torch {e(step.b.torch)} on {e(step.machine)}: "
                    f"{e(counts)}</summary>")
        if step.differences:
            diffs = "; ".join(f"{what} {a} → {b}" for what, a, b in step.differences)
            body.append(f'<p class="warning">Not only the release differs: {e(diffs)}. Every '
                        "change below measures these differences too.</p>")
        for title, rows in (("Regressions", step.regressions),
                            ("Improvements", step.improvements)):
            body.append(f"<h4>{title} ({len(rows)})</h4>")
            if rows:
                body += table("steps", STEP_HEADERS, _step_rows(rows, alpha))
            else:
                body.append(f'<p class="na">No {title.lower()} beyond {threshold:.0%}.</p>')
        failed = step.count(FAILED_IN_B)
        one_side = [r for r in step.rows if r.verdict is None and r.row.mark != FAILED_IN_B]
        body.append(f"<details><summary>Every compared row ({len(step.compared)}); "
                    f"{failed} failed in B, {len(one_side)} measured on one side only"
                    "</summary>")
        body += table("steps", STEP_HEADERS, _step_rows(list(step.rows), alpha))
        body += ["</details>", "</details>"]
    body.append("</section>")
    return body


def bandwidth_section(panels: list[BandwidthPanel]) -> list[str]:
    body = ['<section id="bandwidth">', "<h2>Bandwidth against size</h2>",
            f"<p>Copies, {GBPS} against size, for each machine's newest release (the trends "
            "below show every release): both axes logarithmic, the band is the IQR.</p>"]
    if not panels:
        body.append('<p class="na">No copy was measured.</p>')
    body.append('<div class="figures">')
    for p in panels:
        body += figure(p.path, f"{p.direction} copies, layout {p.layout}: torch {p.torch} on "
                               f"{p.machine}")
    body += ["</div>", "</section>"]
    return body


def _gap_item(g: Gap, series_count: int) -> str:
    where = ("every series" if len(g.series) == series_count
             else ", ".join(f"torch {t} on {m}" for m, t in g.series))
    combos = "; ".join(", ".join(str(v) for _, v in c) or "(no parameters)" for c in g.combos)
    n = len(g.combos)
    return (f"<li><details><summary>{e(g.status)}: {e(g.reason)}: {n} combination"
            f"{'s' if n != 1 else ''} ({e(where)})</summary><p>{e(combos)}</p></details></li>")


def benchmark_section(views: list[BenchmarkView], alpha: float) -> list[str]:
    body = ['<section id="benchmarks">', "<h2>Every benchmark</h2>",
            "<p>Each benchmark's median against the PyTorch release, one small chart per "
            "parameter combination: the band is the IQR, a solid step is one "
            f"<code>xferbench compare</code>'s test finds (p &lt; {alpha:g}), a dotted grey "
            "step one it cannot tell apart; the value axis is logarithmic where the values "
            "span a decade. Choose the combinations to show; below each benchmark, every "
            "combination without a number and why.</p>"]
    toc = [f'<li><a href="#{e(anchor("bench", v.name))}">{e(v.name)}</a> '
           f"({len(v.trends)} charts)</li>" for v in views]
    body += ['<ul class="toc">', *toc, "</ul>"]
    for v in views:
        ident = anchor("bench", v.name)
        better = "higher" if v.unit.strip().endswith("/s") else "lower"
        series_count = len(v.series)
        per_series = {(s.machine, s.torch): 0 for s in v.series}
        for t in v.trends:
            for p in t.points:
                per_series[(t.machine, p.torch)] = per_series.get((t.machine, p.torch), 0) + 1
        counts = sorted(set(per_series.values()))
        measured = (f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}")
        body += [f'<section class="bench" id="{e(ident)}">',
                 f"<h3>{e(v.name)} {self_link(ident)}</h3>",
                 f"<p>Unit: {e(v.unit)} ({better} is better). Parameters: "
                 f"{e(', '.join(v.params) or 'none')}. Measured: {e(measured)} of "
                 f"{v.combos} combinations per series, in {series_count} series.</p>"]
        if v.trends:
            body += _picker(v, ident)
            body.append('<div class="figures trends">')
            for t in v.trends:
                params = {"machine": t.machine, **{k: str(x) for k, x in t.params}}
                caption = f"{t.machine}: " + (", ".join(f"{k}={x}" for k, x in t.params)
                                              or "no parameters")
                body += figure(t.path, caption, lazy=True, attrs=f' class="trend" '
                                                                 f'data-params="{e(json.dumps(params))}"')
            body.append("</div>")
        else:
            body.append('<p class="na">Not measured in any series.</p>')
        if v.gaps:
            body += ["<h4>Without a number</h4>", '<ul class="gaps">',
                     *[_gap_item(g, series_count) for g in v.gaps], "</ul>"]
        body.append("</section>")
    body.append("</section>")
    return body


def _picker(v: BenchmarkView, ident: str) -> list[str]:
    """One select per parameter whose values differ (and per machine, if several): the
    page's script shows the charts that match; without it, every chart shows."""
    choices = dict(v.shown_params)
    machines = sorted({t.machine for t in v.trends})
    default = v.default_choice()
    if len(machines) > 1:
        choices = {"machine": machines, **choices}
    if not choices:
        return []
    out = [f'<form class="pick" data-for="{e(ident)}">']
    for name, values in choices.items():
        options = ['<option value="">every value</option>'] + [
            f'<option value="{e(x)}"{" selected" if default.get(name) == x else ""}>'
            f"{e(x)}</option>" for x in values]
        out.append(f'<label>{e(name)} <select name="{e(name)}">{"".join(options)}</select>'
                   "</label>")
    out += ['<output class="count"></output>', "</form>"]
    return out

"""The sections of the site's index page across releases and sizes: the changes between
consecutive PyTorch versions, bandwidth against size, and every benchmark (its trends and
what was not measured, with why). Formatting only, no arithmetic: the numbers come from
``views``."""

from __future__ import annotations

import json

from ...analysis.comparison import AMBIGUOUS, CLOCK, FAILED_IN_B, SAME
from ...analysis.stats import Decision
from ...units import D2D_COPIED, GBPS, confidence, format_value, plural
from .changes import Step, StepRow
from .markup import (
    anchor,
    cells,
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
from .unmeasured import Gap
from .views import BandwidthPanel, BenchmarkView

STEP_HEADERS = ["benchmark", "A", "B", "B/A", "interval", "samples<br><small>A / B</small>",
                "verdict", "repeat"]


def _repeat(sr: StepRow) -> str:
    """What the repeats say of a change: confirmed (by which), or suspected (why)."""
    c = sr.confirmation
    if c is None:
        return ""
    if c.confirmed:
        return e(f"confirmed ({', '.join(c.by)})")
    return f'<span class="suspected">suspected</span> <small>{e(c.why)}</small>'


def _step_rows(rows: list[StepRow], alpha: float) -> list[str]:
    out = []
    for sr in rows:
        r, v = sr.row, sr.verdict
        a = format_value(r.a.value if r.a else None, r.unit)
        b = format_value(r.b.value if r.b else None, r.unit)
        if v is None:
            out.append('<tr class="ns">' + cells(STEP_HEADERS, [
                e(r.label()), e(a), e(b), "", "", "", e(r.mark if not r.note else r.note),
                ""]) + "</tr>")
            continue
        out.append(f"<tr{row_class(v)}>" + cells(STEP_HEADERS, [
            e(r.label()), e(a), e(b), times(v.ratio) + ("†" if v.ratio_outside else ""),
            e(interval(v.interval, v.level, v.test)), samples(v.n_a, v.n_b), verdict_cell(v),
            _repeat(sr)]) + "</tr>")
    return out


def _tested(d: Decision | None) -> str:
    """How many rows the step tested and the rate that decided them."""
    if d is None or not d.tested:
        return "no row tested"
    return (f"{plural(d.tested, 'row')} tested, a false discovery rate of {100 * d.alpha:g}% "
            f"(intervals at {confidence(d.level)})")


def changes_section(steps: list[Step], threshold: float, alpha: float) -> list[str]:
    body = ['<section id="changes">', "<h2>Changes between consecutive PyTorch versions</h2>",
            f"<p>B against A for every benchmark both measured, as <code>xferbench compare A "
            f"B --threshold {threshold:.0%} --alpha {alpha:g}</code> marks it: a regression "
            f"or an improvement is significant on its q-value (a false discovery rate of "
            f"{100 * alpha:g}% across the rows of one step: Benjamini-Hochberg over the rows "
            f"tested by Mann-Whitney U; each step says how many) and beyond {threshold:.0%}. "
            "Same: "
            f"B/A's interval lies within {threshold:.0%} either way; ambiguous: "
            "neither can be shown; clock: a change in time that vanishes once each sample is "
            "scaled by the SM clock it ran at. B/A below 1: B takes less (for times, B is "
            "faster). The interval is B/A's from the same test, at the confidence the step's "
            "rate gives each row (it excludes 1 where the row is significant); † marks "
            "a ratio of medians outside it (the two differ in shape, not only by a factor). "
            "The samples are within one run each: noise between runs is not in them, so a "
            "change counts as a regression or an improvement only where a repeat confirms it "
            "(a series of another machine folder that measured the same host, hardware, torch "
            "build and mode again marks it the same way: <code>xferbench compare "
            "--confirmed</code>); the others are listed as suspected.</p>"]
    if not steps:
        body.append('<p class="na">One PyTorch version per machine: nothing to compare.</p>')
    newest = {s.machine: s for s in steps}  # a step.machine is its trend
    for step in steps:
        ident = anchor("changes", step.machine, step.a.torch, step.b.torch)
        counts = (f"{plural(len(step.regressions), 'regression')}, "
                  f"{plural(len(step.improvements), 'improvement')}, "
                  f"{len(step.suspected)} suspected, "
                  + (f"{step.count(CLOCK)} clock, " if step.count(CLOCK) else "")
                  + f"{step.count(SAME)} same, {step.count(AMBIGUOUS)} ambiguous; "
                  f"{_tested(step.decision)}")
        opened = " open" if newest[step.machine] is step else ""
        body.append(f'<details class="step" id="{e(ident)}"{opened}><summary>torch '
                    f"{e(step.a.torch)} → torch {e(step.b.torch)} on {e(step.machine)}: "
                    f"{e(counts)}</summary>")
        if step.differences:
            diffs = "; ".join(f"{what} {a} → {b}" for what, a, b in step.differences)
            body.append(f'<p class="warning">Not only the release differs: {e(diffs)}. Every '
                        "change below measures these differences too.</p>")
        if not step.repeats:
            body.append('<p class="na">No repeat of these two series was measured: every '
                        "change is suspected until a second run confirms it.</p>")
        for title, rows in (("Regressions", step.regressions),
                            ("Improvements", step.improvements),
                            ("Suspected: not confirmed by a repeat", step.suspected)):
            body.append(f"<h4>{title} ({len(rows)})</h4>")
            if rows:
                body += table("steps", STEP_HEADERS, _step_rows(rows, alpha))
            else:
                what = title.split(":")[0].lower()
                body.append(f'<p class="na">No {what} beyond {threshold:.0%}.</p>')
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
            "below show every release): both axes logarithmic, the band is the IQR. Each "
            "figure names its clock: the completion clock (host, from the call until the copy "
            "is done: every copy, blocking and non_blocking alike) or device time (events "
            "around calls queued back to back: the pinned non_blocking and d2d copies "
            f"alone); {D2D_COPIED}. A pageable copy no larger than the CPU's last-level cache "
            "is cache-hot: its host buffer is copied call after call from cache (its citation "
            "says so).</p>"]
    if not panels:
        body.append('<p class="na">No copy was measured.</p>')
    body.append('<div class="figures">')
    for p in panels:
        body += figure(p.path, f"{p.direction} copies, layout {p.layout}, {p.clock} clock: "
                               f"torch {p.torch} on {p.machine}")
    body += ["</div>", "</section>"]
    return body


def _gap_item(g: Gap, series_count: int) -> str:
    where = ("every series" if len(g.series) == series_count
             else ", ".join(f"torch {t} on {m}" for m, t in g.series))
    combos = "; ".join(", ".join(str(v) for _, v in c) or "(no parameters)" for c in g.combos)
    n = len(g.combos)
    return (f"<li><details><summary>{e(g.status)}: {e(g.reason)}: {n} combination"
            f"{'s' if n != 1 else ''}, {g.missing} number{'s' if g.missing != 1 else ''} "
            f"missing ({e(where)})</summary><p>{e(combos)}</p></details></li>")


def benchmark_section(views: list[BenchmarkView], alpha: float) -> list[str]:
    body = ['<section id="benchmarks">', "<h2>Every benchmark</h2>",
            "<p>Each benchmark's median against the PyTorch release, one small chart per "
            "parameter combination: the band is the IQR, a solid step is one "
            f"the Mann-Whitney U test finds on its own (p &lt; {alpha:g}), a dotted grey "
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
        per_series = {(s.trend, s.torch): 0 for s in v.series}
        for t in v.trends:
            for p in t.points:
                per_series[(p.machine, p.torch)] = per_series.get((p.machine, p.torch), 0) + 1
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
                caption = f"{_machines(t.machines)}: " + (
                    ", ".join(f"{k}={x}" for k, x in t.params) or "no parameters")
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


def _machines(names: tuple[str, ...]) -> str:
    """A chart's machines: one name, or a host's names ("a and b, one host")."""
    if len(names) == 1:
        return names[0]
    return f"{', '.join(names[:-1])} and {names[-1]} (one host)"


def _picker(v: BenchmarkView, ident: str) -> list[str]:
    """One select per parameter whose values differ (and per machine, if several): the
    page's script shows the charts that match; without it, every chart shows."""
    choices = dict(v.shown_params)
    charts = {t.machine: t.machines for t in v.trends}
    machines = sorted(charts)
    default = v.default_choice()
    if len(machines) > 1:
        choices = {"machine": machines, **choices}
    if not choices:
        return []
    out = [f'<form class="pick" data-for="{e(ident)}">']
    for name, values in choices.items():
        shown = {m: _machines(charts[m]) for m in machines} if name == "machine" else {}
        options = ['<option value="">every value</option>'] + [
            f'<option value="{e(x)}"{" selected" if default.get(name) == x else ""}>'
            f"{e(shown.get(x, x))}</option>" for x in values]
        out.append(f'<label>{e(name)} <select name="{e(name)}">{"".join(options)}</select>'
                   "</label>")
    out += ['<output class="count"></output>', "</form>"]
    return out

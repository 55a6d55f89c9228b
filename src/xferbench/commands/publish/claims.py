"""The claims section at the top of the site's index: a row per claim (its words, source and
rule), a column per series (machine, PyTorch), each cell its verdict linking to its evidence
(the figure's trend chart, or why it has no number in the benchmark's own list of gaps),
then every verdict that changed between consecutive releases. The verdicts are
``analysis.claims``' (the ones ``xferbench claims`` prints); formatting only here."""

from __future__ import annotations

from ...analysis.claims import DECIDED, Cell, ClaimsReport, evaluate
from ...analysis.claimtable import Claim, load_table
from ...analysis.claimtext import (
    LEGEND,
    figure_text,
    source_text,
    summary_rows,
    times,
    undecided_reasons,
)
from ...analysis.sitemap import figure_path
from ...results.discovery import suite_repo
from ...units import plural
from .catalog import Catalog
from .markup import anchor, e, self_link

#: A verdict's class on the page (its colour in style.css).
VERDICT_CLASS = {"holds": "v-holds", "does not hold": "v-not", "cannot tell": "v-unsure",
                 "not measurable here": "v-na", "not measured": "v-na", "does not apply": "v-na"}


def claims_report(cat: Catalog, alpha: float) -> ClaimsReport:
    """The shipped claims table's verdicts on the catalog's results (as ``xferbench claims``)."""
    return evaluate(cat.rs, load_table(), repo=suite_repo(), alpha=alpha)


def claims_section(cat: Catalog, alpha: float) -> list[str]:
    """The short table first (a row per decided claim, the undecided ones sharing rows, a
    cell per machine counting its releases' verdicts), so that the headlines follow within
    a screen or two; the full table, a column per series, behind its summary line."""
    report = claims_report(cat, alpha)
    benches = set(cat.names())
    machines = list(dict.fromkeys(p.key.where for p in report.series))
    head = ['<tr><th rowspan="2">claim</th>' + "".join(
        f'<th colspan="{sum(p.key.where == m for p in report.series)}">{e(m)}</th>'
        for m in machines) + "</tr>",
        "<tr>" + "".join(f"<th>{_release(p.torch)}" + (
            f"<br><small>{e(p.key.how)}</small>" if p.key.mode else "") + "</th>"
            for p in report.series) + "</tr>"]
    rows = [_row(claim, cells, benches, alpha, cat) for claim, cells in report.rows]
    every = (f"Every claim in every series: {len(report.rows)} claims, "
             f"{len(report.series)} series, each verdict linking to its evidence")
    return ['<section id="claims">', f"<h2>Claims {self_link('claims')}</h2>",
            "<p>Each piece of advice the suite settles, and its verdicts, recomputed from the "
            "results (<code>xferbench claims</code> prints the same with every figure; "
            "<code>xferbench cite --claim ID</code> gives the sentence to quote). A verdict "
            "carries its series' caveats (the banner above).</p>",
            *_summary_table(report),
            f'<details class="claims-all"><summary>{e(every)}</summary>',
            f'<p class="legend"><small>{e(LEGEND)}.</small></p>',
            '<div class="claims-wrap"><table class="claims stack"><thead>', *head,
            "</thead><tbody>", *rows, "</tbody></table></div></details>", *_changes(report),
            "</section>"]


def _summary_table(report: ClaimsReport) -> list[str]:
    machines, releases, rows = summary_rows(report)
    out = ['<div class="claims-wrap"><table class="claims-summary stack"><thead><tr>'
           "<th>claim</th>" + "".join(f"<th>{e(m)}, {plural(releases[m], 'release')}</th>"
                                      for m in machines) + "</tr></thead><tbody>"]
    for claims, row, decided in rows:
        links = [f'<a href="#{e(anchor("claim", c.id))}">'
                 + (f"{e(c.title)}</a> <code>{e(c.id)}</code>" if decided
                    else f"<code>{e(c.id)}</code></a>") for c in claims]
        cells = "".join(f'<td data-label="{e(m)}" class="{VERDICT_CLASS.get(v, "")}">{e(v)}'
                        "</td>" for m, v in zip(machines, row))
        out.append(f'<tr><td data-label="claim">{", ".join(links)}</td>{cells}</tr>')
    why = undecided_reasons(report)
    out.append("</tbody></table></div>")
    if why:
        out.append('<details class="claims-why"><summary>Why the others are not decided'
                   "</summary><ul>" + "".join(
                       f"<li>{', '.join(f'<code>{e(i)}</code>' for i in ids)}: {e(reason)}</li>"
                       for reason, ids in why.items()) + "</ul></details>")
    return out


def _release(torch: str) -> str:
    """A column's release, its build below it: narrow columns for many series."""
    release, plus, build = torch.partition("+")
    return e(release) + (f"<br><small>+{e(build)}</small>" if plus else "")


class _Marks:
    """The numbered notes of one claim's row: each text once, listed in its first cell."""

    def __init__(self, ident: str) -> None:
        self.ident = ident
        self.texts: list[str] = []

    def __call__(self, text: str) -> str:
        if text not in self.texts:
            self.texts.append(text)
        n = self.texts.index(text) + 1
        return f'<a class="mark" href="#{e(self.ident)}-{n}">{n}</a>'

    def listed(self) -> str:
        items = "".join(f'<li id="{e(self.ident)}-{i}">{e(t)}</li>'
                        for i, t in enumerate(self.texts, 1))
        return f'<ol class="why">{items}</ol>' if items else ""


def _runs(cells: tuple[Cell, ...]) -> list[list[Cell]]:
    """Consecutive cells with one undecided verdict and reason, grouped: one spanning cell."""
    out: list[list[Cell]] = []
    for c in cells:
        last = out[-1][-1] if out else None
        if (last is not None and c.verdict not in DECIDED and last.verdict == c.verdict
                and last.reason == c.reason):
            out[-1].append(c)
        else:
            out.append([c])
    return out


def _row(claim: Claim, cells: tuple[Cell, ...], benches: set[str], alpha: float,
         cat: Catalog) -> str:
    ident = anchor("claim", claim.id)
    marks = _Marks(ident)
    tds = [_cell(run, len(cells), benches, alpha, marks, cat) for run in _runs(cells)]
    notes = sorted({c.note for c in cells if c.note})
    first = (f'<td data-label="claim"><strong>{e(claim.title)}</strong> {self_link(ident)}'
             f"<small><code>{e(claim.id)}</code> {e(claim.text)}</small>"
             + "".join(f'<small class="note">{e(n)}</small>' for n in notes)
             + f'<details class="source"><summary>source and rule</summary><small>'
               f"{e(source_text(claim))}. Rule: {e(claim.rule.describe())}.</small></details>"
             + marks.listed() + "</td>")
    return f'<tr id="{e(ident)}">{first}{"".join(tds)}</tr>'


def _cell(run: list[Cell], total: int, benches: set[str], alpha: float, marks: _Marks,
          cat: Catalog) -> str:
    c = run[0]
    if len(run) == total:
        label = "every series"
    elif len(run) > 1:
        first, last = c.provenance.key, run[-1].provenance.key
        label = f"torch {c.torch} to {run[-1].torch} on {first.trend}" + (
            "" if last.trend == first.trend else f" to {last.trend}")
    else:
        label = c.provenance.key.label
    fv = c.evidence
    extra = []
    if c.verdict in DECIDED and fv is not None and fv.practice is not None:
        r = fv.practice
        # the trend chart that draws this series (a repeat's is its host's first name)
        href = figure_path(r.benchmark, r.param_dict, cat.chart_of(r.series))
        extra.append(_figure(c, alpha))
        for text in (fv.observed, c.reason if c.verdict != "cannot tell" else ""):
            if text:
                extra.append(marks(text))
    else:
        bench = fv.evidence.practice.benchmark if fv is not None else ""
        href = f"#{anchor('bench', bench)}" if bench in benches else ""
        why = c.reason or c.verdict
        # a cell spanning several series has room for its reason; a narrow one numbers it
        extra.append(f"<small>{e(why)}</small>" if len(run) >= 3 else marks(why))
    word = (f'<a class="verdict" href="{e(href)}">{e(c.verdict)}</a>' if href
            else f'<span class="verdict">{e(c.verdict)}</span>')
    span = f' colspan="{len(run)}"' if len(run) > 1 else ""
    return (f'<td class="{VERDICT_CLASS.get(c.verdict, "")}"{span} data-label="{e(label)}">'
            f"{word}{''.join(extra)}</td>")


def _figure(c: Cell, alpha: float) -> str:
    """The figure a decided cell rests on, compactly: a ratio over its interval, or a value."""
    fv = c.evidence
    assert fv is not None
    if fv.test is None:
        shown = e(figure_text(fv, alpha))
    else:
        iv = fv.interval
        span = "" if iv is None else (
            f"{times(iv[0]) if iv[0] > 0 else '0'} to {times(iv[1])}")
        shown = e(times(fv.ratio)) + (f"<br>{1 - alpha:.0%}: {e(span)}" if span else "")
    if len(c.figures) > 1:
        held = sum(f.verdict == "holds" for f in c.figures)
        shown += f"<br>{held} of {len(c.figures)} hold"
    return f"<small>{shown}</small>"


def _changes(report: ClaimsReport) -> list[str]:
    if not report.changes:
        return ["<p>No claim changed its verdict between consecutive releases.</p>"]
    items = []
    for ch in report.changes:
        lost = ' class="lost"' if ch.lost else ""
        items.append(f"<li{lost}>{'<strong>lost</strong>: ' if ch.lost else ''}"
                     f'<a href="#{e(anchor("claim", ch.claim.id))}">{e(ch.claim.id)}</a> on '
                     f"{e(ch.machine)}: {e(ch.before.verdict)} with torch "
                     f"{e(ch.before.torch)}, {e(ch.after.verdict)} with torch "
                     f"{e(ch.after.torch)}</li>")
    return [f'<details class="claim-changes"><summary>{len(items)} verdicts changed between '
            "consecutive releases (lost: it held and no longer does)</summary>",
            '<ul class="changes">', *items, "</ul></details>"]

"""The claims' verdicts in words: each cell's figure and interval, the text ``xferbench
claims`` prints, the README's short table (Markdown), the JSON document
(``data/claims.schema.json``) and the sentence ``cite --claim`` prints, with the provenance
and the caveats of its series. Formatting only: the verdicts are ``claims.py``'s."""

from __future__ import annotations

import math
import os
from typing import Any

from ..results import ResultSet
from ..results.series import SeriesKey, host_option, mode_option
from ..units import format_value, plural
from .citation import Citation, citation, sentence
from .citation import as_dict as citation_dict
from .claims import (
    DECIDED,
    DOES_NOT_APPLY,
    HOLDS,
    NOT_MEASURABLE,
    NOT_MEASURED,
    Cell,
    ClaimsReport,
    FigureVerdict,
)
from .claimtable import RATIO, Claim, ClaimFigure
from .repeats import chart_machines, chart_trend
from .sitemap import figure_path

SCHEMA_VERSION = 1
LEGEND = ("holds / does not hold: the rule decided it (an interval that rules the effect out "
          "does not hold); cannot tell: the test is ambiguous, its interval neither shows the "
          "effect beyond the claim's threshold nor rules it out; not measurable here: the "
          "series' device cannot measure a figure (the run's reason); not measured: it could, "
          "and these results hold no number (why); does not apply: the reference ranges say the "
          "claim's premise fails on this machine's GPU and link (docs/check.md). A ratio is "
          "baseline / practice (above 1: the practice is faster, or lower), with the interval "
          "the Mann-Whitney U test does not reject")


def times(x: float | None) -> str:
    if x is None:
        return "n/a"
    if math.isinf(x):
        return "inf"
    return f"{x:.2f}x" if x < 100 else f"{x:.3g}x"


def interval_text(iv: tuple[float, float] | None, alpha: float) -> str:
    if iv is None:
        return "no interval: too few samples or a zero"
    lo, hi = iv
    if lo <= 0 and math.isinf(hi):
        return "interval unbounded: too few samples"
    return f"{1 - alpha:.0%}: {times(lo) if lo > 0 else '0'} to {times(hi)}"


def figure_text(fv: FigureVerdict, alpha: float) -> str:
    """The number a verdict rests on: a ratio with its interval, or a value."""
    if fv.test is not None:
        return f"{times(fv.ratio)} ({interval_text(fv.interval, alpha)})"
    if fv.practice is None or fv.practice.value is None:
        return ""
    if fv.practice.unit == "holds":
        return "the check held" if fv.practice.value == 1 else "the check did not hold"
    if fv.practice.unit == "fraction":
        return f"{fv.practice.value:.0%}"
    return format_value(fv.practice.value, fv.practice.unit)


def cell_text(cell: Cell, alpha: float) -> str:
    """One line: the verdict, its figure, and why where the figure does not say."""
    e = cell.evidence
    parts = [cell.verdict]
    if e is not None and cell.verdict in DECIDED:
        shown = figure_text(e, alpha)
        if shown:
            parts.append(shown)
        many = len(cell.figures) > 1
        if many:
            parts.append(f"{sum(f.verdict == HOLDS for f in cell.figures)} of "
                         f"{len(cell.figures)} figures hold")
    if cell.reason:
        parts.append(cell.reason)
    if e is not None and e.observed:
        parts.append(f"saw: {e.observed}")
    if cell.note:
        parts.append(cell.note)
    return ": ".join(parts)


def source_text(claim: Claim) -> str:
    """Each document once, with the sections it states the claim in."""
    sections: dict[str, list[str]] = {}
    for s in claim.sources:
        sections.setdefault(s.document, []).append(f"\"{s.section}\"")
    return "; ".join(f"{doc}, {' and '.join(secs)}" for doc, secs in sections.items())


def report_lines(report: ClaimsReport) -> list[str]:
    """``xferbench claims`` as text: per claim its words, source, rule and a line per series;
    then the changes of verdict, the series' caveats and the legend."""
    out: list[str] = []
    for claim, cells in report.rows:
        out += [f"{claim.id}: {claim.title}", f"  {claim.text}",
                f"  source: {source_text(claim)}",
                f"  rule: {claim.rule.describe()}"
                + (f"; a CPU cannot decide it: {claim.cpu_reason}" if claim.cpu_reason else "")]
        out += [f"  {c.series_label}: {cell_text(c, report.alpha)}" for c in cells]
        out.append("")
    out += change_lines(report) + caveat_lines(report)
    return out + ["", LEGEND + "."]


def caveat_lines(report: ClaimsReport) -> list[str]:
    """Why series are not for citation, each reason once with the series it applies to."""
    out = []
    for reason in dict.fromkeys(r for p in report.series for r in p.reasons()):
        who = [p.label for p in report.series if reason in p.reasons()]
        every = len(who) == len(report.series)
        out.append(f"Not for citation ({'every series' if every else ', '.join(who)}): "
                   f"{reason}.")
    return out


def change_lines(report: ClaimsReport) -> list[str]:
    if not report.changes:
        return ["No claim changed its verdict between consecutive releases.", ""]
    out = [f"Verdicts that changed between consecutive releases ({len(report.changes)}; "
           "LOST: it held and no longer does):"]
    for ch in report.changes:
        mark = "LOST " if ch.lost else ""
        out.append(f"  {mark}{ch.claim.id} on {ch.machine}: {ch.before.verdict} with torch "
                   f"{ch.before.torch}, {ch.after.verdict} with torch {ch.after.torch}")
    return out + [""]


# -- the README's short table ------------------------------------------------------------------

def _summary(cells: list[Cell]) -> str:
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1
    if len(counts) == 1:
        return cells[0].verdict
    order = sorted(counts, key=lambda v: (-counts[v], v))
    return ", ".join(f"{v} {counts[v]}" for v in order)


def summary_rows(report: ClaimsReport) -> tuple[list[str], dict[str, int],
                                                list[tuple[list[Claim], tuple[str, ...], bool]]]:
    """The short table's machines, each one's count of releases (not of series: a release
    measured five ways is one), and its rows: (claims, a cell per machine counting the
    verdicts across its releases, each release's read from its best-measured series:
    ``Cell.mode_rank``); the claims no release decided whose cells agree share a row, after
    the decided ones."""
    machines = list(dict.fromkeys(p.key.where for p in report.series))
    releases = {m: len({p.torch for p in report.series if p.key.where == m}) for m in machines}
    decided: list[tuple[list[Claim], tuple[str, ...], bool]] = []
    shared: dict[tuple[str, ...], list[Claim]] = {}
    for claim, cells in report.rows:
        row = tuple(_summary(per_release(cells, m)) for m in machines)
        if any(c.verdict in DECIDED for c in cells):
            decided.append(([claim], row, True))
        else:
            shared.setdefault(row, []).append(claim)
    return machines, releases, [*decided, *((claims, row, False)
                                            for row, claims in shared.items())]


def per_release(cells: tuple[Cell, ...] | list[Cell], where: str) -> list[Cell]:
    """One cell per release of machine ``where``: its best-measured series' (the default
    mode, then a mode that may be cited, then the rest; the first of a kind)."""
    best: dict[str, Cell] = {}
    for c in cells:
        if c.provenance.key.where == where and (
                c.torch not in best or c.mode_rank < best[c.torch].mode_rank):
            best[c.torch] = c
    return list(best.values())


def undecided_reasons(report: ClaimsReport) -> dict[str, list[str]]:
    """Why claims have no verdict: each reason once, with the claims it applies to."""
    why: dict[str, list[str]] = {}
    for claim, cells in report.rows:
        for c in cells:
            if c.verdict in (NOT_MEASURABLE, NOT_MEASURED) and claim.id not in why.get(
                    c.reason, []):
                why.setdefault(c.reason, []).append(claim.id)
    return why


def markdown_table(report: ClaimsReport) -> list[str]:
    """The README's short table (``summary_rows``): a column per machine, each cell a
    claim's verdicts across the machine's releases. Then why those were not decided, and
    the series' caveats."""
    machines, releases, rows = summary_rows(report)
    why = undecided_reasons(report)
    heads = (f"{m}, {plural(releases[m], 'release')}" for m in machines)
    out = ["| claims | " + " | ".join(heads) + " |",
           "| --- |" + " --- |" * len(machines)]
    for claims, row, decided in rows:
        name = (f"{claims[0].title} (`{claims[0].id}`)" if decided
                else ", ".join(f"`{c.id}`" for c in claims))
        out.append(f"| {name} | " + " | ".join(row) + " |")
    out.append("")
    if why:
        out.append("Not decided: " + "; ".join(
            f"{', '.join(f'`{i}`' for i in ids)}: {reason}" for reason, ids in why.items())
            + ". " + " ".join(caveat_lines(report)))
    return out


# -- JSON ----------------------------------------------------------------------------------------

def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def _figure_dict(f: ClaimFigure, r: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "benchmark": f.benchmark, "params": f.param_dict}
    if r is not None:
        out.update({"value": _finite(r.value), "unit": r.unit,
                    "samples": len(r.samples) if r.samples else None,
                    "results_file": r.path})
    return out


def figure_dict(fv: FigureVerdict) -> dict[str, Any]:
    e = fv.evidence
    test = fv.test
    return {
        "verdict": fv.verdict, "reason": fv.reason,
        "practice": _figure_dict(e.practice, fv.practice),
        "baseline": None if e.baseline is None else _figure_dict(e.baseline, fv.baseline),
        "ratio": _finite(fv.ratio),
        "interval": None if fv.interval is None else [_finite(x) for x in fv.interval],
        "test": None if test is None else {"word": test.word, "p_value": test.p_value,
                                           "test": test.test, "significant": test.significant},
        "observed": fv.observed or None}


def _identity(key: SeriesKey) -> dict[str, str]:
    """How a series was measured (as --mode takes it) and, where its machine holds several,
    what measured it (as --host takes it): five series of one release are told apart."""
    return {"mode": mode_option(key.mode), "host": host_option(key.host)}


def cell_dict(c: Cell) -> dict[str, Any]:
    return {"machine": c.machine, "torch": c.torch, **_identity(c.provenance.key),
            "verdict": c.verdict, "reason": c.reason,
            "note": c.note, "not_for_citation": list(c.not_for_citation),
            "figures": [figure_dict(f) for f in c.figures]}


def claim_dict(claim: Claim) -> dict[str, Any]:
    r = claim.rule
    rule: dict[str, Any] = {"kind": r.kind, "says": r.describe()}
    rule.update({"expect": r.expect, "threshold": r.threshold} if r.kind == RATIO
                else {"op": r.op, "bound": r.bound})
    return {"id": claim.id, "title": claim.title, "text": claim.text,
            "sources": [{"document": s.document, "url": s.url, "section": s.section}
                        for s in claim.sources],
            "rule": rule, "cpu_reason": claim.cpu_reason or None,
            "cpu_note": claim.cpu_note or None}


def as_dict(report: ClaimsReport) -> dict[str, Any]:
    """The document ``xferbench claims --format json`` prints (data/claims.schema.json)."""
    return {
        "schema_version": SCHEMA_VERSION, "table": report.table.path, "alpha": report.alpha,
        "series": [{"machine": p.machine, "torch": p.torch, **_identity(p.key),
                    "device": p.device, "not_for_citation": p.reasons()}
                   for p in report.series],
        "claims": [{**claim_dict(claim), "verdicts": [cell_dict(c) for c in cells]}
                   for claim, cells in report.rows],
        "changes": [{"claim": ch.claim.id, "machine": ch.machine, "lost": ch.lost,
                     "before": {"torch": ch.before.torch, "verdict": ch.before.verdict},
                     "after": {"torch": ch.after.torch, "verdict": ch.after.verdict}}
                    for ch in report.changes],
        "legend": LEGEND}


# -- the sentence a document quotes ------------------------------------------------------------

def claim_sentence(cell: Cell, alpha: float) -> str:
    """The sentence ``cite --claim`` prints: the caveats of the series first, the claim in its
    words and its source, the verdict on the series with each figure and its interval, and
    the provenance (suite commit, date)."""
    claim, p = cell.claim, cell.provenance
    banned = ("Not for citation: " + "; ".join(cell.not_for_citation) + ". ") \
        if cell.not_for_citation else ""
    where = f"on {p.key.where} ({p.hardware}) with PyTorch {cell.torch}" + (
        f", measured as {p.key.how}" if p.key.mode else "")
    if cell.verdict in DECIDED:
        figures = "; ".join(_evidence_words(f, alpha, len(cell.figures) == 1)
                            for f in cell.figures)
        said = f"{cell.verdict} {where}: {figures}"
    else:
        said = (f"{'' if cell.verdict == DOES_NOT_APPLY else 'is '}{cell.verdict} {where}: "
                f"{cell.reason}")
    note = f"; {cell.note}" if cell.note else ""
    return (f"{banned}The claim \"{claim.text}\" ({source_text(claim)}) {said}{note}; "
            f"xferbench suite commit {p.commit[:8]}, {p.date}.")


#: How the verdict's test is named in a sentence.
TESTS = {"mann-whitney": "Mann-Whitney U", "99% CI": "asv's 99% confidence intervals",
         "exact": "exact (a count: no noise, its ratio is the answer)",
         "none": "no test (no samples)"}


def _evidence_words(f: FigureVerdict, alpha: float, single: bool = True) -> str:
    e = f.evidence
    shown = figure_text(f, alpha)
    if e.baseline is None:
        words = f"{e.practice.name}: {shown}" + (f" ({f.observed})" if f.observed else "")
    else:
        t = f.test
        extra = "" if t is None else (
            f", {TESTS.get(t.test, t.test)}"
            + ("" if t.p_value is None else f" p = {t.p_value:.2g}")
            + f", {t.n_b or 'n/a'} / {t.n_a or 'n/a'} samples (practice / baseline), "
              f"threshold {t.threshold:.0%}")
        words = f"{e.practice.name} against {e.baseline.name}: {shown}{extra}"
    if f.verdict == HOLDS or not f.reason:
        return words
    return words + f": {f.reason}" if single else words + f" ({f.verdict}: {f.reason})"


def cite_lines(cell: Cell, cites: list[Citation], others: list[Cell], alpha: float) -> list[str]:
    """The sentence, then each figure's own citation (the sentence ``xferbench cite`` prints
    for it), then the claim's verdict in the other series."""
    out = [claim_sentence(cell, alpha), ""]
    if cites:
        out += ["The figures, each as `xferbench cite` gives it:", ""]
        out += [f"- {sentence(c)}" for c in cites]
        out.append("")
    if others:
        out.append("In the other series: " + "; ".join(
            f"{c.provenance.key.label}: {c.verdict}" for c in others) + ".")
    return out


def figure_citations(rs: ResultSet, cell: Cell, site: str = "site") -> list[Citation]:
    """The citation of every figure the cell rests on, with its trend chart under ``site``."""
    out = []
    charts = chart_machines(rs)  # a repeat's series is drawn in its host's first chart
    for fv in cell.figures:
        for r in (fv.practice, fv.baseline):
            if r is not None and r.ok:
                chart = chart_trend(charts, r.series)
                path = os.path.join(site, figure_path(r.benchmark, r.param_dict, chart))
                out.append(citation(rs, r, figure=path, figure_exists=os.path.isfile(path),
                                    chart=chart))
    return out


def cite_dict(cell: Cell, cites: list[Citation], others: list[Cell],
              alpha: float) -> dict[str, Any]:
    """``cite --claim --format json``: the claim, its verdict in the chosen series with every
    figure, the sentence, each figure's citation and the other series' verdicts."""
    return {"claim": claim_dict(cell.claim), **cell_dict(cell),
            "sentence": claim_sentence(cell, alpha),
            "citations": [citation_dict(c) for c in cites],
            "others": [{"machine": c.machine, "torch": c.torch, **_identity(c.provenance.key),
                        "verdict": c.verdict} for c in others]}

"""``compare --format markdown``: the table a pull request shows (GitHub-flavoured markdown).

The changes come first (failed in B and worse, the largest first, then better), the other rows
folded in a ``<details>`` block at the end, so that a comment too long for its host can be cut
there. One line says what was compared and the rule that decided each row."""

from __future__ import annotations

import html
import math

from ...analysis.comparison import BETTER, FAILED_IN_B, MARKS, WORSE, Row
from ...analysis.stats import ON_P
from ...results import Result
from ...units import confidence, format_value
from .model import Comparison, Side
from .text import mark_text, p_text, q_text, ratio_text

#: The first line: an HTML comment a CI job finds to update its own earlier comment.
MARKER = "<!-- xferbench compare -->"
#: The rows shown open, in this order; the others are folded.
CHANGES = (FAILED_IN_B, WORSE, BETTER)
#: What the mark after an interval means.
OUTSIDE = ("; \\* the medians' ratio lies outside it: the two sides differ in shape, not only "
           "by a factor")


def format_markdown(c: Comparison) -> list[str]:
    """The comparison as markdown lines: a heading, the line that says what was compared and
    how, the changes as a table, a legend, then every other row folded."""
    changed, rest = _split(c)
    lines = [MARKER, f"### xferbench compare: {_verdict(c)}", "", _compared(c), ""]
    lines += [f"**Not for citation**: {plain_text(why)}" for why in c.caveats]
    lines += [""] * bool(c.caveats)
    if c.confounds:
        caution = plain_text("; ".join(c.confounds))
        lines += [f"**Caution**: more than the release differs: {caution}", ""]
    if changed:
        lines += _table(c, changed)
    elif c.rows:
        lines.append(f"No benchmark changed beyond {c.threshold:.0%}.")
    else:
        lines.append("No benchmark was measured on either side.")
    lines += ["", _legend(c)]
    if rest:
        counts = c.counts()
        kinds = ", ".join(f"{counts[m]} {m}" for m in MARKS if m not in CHANGES and counts[m])
        lines += ["", "<details>", f"<summary>{len(rest)} more: {kinds}</summary>", "",
                  *_table(c, rest), "", "</details>"]
    return lines


def _split(c: Comparison) -> tuple[list[int], list[int]]:
    """Indices of the rows shown open (failed in B, worse from the largest, better from the
    largest) and of the rest, in the comparison's order."""
    def size(i: int) -> float:
        w = c.rows[i].worse_by
        return 0.0 if w is None else w

    by_mark = {m: [i for i, r in enumerate(c.rows) if r.mark == m] for m in CHANGES}
    changed = (by_mark[FAILED_IN_B] + sorted(by_mark[WORSE], key=size, reverse=True)
               + sorted(by_mark[BETTER], key=size))
    return changed, [i for i, r in enumerate(c.rows) if r.mark not in CHANGES]


def _verdict(c: Comparison) -> str:
    """The heading's words: what fails the comparison, else what changed."""
    counts = c.counts()
    worse = [i for i, r in enumerate(c.rows) if r.mark == WORSE]
    confirmed = sum(c.is_confirmed(i) for i in worse)
    changes = f"{counts[WORSE]} worse, {counts[BETTER]} better of {len(c.rows)}"
    broke = f", {counts[FAILED_IN_B]} failed in B" if counts[FAILED_IN_B] else ""
    if c.regressions:
        return (f"regression ({changes}{broke}; {confirmed} worse confirmed by a repeat, "
                f"{len(worse) - confirmed} suspected)")
    if worse:  # --confirmed, and no repeat confirms them
        return f"no confirmed regression ({changes}; each worse one suspected)"
    return f"no regression ({changes})"


def _side(name: str, side: Side) -> str:
    """"B torch 2.14.1+cu130 on box, suite commit `d61e069d`" (with the file it was read from)."""
    series = "; ".join(k.label for k in side.series) or side.label
    commits = ", ".join(f"`{commit[:8]}`" for commit in side.results.commits())
    read = f" ({side.label})" if side.label.startswith("file ") else ""
    return plain_text(f"{name} {series}, suite commit ") + commits + plain_text(read)


def _compared(c: Comparison) -> str:
    """One line: both sides (machine, torch, suite commits) and the rule of every verdict."""
    d = c.decision
    if d.on == ON_P:
        test = f"p < {d.alpha:g} (each row on its own)"
    else:
        test = (f"q < {d.alpha:g} (a {100 * d.alpha:g}% false discovery rate over {d.tested} "
                "rows, Benjamini-Hochberg)")
    fails = ("a worse row a repeat confirms (--confirmed), or one failed in B"
             if c.only_confirmed else "a worse row, or one failed in B")
    return (f"**Compared** {_side('B', c.b)} against {_side('A', c.a)}. **Rule**: worse or "
            f"better where {plain_text(test)} and beyond {c.threshold:.0%}; same where B/A's "
            f"interval lies within {1 / (1 + c.threshold):.3f} to {1 + c.threshold:.3f}; "
            "confirmed where a repeat (another machine folder measuring both again) marks it "
            f"so too; exit status 1 on {fails}.")


def _legend(c: Comparison) -> str:
    d = c.decision
    score = "p: the row's p-value" if d.on == ON_P else "q: the row's q-value"
    outside = any(r.verdict is not None and r.verdict.ratio_outside for r in c.rows)
    return (f"B/A: B's value over A's (times, fractions and counts: lower is better; rates: "
            f"higher). Interval: at {confidence(d.level)}, of the factor that best maps A's "
            f"samples onto B's{OUTSIDE if outside else ''}. {score} (Mann-Whitney U on the "
            "samples; in brackets, the test used where there were none).")


def _table(c: Comparison, indices: list[int]) -> list[str]:
    """A table of the rows ``indices``; a machine column where the rows span several."""
    on_p = c.decision.on == ON_P
    many = len({c.rows[i].machine for i in indices}) > 1
    header = [*(["machine"] if many else []), "benchmark", "params", "A", "B", "B/A",
              "interval", "p" if on_p else "q", "verdict"]
    right = {"A", "B", "B/A", "p", "q"}
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(" ---: " if h in right else " --- " for h in header) + "|"]
    for i in indices:
        r = c.rows[i]
        name = r.benchmark.split(".", 1)[-1]
        cells = [*([plain_text(r.machine)] if many else []), code_span(name),
                 "<br>".join(code_span(f"{k}={v}") for k, v in r.params) or "-",
                 plain_text(format_value(_value(r.a), r.unit)),
                 plain_text(format_value(_value(r.b), r.unit)), ratio_text(r), _interval(r),
                 plain_text(p_text(r) if on_p else q_text(r)), plain_text(mark_text(c, i, r))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _value(result: Result | None) -> float | None:
    return result.value if result is not None and result.ok else None


def _interval(r: Row) -> str:
    """B/A's interval: "0.912 to 1.040"; "above 0.500" where it has no upper end, "unbounded"
    where the samples bound it on neither side; marked where the medians' ratio lies outside
    it (``OUTSIDE``)."""
    v = r.verdict
    if v is None or v.interval is None:
        return "-"
    low, high = v.interval
    if math.isinf(high):
        text = f"above {low:.3f}" if low > 0 else "unbounded"
    else:
        text = f"{low:.3f} to {high:.3f}"
    return text + (" \\*" if v.ratio_outside else "")


def plain_text(s: str) -> str:
    """Plain text for a table cell or a line: HTML's special characters and the cell's bar
    escaped, so that a value never opens a tag or a column."""
    return html.escape(s, quote=False).replace("|", "\\|")


def code_span(s: str) -> str:
    """A code span for a cell: a backtick inside lengthens the fence, a bar is escaped (GitHub
    splits a table's cells before it reads code spans)."""
    fence = "``" if "`" in s else "`"
    pad = " " if "`" in s else ""
    return f"{fence}{pad}{s.replace('|', chr(92) + '|')}{pad}{fence}"

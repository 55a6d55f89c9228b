"""HTML for the site's pages: escaping, the page shell, tables, figures, and the cells every
section shares (intervals, sample counts, verdicts, citations). Formatting only, no
arithmetic."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable
from typing import Any

from ...analysis.citation import Citation, command, sentence
from ...analysis.stats import UNCHANGED, Verdict
from ...results.machines import slug
from ...units import confidence


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


#: Where the page turns narrow (style.css's media query): a figure drawn twice shows its
#: narrow drawing there.
NARROW = "(max-width: 44rem)"


def figure(path: str, caption: str, attrs: str = "", lazy: bool = False,
           narrow: str | None = None) -> list[str]:
    """A figure that links to its SVG; ``lazy`` ones load when scrolled to (and never while
    the trend picker hides them); with ``narrow``, a wide drawing whose narrow one (for a
    phone) the browser shows below NARROW."""
    load = ' loading="lazy"' if lazy else ""
    img = f'<img src="{e(path)}" alt="{e(caption)}"{load}>'
    if narrow:
        img = f'<picture><source media="{NARROW}" srcset="{e(narrow)}">{img}</picture>'
    return [f'<figure{attrs} data-figure="{e(path)}">', f'<a href="{e(path)}">{img}</a>',
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


def interval(iv: tuple[float, float] | None, level: float, test: str) -> str:
    """"0.981x to 1.004x (95%)"; an open side says so; where there are too few samples,
    "unbounded"."""
    if iv is None:
        return {"99% CI": "n/a", "exact": "exact (a count)"}.get(test, "n/a (no samples)")
    lo, hi = iv
    level_text = "asv's 99% CIs" if test == "99% CI" else confidence(level)
    if lo <= 0 and math.isinf(hi):
        return f"unbounded ({level_text}: too few samples)"
    if lo <= 0:
        return f"up to {times(hi)} ({level_text})"
    if math.isinf(hi):
        return f"from {times(lo)} ({level_text})"
    return f"{times(lo)} to {times(hi)} ({level_text})"


def samples(*counts: int | None) -> str:
    return " / ".join("not recorded" if n is None else str(n) for n in counts)


def verdict_cell(v: Verdict) -> str:
    """The verdict's word ("clock" where the change vanishes in cycles), its test, p and q
    in its title."""
    p = "" if v.p_value is None else f", p = {v.p_value:.2g}"
    q = "" if v.q_value is None else f", q = {v.q_value:.2g}"
    word = v.word
    if v.clock and v.cycles is not None:
        word, p = "clock", p + f"; {v.word} in time, {v.cycles.word} in cycles"
    cls = "ns" if v.word in UNCHANGED or v.clock else "sig"
    return f'<span class="verdict {cls}" title="{e(v.test)}{e(p)}{e(q)}">{e(word)}</span>'


def row_class(v: Verdict | None) -> str:
    return ' class="ns"' if v is None or v.word in UNCHANGED or v.clock else ""


def code(text: str) -> str:
    """Escape ``text`` and set `backticked` spans as code, as the sentence is written."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", e(text))


def cite_body(cites: Iterable[Citation], commands: Iterable[str] | None = None) -> str:
    """The sentence ``xferbench cite`` prints, the command that prints it and the figure."""
    cites = list(cites)
    cmds = list(commands) if commands is not None else [command(c) for c in cites]
    out = []
    for c, cmd in zip(cites, cmds):
        out += [f'<p class="sentence">{code(sentence(c))}</p>', f"<pre><code>{e(cmd)}</code></pre>",
                f'<p class="figure-link">figure: <a href="{e(c.figure)}">{e(c.figure)}</a></p>']
    return "".join(out)


def cite_link(ident: str) -> str:
    """The row's way to its citation, in the table's citations (``citations``)."""
    return f'<a class="cite-link" href="#cite-{e(ident)}">cite</a>'


def cite_entry(ident: str, label: str, body: str) -> str:
    """One row's citation in its table's citations: ``label`` names the row."""
    return (f'<div class="cite" id="cite-{e(ident)}"><p class="cite-for">{label}</p>{body}'
            "</div>")


def citations(entries: list[str]) -> list[str]:
    """A table's citations behind one control: each row's sentence, command and figure,
    reached from the row's cite link (site.js opens the control for it)."""
    if not entries:
        return []
    n = len(entries)
    return [f'<details class="cites"><summary>Cite {"this row" if n == 1 else f"these {n} rows"}'
            ": the sentence and command <code>xferbench cite</code> prints for each</summary>",
            *entries, "</details>"]


# -- header, banner, provenance ----------------------------------------------------------------

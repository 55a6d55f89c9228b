"""``compare``'s output: the table with its summary lines, and the JSON."""

from __future__ import annotations

import math
from typing import Any

from ...analysis.comparison import FAILED_IN_B, MARKS, WORSE, Row
from ...analysis.mannwhitney import EXACT_SMALLER, EXACT_TIED_TOTAL
from ...analysis.stats import ON_P, Decision
from ...results import Result
from ...units import confidence, format_value
from .model import Comparison


def p_text(row: Row) -> str:
    if row.p_value is not None:
        return _probability(row.p_value)
    return {"99% CI": "(CI)", "exact": "(exact)", "none": "-"}.get(row.test, "-")


def q_text(row: Row) -> str:
    return "-" if row.q_value is None else _probability(row.q_value)


def _probability(p: float) -> str:
    return "<1e-4" if p < 1e-4 else f"{p:.4f}"


def ratio_text(row: Row) -> str:
    if row.ratio is None:
        return "-"
    return "inf" if math.isinf(row.ratio) else f"{row.ratio:.3f}"


def mark_text(c: Comparison, i: int, r: Row) -> str:
    mark = f"{r.mark} ({r.note})" if r.note else r.mark
    conf = c.confirmation(i)
    if conf is None:
        return mark
    if conf.confirmed:
        return f"{mark}, confirmed ({', '.join(conf.by)})"
    return f"{mark}, suspected"


def _sides(c: Comparison) -> list[str]:
    lines = []
    for name, side in (("A", c.a), ("B", c.b)):
        lines.append(f"{name}: {side.label}")
        if side.others:
            lines.append(f"   not read: {'; '.join(k.label for k in side.others)} (another "
                         "mode: choose it with --mode)")
    return lines


def format_comparison(c: Comparison) -> list[str]:
    """The table: one row per benchmark and parameters, grouped by machine."""
    lines = _sides(c)
    header = ("benchmark", "A", "B", "B/A", "p", "q", "mark")
    machines = sorted({r.machine for r in c.rows})
    for machine in machines:
        table = [header]
        for i, r in enumerate(c.rows):
            if r.machine != machine:
                continue
            table.append((r.label(), format_value(r.a.value if r.a else None, r.unit),
                          format_value(r.b.value if r.b else None, r.unit),
                          ratio_text(r), p_text(r), q_text(r), mark_text(c, i, r)))
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        lines.append("")
        lines.append(f"on {machine}:")
        for i, row in enumerate(table):
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(w) for cell, w in zip(row[1:6], widths[1:6])]
            cells.append(row[6])
            lines.append("  ".join(cells).rstrip())
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
    if not c.rows:
        lines.append("")
        lines.append("no benchmark was measured on either side")
    return lines + _summary(c)


def _summary(c: Comparison) -> list[str]:
    counts = c.counts()
    lines = ["", f"{len(c.rows)} compared: " + ", ".join(
        f"{counts[m]} {m}" for m in MARKS) + f"; {c.skipped_both} skipped or failed on both sides",
        "B/A: B's value over A's; seconds, fractions and counts: lower is better; "
        "rates (/s) and behaviour checks (1 holds, 0 does not): higher is better.",
        _tested(c.decision),
        f"better/worse: significant and beyond {c.threshold:.0%} (without samples: disjoint "
        f"99% CIs); same: B/A's interval inside {1 / (1 + c.threshold):.3f} to "
        f"{1 + c.threshold:.3f}; ambiguous: neither can be shown"
        + ("; clock: better or worse in time but not once each sample is scaled by the SM "
           "clock it ran at" if any(r.verdict and r.verdict.cycles for r in c.rows) else "")
        + ". Confirmed where every repeat of both series (another machine folder measuring "
        "the same again) marks it so too, else suspected."]
    lines += [f"NOT FOR CITATION: {why}" for why in c.caveats]
    if c.confounds:
        lines.append("CAUTION: more than the release differs: " + "; ".join(c.confounds) +
                     " (a difference may be theirs; --strict refuses such a comparison)")
    worse = [i for i, r in enumerate(c.rows) if r.mark == WORSE]
    confirmed = sum(c.is_confirmed(i) for i in worse)
    broke = sum(1 for r in c.rows if r.mark == FAILED_IN_B)
    tail = (f"; {broke} measured in A but failed in B" if broke else "")
    if c.regressions:
        counted = confirmed if c.only_confirmed else len(worse)
        lines.append(f"REGRESSION: {counted} significantly worse by more than "
                     f"{c.threshold:.0%} in B ({confirmed} confirmed by a repeat, "
                     f"{len(worse) - confirmed} suspected"
                     + (", not counted: --confirmed" if c.only_confirmed else "") + ")" + tail)
    elif worse:
        lines.append(f"no confirmed regression beyond {c.threshold:.0%}: {len(worse)} worse, "
                     "each suspected (no repeat confirms it; --confirmed counts only those "
                     "that one does)")
    else:
        lines.append(f"no regression beyond {c.threshold:.0%}")
    return lines


def _tested(d: Decision) -> str:
    """The line that says how many rows were tested and the rate that decided them."""
    test = (f"{d.tested} rows tested (Mann-Whitney U on the samples, exact where a side has "
            f"at most {EXACT_SMALLER} and, with ties, the two at most {EXACT_TIED_TOTAL} in all)")
    if d.on == ON_P:
        return (f"{test}: each decided on its p-value at {d.alpha:g}, no false discovery "
                f"rate (--decide-on p); {d.discoveries} significant.")
    return (f"{test}: decided on q, a false discovery rate of {100 * d.alpha:g}% across them "
            f"(Benjamini-Hochberg); {d.discoveries} significant; each interval at "
            f"{confidence(d.level)} (--decide-on p decides on p alone).")


def as_dict(c: Comparison) -> dict[str, Any]:
    def value(r: Result | None) -> float | None:
        return r.value if r is not None and r.ok else None

    def confirmation(i: int) -> dict[str, Any]:
        conf = c.confirmation(i)
        if conf is None:
            return {"confirmation": None, "confirmed_by": [], "suspected_why": None}
        return {"confirmation": conf.status, "confirmed_by": list(conf.by),
                "suspected_why": conf.why or None}

    worse = [i for i, r in enumerate(c.rows) if r.mark == WORSE]
    d = c.decision
    return {
        "a": c.a.label, "b": c.b.label, "threshold": c.threshold, "alpha": c.alpha,
        "decide_on": d.on, "tested": d.tested, "significant": d.discoveries,
        "interval_level": 1 - d.level,
        "regression": bool(c.regressions), "counts": c.counts(),
        "confirmed_worse": sum(c.is_confirmed(i) for i in worse),
        "suspected_worse": sum(not c.is_confirmed(i) for i in worse),
        "only_confirmed": c.only_confirmed,
        "series": {"a": [k.label for k in c.a.series], "b": [k.label for k in c.b.series]},
        "not_read": {"a": [k.label for k in c.a.others], "b": [k.label for k in c.b.others]},
        "confounds": list(c.confounds),
        "not_for_citation": list(c.caveats),
        "skipped_both": c.skipped_both,
        "rows": [{"machine": r.machine, "benchmark": r.benchmark, "params": dict(r.params),
                  "unit": r.unit, "a": value(r.a), "b": value(r.b),
                  "ratio": None if r.ratio is None or math.isinf(r.ratio) else r.ratio,
                  "worse_by": None if r.worse_by is None or math.isinf(r.worse_by)
                  else r.worse_by,
                  "p_value": r.p_value, "q_value": r.q_value, "test": r.test,
                  "interval": _interval(r), "ratio_outside": _outside(r),
                  "mark": r.mark, "note": r.note,
                  **confirmation(i)}
                 for i, r in enumerate(c.rows)],
    }


def _outside(r: Row) -> bool:
    """The medians' ratio lies outside its interval: the two sides differ in shape."""
    return r.verdict is not None and r.verdict.ratio_outside


def _interval(r: Row) -> list[float | None] | None:
    """B/A's interval for JSON (an unbounded side as null)."""
    iv = r.verdict.interval if r.verdict is not None else None
    if iv is None:
        return None
    return [iv[0] if iv[0] > 0 else None, None if math.isinf(iv[1]) else iv[1]]



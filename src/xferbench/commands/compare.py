"""``xferbench compare A B``: every benchmark both sides measured, B against A, with a
significance test on the recorded samples and a threshold, so CI can gate on regressions.

A and B are PyTorch versions ("2.13.0" finds "2.13.0+cpu"; among ``--machine``'s only, where
given), suite commits (a prefix) or asv results files. Each side reads one series per machine
(``ResultSet.one_series``: ``--mode``'s, else the default mode's, the others named), and each
change is marked confirmed or suspected by the repeats of both series (``analysis.repeats``).
Exit status: 1 when a benchmark is significantly worse by more than the threshold (with
``--confirmed``, only where a repeat confirms it) or failed in B where A measured it, 0
otherwise, 2 on bad input (A and B the same results included, and a confound under
``--strict``), 3 when a side measured nothing at all.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from ..analysis.comparison import (
    FAILED_IN_B,
    MARKS,
    REGRESSIONS,
    WORSE,
    Row,
    compare_results,
    confounds,
)
from ..analysis.repeats import Confirmation, confirm_pairs
from ..analysis.stats import ALPHA, THRESHOLD, parse_alpha, parse_threshold
from ..errors import ExitCode, XferbenchError
from ..results import Result, ResultSet, load, load_file
from ..results.safefiles import require
from ..results.series import Mode, SeriesKey, labels
from ..units import format_value
from .options import add_bench, add_format, add_mode, add_results, bench_pattern, mode_of_option


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "compare", allow_abbrev=False,
        help="compare two PyTorch versions, suite commits or results files (exit 1 on a "
             "regression)",
        description="B against A for every benchmark both measured. A and B: a PyTorch "
                    "version (2.13.0 or 2.13.0+cpu), a suite commit (prefix) or an asv "
                    "results file. Exit status: 0 no regression; 1 a benchmark significantly "
                    "worse by more than the threshold, or failed in B where A measured it; 2 "
                    "bad input (A and B the same results included); 3 a side that measured "
                    "nothing.")
    p.add_argument("a", metavar="A",
                   help="baseline: PyTorch version, suite commit or results file")
    p.add_argument("b", metavar="B",
                   help="candidate: PyTorch version, suite commit or results file")
    add_results(p)
    p.add_argument("--threshold", type=parse_threshold, default=THRESHOLD, metavar="PCT",
                   help="smallest change that counts as a regression, as 10%% or 0.1 "
                        "(default: 10%%)")
    p.add_argument("--alpha", type=parse_alpha, default=ALPHA,
                   help=f"significance level of the Mann-Whitney U test (default: {ALPHA})")
    p.add_argument("--machine", default=None,
                   help="only this machine (a version is then matched among its series)")
    p.add_argument("--torch", default=None, metavar="VERSION",
                   help="only this PyTorch version (where A and B are commits)")
    add_bench(p, help="only benchmarks whose name matches REGEX")
    add_mode(p)
    p.add_argument("--strict", action="store_true",
                   help="refuse (exit 2) a comparison where more than the release or commit "
                        "differs: the build (+cpu vs +cu130), how it was measured (quick, "
                        "threads, sweep), the device, the machine or the Python")
    p.add_argument("--confirmed", action="store_true",
                   help="count as regressions (exit 1) only those a repeat confirms: a "
                        "second series of the same machine and release that marks them "
                        "worse too; the others are listed as suspected")
    add_format(p, help="text table (default) or JSON")
    p.set_defaults(func=cmd_compare)


class MeasuredNothing(XferbenchError):
    """One side of a comparison holds no number at all: compare's exit status 3."""


@dataclass(frozen=True)
class Side:
    spec: str
    label: str  # "torch 2.13.0+cpu", "commit 1da1603a", "file results/m/x.json"
    results: ResultSet
    others: tuple[SeriesKey, ...] = ()  # the series of other modes it did not read

    @property
    def series(self) -> list[SeriesKey]:
        return self.results.series()


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    rows: list[Row]
    skipped_both: int
    threshold: float
    alpha: float
    #: what differs between A and B besides what was asked (the build, the machine, Python)
    confounds: tuple[str, ...] = ()
    #: index of a row that is a change (worse, better) -> whether a repeat confirmed it
    confirmed: dict[int, Confirmation] = field(default_factory=dict)
    only_confirmed: bool = False  # --confirmed: suspected regressions do not fail

    def confirmation(self, i: int) -> Confirmation | None:
        return self.confirmed.get(i)

    @property
    def regressions(self) -> list[Row]:
        """The rows that fail the comparison: failed in B, and worse (with --confirmed, only
        where a repeat confirmed it)."""
        return [r for i, r in enumerate(self.rows) if r.mark in REGRESSIONS
                and not (self.only_confirmed and r.mark == WORSE and not self.is_confirmed(i))]

    def is_confirmed(self, i: int) -> bool:
        c = self.confirmed.get(i)
        return bool(c and c.confirmed)

    @property
    def exit_status(self) -> ExitCode:
        return ExitCode.REGRESSION if self.regressions else ExitCode.OK

    def counts(self) -> dict[str, int]:
        return {m: sum(1 for r in self.rows if r.mark == m) for m in MARKS}


def resolve_side(spec: str, load_root: Any, machine: str | None = None) -> Side:
    """A PyTorch version, a suite commit prefix, or a results file; ``load_root()`` gives the
    --results folder's ResultSet (loaded only where a spec needs it). A version is matched
    among ``machine``'s series where it is given."""
    if spec.endswith(".json") or os.sep in spec:
        require(spec, f"results file {spec}")
        return _on(Side(spec, f"file {os.path.relpath(spec)}", load_file(spec)), machine)
    rs: ResultSet = _on(Side(spec, "", load_root()), machine).results
    versions = rs.torch_versions()
    if spec in versions or any(v.split("+")[0] == spec for v in versions):
        version = rs.match_torch(spec)
        return Side(spec, f"torch {version}", rs.filter(torch=version))
    commits = sorted({c for c in rs.commits() if c.startswith(spec.lower())})
    if re.fullmatch(r"[0-9a-fA-F]{4,40}", spec) and commits:
        if len(commits) > 1:
            raise XferbenchError(
                f"commit {spec!r} is ambiguous in {rs.root}: it starts "
                f"{', '.join(c[:12] for c in commits)}; give more digits"
            )
        return Side(spec, f"commit {commits[0][:8]}", rs.filter(commit=commits[0]))
    where = rs.root + (f" on {machine}" if machine else "")
    raise XferbenchError(
        f"{spec!r} is not a PyTorch version, suite commit or results file in {where}: "
        f"versions {', '.join(versions)}; commits {', '.join(c[:8] for c in rs.commits())}"
    )


def _on(side: Side, machine: str | None) -> Side:
    """``side`` narrowed to ``machine``; one sentence where it has none of it."""
    if machine is None:
        return side
    rs = side.results
    if machine not in rs.machines():
        what = side.label or rs.root
        raise XferbenchError(f"machine {machine!r} is not in {what}: it has "
                             f"{', '.join(rs.machines())}")
    return Side(side.spec, side.label, rs.filter(machine=machine))


def _narrow(side: Side, torch: str | None, bench: str | None, mode: Mode | None) -> Side:
    """``side`` narrowed by --torch and --bench, one series per machine chosen (--mode)."""
    rs = side.results
    if torch is not None:
        rs = rs.filter(torch=rs.match_torch(torch))
    if bench is not None:
        names = sorted({r.benchmark for r in rs})
        rs = rs.filter(benchmark=bench)
        if not len(rs):
            raise XferbenchError(
                f"no benchmark in {side.label} matches --bench {bench!r}: it has "
                f"{', '.join(names)}")
    rs, others = rs.one_series(mode)
    how = sorted({labels(k.mode) for k in rs.series()} - {""})
    label = side.label + (f" ({'; '.join(how)})" if how else "")
    return Side(side.spec, label, rs.newest(), tuple(others))


@dataclass(frozen=True)
class Narrowing:
    """What both sides are narrowed to: --machine, --torch, --bench, --mode."""

    machine: str | None = None
    torch: str | None = None
    bench: str | None = None
    mode: Mode | None = None


def compare(a_spec: str, b_spec: str, *, results: str = "results",
            threshold: float = THRESHOLD, alpha: float = ALPHA, only_confirmed: bool = False,
            **narrowing: Any) -> Comparison:
    """Resolve A and B, narrow them (``Narrowing``'s fields as keywords), and compare their
    newest results."""
    n = Narrowing(**narrowing)
    machine, torch, bench, mode = n.machine, n.torch, n.bench, n.mode
    cache: dict[str, ResultSet] = {}

    def load_root() -> ResultSet:
        if "rs" not in cache:
            cache["rs"] = load(results)
        return cache["rs"]

    bench_pattern(bench)
    a, b = (_narrow(resolve_side(spec, load_root, machine), torch, bench, mode)
            for spec in (a_spec, b_spec))
    if {r.path for r in a.results} == {r.path for r in b.results}:
        raise XferbenchError(
            f"A ({a.label}) and B ({b.label}) are the same results "
            f"({', '.join(sorted(os.path.basename(p) for p in {r.path for r in a.results}))}): "
            "nothing to compare; name two PyTorch versions, commits or files")
    for side in (a, b):
        if not any(r.ok for r in side.results):
            raise MeasuredNothing(
                f"{side.label} has no measured number (every benchmark there was skipped or "
                "failed): a broken run, not a comparison")
    # one machine on each side (two results files, say): compare across the machines
    by_machine = not (len(a.results.machines()) == 1 and len(b.results.machines()) == 1)
    rows, skipped = compare_results(a.results, b.results, threshold=threshold, alpha=alpha,
                                    by_machine=by_machine)
    try:
        every: ResultSet | None = load_root()
    except XferbenchError:  # two files and no results folder: no repeat to ask
        every = None
    confirmed = confirm_pairs(every, rows, a.series, b.series, threshold=threshold, alpha=alpha)
    return Comparison(a, b, rows, skipped, threshold, alpha,
                      confounds(a.results, b.results, by_machine), confirmed, only_confirmed)


# -- formatting --------------------------------------------------------------------------------

def _p(row: Row) -> str:
    if row.p_value is not None:
        return "<1e-4" if row.p_value < 1e-4 else f"{row.p_value:.4f}"
    return {"99% CI": "(CI)", "exact": "(exact)", "none": "-"}.get(row.test, "-")


def _ratio(row: Row) -> str:
    if row.ratio is None:
        return "-"
    return "inf" if math.isinf(row.ratio) else f"{row.ratio:.3f}"


def _mark(c: Comparison, i: int, r: Row) -> str:
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
    header = ("benchmark", "A", "B", "B/A", "p", "mark")
    machines = sorted({r.machine for r in c.rows})
    for machine in machines:
        table = [header]
        for i, r in enumerate(c.rows):
            if r.machine != machine:
                continue
            table.append((r.label(), format_value(r.a.value if r.a else None, r.unit),
                          format_value(r.b.value if r.b else None, r.unit),
                          _ratio(r), _p(r), _mark(c, i, r)))
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        lines.append("")
        lines.append(f"on {machine}:")
        for i, row in enumerate(table):
            cells = [row[0].ljust(widths[0])]
            cells += [cell.rjust(w) for cell, w in zip(row[1:5], widths[1:5])]
            cells.append(row[5])
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
        "rates (/s): higher is better.",
        f"better/worse: significant (p < {c.alpha:g}, Mann-Whitney U on the samples; "
        f"without samples, disjoint 99% CIs) and beyond {c.threshold:.0%}; confirmed where "
        "every repeat of both series (another machine folder measuring the same again) marks "
        "it so too, else suspected."]
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
    return {
        "a": c.a.label, "b": c.b.label, "threshold": c.threshold, "alpha": c.alpha,
        "regression": bool(c.regressions), "counts": c.counts(),
        "confirmed_worse": sum(c.is_confirmed(i) for i in worse),
        "suspected_worse": sum(not c.is_confirmed(i) for i in worse),
        "only_confirmed": c.only_confirmed,
        "series": {"a": [k.label for k in c.a.series], "b": [k.label for k in c.b.series]},
        "not_read": {"a": [k.label for k in c.a.others], "b": [k.label for k in c.b.others]},
        "confounds": list(c.confounds),
        "skipped_both": c.skipped_both,
        "rows": [{"machine": r.machine, "benchmark": r.benchmark, "params": dict(r.params),
                  "unit": r.unit, "a": value(r.a), "b": value(r.b),
                  "ratio": None if r.ratio is None or math.isinf(r.ratio) else r.ratio,
                  "worse_by": None if r.worse_by is None or math.isinf(r.worse_by)
                  else r.worse_by,
                  "p_value": r.p_value, "test": r.test, "mark": r.mark, "note": r.note,
                  **confirmation(i)}
                 for i, r in enumerate(c.rows)],
    }


def cmd_compare(args: argparse.Namespace) -> ExitCode:
    try:
        c = _compare(args)
    except MeasuredNothing as exc:
        print(f"xferbench: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    if args.strict and c.confounds:
        raise XferbenchError(f"{c.a.label} and {c.b.label} differ in more than the release: "
                             f"{'; '.join(c.confounds)} (--strict)")
    if args.format == "json":
        print(json.dumps(as_dict(c), indent=2))
    else:
        for line in format_comparison(c):
            print(line)
    return c.exit_status


def _compare(args: argparse.Namespace) -> Comparison:
    return compare(args.a, args.b, results=args.results, threshold=args.threshold,
                   alpha=args.alpha, machine=args.machine, torch=args.torch, bench=args.bench,
                   mode=mode_of_option(args.mode), only_confirmed=args.confirmed)

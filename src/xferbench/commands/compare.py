"""``xferbench compare A B``: every benchmark both sides measured, B against A, with a
significance test on the recorded samples and a threshold, so CI can gate on regressions.

A and B are PyTorch versions ("2.13.0" finds "2.13.0+cpu"), suite commits (a prefix) or
asv results files. Exit status: 1 when a benchmark is significantly worse by more than the
threshold or failed in B where A measured it, 0 otherwise, 2 on bad input (A and B the same
results included), 3 when a side measured nothing at all.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from ..analysis.comparison import FAILED_IN_B, MARKS, REGRESSIONS, Row, compare_results
from ..analysis.stats import ALPHA, THRESHOLD, parse_alpha, parse_threshold
from ..errors import ExitCode, XferbenchError
from ..results import Result, ResultSet, load, load_file
from ..units import format_value
from .options import add_bench, add_format, add_results, bench_pattern


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
    p.add_argument("--machine", default=None, help="only this machine")
    p.add_argument("--torch", default=None, metavar="VERSION",
                   help="only this PyTorch version (where A and B are commits)")
    add_bench(p, help="only benchmarks whose name matches REGEX")
    p.add_argument("--strict", action="store_true",
                   help="refuse (exit 2) a comparison where more than the release or commit "
                        "differs: the build (+cpu vs +cu130), the machine or the Python")
    add_format(p, help="text table (default) or JSON")
    p.set_defaults(func=cmd_compare)


class MeasuredNothing(XferbenchError):
    """One side of a comparison holds no number at all: compare's exit status 3."""


@dataclass(frozen=True)
class Side:
    spec: str
    label: str  # "torch 2.13.0+cpu", "commit 1da1603a", "file results/m/x.json"
    results: ResultSet


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

    @property
    def regressions(self) -> list[Row]:
        return [r for r in self.rows if r.mark in REGRESSIONS]

    @property
    def exit_status(self) -> ExitCode:
        return ExitCode.REGRESSION if self.regressions else ExitCode.OK

    def counts(self) -> dict[str, int]:
        return {m: sum(1 for r in self.rows if r.mark == m) for m in MARKS}


def resolve_side(spec: str, load_root: Any) -> Side:
    """A PyTorch version, a suite commit prefix, or a results file; ``load_root()`` gives the
    --results folder's ResultSet (loaded only where a spec needs it)."""
    if spec.endswith(".json") or os.sep in spec:
        if not os.path.isfile(spec):
            raise XferbenchError(f"results file {spec} does not exist")
        return Side(spec, f"file {os.path.relpath(spec)}", load_file(spec))
    rs: ResultSet = load_root()
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
    raise XferbenchError(
        f"{spec!r} is not a PyTorch version, suite commit or results file in {rs.root}: "
        f"versions {', '.join(versions)}; commits {', '.join(c[:8] for c in rs.commits())}"
    )


def compare(a_spec: str, b_spec: str, *, results: str = "results",
            threshold: float = THRESHOLD, alpha: float = ALPHA, machine: str | None = None,
            torch: str | None = None, bench: str | None = None) -> Comparison:
    """Resolve A and B, narrow them, and compare their newest results."""
    cache: dict[str, ResultSet] = {}

    def load_root() -> ResultSet:
        if "rs" not in cache:
            cache["rs"] = load(results)
        return cache["rs"]

    pattern = bench_pattern(bench)
    sides = []
    for spec in (a_spec, b_spec):
        side = resolve_side(spec, load_root)
        rs = side.results
        if machine is not None:
            if machine not in rs.machines():
                raise XferbenchError(
                    f"machine {machine!r} is not in {side.label}: it has "
                    f"{', '.join(rs.machines())}")
            rs = rs.filter(machine=machine)
        if torch is not None:
            rs = rs.filter(torch=rs.match_torch(torch))
        if pattern is not None:
            names = sorted({r.benchmark for r in rs})
            rs = rs.filter(benchmark=bench)
            if not len(rs):
                raise XferbenchError(
                    f"no benchmark in {side.label} matches --bench {bench!r}: it has "
                    f"{', '.join(names)}")
        sides.append(Side(side.spec, side.label, rs.newest()))
    a, b = sides
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
    return Comparison(a, b, rows, skipped, threshold, alpha,
                      confounds(a.results, b.results, by_machine))


def confounds(a: ResultSet, b: ResultSet, by_machine: bool) -> tuple[str, ...]:
    """What differs between the sides besides the PyTorch release or suite commit: the build
    (+cpu vs +cu130), the machine (compared across machines), the Python; each a phrase."""
    out = []

    def build(rs: ResultSet) -> set[str]:
        return {r.torch.partition("+")[2] or "default" for r in rs}

    checks = [("the build", build), ("the Python", lambda rs: {r.python for r in rs})]
    if not by_machine:
        checks.append(("the machine", lambda rs: set(rs.machines())))
    for what, of in checks:
        left, right = of(a), of(b)
        if left and right and left != right:
            out.append(f"{what} differs ({', '.join(sorted(left))} vs "
                       f"{', '.join(sorted(right))})")
    return tuple(out)


# -- formatting --------------------------------------------------------------------------------

def _p(row: Row) -> str:
    if row.p_value is not None:
        return "<1e-4" if row.p_value < 1e-4 else f"{row.p_value:.4f}"
    return {"99% CI": "(CI)", "none": "-"}.get(row.test, "-")


def _ratio(row: Row) -> str:
    if row.ratio is None:
        return "-"
    return "inf" if math.isinf(row.ratio) else f"{row.ratio:.3f}"


def format_comparison(c: Comparison) -> list[str]:
    """The table: one row per benchmark and parameters, grouped by machine."""
    lines = [f"A: {c.a.label}", f"B: {c.b.label}"]
    header = ("benchmark", "A", "B", "B/A", "p", "mark")
    machines = sorted({r.machine for r in c.rows})
    for machine in machines:
        table = [header]
        for r in (r for r in c.rows if r.machine == machine):
            mark = f"{r.mark} ({r.note})" if r.note else r.mark
            table.append((r.label(), format_value(r.a.value if r.a else None, r.unit),
                          format_value(r.b.value if r.b else None, r.unit),
                          _ratio(r), _p(r), mark))
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
    counts = c.counts()
    lines.append("")
    lines.append(f"{len(c.rows)} compared: " + ", ".join(
        f"{counts[m]} {m}" for m in MARKS) + f"; {c.skipped_both} skipped or failed on both sides")
    lines.append("B/A: B's value over A's; seconds, fractions and counts: lower is better; "
                 "rates (/s): higher is better.")
    lines.append(f"better/worse: significant (p < {c.alpha:g}, Mann-Whitney U on the samples; "
                 f"without samples, disjoint 99% CIs) and beyond {c.threshold:.0%}.")
    if c.confounds:
        lines.append("CAUTION: more than the release differs: " + "; ".join(c.confounds) +
                     " (a difference may be theirs; --strict refuses such a comparison)")
    if c.regressions:
        worse = sum(1 for r in c.regressions if r.mark != FAILED_IN_B)
        broke = len(c.regressions) - worse
        lines.append(f"REGRESSION: {worse} significantly worse by more than {c.threshold:.0%} "
                     f"in B" + (f"; {broke} measured in A but failed in B" if broke else ""))
    else:
        lines.append(f"no regression beyond {c.threshold:.0%}")
    return lines


def as_dict(c: Comparison) -> dict[str, Any]:
    def value(r: Result | None) -> float | None:
        return r.value if r is not None and r.ok else None

    return {
        "a": c.a.label, "b": c.b.label, "threshold": c.threshold, "alpha": c.alpha,
        "regression": bool(c.regressions), "counts": c.counts(),
        "confounds": list(c.confounds),
        "skipped_both": c.skipped_both,
        "rows": [{"machine": r.machine, "benchmark": r.benchmark, "params": dict(r.params),
                  "unit": r.unit, "a": value(r.a), "b": value(r.b),
                  "ratio": None if r.ratio is None or math.isinf(r.ratio) else r.ratio,
                  "worse_by": None if r.worse_by is None or math.isinf(r.worse_by)
                  else r.worse_by,
                  "p_value": r.p_value, "test": r.test, "mark": r.mark, "note": r.note}
                 for r in c.rows],
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
                   alpha=args.alpha, machine=args.machine, torch=args.torch, bench=args.bench)

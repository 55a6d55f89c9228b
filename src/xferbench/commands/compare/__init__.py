"""``xferbench compare A B``: every benchmark both sides measured, B against A, with a
significance test on the recorded samples, a false discovery rate across the rows and a
threshold, so CI can gate on regressions.

A and B are PyTorch versions ("2.13.0" finds "2.13.0+cpu"; among ``--machine``'s only, where
given), suite commits (a prefix) or asv results files. Each side reads one series per machine
(``ResultSet.one_series``: ``--mode``'s, else the default mode's, the others named), and each
change is marked confirmed or suspected by the repeats of both series (``analysis.repeats``).
Exit status: 1 when a benchmark is significantly worse by more than the threshold (with
``--confirmed``, only where a repeat confirms it) or failed in B where A measured it, 0
otherwise, 2 on bad input (A and B the same results included, and a confound under
``--strict``, and two sides no machine holds both of), 3 when a side measured nothing at all or
no benchmark was measured on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from ...analysis.comparison import FAILED_IN_B, Row, compare_results, confounds
from ...analysis.provenance import banner, series_provenance
from ...analysis.repeats import commits_apart, confirm_pairs
from ...analysis.stats import ALPHA, ON_P, ON_Q, THRESHOLD, parse_alpha, parse_threshold
from ...errors import ExitCode, XferbenchError
from ...results import ResultSet, load, load_file
from ...results.safefiles import require
from ...results.series import Host, Mode, Selection, labels
from ..options import add_bench, add_format, add_results, add_selection, bench_pattern, selection_of
from .markdown import format_markdown
from .model import Comparison, MeasuredNothing, Side
from .text import as_dict, format_comparison

__all__ = ["Comparison", "Side", "as_dict", "compare", "confounds", "format_comparison",
           "format_markdown"]
#: The formats that print lines, by name (JSON is one document).
FORMATTERS = {"text": format_comparison, "markdown": format_markdown}


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
                    "nothing, or no benchmark both sides measured.")
    p.add_argument("a", metavar="A",
                   help="baseline: PyTorch version, suite commit or results file")
    p.add_argument("b", metavar="B",
                   help="candidate: PyTorch version, suite commit or results file")
    add_results(p)
    p.add_argument("--threshold", type=parse_threshold, default=THRESHOLD, metavar="PCT",
                   help="smallest change that counts as a regression, as 10%% or 0.1 "
                        "(default: 10%%)")
    p.add_argument("--alpha", type=parse_alpha, default=ALPHA,
                   help="the false discovery rate across the rows (with --decide-on p: each "
                        f"row's significance level) (default: {ALPHA})")
    p.add_argument("--decide-on", choices=(ON_Q, ON_P), default=ON_Q,
                   help="decide each row on its q-value, a false discovery rate across the "
                        "rows (Benjamini-Hochberg; default), or on its p-value alone")
    add_selection(p, machine="only this machine (a version is then matched among its series)",
                  torch="only this PyTorch version (where A and B are commits)")
    add_bench(p, help="only benchmarks whose name matches REGEX")
    p.add_argument("--strict", action="store_true",
                   help="refuse (exit 2) a comparison where more than the release or commit "
                        "differs: the build (+cpu vs +cu130), how it was measured (quick, "
                        "threads, sweep), the device, the machine or the Python")
    p.add_argument("--confirmed", action="store_true",
                   help="count as regressions (exit 1) only those a repeat confirms: a "
                        "second series of the same machine and release that marks them "
                        "worse too; the others are listed as suspected")
    add_format(p, help="text table (default), JSON, or markdown for a pull request (the "
                       "changes first, the rest folded)", choices=("text", "json", "markdown"))
    p.set_defaults(func=cmd_compare)


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
        f"{rs.unread(machine)}")


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


def _narrow(side: Side, torch: str | None, bench: str | None, mode: Mode | None,
            host: Host | None = None) -> Side:
    """``side`` narrowed by --torch and --bench, one series per machine chosen (--mode,
    --host: ``series.pick``)."""
    rs = side.results.select(Selection(torch=torch))
    if bench is not None:
        names = sorted({r.benchmark for r in rs})
        rs = rs.filter(benchmark=bench)
        if not len(rs):
            raise XferbenchError(
                f"no benchmark in {side.label} matches --bench {bench!r}: it has "
                f"{', '.join(names)}")
    rs, others = rs.one_series(mode, host)
    how = sorted({labels(k.mode) for k in rs.series()} - {""})
    label = side.label + (f" ({'; '.join(how)})" if how else "")
    return Side(side.spec, label, rs.newest(), tuple(others))


@dataclass(frozen=True)
class Narrowing:
    """What both sides are narrowed to: --machine, --torch, --bench, --mode, --host."""

    machine: str | None = None
    torch: str | None = None
    bench: str | None = None
    mode: Mode | None = None
    host: Host | None = None


def compare(a_spec: str, b_spec: str, *, results: str = "results",
            threshold: float = THRESHOLD, alpha: float = ALPHA, only_confirmed: bool = False,
            decide_on: str = ON_Q, **narrowing: Any) -> Comparison:
    """Resolve A and B, narrow them (``Narrowing``'s fields as keywords), and compare their
    newest results."""
    n = Narrowing(**narrowing)
    machine, torch, bench, mode, host = n.machine, n.torch, n.bench, n.mode, n.host
    cache: dict[str, ResultSet] = {}

    def load_root() -> ResultSet:
        if "rs" not in cache:
            cache["rs"] = load(results)
        return cache["rs"]

    bench_pattern(bench)
    a, b = (_narrow(resolve_side(spec, load_root, machine), torch, bench, mode, host)
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
    if by_machine:
        no_pair(a, b)
    rows, skipped = compare_results(a.results, b.results, threshold=threshold, alpha=alpha,
                                    by_machine=by_machine, decide_on=decide_on)
    nothing_compared(a, b, rows)
    try:
        every: ResultSet | None = load_root()
    except XferbenchError:  # two files and no results folder: no repeat to ask
        every = None
    confirmed = confirm_pairs(every, rows, a.series, b.series, threshold=threshold, alpha=alpha,
                              decide_on=decide_on, commits=commits_apart(a.results, b.results))
    return Comparison(a, b, rows, skipped, threshold, alpha,
                      confounds(a.results, b.results, by_machine), confirmed, only_confirmed,
                      decide_on, caveats(a, b))


def caveats(a: Side, b: Side) -> tuple[str, ...]:
    """Why the series of both sides are not for citation, each "reason (which series)"."""
    series = [series_provenance(side.results, key) for side in (a, b) for key in side.series]
    out = []
    for reason, hit in banner(series):
        who = "every series" if len(hit) == len(series) else "; ".join(p.label for p in hit)
        out.append(f"{reason} ({who})")
    return tuple(out)


def no_pair(a: Side, b: Side) -> None:
    """One sentence (exit 2) where no machine holds both sides: nothing to pair."""
    left, right = a.results.machines(), b.results.machines()
    if not set(left) & set(right):
        raise XferbenchError(
            f"no machine holds both {a.label} and {b.label}: A is on {', '.join(left)}, B on "
            f"{', '.join(right)}; compare two results files to compare across machines")


def nothing_compared(a: Side, b: Side, rows: list[Row]) -> None:
    """Exit 3, one sentence, where no row was measured on both sides: a comparison of
    nothing is no pass."""
    if any(r.verdict is not None or r.mark == FAILED_IN_B for r in rows):
        return
    only_a = sum(1 for r in rows if r.a is not None and r.a.ok)
    only_b = sum(1 for r in rows if r.b is not None and r.b.ok)
    raise MeasuredNothing(
        f"no benchmark was measured on both sides ({only_a} measured in {a.label} only, "
        f"{only_b} in {b.label} only): nothing was compared")


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
        for line in FORMATTERS[args.format](c):
            print(line)
    return c.exit_status


def _compare(args: argparse.Namespace) -> Comparison:
    sel = selection_of(args)
    return compare(args.a, args.b, results=args.results, threshold=args.threshold,
                   alpha=args.alpha, machine=sel.machine, torch=sel.torch, bench=args.bench,
                   mode=sel.mode, host=sel.host, only_confirmed=args.confirmed,
                   decide_on=args.decide_on)

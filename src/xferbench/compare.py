"""``xferbench compare A B``: every benchmark both sides measured, B against A, with a
significance test on the recorded samples and a threshold, so CI can gate on regressions.

A and B are PyTorch versions ("2.13.0" finds "2.13.0+cpu"), suite commits (a prefix) or
asv results files. Exit status: 1 when a benchmark is significantly worse by more than the
threshold, 0 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ._errors import XferbenchError
from .results import Result, ResultSet

#: Default threshold: a change smaller than this is never a regression, however significant.
THRESHOLD = 0.10
#: Two-sided significance level of the Mann-Whitney U test.
ALPHA = 0.05

BETTER = "better"
WORSE = "worse"
WITHIN = "within threshold"  # significant, but smaller than the threshold
NOT_SIGNIFICANT = "not significant"
MISSING = "missing"
MARKS = (WORSE, BETTER, WITHIN, NOT_SIGNIFICANT, MISSING)


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "compare", allow_abbrev=False,
        help="compare two PyTorch versions, suite commits or results files (exit 1 on a "
             "regression)",
        description="B against A for every benchmark both measured. A and B: a PyTorch "
                    "version (2.13.0 or 2.13.0+cpu), a suite commit (prefix) or an asv "
                    "results file. Exit status 1 when one is significantly worse by more "
                    "than the threshold.")
    p.add_argument("a", metavar="A",
                   help="baseline: PyTorch version, suite commit or results file")
    p.add_argument("b", metavar="B",
                   help="candidate: PyTorch version, suite commit or results file")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="results folder (default: results)")
    p.add_argument("--threshold", type=_threshold, default=THRESHOLD, metavar="PCT",
                   help="smallest change that counts as a regression, as 10%% or 0.1 "
                        "(default: 10%%)")
    p.add_argument("--alpha", type=_alpha, default=ALPHA,
                   help=f"significance level of the Mann-Whitney U test (default: {ALPHA})")
    p.add_argument("--machine", default=None, help="only this machine")
    p.add_argument("--torch", default=None, metavar="VERSION",
                   help="only this PyTorch version (where A and B are commits)")
    p.add_argument("--bench", default=None, metavar="REGEX",
                   help="only benchmarks whose name matches REGEX")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text table (default) or JSON")
    p.set_defaults(func=cmd_compare)


def _threshold(text: str) -> float:
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a threshold: write 10% or 0.1") from None
    if not 0 <= value < 1 or (not t.endswith("%") and value >= 1):
        raise argparse.ArgumentTypeError(f"{text!r} is not a threshold between 0% and 100%")
    return value


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a significance level in (0, 1)")
    return value


# -- statistics --------------------------------------------------------------------------------

def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of ``x``, p-value).

    Normal approximation with the tie correction and a continuity correction, as
    scipy.stats.mannwhitneyu(x, y, method="asymptotic"). Samples of a benchmark are many
    (tens to thousands), where the approximation is close to the exact test.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples must be non-empty")
    pooled = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    n = n1 + n2
    rank_sum_x = 0.0
    tie_term = 0.0  # sum of t^3 - t over groups of t tied values
    i = 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        t = j - i + 1
        mid_rank = (i + j) / 2 + 1  # ranks are 1-based; ties share their mean rank
        rank_sum_x += mid_rank * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        tie_term += t**3 - t
        i = j + 1
    u = rank_sum_x - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return u, 1.0  # every value tied: nothing tells the two apart
    z = max(abs(u - mean) - 0.5, 0.0) / math.sqrt(var)
    return u, min(1.0, math.erfc(z / math.sqrt(2)))


def higher_is_better(unit: str) -> bool:
    """Rates (GB/s, steps/s: any unit per second) grow when things improve; seconds,
    fractions and counts shrink."""
    return unit.strip().endswith("/s")


def worse_by(ratio: float, unit: str) -> float:
    """B/A turned into "times worse": B/A for seconds, A/B for rates."""
    if higher_is_better(unit):
        return math.inf if ratio == 0 else 1 / ratio
    return ratio


@dataclass(frozen=True)
class Significance:
    significant: bool
    p_value: float | None
    test: str  # "mann-whitney", "99% CI", or "none"


def significance(a: Result, b: Result, alpha: float = ALPHA) -> Significance:
    """Mann-Whitney U on the recorded samples; without samples, asv's 99% confidence
    intervals (disjoint = significant); without either, never significant."""
    if a.samples and b.samples and len(a.samples) >= 2 and len(b.samples) >= 2:
        _, p = mann_whitney_u(a.samples, b.samples)
        return Significance(p < alpha, p, "mann-whitney")
    if a.ci_99 and b.ci_99:
        (a_lo, a_hi), (b_lo, b_hi) = sorted(a.ci_99), sorted(b.ci_99)
        return Significance(a_hi < b_lo or b_hi < a_lo, None, "99% CI")
    return Significance(False, None, "none")


# -- comparing ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One benchmark at one parameter combination, B against A."""

    machine: str
    benchmark: str
    params: tuple[tuple[str, Any], ...]
    unit: str
    a: Result | None
    b: Result | None
    mark: str
    ratio: float | None = None  # B's value / A's value
    p_value: float | None = None
    test: str = "none"
    note: str = ""  # why a row is missing

    @property
    def worse_by(self) -> float | None:
        """How many times worse B is (below 1: better), whatever the unit's direction."""
        return None if self.ratio is None else worse_by(self.ratio, self.unit)

    def label(self) -> str:
        short = self.benchmark.split(".", 1)[-1]
        return f"{short}({', '.join(str(v) for _, v in self.params)})" if self.params else short


def _state(r: Result | None) -> str:
    if r is None:
        return "absent"
    if r.value is None:
        return "failed"
    return "measured" if r.ok else "skipped"


def compare_results(a: Iterable[Result], b: Iterable[Result], *, threshold: float = THRESHOLD,
                    alpha: float = ALPHA, by_machine: bool = True) -> tuple[list[Row], int]:
    """Rows for every (machine, benchmark, params) measured on either side, and the number
    skipped or failed on both. Each side must hold one result per key (see ResultSet.newest)."""
    def index(results: Iterable[Result], side: str) -> dict[tuple, Result]:
        out: dict[tuple, Result] = {}
        for r in results:
            key = (r.machine if by_machine else "", r.benchmark, r.params)
            if key in out and out[key].torch != r.torch:
                raise XferbenchError(
                    f"{side} holds {r.benchmark} on {r.machine} for two PyTorch versions "
                    f"({out[key].torch}, {r.torch}): add --torch to pick one"
                )
            out[key] = r
        return out

    ia, ib = index(a, "A"), index(b, "B")
    # benchmarks by name, their parameter combinations in the order asv declared them
    first_seen: dict[tuple, int] = {}
    for key in [*ia, *ib]:
        first_seen.setdefault(key, len(first_seen))
    rows: list[Row] = []
    skipped_both = 0
    for key in sorted(first_seen, key=lambda k: (k[0], k[1], first_seen[k])):
        ra, rb = ia.get(key), ib.get(key)
        either = rb if ra is None else ra
        machines = list(dict.fromkeys(r.machine for r in (ra, rb) if r is not None))
        machine = key[0] or " vs ".join(machines)
        base = dict(machine=machine, benchmark=key[1], params=key[2], unit=either.unit,
                    a=ra, b=rb)
        sa, sb = _state(ra), _state(rb)
        if sa != "measured" and sb != "measured":
            skipped_both += 1
            continue
        if sa != "measured" or sb != "measured":
            note = f"A {sa}" if sa != "measured" else f"B {sb}"
            rows.append(Row(**base, mark=MISSING, note=note))
            continue
        assert ra is not None and rb is not None and ra.value is not None and rb.value is not None
        if ra.value == 0:
            ratio = 1.0 if rb.value == 0 else math.inf
        else:
            ratio = rb.value / ra.value
        sig = significance(ra, rb, alpha)
        worse = worse_by(ratio, either.unit)
        if not sig.significant:
            mark = NOT_SIGNIFICANT
        elif worse > 1 + threshold:
            mark = WORSE
        elif worse < 1 / (1 + threshold):
            mark = BETTER
        else:
            mark = WITHIN
        rows.append(Row(**base, mark=mark, ratio=ratio, p_value=sig.p_value, test=sig.test))
    return rows, skipped_both


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

    @property
    def regressions(self) -> list[Row]:
        return [r for r in self.rows if r.mark == WORSE]

    @property
    def exit_status(self) -> int:
        return 1 if self.regressions else 0

    def counts(self) -> dict[str, int]:
        return {m: sum(1 for r in self.rows if r.mark == m) for m in MARKS}


def resolve_side(spec: str, load_root: Any) -> Side:
    """A PyTorch version, a suite commit prefix, or a results file; ``load_root()`` gives the
    --results folder's ResultSet (loaded only where a spec needs it)."""
    from .results import load_file

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
    from .results import load

    cache: dict[str, ResultSet] = {}

    def load_root() -> ResultSet:
        if "rs" not in cache:
            cache["rs"] = load(results)
        return cache["rs"]

    pattern = None
    if bench is not None:
        try:
            pattern = re.compile(bench)
        except re.error as exc:
            raise XferbenchError(f"--bench {bench!r} is not a regular expression: {exc}") from None
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
    # one machine on each side (two results files, say): compare across the machines
    by_machine = not (len(a.results.machines()) == 1 and len(b.results.machines()) == 1)
    rows, skipped = compare_results(a.results, b.results, threshold=threshold, alpha=alpha,
                                    by_machine=by_machine)
    return Comparison(a, b, rows, skipped, threshold, alpha)


# -- formatting --------------------------------------------------------------------------------

def format_value(value: float | None, unit: str) -> str:
    from .measurement import format_seconds

    if value is None or not math.isfinite(value):
        return "n/a"
    if unit == "seconds":
        return format_seconds(value)
    if unit == "bytes":
        for power, name in ((3, "GiB"), (2, "MiB"), (1, "KiB")):
            if abs(value) >= 1024**power:
                return f"{value / 1024**power:.3g} {name}"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value)} {unit}"  # counts and round rates: no exponent, no ".00"
    if 1e-3 <= abs(value) < 1e7:
        digits = max(2 - math.floor(math.log10(abs(value))), 0)
        return f"{value:.{digits}f} {unit}"
    return f"{value:.3g} {unit}"


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
    if c.regressions:
        lines.append(f"REGRESSION: {len(c.regressions)} significantly worse by more than "
                     f"{c.threshold:.0%} in B")
    else:
        lines.append(f"no regression beyond {c.threshold:.0%}")
    return lines


def as_dict(c: Comparison) -> dict[str, Any]:
    def value(r: Result | None) -> float | None:
        return r.value if r is not None and r.ok else None

    return {
        "a": c.a.label, "b": c.b.label, "threshold": c.threshold, "alpha": c.alpha,
        "regression": bool(c.regressions), "counts": c.counts(),
        "skipped_both": c.skipped_both,
        "rows": [{"machine": r.machine, "benchmark": r.benchmark, "params": dict(r.params),
                  "unit": r.unit, "a": value(r.a), "b": value(r.b),
                  "ratio": None if r.ratio is None or math.isinf(r.ratio) else r.ratio,
                  "worse_by": None if r.worse_by is None or math.isinf(r.worse_by)
                  else r.worse_by,
                  "p_value": r.p_value, "test": r.test, "mark": r.mark, "note": r.note}
                 for r in c.rows],
    }


def cmd_compare(args: argparse.Namespace) -> int:
    c = compare(args.a, args.b, results=args.results, threshold=args.threshold,
                alpha=args.alpha, machine=args.machine, torch=args.torch, bench=args.bench)
    if args.format == "json":
        print(json.dumps(as_dict(c), indent=2))
    else:
        for line in format_comparison(c):
            print(line)
    return c.exit_status

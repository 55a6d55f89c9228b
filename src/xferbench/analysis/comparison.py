"""Comparing two sets of results key by key: B against A for every benchmark and parameters,
with a mark (better, worse, within threshold, not significant, missing) from the ratio, the
significance test and a threshold. Used by ``compare`` and by ``publish`` (regressions
between consecutive PyTorch versions).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import XferbenchError
from ..results import Result, ResultSet
from ..results.series import labels
from .stats import ALPHA, THRESHOLD, significance, worse_by

BETTER = "better"
WORSE = "worse"
WITHIN = "within threshold"  # significant, but smaller than the threshold
NOT_SIGNIFICANT = "not significant"
MISSING = "missing"
FAILED_IN_B = "failed in B"  # measured in A, failed in B: the candidate broke it, a regression
MARKS = (WORSE, FAILED_IN_B, BETTER, WITHIN, NOT_SIGNIFICANT, MISSING)
#: The marks that fail a comparison (compare's exit status 1).
REGRESSIONS = (WORSE, FAILED_IN_B)


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
        if sa == "measured" and sb == "failed":
            rows.append(Row(**base, mark=FAILED_IN_B))
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


def confounds(a: ResultSet, b: ResultSet, by_machine: bool) -> tuple[str, ...]:
    """What differs between the sides besides the PyTorch release or suite commit: the build
    (+cpu vs +cu130), how it was measured (quick, threads, a sweep, a cap), the device and
    the GPU, the torch threads, the machine (compared across machines), the Python; each a
    phrase."""
    out = []

    def build(rs: ResultSet) -> set[str]:
        return {r.torch.partition("+")[2] or "default" for r in rs}

    def threads(rs: ResultSet) -> set[str]:
        return {str(rs.metadata_for(r).torch_threads) for r in rs
                if rs.metadata_for(r).torch_threads is not None}

    checks = [("the build", build),
              ("how it was measured", lambda rs: {labels(r.mode) or "default" for r in rs}),
              ("the device", lambda rs: {r.device for r in rs} - {"unknown"}),
              ("the GPU", lambda rs: {rs.gpu_for(r) or "none" for r in rs}),
              ("the torch threads", threads),
              ("the Python", lambda rs: {r.python for r in rs})]
    if not by_machine:
        checks.append(("the machine", lambda rs: set(rs.machines())))
    for what, of in checks:
        left, right = of(a), of(b)
        if left and right and left != right:
            out.append(f"{what} differs ({', '.join(sorted(left))} vs "
                       f"{', '.join(sorted(right))})")
    return tuple(out)

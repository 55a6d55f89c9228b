"""Comparing two sets of results key by key: B against A for every benchmark and parameters,
with a mark (better, worse, clock, same, ambiguous, missing, failed in B) from the row's
verdict (``stats.verdict``): its significance decided on its q-value across the rows (a false
discovery rate) or on its p-value, a threshold, and an interval. Used by ``compare`` and by
``publish`` (regressions between consecutive PyTorch versions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import XferbenchError
from ..results import Result, ResultSet
from ..results.series import labels
from .stats import (
    ALPHA,
    AMBIGUOUS,
    ON_Q,
    SAME,
    THRESHOLD,
    UNCHANGED,
    Decision,
    Verdict,
    decide,
    significance,
    verdict,
    worse_by,
)

BETTER = "better"
WORSE = "worse"
#: Worse or better in time, not in cycles (each sample times its SM clock): a clock change.
CLOCK = "clock"
MISSING = "missing"
FAILED_IN_B = "failed in B"  # measured in A, failed in B: the candidate broke it, a regression
MARKS = (WORSE, FAILED_IN_B, BETTER, CLOCK, SAME, AMBIGUOUS, MISSING)
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
    q_value: float | None = None  # across the comparison's rows with a p-value
    verdict: Verdict | None = None  # where both sides measured it

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
                    alpha: float = ALPHA, by_machine: bool = True,
                    decide_on: str = ON_Q) -> tuple[list[Row], int]:
    """Rows for every (machine, benchmark, params) measured on either side, and the number
    skipped or failed on both. Each side must hold one result per key (see ResultSet.newest).
    The rows both sides measured are decided together: on each one's q-value (a false
    discovery rate of ``alpha`` across them) or, with ``decide_on`` "p", on its p-value."""
    pending: list[Row | tuple[dict[str, Any], Result, Result]] = []
    skipped_both = 0
    for key, ra, rb in _pairs(a, b, by_machine):
        either = rb if ra is None else ra
        assert either is not None  # _pairs: every key is one side's at least
        machines = list(dict.fromkeys(r.machine for r in (ra, rb) if r is not None))
        base = dict(machine=key[0] or " vs ".join(machines), benchmark=key[1], params=key[2],
                    unit=either.unit, a=ra, b=rb)
        sa, sb = _state(ra), _state(rb)
        if sa != "measured" and sb != "measured":
            skipped_both += 1
        elif sa == "measured" and sb == "failed":
            pending.append(Row(**base, mark=FAILED_IN_B))
        elif sa != "measured" or sb != "measured":
            note = f"A {sa}" if sa != "measured" else f"B {sb}"
            pending.append(Row(**base, mark=MISSING, note=note))
        else:
            assert ra is not None and rb is not None  # both measured
            pending.append((base, ra, rb))  # decided below, with the others
    measured = [p for p in pending if not isinstance(p, Row)]
    decision, qs = decide([significance(ra, rb, alpha).p_value for _, ra, rb in measured],
                          alpha, decide_on)
    q_of = {id(p): q for p, q in zip(measured, qs)}
    rows = [p if isinstance(p, Row) else _decided(*p, q_of[id(p)], decision, threshold)
            for p in pending]
    return rows, skipped_both


def _pairs(a: Iterable[Result], b: Iterable[Result],
           by_machine: bool) -> list[tuple[tuple, Result | None, Result | None]]:
    """(key, A's result, B's result) for every key either side holds: benchmarks by name,
    their parameter combinations in the order asv declared them."""
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
    first_seen: dict[tuple, int] = {}
    for key in [*ia, *ib]:
        first_seen.setdefault(key, len(first_seen))
    return [(key, ia.get(key), ib.get(key))
            for key in sorted(first_seen, key=lambda k: (k[0], k[1], first_seen[k]))]


def _decided(base: dict[str, Any], ra: Result, rb: Result, q: float | None,
             decision: Decision, threshold: float) -> Row:
    """The row of a combination both sides measured, its mark from its verdict."""
    v = verdict(ra, rb, decision.alpha, threshold, q_value=q, decision=decision)
    if v.word in UNCHANGED:
        mark = v.word
    elif v.clock:
        mark = CLOCK
    else:
        assert v.ratio is not None
        mark = WORSE if worse_by(v.ratio, ra.unit) > 1 else BETTER
    return Row(**base, mark=mark, ratio=v.ratio, p_value=v.p_value, test=v.test, q_value=q,
               verdict=v)


def decision_of(rows: Iterable[Row]) -> Decision | None:
    """How the rows were decided (None: no row both sides measured)."""
    return next((r.verdict.decision for r in rows if r.verdict is not None), None)


def confounds(a: ResultSet, b: ResultSet, by_machine: bool) -> tuple[str, ...]:
    """What differs between the sides besides the PyTorch release or suite commit: the build
    (+cpu vs +cu130), how it was measured (quick, threads, a sweep, a cap), the device and
    the GPU, the CPU model, its cores and the host (sidecars that name different hardware
    under one machine name), the torch threads, the machine (compared across machines), the
    Python; each a phrase."""
    out = []

    def build(rs: ResultSet) -> set[str]:
        return {r.torch.partition("+")[2] or "default" for r in rs}

    def threads(rs: ResultSet) -> set[str]:
        return {str(rs.metadata_for(r).torch_threads) for r in rs
                if rs.metadata_for(r).torch_threads is not None}

    def host(field: str) -> Callable[[ResultSet], set[str]]:
        def of(rs: ResultSet) -> set[str]:
            values = (getattr(rs.metadata_for(r), field) for r in rs)
            return {str(v) for v in values if v not in (None, "", "unknown")}
        return of

    checks = [("the build", build),
              ("how it was measured", lambda rs: {labels(r.mode) or "default" for r in rs}),
              ("the device", lambda rs: {r.device for r in rs} - {"unknown"}),
              ("the GPU", lambda rs: {rs.gpu_for(r) or "none" for r in rs}),
              ("the CPU", host("cpu_model")), ("the core count", host("cpu_count")),
              ("the host", host("hostname")),
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

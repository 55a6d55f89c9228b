"""Every combination without a number, with its reason: the newest result of each
(machine, PyTorch, benchmark, parameters) that was skipped or failed, joined with the reason
its run recorded in the sidecar's ``outcomes`` (sidecars from before schema 2 have none:
"reason not recorded"), and every benchmark a series holds no result of at all. Grouped by
reason for the site, so that nothing vanishes without a word."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...results import ResultSet, version_key
from ...results.runrecords import FAILED, SKIPPED

NOT_RECORDED = "reason not recorded"
#: Beside the recorded statuses (runrecords.SKIPPED, FAILED): a benchmark a series holds no
#: result of at all.
NOT_RUN = "not run"


@dataclass(frozen=True)
class Unmeasured:
    """One combination of one series without a number."""

    machine: str  # the series' trend: the machine, with its mode where not the default
    torch: str
    benchmark: str
    params: tuple[tuple[str, Any], ...]
    status: str  # skipped, failed, not run
    reason: str


@dataclass(frozen=True)
class Gap:
    """The combinations of one benchmark left without a number for one reason."""

    benchmark: str
    status: str
    reason: str
    combos: tuple[tuple[tuple[str, Any], ...], ...]  # in the benchmark's declared order
    series: tuple[tuple[str, str], ...]  # (machine, torch) where it happened, in order
    #: the numbers missing: each combination in each series that lacks it (a combination
    #: missing in 60 series is 60 numbers, not 1)
    missing: int = 0


def _key(params: Any) -> tuple[tuple[str, str], ...]:
    items = params.items() if isinstance(params, dict) else params
    return tuple(sorted((str(k), str(v)) for k, v in items))


def _recorded(rs: ResultSet, path: str) -> dict[tuple[str, tuple], tuple[str, str]]:
    """(benchmark, params) -> (status, reason) from the sidecar of the results file ``path``."""
    side = rs.sidecars.get(path)
    return {(name, _key(o.params)): (o.status, o.reason or NOT_RECORDED)
            for name, rows in (side.outcomes.items() if side else ())
            for o in rows}


def unmeasured(rs: ResultSet) -> list[Unmeasured]:
    """Every combination of every series of ``rs`` without a number, with its reason."""
    newest = rs.newest()
    recorded: dict[str, dict] = {}
    out = []
    for r in newest:
        if r.ok:
            continue
        if r.path not in recorded:
            recorded[r.path] = _recorded(rs, r.path)
        status, reason = recorded[r.path].get(
            (r.benchmark, _key(r.params)),
            (FAILED if r.value is None else SKIPPED, NOT_RECORDED))
        out.append(Unmeasured(r.series.trend, r.torch, r.benchmark, r.params, status, reason))
    held: dict[tuple[str, str], set[str]] = {}
    for r in newest:
        held.setdefault((r.series.trend, r.torch), set()).add(r.benchmark)
    for (machine, torch), names in held.items():
        for name in sorted(set(rs.benchmarks) - names):
            out.append(Unmeasured(machine, torch, name, (), NOT_RUN,
                                  "not in this series' results files"))
    return out


def gaps(declared: dict[str, list[Any]], items: Iterable[Unmeasured],
         benchmark: str) -> list[Gap]:
    """``benchmark``'s unmeasured combinations grouped by (status, reason), largest first;
    ``declared``: its parameters' values, in asv's declared order."""
    order = {(name, str(v)): i for name, values in declared.items()
             for i, v in enumerate(values)}
    groups: dict[tuple[str, str], tuple[dict, set, set]] = {}
    for u in items:
        if u.benchmark != benchmark:
            continue
        combos, series, pairs = groups.setdefault((u.status, u.reason), ({}, set(), set()))
        combos.setdefault(u.params, None)
        series.add((u.machine, u.torch))
        pairs.add((u.machine, u.torch, u.params))
    out = []
    for (status, reason), (combos, series, pairs) in groups.items():
        ordered = sorted(combos, key=lambda ps: [order.get((k, str(v)), 99) for k, v in ps])
        out.append(Gap(benchmark, status, reason, tuple(ordered),
                       tuple(sorted(series, key=lambda s: (s[0], version_key(s[1])))),
                       len(pairs)))
    out.sort(key=lambda g: (-len(g.combos), g.status, g.reason))
    return out

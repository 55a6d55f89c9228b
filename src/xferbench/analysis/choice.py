"""Which result a citation quotes: the benchmark resolved from a short name, its parameters
checked against those declared, and one combination of one series chosen, narrowed as every
command narrows and picked by ``series.pick``'s rules."""

from __future__ import annotations

from typing import Any

from ..errors import XferbenchError
from ..results import Result, ResultSet
from ..results.series import (
    Host,
    Mode,
    Selection,
    host_option,
    labels,
    mode_option,
    one_mode,
    pick,
    reasons,
)


def kv(params: dict[str, Any]) -> str:
    """``params`` as ``name=value`` pairs, as ``--params`` takes them."""
    return ", ".join(f"{k}={v}" for k, v in params.items())


def resolve_benchmark(rs: ResultSet, name: str) -> str:
    names = sorted(set(rs.benchmarks) | {r.benchmark for r in rs})
    if name in names:
        return name
    found = [n for n in names if n.endswith("." + name)]
    if len(found) == 1:
        return found[0]
    if found:
        raise XferbenchError(f"benchmark {name!r} is ambiguous: it ends {', '.join(found)}")
    raise XferbenchError(f"benchmark {name!r} is not in {rs.root}: it holds {', '.join(names)}")


def _declared(rs: ResultSet, benchmark: str) -> dict[str, list[str]]:
    return {k: [str(v) for v in values] for k, values in rs.declared_params(benchmark).items()}


def _check_params(rs: ResultSet, benchmark: str, params: dict[str, str]) -> None:
    declared = _declared(rs, benchmark)
    for key, value in params.items():
        if key not in declared:
            raise XferbenchError(
                f"{key!r} is not a parameter of {benchmark}: it takes "
                f"{', '.join(declared) or 'none'}")
        if value not in declared[key]:
            raise XferbenchError(
                f"{key}={value} is not a value of {benchmark}: use {', '.join(declared[key])}")


def choose(rs: ResultSet, benchmark: str, params: dict[str, str], *, torch: str | None = None,
           machine: str | None = None, allow_quick: bool = False, mode: Mode | None = None,
           host: Host | None = None) -> tuple[Result, list[Result]]:
    """The newest measured result of ``benchmark`` at ``params``, and the others (the other
    series', and other runs of its own), narrowed as every command narrows (``select``) and
    chosen by ``series.pick``'s rules; a mode not for citation (quick, a smoke sweep, a cap)
    only with ``allow_quick``."""
    benchmark = resolve_benchmark(rs, benchmark)
    _check_params(rs, benchmark, params)
    found = rs.select(Selection(machine, torch)).find(benchmark, **params)
    everywhere = [r for r in found if r.ok]
    label = benchmark + (f" ({kv(params)})" if params else "")
    measured = [r for r in _in_mode(everywhere, label, mode, allow_quick)
                if Selection(host=host).holds(r.series)]
    # a capped number, or one of discarded batches alone, only where there is nothing else
    measured = [r for r in measured if not (r.capped or r.not_citable)] or measured
    if not measured:
        where = f" for torch {torch}" if torch else ""
        where += f" on {machine}" if machine else ""
        where += f" on --host {host_option(host)}" if host else ""
        why = "skipped or failed in every run" if found else "not in the results"
        raise XferbenchError(f"{label} has no measured value{where}: {why}")
    _one_combination(rs, benchmark, label, params, measured)
    newest = max(measured, key=lambda r: (r.date_ms, r.started_ms or 0, r.torch))
    pick([r.series for r in everywhere if (r.machine, r.torch, r.mode) ==
          (newest.machine, newest.torch, newest.mode)],
         newest.mode, where=f"{label} for torch {newest.torch} on {newest.machine}", host=host)
    others = [r for r in everywhere if r.params == newest.params
              and (r.series != newest.series or r.path != newest.path)]
    return newest, others


def _one_combination(rs: ResultSet, benchmark: str, label: str, params: dict[str, str],
                     measured: list[Result]) -> None:
    """One sentence where ``params`` leave several combinations: the parameters to add."""
    combos = {r.params for r in measured}
    if len(combos) > 1:
        declared = _declared(rs, benchmark)
        seen = {k: {str(dict(c).get(k)) for c in combos} for k in declared}
        hints = "; ".join(
            f"{k}= ({', '.join(v for v in values if v in seen[k])})"
            for k, values in declared.items() if k not in params and len(seen[k]) > 1)
        raise XferbenchError(
            f"{label} matches {len(combos)} measured parameter combinations: "
            f"give also {hints}")


def _in_mode(measured: list[Result], label: str, mode: Mode | None,
             allow_quick: bool) -> list[Result]:
    """The results of the one mode a citation reads: ``series.one_mode``'s rule, and a mode
    not for citation only where asked (see ``choose``)."""
    if not measured:
        return []
    chosen = one_mode([r.series for r in measured], mode, label)[0].mode
    if mode is None and reasons(chosen) and not allow_quick:
        raise XferbenchError(
            f"{label} has only numbers measured as {labels(chosen)}, which are not for "
            f"citation: run the suite the default way, or pass --mode {mode_option(chosen)} "
            "(or --allow-quick) to cite one anyway")
    return [r for r in measured if r.mode == chosen]

"""``xferbench list``: every benchmark in a results folder, its unit and parameters with their
values, and how many combinations each series measured: what ``cite`` and ``compare`` take."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..analysis.reference import assess_result
from ..errors import ExitCode
from ..results import ResultSet, load, version_key
from ..results.series import SeriesKey, host_option, mode_option
from .options import add_format, add_results, add_selection, selection_of


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "list", allow_abbrev=False,
        help="list the benchmarks, their parameters and what each series measured",
        description="Every benchmark in the results folder with its unit, its parameters and "
                    "their values (as cite's --params takes them), and per series (machine, "
                    "PyTorch, how it was measured) how many combinations have a number.")
    add_results(p)
    add_selection(p)
    add_format(p, help="text (default) or JSON")
    p.set_defaults(func=cmd_list)


def listing(rs: ResultSet) -> list[dict[str, Any]]:
    """One entry per benchmark, in name order; per series (machine, torch, how measured:
    each mode a series of its own) its newest result of each combination, counted, with how
    its figures were read (clock and event batches, where the sidecar says)."""
    names = sorted(set(rs.benchmarks) | {r.benchmark for r in rs})
    newest = rs.newest()
    out = []
    for name in names:
        declared = rs.declared_params(name)
        listed = list(rs.benchmarks.get(name, {}).get("param_names") or ())
        series: dict[SeriesKey, dict[str, Any]] = {}
        mine = [r for r in newest if r.benchmark == name]
        for r in mine:
            s = series.setdefault(r.series, {"measured": 0, "combinations": 0, "names": [],
                                             "capped": 0, "all_discarded": 0, "read": {}})
            s["measured"] += r.ok
            s["combinations"] += 1
            s["names"] = s["names"] or [k for k, _ in r.params]
            s["capped"] += bool(r.ok and r.capped)  # sampled under a budget cap
            s["all_discarded"] += bool(r.ok and r.not_citable)  # discarded batches alone
            if r.ok and r.diagnostics:
                clock = r.diagnostics.text().split(":")[0].split(";")[0]
                s["read"][clock] = s["read"].get(clock, 0) + 1
        out.append({
            "benchmark": name,
            "unit": rs.benchmarks.get(name, {}).get("unit") or next(
                (r.unit for r in newest if r.benchmark == name), None),
            "params": {k: [str(v) for v in values] for k, values in declared.items()},
            "series": [{"machine": k.machine, "torch": k.torch, "mode": mode_option(k.mode),
                        **_identity(rs, k),
                        "how": k.how, "quick": any(m == "quick" for m, _ in k.mode),
                        "not_for_citation": k.reasons(), "measured": s["measured"],
                        "combinations": s["combinations"], "capped": s["capped"],
                        "all_discarded": s["all_discarded"], "read": s["read"],
                        "param_names": s["names"] if s["names"] != listed else None,
                        **references(newest, [r for r in mine if r.series == k])}
                       for k, s in sorted(series.items(), key=lambda kv: (
                           kv[0].machine, version_key(kv[0].torch), kv[0].mode, kv[0].host))],
        })
    return out


def references(rs: ResultSet, results: list[Any]) -> dict[str, Any]:
    """{"references": each copy figure of one large tensor beside its published range and
    verdict}, for a GPU's series; {} where there is none (a CPU's, another benchmark)."""
    found = [(r, a) for r in results if (a := assess_result(rs, r)) is not None]
    return {"references": [
        {"params": {k: str(v) for k, v in r.params}, "gbps": a.value, "expected": a.expected,
         "verdict": a.verdict, "cause": a.cause} for r, a in found]} if found else {}


def _identity(rs: ResultSet, key: SeriesKey) -> dict[str, Any]:
    """What tells the series apart beyond machine, torch and mode, where anything does: its
    host (``--host``), and its runs where more than one was filed (each counted, the newest
    of each combination read)."""
    out: dict[str, Any] = {"host": host_option(key.host)} if key.host else {}
    runs = rs.runs(key)
    if len(runs) > 1:
        out["runs"] = len(runs)
    return out


def format_listing(entries: list[dict[str, Any]]) -> list[str]:
    lines = []
    for e in entries:
        lines.append(f"{e['benchmark']}  ({e['unit']})")
        for name, values in e["params"].items():
            lines.append(f"  {name}: {', '.join(values)}")
        for s in e["series"]:
            how = f", {s['how']}" if s["mode"] != "default" else ""
            own = (f" (its parameters then: {', '.join(s['param_names']) or 'none'})"
                   if s["param_names"] is not None else "")
            capped = (f" ({s['capped']} sampled under a budget cap: not for citation)"
                      if s.get("capped") else "")
            host = f" [--host {s['host']}]" if s.get("host") else ""
            runs = (f" ({s['runs']} runs: the newest of each combination read)"
                    if s.get("runs") else "")
            if s.get("all_discarded"):
                capped += (f" ({s['all_discarded']} from discarded batches alone, taken on a "
                           "slowed device: not for citation)")
            lines.append(f"  measured {s['measured']} of {s['combinations']}{capped}: "
                         f"{s['machine']}{host}, torch {s['torch']}{how}{own}{runs}")
            lines += [f"    {' '.join(ref['params'].values())}: {ref['gbps']:.2f} GB/s, expected "
                      f"{ref['expected']}: {ref['verdict']}"
                      + (f" ({ref['cause']})" if ref["cause"] else "")
                      for ref in s.get("references", ())]
            if s.get("read"):
                lines.append("    read on: " + "; ".join(
                    f"{clock} ({n})" for clock, n in sorted(s["read"].items())))
        lines.append("")
    lines.append("cite one: xferbench cite BENCHMARK --params name=value,name=value"
                 " [--mode MODE for a series measured another way]"
                 + (" [--host HOST where one machine name holds several]"
                    if any(s.get("host") for e in entries for s in e["series"]) else ""))
    return lines


def cmd_list(args: argparse.Namespace) -> ExitCode:
    entries = listing(load(args.results).select(selection_of(args)))
    if args.format == "json":
        print(json.dumps(entries, indent=2))
    else:
        print("\n".join(format_listing(entries)))
    return ExitCode.OK

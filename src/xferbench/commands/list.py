"""``xferbench list``: every benchmark in a results folder, its unit and parameters with their
values, and how many combinations each series measured: what ``cite`` and ``compare`` take."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ExitCode
from ..results import ResultSet, load
from .options import add_format, add_results


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "list", allow_abbrev=False,
        help="list the benchmarks, their parameters and what each series measured",
        description="Every benchmark in the results folder with its unit, its parameters and "
                    "their values (as cite's --params takes them), and per series (machine, "
                    "PyTorch) how many combinations have a number.")
    add_results(p)
    add_format(p, help="text (default) or JSON")
    p.set_defaults(func=cmd_list)


def listing(rs: ResultSet) -> list[dict[str, Any]]:
    """One entry per benchmark, in name order."""
    names = sorted(set(rs.benchmarks) | {r.benchmark for r in rs})
    out = []
    for name in names:
        declared = rs.declared_params(name)
        mine = [r for r in rs if r.benchmark == name]
        series: dict[tuple[str, str, bool], list[int]] = {}
        for r in mine:
            counts = series.setdefault((r.machine, r.torch, r.quick), [0, 0, 0])
            counts[0] += r.ok
            counts[1] += 1
            counts[2] += bool(r.ok and r.capped)  # sampled under a budget cap
        out.append({
            "benchmark": name,
            "unit": rs.benchmarks.get(name, {}).get("unit") or (mine[0].unit if mine else None),
            "params": {k: [str(v) for v in values] for k, values in declared.items()},
            "series": [{"machine": m, "torch": t, "quick": q, "measured": n, "combinations": c,
                        "capped": k}
                       for (m, t, q), (n, c, k) in sorted(series.items())],
        })
    return out


def format_listing(entries: list[dict[str, Any]]) -> list[str]:
    lines = []
    for e in entries:
        lines.append(f"{e['benchmark']}  ({e['unit']})")
        for name, values in e["params"].items():
            lines.append(f"  {name}: {', '.join(values)}")
        for s in e["series"]:
            quick = ", quick run" if s["quick"] else ""
            capped = (f" ({s['capped']} sampled under a budget cap: not for citation)"
                      if s.get("capped") else "")
            lines.append(f"  measured {s['measured']} of {s['combinations']}{capped}: "
                         f"{s['machine']}, torch {s['torch']}{quick}")
        lines.append("")
    lines.append("cite one: xferbench cite BENCHMARK --params name=value,name=value")
    return lines


def cmd_list(args: argparse.Namespace) -> ExitCode:
    entries = listing(load(args.results))
    if args.format == "json":
        print(json.dumps(entries, indent=2))
    else:
        print("\n".join(format_listing(entries)))
    return ExitCode.OK

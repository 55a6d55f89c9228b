"""``xferbench table``: the headline figures as Markdown, for a document to paste: per
machine one table with a column per PyTorch release (what the README quotes), or with
``--per-series`` each (machine, PyTorch) series' copy table and headlines (what
``scripts/gpu-check`` writes to its table.md). The tables are ``analysis.release_table``'s and
``analysis.headline``'s."""

from __future__ import annotations

import argparse
from typing import Any

from ..analysis.headline import all_series_tables
from ..analysis.release_table import readme_tables
from ..errors import ExitCode
from ..results import load
from .options import add_results, add_selection, selection_of


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "table", allow_abbrev=False,
        help="the headline figures as Markdown (the README's tables)",
        description="The headline ratios and the headline copy's rate as Markdown: per "
                    "machine one table with a column per PyTorch release and the figures no "
                    "release measured there, each with its reason (the README's block); with "
                    "--per-series, the copy table and headlines of each series.")
    add_results(p)
    add_selection(p)
    p.add_argument("--per-series", action="store_true",
                   help="one copy table and headline table per (machine, PyTorch) series")
    p.set_defaults(func=cmd_table)


def cmd_table(args: argparse.Namespace) -> ExitCode:
    rs = load(args.results).select(selection_of(args))
    print("\n".join(all_series_tables(rs) if args.per_series else readme_tables(rs)))
    return ExitCode.OK

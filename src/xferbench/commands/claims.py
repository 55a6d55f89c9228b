"""``xferbench claims``: every piece of advice the suite settles (the claims table,
``data/claims.toml`` or ``--table FILE``), with a verdict per series (machine, PyTorch, how
measured; narrowed as every command narrows: ``options.add_selection``) recomputed from the
results, each figure and its interval, and the claims whose verdict changed between
consecutive releases. Text, JSON (``data/claims.schema.json``) or the
README's short Markdown table. The verdicts are ``analysis.claims``'; the words
``analysis.claimtext``'s."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..analysis.claims import evaluate
from ..analysis.claimtable import ClaimTable, load_table
from ..analysis.claimtext import as_dict, markdown_table, report_lines
from ..analysis.stats import ALPHA, parse_alpha
from ..errors import ExitCode
from ..results import load
from ..results.discovery import suite_repo
from .options import add_format, add_results, add_selection, selection_of


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "claims", allow_abbrev=False,
        help="the advice the suite settles, with a verdict per machine and release",
        description="Each claim of the claims table (the advice in the project's words, its "
                    "source, the figures that decide it and the rule) with its verdict per "
                    "series, recomputed from the results: holds, does not hold, cannot tell, "
                    "not measurable here or not measured, with the figure, its interval or "
                    "the reason; then every verdict that changed between consecutive "
                    "releases.")
    add_results(p)
    p.add_argument("--claim", default=None, metavar="ID", help="one claim (its id)")
    add_selection(p)
    p.add_argument("--table", default=None, metavar="FILE",
                   help="a claims table of the same form (default: the one xferbench ships)")
    p.add_argument("--alpha", type=parse_alpha, default=ALPHA,
                   help=f"significance level of the ratio verdicts (default: {ALPHA})")
    add_format(p, help="text (default), json, or markdown (the README's short table)",
               choices=("text", "json", "markdown"))
    p.set_defaults(func=cmd_claims)


def cmd_claims(args: argparse.Namespace) -> ExitCode:
    table = load_table(args.table)
    if args.claim is not None:
        table = ClaimTable(table.path, (table.get(args.claim),))
    rs = load(args.results).select(selection_of(args))
    report = evaluate(rs, table, repo=suite_repo(), alpha=args.alpha)
    if args.format == "json":
        print(json.dumps(as_dict(report), indent=2))
    else:
        lines = markdown_table(report) if args.format == "markdown" else report_lines(report)
        print("\n".join(lines))
    return ExitCode.OK

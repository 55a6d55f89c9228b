"""``xferbench cite BENCHMARK``: a sentence and a small table for docs, read from the results
files (never typed): the value and its spread, the software and hardware it was measured on,
the suite commit and date, and the published figure that shows it. The command line only:
the citation and its formatting are ``analysis.citation``'s, which ``publish`` uses too.
``--claim ID`` cites a claim's verdict instead (``analysis.claims``, ``analysis.claimtext``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..analysis.citation import Citation, as_dict, cite, format_markdown
from ..analysis.claims import choose, evaluate
from ..analysis.claimtable import ClaimTable, load_table
from ..analysis.claimtext import cite_dict, cite_lines, figure_citations
from ..analysis.peermatrix import by_device, citation_note
from ..analysis.reference import not_a_record
from ..errors import ExitCode, XferbenchError
from ..results import load
from ..results.discovery import suite_repo
from .options import add_format, add_results, add_selection, parse_params, selection_of


def register_cli(sub: Any) -> None:
    p = sub.add_parser("cite", allow_abbrev=False,
                       help="a citation (sentence and table) of one measured value",
                       description="Cite one benchmark at one parameter combination, read "
                                   "from the results: value, spread, versions, hardware, "
                                   "commit, date and figure.")
    p.add_argument("benchmark", metavar="BENCHMARK", nargs="?",
                   help="benchmark name, or a unique ending of it (Copy.track_device_s)")
    p.add_argument("--claim", default=None, metavar="ID",
                   help="cite a claim's verdict instead (xferbench claims lists them): the "
                        "sentence a document can quote, with its figures' provenance")
    p.add_argument("--params", action="append", default=[], metavar="K=V,K=V",
                   help="parameters, comma-separated (direction=h2d,host_memory=pinned,...)")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="one parameter; repeat it for several")
    add_selection(p, machine="machine to cite (default: the newest)",
                  torch="PyTorch version to cite: a release or one build (default: the "
                        "newest measurement)")
    p.add_argument("--device", default=None, metavar="DEVICE",
                   help="the series measured on this device (cuda:1), where a run measured "
                        "several (--devices): a peer copy's source")
    add_results(p)
    p.add_argument("--site", default="site", metavar="DIR",
                   help="the published site, for the figure's path (default: site)")
    p.add_argument("--allow-quick", action="store_true",
                   help="cite a number measured in a mode not for citation (a quick run, a "
                        "smoke sweep, a cap) where it is the only one (marked as such)")
    add_format(p, help="markdown sentence and table (default) or JSON",
               choices=("markdown", "json"))
    p.set_defaults(func=cmd_cite)


def cmd_cite(args: argparse.Namespace) -> ExitCode:
    if args.claim is not None:
        return cite_claim(args)
    if args.benchmark is None:
        raise XferbenchError("give a BENCHMARK to cite (xferbench list names them), or "
                             "--claim ID (xferbench claims lists them)")
    params = parse_params(args.params, args.param)
    sel = selection_of(args)
    rs = load(args.results)
    if getattr(args, "device", None):
        rs = by_device(rs, args.device)
    c = cite(rs, args.benchmark, params, site=args.site, allow_quick=args.allow_quick,
             **vars(sel))
    refuse_unrecorded(c)
    # a peer copy between devices without peer access says so wherever it is quoted
    note = citation_note(rs, c.results_file, c.benchmark, c.params)
    if args.format == "json":
        print(json.dumps({**as_dict(c), **({"peer_access_note": note} if note else {})},
                         indent=2))
    else:
        for line in format_markdown(c):
            print(line)
        if note:
            print(f"\nNote: {note}.")
    return ExitCode.OK


def refuse_unrecorded(c: Citation) -> None:
    """A rate above its link's is no record: one sentence instead of a citation."""
    why = not_a_record(c.reference)
    if why:
        what = c.benchmark + (f" ({', '.join(f'{k}={v}' for k, v in c.params.items())})"
                              if c.params else "")
        raise XferbenchError(f"{what} is not quoted: {why}")


def cite_claim(args: argparse.Namespace) -> ExitCode:
    """``cite --claim ID``: the claim's verdict in one series (``claims.choose``'s, among
    those the selection leaves) as a sentence with its caveats, then each figure's
    citation."""
    if args.benchmark or args.params or args.param or args.device:
        raise XferbenchError("--claim cites a claim's verdict: give it without BENCHMARK, "
                             "--params or --device (--machine, --torch, --mode and --host "
                             "choose the series)")
    rs = load(args.results)
    table = load_table()
    one = ClaimTable(table.path, (table.get(args.claim),))
    keys = set(rs.select(selection_of(args)).series())
    report = evaluate(rs, one, repo=suite_repo())
    cell, others = choose(report, args.claim, keys)
    cites = figure_citations(rs, cell, args.site)
    if args.format == "json":
        print(json.dumps(cite_dict(cell, cites, others, report.alpha), indent=2))
    else:
        print("\n".join(cite_lines(cell, cites, others, report.alpha)))
    return ExitCode.OK

"""``xferbench cite BENCHMARK``: a sentence and a small table for docs, read from the results
files (never typed): the value and its spread, the software and hardware it was measured on,
the suite commit and date, and the published figure that shows it. The command line only:
the citation and its formatting are ``analysis.citation``'s, which ``publish`` uses too."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..analysis.citation import as_dict, cite, format_markdown, parse_params
from ..analysis.peermatrix import by_device, citation_note
from ..errors import ExitCode
from ..results import load
from .options import add_format, add_mode, add_results, mode_of_option


def register_cli(sub: Any) -> None:
    p = sub.add_parser("cite", allow_abbrev=False,
                       help="a citation (sentence and table) of one measured value",
                       description="Cite one benchmark at one parameter combination, read "
                                   "from the results: value, spread, versions, hardware, "
                                   "commit, date and figure.")
    p.add_argument("benchmark", metavar="BENCHMARK",
                   help="benchmark name, or a unique ending of it (Copy.track_device_s)")
    p.add_argument("--params", action="append", default=[], metavar="K=V,K=V",
                   help="parameters, comma-separated (direction=h2d,host_memory=pinned,...)")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="one parameter; repeat it for several")
    p.add_argument("--torch", default=None, metavar="VERSION",
                   help="PyTorch version to cite (default: the newest measurement)")
    p.add_argument("--machine", default=None, help="machine to cite (default: the newest)")
    p.add_argument("--device", default=None, metavar="DEVICE",
                   help="the series measured on this device (cuda:1), where a run measured "
                        "several (--devices): a peer copy's source")
    add_results(p)
    p.add_argument("--site", default="site", metavar="DIR",
                   help="the published site, for the figure's path (default: site)")
    add_mode(p)
    p.add_argument("--allow-quick", action="store_true",
                   help="cite a number measured in a mode not for citation (a quick run, a "
                        "smoke sweep, a cap) where it is the only one (marked as such)")
    add_format(p, help="markdown sentence and table (default) or JSON",
               choices=("markdown", "json"))
    p.set_defaults(func=cmd_cite)


def cmd_cite(args: argparse.Namespace) -> ExitCode:
    params = parse_params(args.params, args.param)
    mode = mode_of_option(args.mode)
    rs = load(args.results)
    if getattr(args, "device", None):
        rs = by_device(rs, args.device)
    c = cite(rs, args.benchmark, params, torch=args.torch,
             machine=args.machine, site=args.site, allow_quick=args.allow_quick, mode=mode)
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

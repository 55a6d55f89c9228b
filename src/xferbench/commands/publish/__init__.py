"""``xferbench publish``: asv's published data plus a cross-version view, as one static site
that renders with no network.

asv's stock front end (``index.html``) loads jQuery, flot and bootstrap from CDNs, so it is
not shipped. The package: ``views`` computes what is shown, ``figures`` draws it, ``pages``
writes the HTML, ``site`` runs asv publish and builds the whole.
"""

from __future__ import annotations

import argparse
from typing import Any

from ...analysis.stats import ALPHA, THRESHOLD, parse_alpha, parse_threshold
from ...errors import ExitCode
from ..options import add_results, add_selection, selection_of
from .site import format_site, publish


def register_cli(sub: Any) -> None:
    p = sub.add_parser("publish", allow_abbrev=False,
                       help="build the static site (asv's data and the cross-version view)",
                       description="asv publish plus the cross-version view, as one static "
                                   "site that needs no network.")
    add_results(p)
    add_selection(p)
    p.add_argument("--out", default="site", metavar="DIR",
                   help="where the site goes (default: site); replaced as a whole")
    p.add_argument("--threshold", type=parse_threshold, default=THRESHOLD, metavar="PCT",
                   help="smallest change listed as a regression (default: 10%%)")
    p.add_argument("--alpha", type=parse_alpha, default=ALPHA,
                   help="significance level of the verdicts, intervals and changes, as "
                        f"compare's (default: {ALPHA})")
    p.set_defaults(func=cmd_publish)


def cmd_publish(args: argparse.Namespace) -> ExitCode:
    site = publish(args.results, args.out, threshold=args.threshold, alpha=args.alpha,
                   selection=selection_of(args))
    for line in format_site(site):
        print(line)
    return ExitCode.OK

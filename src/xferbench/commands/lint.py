"""``xferbench lint PATH...``: the transfer practices the suite measures, found in a user's
own code, each finding priced from measured results. The command line only: the rules are
``xferbench.lint``'s, the prices ``xferbench.analysis.prices``'s.

Exit status: 0 nothing at or above --fail-on; 1 something is; 2 bad input (a path that does
not exist, an unknown rule code, a broken pyproject.toml, nothing that could be read)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from ..analysis.prices import PriceBook
from ..errors import ExitCode, XferbenchError
from ..lint.config import Config, find_pyproject, load_config
from ..lint.files import Pattern, parse_patterns
from ..lint.report import as_json, as_sarif, priced, text_lines
from ..lint.rules import CODES, RULES, SEVERITIES, at_or_above, choose
from ..lint.runner import LintRun, run
from .options import add_format


def _codes(text: str) -> list[str]:
    return [c for c in text.replace(" ", ",").split(",") if c]


def register_cli(sub: Any) -> None:
    rules = "; ".join(f"{r.code} {r.name} ({r.severity})" for r in RULES)
    p = sub.add_parser(
        "lint", allow_abbrev=False,
        help="find the measured transfer anti-patterns in your code, each priced",
        description="Lint Python files for the host-device transfer practices xferbench "
                    f"measures. Rules: {rules}.",
        epilog="exit status: 0 nothing at or above --fail-on; 1 something is; 2 bad input "
               "(a path that does not exist, an unknown code, a broken config, nothing read)")
    p.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                   help="files and folders (default: .)")
    add_format(p, help="text (flake8's path:line:col: CODE message), json or sarif (2.1.0)",
               choices=("text", "json", "sarif"))
    p.add_argument("--select", type=_codes, default=None, metavar="CODES",
                   help="codes or prefixes to report, comma-separated (default: all)")
    p.add_argument("--ignore", type=_codes, default=None, metavar="CODES",
                   help="codes or prefixes not to report")
    p.add_argument("--fail-on", choices=(*SEVERITIES, "never"), default=None,
                   help="lowest severity that makes the exit status 1 (default: warning)")
    p.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                   help="gitignore-style pattern of paths to skip; repeat or comma-separate")
    p.add_argument("--results", default=None, metavar="DIR",
                   help="price findings from this results folder (default: the price table "
                        "shipped with xferbench, from its committed results)")
    p.add_argument("--fix", action="store_true",
                   help="rewrite XB102 and XB103 in place (needs LibCST: xferbench[lint])")
    p.add_argument("--no-gitignore", action="store_true",
                   help="lint files that .gitignore files exclude too")
    p.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="worker processes (default: one per available core)")
    p.add_argument("--statistics", action="store_true",
                   help="after the findings, files and lines read, seconds, lines per second "
                        "and the count per code (on stderr)")
    p.set_defaults(func=cmd_lint)


def _settings(args: argparse.Namespace) -> tuple[Config, frozenset[str], str, list[Pattern]]:
    config = load_config(find_pyproject(args.paths))
    if args.select is not None:  # the command line's selection replaces the config's
        select, ignore = args.select, args.ignore or []
    else:
        select = list(config.select) or None
        ignore = args.ignore if args.ignore is not None else list(config.ignore)
    codes = choose(select, ignore)
    fail_on = args.fail_on or config.fail_on or "warning"
    at_or_above(fail_on)
    cli = [p for item in args.exclude for p in item.split(",") if p.strip()]
    excludes = parse_patterns(list(config.exclude), config.base) + parse_patterns(
        cli, os.getcwd())
    return config, codes, fail_on, excludes


def cmd_lint(args: argparse.Namespace) -> int:
    if args.jobs < 0:
        raise XferbenchError(f"--jobs {args.jobs} is not a count: give 1 or more (0: one per "
                             "core)")
    config, codes, fail_on, excludes = _settings(args)
    book = PriceBook.load(args.results)
    started = time.perf_counter()
    outcome = run(args.paths, codes, excludes, jobs=args.jobs, fix=args.fix,
                  gitignore=not args.no_gitignore, intended=config.intended_reads)
    elapsed = time.perf_counter() - started
    findings = priced(outcome.findings, book)
    for line in [*outcome.missing, *outcome.problems, *outcome.warnings]:
        print(f"xferbench lint: {line}", file=sys.stderr)
    if args.format == "json":
        print(as_json(findings))
    elif args.format == "sarif":
        print(as_sarif(findings, [*outcome.missing, *outcome.problems, *outcome.warnings]))
    else:
        for line in text_lines(findings):
            print(line)
    _summary(args, outcome, elapsed)
    if outcome.missing or outcome.read == 0:
        if outcome.read == 0 and not outcome.missing:
            print("xferbench lint: nothing could be read: no Python file was linted",
                  file=sys.stderr)
        return ExitCode.BAD_INPUT
    failing = at_or_above(fail_on)
    below = below_line(findings, failing, fail_on)
    if below:
        print(f"xferbench lint: {below}", file=sys.stderr)
    return ExitCode.REGRESSION if any(f.severity in failing for f in findings) else ExitCode.OK


def below_line(findings: list[Any], failing: tuple[str, ...], fail_on: str) -> str:
    """What the exit status leaves out: the findings below ``--fail-on``, counted by
    severity ("" where there are none), so a hook that fails on errors alone still says that
    warnings were found."""
    counts: dict[str, int] = {}
    for f in findings:
        if f.severity not in failing:
            counts[f.severity] = counts.get(f.severity, 0) + 1
    if not counts:
        return ""
    total = sum(counts.values())
    each = ", ".join(f"{counts[s]} {s}" for s in reversed(SEVERITIES) if s in counts)
    return (f"{total} finding{'s' * (total != 1)} ({each}) below --fail-on {fail_on}: "
            f"reported, not failing the run")


def _summary(args: argparse.Namespace, outcome: LintRun, elapsed: float) -> None:
    if outcome.fixed:
        total = sum(outcome.fixed.values())
        print(f"xferbench lint: fixed {total} finding{'s' * (total != 1)} in "
              f"{len(outcome.fixed)} file{'s' * (len(outcome.fixed) != 1)}", file=sys.stderr)
    if not args.statistics:
        return
    rate = outcome.lines / elapsed if elapsed > 0 else float("inf")
    print(f"xferbench lint: {outcome.read} of {outcome.files} files read, {outcome.lines} "
          f"lines in {elapsed:.2f} s ({rate:,.0f} lines/s)", file=sys.stderr)
    for code in CODES:
        count = sum(1 for f in outcome.findings if f.code == code)
        if count:
            print(f"xferbench lint: {code} {count}", file=sys.stderr)

"""The ``xferbench`` command line: env, run, publish, compare, cite.

Exit status: 0 on success, 2 on bad usage or input (one line on stderr), 1 where a command
says so (compare: a significant regression). Heavy modules load inside each command.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import __version__
from ._errors import XferbenchError


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line and exits 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="xferbench",
        description="Benchmarks for PyTorch host-device transfer practices.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"xferbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    env = sub.add_parser("env", help="print the machine's metadata and the device's capabilities",
                         allow_abbrev=False)
    env.add_argument("--device", default="auto", help="auto (default), cpu, cuda, cuda:N, xpu, mps")
    env.add_argument("--json", action="store_true", help="print JSON instead of a table")
    env.set_defaults(func=_cmd_env)

    for register in _registrars():
        register(sub)
    return parser


def _registrars():
    """Subcommands defined next to the code they drive."""
    from . import cite, compare, report, runner

    return (runner.register_cli, report.register_cli, compare.register_cli, cite.register_cli)


def _cmd_env(args: argparse.Namespace) -> int:
    from .metadata import collect

    meta = collect(args.device)
    if args.json:
        print(json.dumps(meta, indent=2, sort_keys=True, default=str))
        return 0
    width = max(len(k) for k in meta)
    for key in sorted(meta):
        value = meta[key]
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        print(f"{key:<{width}}  {'unknown' if value is None else value}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.error("a command is required: env, run, publish, compare or cite")
    try:
        return int(args.func(args) or 0)
    except XferbenchError as exc:
        print(f"xferbench: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("xferbench: interrupted", file=sys.stderr)
        return 130

"""The ``xferbench`` command line: parses and dispatches to ``commands/`` (env, run, publish,
compare, cite); nothing else lives here.

Exit status: 0 on success, 2 on bad usage or input (one line on stderr), 1 where a command
says so (compare: a significant regression).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .commands import COMMANDS
from .errors import XferbenchError


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

    for command in COMMANDS:
        command.register_cli(sub)
    return parser


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

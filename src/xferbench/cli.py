"""The ``xferbench`` command line: parses and dispatches to ``commands/`` (env, run, fleet, list,
publish, compare, cite, lint, audit); nothing else lives here.

Exit status: 0 ok; 1 a regression found (compare) or a finding (lint); 2 bad input or an
environment error (one sentence on stderr, nothing written); 3 a run that measured nothing or
lost results; 130 interrupted. ``audit`` exits with its script's own status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Mapping, Sequence

from . import __version__
from .commands import COMMANDS
from .commands.options import require_torch, torch_installed
from .errors import ExitCode, XferbenchError
from .results.filesystem import gone_folder, shown_file, why_failed, working_folder_gone


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line and exits 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="xferbench",
        description="Benchmarks for PyTorch host-device transfer practices.",
        epilog="exit status: 0 ok; 1 a regression found (compare), a finding (lint) or a "
               "figure below range (check); 2 bad input or an "
               "environment error (one sentence on stderr, nothing written); 3 a run that "
               "measured nothing or lost results; 130 interrupted; audit: its script's own "
               "status",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"xferbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    for command in COMMANDS:
        command.register_cli(sub)
    parser.epilog = f"{torch_line(sub.choices)}. {parser.epilog}"
    return parser


def torch_line(commands: Mapping[str, argparse.ArgumentParser]) -> str:
    """Which commands measure, and so need PyTorch, which xferbench does not install."""
    needs = {n: p.get_default("needs_torch") for n, p in commands.items()}
    measuring = [n if v is True else f"{n} ({v})" for n, v in needs.items() if v]
    rest = [n for n, v in needs.items() if not v]
    here = "installed here" if torch_installed() else "NOT installed for this interpreter"
    return (f"{', '.join(measuring)} measure with PyTorch, which xferbench does not install "
            f"(install the build to measure first; PyTorch is {here}); "
            f"{', '.join(rest)} need no PyTorch")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        names = [c.__name__.rsplit(".", 1)[-1] for c in COMMANDS]
        parser.error(f"a command is required: {', '.join(names[:-1])} or {names[-1]}")
    return int(_dispatch(args))


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if working_folder_gone():  # every relative path, torch's loading too, needs it
            raise XferbenchError(f"cannot run in {gone_folder()}: cd to a folder that exists")
        if getattr(args, "needs_torch", None) is True:
            require_torch(args.command)
        return int(args.func(args) or ExitCode.OK)
    except XferbenchError as exc:
        print(f"xferbench: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except BrokenPipeError:  # `xferbench compare ... | head`: the reader has what it wanted
        with contextlib.suppress(OSError):  # the exit's flush must not write to the pipe again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    except OSError as exc:  # the disk, not the input: a full or read-only disk, a gone folder
        where = f"{shown_file(exc.filename)}: " if exc.filename else ""
        if not exc.filename and working_folder_gone():
            where = f"{gone_folder()}: "
        print(f"xferbench: {where}{why_failed(exc)}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        print("xferbench: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED

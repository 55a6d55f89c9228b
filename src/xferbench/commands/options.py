"""The command-line options several commands share, declared once (as asv's
``commands/common_args.py``): the results folder, the output format, the benchmark regex,
the device, and which series a command reads (``add_selection``: machine, torch, mode,
host). A command adds them to its parser; their checks live here too, and the one a command
that measures makes before anything else: that PyTorch is there at all."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
from typing import Any

from ..errors import XferbenchError
from ..results.series import Host, Mode, Selection, parse_host, parse_mode

DEVICE_HELP = ("auto (default), cpu, cuda, cuda:N, xpu, mps, or the name of a registered "
               "PrivateUse1 backend (e.g. emu)")


def add_results(parser: Any) -> None:
    """``--results DIR``: the results folder a command reads (or a run writes)."""
    parser.add_argument("--results", default="results", metavar="DIR",
                        help="results folder (default: results)")


def add_format(parser: Any, help: str, choices: tuple[str, ...] = ("text", "json")) -> None:
    """``--format``: the first choice is the default."""
    parser.add_argument("--format", choices=choices, default=choices[0], help=help)


def add_bench(parser: Any, help: str) -> None:
    """``--bench REGEX``: checked with ``bench_pattern`` where the command runs."""
    parser.add_argument("--bench", default=None, metavar="REGEX", help=help)


def add_device(parser: Any) -> None:
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)


def add_mode(parser: Any) -> None:
    """``--mode``: which series, by how it was measured (checked with ``mode_of_option``)."""
    parser.add_argument(
        "--mode", default=None, metavar="MODE",
        help="the series measured this way: default (the default grid, not quick), or "
             "key=value pairs as a series' label shows them: quick, threads=2, sweep=smoke, "
             "quick,threads=2 (default: the default mode where there is one)")


def add_selection(parser: Any, *, machine: str = "the series of this machine only",
                  torch: str = "the series of this PyTorch only: a release (2.13.0) or one "
                               "build (2.13.0+cu130)") -> None:
    """``--machine``, ``--torch``, ``--mode`` and ``--host``: which series a command reads,
    the same options with the same rules in every command (``series.Selection``; read with
    ``selection_of``). ``machine`` and ``torch`` are their help where a command says more."""
    parser.add_argument("--machine", default=None, help=machine)
    parser.add_argument("--torch", default=None, metavar="VERSION", help=torch)
    add_mode(parser)
    parser.add_argument(
        "--host", default=None, metavar="HOST",
        help="where one machine name holds runs of several hosts or suites (list shows "
             "them in brackets): the series of this one, as key=value pairs (cpu=MODEL, "
             "cores=N, gpu=NAME, suite=clone or suite=package)")


def selection_of(args: Any) -> Selection:
    """The series ``add_selection``'s options leave; one sentence for a bad value."""
    return Selection(getattr(args, "machine", None), getattr(args, "torch", None),
                     mode_of_option(getattr(args, "mode", None)),
                     host_of_option(getattr(args, "host", None)))


def host_of_option(text: str | None) -> Host | None:
    """``--host`` parsed, None where none was given; one sentence for a bad one."""
    return None if text is None else parse_host(text)


def mode_of_option(text: str | None) -> Mode | None:
    """``--mode`` parsed, None where none was given; one sentence for a bad one."""
    return None if text is None else parse_mode(text)


def bench_pattern(bench: str | None) -> re.Pattern[str] | None:
    """``--bench`` compiled, None where none was given; one sentence for a bad one."""
    if bench is None:
        return None
    try:
        return re.compile(bench)
    except re.error as exc:
        raise XferbenchError(f"--bench {bench!r} is not a regular expression: {exc}") from None


#: Where a user picks the PyTorch build for their machine.
TORCH_INSTALL = "https://pytorch.org/get-started/locally/"


def torch_installed() -> bool:
    """This interpreter can import torch (found, not imported: ``--help`` stays instant). The
    path's finder first: an import hook waiting for torch on ``sys.meta_path`` (the emulated
    device's autoload) must see the real import, not this look-up."""
    if importlib.machinery.PathFinder.find_spec("torch") is not None:
        return True
    return importlib.util.find_spec("torch") is not None


def require_torch(command: str) -> None:
    """One sentence, before anything is written, where ``command`` would measure without
    PyTorch. xferbench does not depend on torch: the build under test (CUDA, ROCm, XPU, CPU)
    is the user's choice, and a requirement would pull PyPI's default CUDA build into every
    environment without one, a lint hook's included."""
    if not torch_installed():
        raise XferbenchError(
            f"xferbench {command} measures with PyTorch, which is not installed for "
            f"{sys.executable}: install the build to measure first (pip install torch, or the "
            f"command {TORCH_INSTALL} gives for your CUDA, ROCm or XPU); xferbench does not "
            "install one itself")

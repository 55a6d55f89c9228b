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

from ..devices import Device, device_count, resolve_device
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


# -- --devices all|0,2,...: the devices a command measures, one after another ----------------

USE = "give all, or device indices such as 0,2"


def parse_devices(text: str | None) -> tuple[str, ...] | None:
    """``--devices`` as given: None (not given), ("all",), or the indices in order. One
    sentence for an empty list, an index that is not one, or a device named twice."""
    if text is None:
        return None
    if text.strip().lower() == "all":
        return ("all",)
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or not all(items):
        raise XferbenchError(f"--devices {text!r} names an empty device: {USE}")
    bad = [item for item in items if not item.isdigit()]
    if bad:
        raise XferbenchError(f"--devices {text!r}: {bad[0]!r} is not a device index: {USE}")
    indices = [int(item) for item in items]
    twice = [i for n, i in enumerate(indices) if i in indices[:n]]
    if twice:
        raise XferbenchError(f"--devices {text!r} names device {twice[0]} twice: name each once")
    return tuple(str(i) for i in indices)


def resolve_devices(chosen: tuple[str, ...], device: str = "auto") -> list[Device]:
    """The devices ``chosen`` names, of the accelerator ``device`` names ("auto": the one
    PyTorch reports). One sentence where there is no accelerator, ``device`` names one device
    already, or an index is not here."""
    words = "all" if chosen == ("all",) else ",".join(chosen)
    if ":" in device:
        raise XferbenchError(f"--device {device} names one device and --devices {words} "
                             "several: give --devices alone, or --device TYPE with it")
    dev = resolve_device(device)
    if not dev.is_accelerator or dev.index is None:
        raise XferbenchError(f"--devices {words} needs an accelerator with device indices: "
                             f"this run's device is {dev}")
    if chosen == ("all",):
        return [Device(dev.type, i) for i in range(device_count(dev.type))]
    out = []
    for index in chosen:
        try:
            out.append(resolve_device(f"{dev.type}:{index}"))
        except XferbenchError as exc:
            raise XferbenchError(f"--devices {words}: {exc}") from None
    return out


def parse_params(groups: list[str], singles: list[str]) -> dict[str, str]:
    """"a=1,b=2" groups and "a=1" singles into one dict; raises on a malformed item."""
    out: dict[str, str] = {}
    items = [i for g in groups for i in g.split(",") if i.strip()] + list(singles)
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise XferbenchError(f"parameter {item!r} is not name=value (as direction=h2d)")
        if key.strip() in out and out[key.strip()] != value.strip():
            raise XferbenchError(f"parameter {key.strip()} is given twice ({out[key.strip()]} "
                                 f"and {value.strip()}): give it once")
        out[key.strip()] = value.strip()
    return out

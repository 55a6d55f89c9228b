"""Machine names: the folder a machine's results go into, checked as a name; the default
one made from the host and its GPU; the torch label of a series; and asv's own machine
record, written so that asv asks no questions."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..errors import XferbenchError
from ..metadata import MachineMetadata


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-").lower() or "unknown"


MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_machine_name(name: str) -> str:
    """``name`` as given, or XferbenchError: it becomes a folder under the results folder, so
    it is letters, digits, '.', '_' and '-' and starts with a letter or digit (no '.' or '..',
    no path)."""
    if not MACHINE_NAME.fullmatch(name):
        raise XferbenchError(
            f"--machine {name!r} is not a machine name: use up to 100 letters, digits, '.', "
            "'_' and '-', starting with a letter or digit")
    return name


def default_machine_name(meta: MachineMetadata) -> str:
    """``node7-nvidia-h200``: host and GPU; an emulated device's name says "emulated"."""
    gpu = meta.gpu_name or meta.accelerator or "cpu"
    name = slug(f"{meta.hostname or 'host'}-{gpu}")
    if meta.emulated and "emulated" not in name:
        name += "-emulated"
    return name


def torch_label(meta: MachineMetadata) -> tuple[str, str]:
    """("2.13.0+cpu", "none") or ("2.14.1+cu128", "12.8"): the installed torch and its CUDA."""
    cuda = meta.cuda or (f"hip{meta.hip}" if meta.hip else "none")
    return str(meta.torch or "unknown"), str(cuda)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def write_machine_file(home: str, name: str, meta: MachineMetadata) -> None:
    """Register the machine without questions: asv reads ~/.asv-machine.json."""
    ram = ""
    try:
        ram = str(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    cpu = str(meta.cpu_model or "unknown")
    if meta.gpu_name:
        cpu = f"{cpu}; GPU {meta.gpu_name}"
    record = {"arch": _text(meta.arch), "cpu": cpu, "machine": name,
              "num_cpu": _text(meta.cpu_count), "os": _text(meta.os), "ram": ram}
    with open(os.path.join(home, ".asv-machine.json"), "w") as fh:
        json.dump({name: record, "version": 1}, fh)

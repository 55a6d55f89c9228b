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
from .safefiles import NotReadable, read_regular, write_json_safely


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-").lower() or "unknown"


MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: Names of the files asv and xferbench keep in a results folder and its machine folders: a
#: machine folder so named would collide with one (``benchmarks.json``) or be taken for one.
FILE_NAME = re.compile(r".*\.(json|metadata|tmp|lock|xferbench-bak)", re.IGNORECASE)


def check_machine_name(name: str) -> str:
    """``name`` as given, or XferbenchError: it becomes a folder under the results folder, so
    it is letters, digits, '.', '_' and '-' and starts with a letter or digit (no '.' or '..',
    no path), and it is not the name of a file asv or xferbench keeps there."""
    if not MACHINE_NAME.fullmatch(name):
        raise XferbenchError(
            f"--machine {name!r} is not a machine name: use up to 100 letters, digits, '.', "
            "'_' and '-', starting with a letter or digit")
    if FILE_NAME.fullmatch(name):
        raise XferbenchError(
            f"--machine {name!r} is named like a file of the results folder (asv keeps "
            "benchmarks.json there, and .json and .metadata files in each machine folder): "
            "give a name without that ending")
    return name


def check_machine_folder(results_dir: str, name: str) -> None:
    """Refuse a machine whose folder under ``results_dir`` would land on something that is
    not a machine folder: a file, or a folder of the user's (files, but no asv machine.json)."""
    path = os.path.join(results_dir, name)
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path):
        raise XferbenchError(f"--machine {name}: {path} is a file, not a machine folder: give "
                             "another machine name, or move the file")
    if os.listdir(path) and not os.path.isfile(os.path.join(path, "machine.json")):
        raise XferbenchError(f"--machine {name}: {path} holds files but no asv machine.json, "
                             "so it is not a machine folder (asv would write into it): give "
                             "another machine name, or move that folder")


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


def machine_record(name: str, meta: MachineMetadata) -> dict[str, str]:
    """asv's record of this machine (its machine.json): arch, CPU (and GPU), cores, OS, RAM."""
    ram = ""
    try:
        ram = str(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    cpu = str(meta.cpu_model or "unknown")
    if meta.gpu_name:
        cpu = f"{cpu}; GPU {meta.gpu_name}"
    return {"arch": _text(meta.arch), "cpu": cpu, "machine": name,
            "num_cpu": _text(meta.cpu_count), "os": _text(meta.os), "ram": ram}


#: The fields of asv's machine record that name the hardware: a machine folder whose
#: machine.json differs in one of them (or in the GPU its "cpu" names, where both name one)
#: holds another machine's results (the OS and the RAM the kernel reports may change on one
#: machine).
HARDWARE = ("arch", "cpu", "num_cpu")


def _hardware(record: dict[str, str]) -> dict[str, str]:
    """The record's hardware fields, its "cpu" split into the CPU and the GPU it names."""
    out = {k: record[k] for k in HARDWARE if k in record}
    if "cpu" in out:
        cpu, _, gpu = out["cpu"].partition("; GPU ")
        out["cpu"] = cpu
        if gpu:
            out["gpu"] = gpu
    return out


def check_same_machine(results_dir: str, name: str, meta: MachineMetadata) -> None:
    """Refuse to file this machine's results under ``name`` where the results folder already
    holds that name for other hardware: asv would rewrite its machine.json to describe this
    host, and the figures there, measured elsewhere, would read as this machine's."""
    path = os.path.join(results_dir, name, "machine.json")
    try:
        saved = json.loads(read_regular(path, "machine file"))
    except (NotReadable, ValueError):
        return  # none yet, or unreadable: check_folder says so in its own words
    if not isinstance(saved, dict):
        return
    here = _hardware(machine_record(name, meta))
    then_hw = _hardware({k: str(v) for k, v in saved.items()})
    # a GPU only where both name one: a --device cpu run on a GPU machine names none
    differ = [k for k in (*HARDWARE, "gpu") if k in then_hw and k in here
              and then_hw[k] != here[k]]
    saved = then_hw
    if differ:
        then = ", ".join(f"{k} {saved[k]}" for k in differ)
        now = ", ".join(f"{k} {here[k]}" for k in differ)
        raise XferbenchError(
            f"--machine {name}: {path} describes other hardware ({then}; this machine: "
            f"{now}), so these results would be filed as that machine's and its record "
            "rewritten: give this machine a name of its own (--machine)")


def write_machine_file(home: str, name: str, meta: MachineMetadata) -> None:
    """Register the machine without questions: asv reads ~/.asv-machine.json."""
    record = machine_record(name, meta)
    write_json_safely(os.path.join(home, ".asv-machine.json"), {name: record, "version": 1})

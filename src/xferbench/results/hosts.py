"""What measured each result, where one machine folder holds runs that differ in it: the CPU
model, the core count and the GPU (read from each file's sidecar; compared across the whole
folder, since the page draws a machine as one line across releases) and where the suite came
from (a clone or the installed package; compared within one release and mode). A key joins a
result's ``host`` only where two known values differ, so a folder measured on one host reads
as it always did, and two runs that differ in what measured them are never one series."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace

from .result import Result
from .series import HOSTS, Host
from .sidecar import Sidecar

#: The keys compared across a whole machine folder; the others within one series' release
#: and mode.
FOLDER_WIDE = ("cpu", "cores", "gpu")


def _known(value: object) -> str | None:
    text = "" if value is None else str(value).strip()
    return None if text in ("", "unknown", "none") else text


def identity(side: Sidecar | None, device: str) -> dict[str, str | None]:
    """What measured a result on ``device`` of a file with sidecar ``side``: each key of
    ``HOSTS``, None where it was not recorded."""
    meta = side.metadata if side and side.metadata else None
    run = side.run if side else None
    suite = _known(run.suite.split()[0]) if run and run.suite else None
    if meta is None:
        return {"cpu": None, "cores": None, "gpu": None, "suite": suite}
    dev = device if device != "unknown" else str(meta.device or "")
    gpu = "none" if dev.startswith("cpu") or not meta.gpu_name else str(meta.gpu_name)
    return {"cpu": _known(meta.cpu_model), "cores": _known(meta.cpu_count), "gpu": gpu,
            "suite": suite}


def _scope(key: str, r: Result) -> Hashable:
    return r.machine if key in FOLDER_WIDE else (r.machine, r.torch, r.mode)


def with_hosts(results: list[Result], sidecars: dict[str, Sidecar]) -> list[Result]:
    """``results`` with each one's ``host``: the keys on which the runs of its scope (its
    machine folder, or its series for the suite) differ, each at its own value ("unknown"
    where its file did not record it)."""
    found: dict[tuple[str, str], dict[str, str | None]] = {}
    seen: dict[tuple[str, Hashable], set[str]] = {}
    for r in results:
        ident = found.setdefault((r.path, r.device), identity(sidecars.get(r.path), r.device))
        for key, value in ident.items():
            if value is not None:
                seen.setdefault((key, _scope(key, r)), set()).add(value)
    split = {where for where, values in seen.items() if len(values) > 1}
    if not split:
        return results
    out = []
    for r in results:
        ident = found[(r.path, r.device)]
        host: Host = tuple((k, ident[k] or "unknown") for k in HOSTS
                           if (k, _scope(k, r)) in split)
        out.append(replace(r, host=host) if host else r)
    return out

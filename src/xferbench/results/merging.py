"""Merging results folders made elsewhere (a fleet task's staging folder, a Kubernetes pod's
volume, a CI runner's artefacts) into a results folder, without losing anything there.

A source is merged only whole and only finished: a fleet task's staging folder once its task
wrote ``finished.json`` (the completion marker, written last and atomically), a plain results
folder once the ``.metadata`` of each of its files says the run that wrote it completed; and
every file of it must parse. Each machine folder of a source is one node. Two nodes never
share a series: a name another node already holds (in this merge, in an earlier merge of the
same fleet job, or in the destination, by its host name) gives the newcomer a distinct name,
and a sentence says so. Everything is read and checked first; then, holding the destination's
lock, every file is written whole (``write_json_atomic``): per benchmark the newer result
wins, so merging an older folder after a newer one changes nothing, and merging twice is the
same as merging once.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..errors import XferbenchError
from . import check_folder, load
from .asvfiles import iter_result_files
from .backup import clean_stale
from .lock import results_lock
from .machines import slug
from .runrecords import RunRecord
from .safefiles import load_json, write_all_safely, write_json_atomic
from .sidecar import RUNS_KEPT, Sidecar, load_sidecar, metadata_path

#: A fleet task's staging folder: written when the task starts, and last, when its run
#: finished (the completion marker), or when it did not.
STARTED = "started.json"
FINISHED = "finished.json"
FAILED = "failed.json"


def write_marker(stage: str, name: str, data: dict[str, Any]) -> None:
    write_json_atomic(os.path.join(stage, name), data)


def read_marker(stage: str, name: str) -> dict[str, Any] | None:
    """The marker ``name`` of ``stage``, or None where there is none or it does not parse."""
    path = os.path.join(stage, name)
    try:
        data = load_json(path, "marker")
    except XferbenchError:
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class Source:
    """One folder to merge: its asv results folder and how sentences name it."""

    folder: str
    results_dir: str
    label: str
    node: str = ""  # what makes two sources one node: a fleet task's key; else the host name
    tag: str = ""  # what a distinct name adds: "task1" for a fleet task; else the host name


@dataclass(frozen=True)
class Placement:
    """One machine folder of a source and the machine it is filed under."""

    source: Source
    machine: str  # as the source names it
    target: str  # in the destination
    host: str | None
    note: str | None = None  # why target differs from machine


@dataclass
class Merged:
    placement: Placement
    files: list[str] = field(default_factory=list)  # destination results files written
    taken: int = 0  # benchmarks whose results came from the source
    kept: int = 0  # benchmarks the destination already held from a newer run


def open_source(folder: str, label: str | None = None, node: str = "", tag: str = "") -> Source:
    """Check ``folder`` (a staging folder or a results folder, or a folder holding
    ``results/``) and return it as a Source; XferbenchError (one sentence) where it is not
    one, its run did not finish or a file of it does not parse."""
    given = folder
    folder = os.path.abspath(folder)
    if not os.path.isdir(folder):
        raise XferbenchError(f"{given} is not a folder")
    staged = any(os.path.exists(os.path.join(folder, m)) for m in (STARTED, FINISHED, FAILED))
    finished = read_marker(folder, FINISHED)
    if staged and finished is None:
        raise XferbenchError(f"{given} is a fleet task's folder whose run did not finish (no "
                             f"{FINISHED}): nothing of it is merged")
    node = node or str((finished or {}).get("node_key") or "")
    if finished and not tag and isinstance(finished.get("task"), int):
        tag = f"task{finished['task']}"
    results_dir = next((d for d in (folder, os.path.join(folder, "results"))
                        if os.path.isfile(os.path.join(d, "benchmarks.json"))), None)
    if results_dir is None:
        raise XferbenchError(f"{given} is not a results folder (no benchmarks.json in it or in "
                             "its results/), a fleet task's folder or a fleet job folder")
    check_folder(results_dir)  # every file of a source reads, or nothing of it is filed
    rs = load(results_dir)
    for machine in rs.machines():
        load_json(os.path.join(results_dir, machine, "machine.json"), "machine file")
    if not staged:
        for path in sorted({r.path for r in rs}):
            side = rs.sidecars.get(path)
            run = side.run if side else None
            if not run:
                raise XferbenchError(
                    f"{path} has no .metadata: whether the run that wrote it finished is "
                    "unknown (it was not made by xferbench run), so it is not merged")
            if run.complete is not True:
                raise XferbenchError(
                    f"{path} is from a run that did not finish (its .metadata says complete: "
                    f"{str(run.complete).lower()}): nothing of {given} is merged")
    return Source(folder, results_dir, label or given, node, tag)


def hosts(results_dir: str) -> dict[str, set[str]]:
    """machine folder -> the host names its sidecars record (empty where none does)."""
    out: dict[str, set[str]] = {}
    if not os.path.isdir(results_dir):
        return out
    for machine, path in iter_result_files(results_dir):
        found = out.setdefault(machine, set())
        side = load_sidecar(path)
        host = side.metadata.hostname if side and side.metadata else None
        if host and host != "unknown":
            found.add(str(host))
    return out


def place(sources: list[Source], dest: str,
          fixed: dict[tuple[str, str], str] | None = None) -> list[Placement]:
    """Where each machine folder of ``sources`` goes in ``dest``. ``fixed`` holds names given
    by an earlier merge ((node, machine) -> target): kept as they are. A name that another
    node holds, in this merge or in ``dest`` (by its host name), gets a distinct one:
    ``<name>-<tag>`` (a fleet task's ``task<i>``, else the host), then ``-2`` and on."""
    fixed = dict(fixed or {})
    in_dest = hosts(dest)
    held: dict[str, tuple[str, str]] = {t: (n, "an earlier merge") for (n, _m), t in fixed.items()}
    out = []
    for src in sources:
        for machine, found in sorted(hosts(src.results_dir).items()):
            host = sorted(found)[0] if found else None
            node = src.node or host or src.folder
            target, note = fixed.get((node, machine)), None
            if target is None:
                target = next(n for n in _names(machine, src.tag or host)
                              if not _taken(n, node, host, held, in_dest))
                if target != machine:
                    holder = held[machine][1] if machine in held else \
                        f"host {', '.join(sorted(in_dest[machine]))} in {dest}"
                    note = (f"{src.label} names its machine {machine!r}, which another node "
                            f"({holder}) already holds: its results go to {target!r}")
            held.setdefault(target, (node, src.label))
            out.append(Placement(src, machine, target, host, note))
    return out


def _names(machine: str, tag: str | None) -> Iterator[str]:
    yield machine
    base = f"{machine}-{slug(tag) if tag else 'node'}"[:96]
    yield base
    for n in itertools.count(2):
        yield f"{base}-{n}"


def _taken(name: str, node: str, host: str | None, held: dict[str, tuple[str, str]],
           in_dest: dict[str, set[str]]) -> bool:
    if name in held:
        return held[name][0] != node
    there = in_dest.get(name, set())
    return bool(host and there and host not in there)


def merge(placements: list[Placement], dest: str) -> list[Merged]:
    """File every placement into ``dest`` holding its lock; all is read and merged in memory
    first, so a damaged destination file stops the merge before anything is written. The
    files are then written as one change (``write_all_safely``): every one to its temporary
    file first, then renamed in the order a reader needs them, benchmarks.json and each
    machine.json first, each sidecar before its results file, so that a merge killed at any
    point leaves no results file without its sidecar and no folder without its list."""
    os.makedirs(dest, exist_ok=True)
    with results_lock(dest):
        clean_stale(dest)  # what a killed merge (or run) left: its temporary files
        writes: dict[str, Any] = {}
        done = [_plan_one(p, dest, writes) for p in placements]
        _plan_benchmarks(placements, dest, writes)
        write_all_safely([(path, json.dumps(
            data.to_dict() if isinstance(data, Sidecar) else data, indent=4, sort_keys=True))
            for path, data in sorted(writes.items(), key=lambda kv: _write_order(kv[0]))])
    return done


def _write_order(path: str) -> tuple[int, str]:
    """benchmarks.json, then machine files, then sidecars, then results files."""
    name = os.path.basename(path)
    rank = 0 if name == "benchmarks.json" else 1 if name == "machine.json" else \
        2 if name.endswith(".metadata") else 3
    return rank, path


def _current(path: str, writes: dict[str, Any], what: str) -> Any:
    if path in writes:
        return writes[path]
    return load_json(path, f"{what} in the destination") if os.path.exists(path) else None


def _plan_benchmarks(placements: list[Placement], dest: str, writes: dict[str, Any]) -> None:
    """benchmarks.json: the destination's entries, plus those only a source knows."""
    path = os.path.join(dest, "benchmarks.json")
    merged = _current(path, writes, "benchmark list")
    for p in placements:
        theirs = load_json(os.path.join(p.source.results_dir, "benchmarks.json"), "benchmark list")
        merged = theirs if merged is None else {**theirs, **merged}
    if merged is not None:
        writes[path] = merged


def _plan_one(p: Placement, dest: str, writes: dict[str, Any]) -> Merged:
    done = Merged(p)
    folder = os.path.join(dest, p.target)
    src_folder = os.path.join(p.source.results_dir, p.machine)
    machine_file = os.path.join(folder, "machine.json")
    if _current(machine_file, writes, "machine file") is None:
        record = load_json(os.path.join(src_folder, "machine.json"), "machine file")
        writes[machine_file] = {**record, "machine": p.target}
    for machine, path in iter_result_files(p.source.results_dir):
        if machine != p.machine:
            continue
        new = _renamed_results(load_json(path, "results file"), p.target)
        out = os.path.join(folder, os.path.basename(path))
        old = _current(out, writes, "results file")
        merged, taken = (new, list(new["results"])) if old is None else \
            merge_results(old, new, out)
        done.taken += len(taken)
        done.kept += len(new["results"]) - len(taken)
        writes[out] = merged
        incoming = load_sidecar(path)
        if incoming is not None:
            before = writes.get(metadata_path(out)) or load_sidecar(out)
            writes[metadata_path(out)] = merge_sidecars(
                before, _renamed_sidecar(incoming, p.target), taken)
        done.files.append(out)
    return done


def _renamed_results(data: dict[str, Any], machine: str) -> dict[str, Any]:
    return {**data, "params": {**data.get("params", {}), "machine": machine}}


def _renamed_sidecar(side: Sidecar, machine: str) -> Sidecar:
    return replace(side, runs=tuple(replace(r, machine=machine) for r in side.runs))


def _started(row: Any, columns: list[str] | None) -> int:
    if columns and "started_at" in columns and isinstance(row, list) and \
            len(row) > columns.index("started_at"):
        value = row[columns.index("started_at")]
        return value if isinstance(value, int) else 0
    return 0


def merge_results(old: dict[str, Any], new: dict[str, Any], path: str
                  ) -> tuple[dict[str, Any], list[str]]:
    """One asv results file from two: per benchmark the result asv started later wins.
    Returns the merged file and the benchmarks taken from ``new``."""
    columns = new.get("result_columns")
    if old.get("result_columns") != columns:
        raise XferbenchError(f"{path} has other result columns than the file merged into it: "
                             "they are from different asv versions; nothing was merged")
    results, durations = dict(old.get("results", {})), dict(old.get("durations", {}))
    taken = []
    for name, row in new.get("results", {}).items():
        if name in results and _started(results[name], columns) > _started(row, columns):
            continue
        results[name] = row
        taken.append(name)
        if name in new.get("durations", {}):
            durations[name] = new["durations"][name]
    newer = new if int(new.get("date") or 0) >= int(old.get("date") or 0) else old
    return {**old, **{k: v for k, v in newer.items() if k not in ("results", "durations")},
            "results": results, "durations": durations}, taken


def merge_sidecars(old: Sidecar | None, new: Sidecar, taken: list[str]) -> Sidecar:
    """Two sidecars of one results file (both read, so upgraded, by ``sidecar.load_sidecar``):
    every run of both (newest last, as ``sidecar.record_run`` keeps them); per benchmark, the
    run whose result was kept, with its outcomes, observations and diagnostics; the metadata
    of the side with the newest run."""
    if old is None:
        old = Sidecar(None)
    runs: dict[str, RunRecord] = {str(r.started_at): r for s in (old, new) for r in s.runs}
    ordered = tuple(runs[k] for k in sorted(runs))[-RUNS_KEPT:]
    benchmarks, outcomes = dict(old.benchmarks), dict(old.outcomes)
    observations, names = dict(old.observations), dict(old.param_names)
    capped, read = dict(old.capped), dict(old.diagnostics)
    for name in taken:
        if name in new.benchmarks:
            benchmarks[name] = new.benchmarks[name]
        if name in new.outcomes:
            outcomes[name] = new.outcomes[name]
        capped.pop(name, None)  # the kept result's run says whether it was capped
        if name in new.capped:
            capped[name] = new.capped[name]
        observations.pop(name, None)  # the kept result's run says what it saw, or nothing
        if name in new.observations:
            observations[name] = new.observations[name]
        read.pop(name, None)  # how the kept result was read, or nothing
        if name in new.diagnostics:
            read[name] = new.diagnostics[name]
        if name in new.param_names:  # the kept result's parameter names
            names[name] = new.param_names[name]
    newest = max((old, new), key=lambda s: str(s.run.started_at if s.run else ""))
    return Sidecar(newest.metadata, ordered, MappingProxyType(benchmarks),
                   MappingProxyType(outcomes), capped=MappingProxyType(capped),
                   observations=MappingProxyType(observations),
                   param_names=MappingProxyType(names), diagnostics=MappingProxyType(read))

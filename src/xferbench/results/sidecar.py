"""The ``.metadata`` sidecar beside each asv results file: what asv does not record (the
machine's metadata, every run that wrote into the file, which run measured each benchmark,
and every combination without a number with its reason), typed, read and written here alone.

Old versions are upgraded in one place, ``upgrade`` (as pyperf's loader does), so that every
reader sees the current version only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..errors import XferbenchError
from ..metadata import MachineMetadata
from .runrecords import Diagnostics, Observation, Outcome, RunRecord
from .safefiles import load_json, remove_file, write_json_atomic

#: Version of the .metadata sidecar. Changelog:
#:   1: first version ({"schema_version", "metadata", "run": {...}}); the run recorded the
#:      benchmark processes' thread count as run.torch_threads (metadata.torch_threads was
#:      the parent process's) and quick runs as run.short_budgets.
#:   2: + "runs" (every run that wrote into the file, newest last), "benchmarks" (the run that
#:      measured each benchmark, by its started_at), "outcomes" (per benchmark, each
#:      combination without a number: skipped or failed, with its reason);
#:      metadata.torch_threads is the benchmark processes' count, the one thread figure
#:      (files written before that also carry it as run.threads, dropped on reading).
#:      "run" is the newest of "runs" again; where they differ (a relabel before the typed
#:      records updated "run" alone), "run" wins.
#:      Fields added within 2 (absent means not recorded; older readers ignore them):
#:      run.budget_s (`xferbench run --budget`); run.suite ("clone", or "package 0.1.0": the
#:      suite an installed package carries, results/suite.py); run.capped (`--budget --cap`:
#:      its combinations may be sampled under a cap) and "capped" (per benchmark, each
#:      combination that was, with how: the same rows as "outcomes", status "capped").
#:   3: + "param_names" (per benchmark, its parameter names when the run measured it: a
#:      suite that later gains, drops or renames a parameter rewrites benchmarks.json, and
#:      the file's own names keep its values from being read under the new ones). Files of
#:      versions 1 and 2 recorded none: the reader names their values from benchmarks.json,
#:      checked against the values (``reading.param_names``); + "observations" (per
#:      benchmark, what each combination saw beside its number, one line: a behaviour
#:      check's words, as bench_behaviour records them), replaced per benchmark as
#:      "outcomes" are (older files have none). Fields added within 3 (absent means not
#:      recorded): metadata.virtualized (the CPU reports a hypervisor).
#:   4: + "diagnostics" (per benchmark, how each measured combination's figure was read: its
#:      clock; for device time the event batches' kind and counts (held, redone, shrunk,
#:      lengthened, unheld, discarded), all_discarded (not citable), and "sm_mhz", the SM
#:      clock per sample in the order asv files the samples; the measurement's warnings),
#:      replaced per benchmark as "outcomes" are. Files of versions 1 to 3 recorded none.
SCHEMA_VERSION = 4
SCHEMA_VERSIONS = (1, 2, 3, 4)
SUFFIX = ".metadata"
#: Runs kept in a sidecar's history.
RUNS_KEPT = 20


def metadata_path(results_path: str) -> str:
    """The sidecar of an asv results file (``<commit8>-<env>.json``)."""
    return results_path[: -len(".json")] + SUFFIX


@dataclass(frozen=True)
class Sidecar:
    """One results file's sidecar, at the current schema version."""

    metadata: MachineMetadata | None  # None: none recorded
    runs: tuple[RunRecord, ...] = ()  # newest last
    #: benchmark -> the started_at of the run that measured it last
    benchmarks: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))
    #: benchmark -> its combinations without a number in that run
    outcomes: Mapping[str, tuple[Outcome, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: benchmark -> its combinations sampled under a budget cap in that run (--budget --cap)
    capped: Mapping[str, tuple[Outcome, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: benchmark -> what its combinations saw beside their numbers in that run
    observations: Mapping[str, tuple[Observation, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: benchmark -> its parameter names when that run measured it (absent: not recorded)
    param_names: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: benchmark -> how each measured combination's figure was read in that run
    diagnostics: Mapping[str, tuple[Diagnostics, ...]] = field(
        default_factory=lambda: MappingProxyType({}))

    @property
    def run(self) -> RunRecord | None:
        """The newest run."""
        return self.runs[-1] if self.runs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "metadata": self.metadata.to_dict() if self.metadata else {},
            "run": self.run.to_dict() if self.run else {},
            "runs": [r.to_dict() for r in self.runs],
            "benchmarks": dict(self.benchmarks),
            "outcomes": {name: [o.to_dict() for o in rows]
                         for name, rows in self.outcomes.items()},
            **({"capped": {name: [o.to_dict() for o in rows]
                           for name, rows in self.capped.items() if rows}}
               if any(self.capped.values()) else {}),
            **({"observations": {name: [o.to_dict() for o in rows]
                                 for name, rows in self.observations.items()}}
               if self.observations else {}),
            **({"diagnostics": {name: [d.to_dict() for d in rows]
                                for name, rows in self.diagnostics.items()}}
               if self.diagnostics else {}),
            "param_names": {name: list(names) for name, names in self.param_names.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sidecar:
        """A sidecar of the current version (``upgrade`` first for any other)."""
        meta = data.get("metadata") or {}
        observations = data.get("observations") or {}
        names = data.get("param_names") or {}
        read = data.get("diagnostics") or {}
        return cls(
            metadata=MachineMetadata.from_dict(meta) if meta else None,
            runs=tuple(RunRecord.from_dict(r) for r in data.get("runs") or ()
                       if isinstance(r, dict)),
            benchmarks=MappingProxyType(
                {str(k): None if v is None else str(v)
                 for k, v in (data.get("benchmarks") or {}).items()}),
            outcomes=_rows(data.get("outcomes")), capped=_rows(data.get("capped")),
            observations=MappingProxyType(
                {str(name): tuple(Observation.from_dict(o) for o in rows
                                  if isinstance(o, dict))
                 for name, rows in observations.items() if isinstance(rows, list)}),
            param_names=MappingProxyType(
                {str(name): tuple(str(n) for n in value)
                 for name, value in names.items() if isinstance(value, list)}),
            diagnostics=MappingProxyType(
                {str(name): tuple(Diagnostics.from_dict(d) for d in rows if isinstance(d, dict))
                 for name, rows in read.items() if isinstance(rows, list)}))


def _rows(data: Any) -> Mapping[str, tuple[Outcome, ...]]:
    """{benchmark: its Outcome rows} from a sidecar's "outcomes" or "capped"."""
    return MappingProxyType(
        {str(name): tuple(Outcome.from_dict(o) for o in rows if isinstance(o, dict))
         for name, rows in (data if isinstance(data, dict) else {}).items()
         if isinstance(rows, list)})


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A sidecar's JSON of any version this xferbench reads, as the current version's (keys
    no version reads any more are left for ``from_dict`` to ignore). Version 2 lacks only
    "param_names" (none recorded: the reader names the values from benchmarks.json), and
    version 3 "diagnostics" (none recorded)."""
    data = dict(data)
    if data.get("schema_version") == 1:
        only = dict(data.get("run") or {})  # version 1 recorded one run
        meta = dict(data.get("metadata") or {})
        if only.pop("short_budgets", False):
            only["quick"] = True
        threads = only.pop("torch_threads", None)
        if threads is not None:
            meta["torch_threads"] = threads  # the benchmark processes' count: the one figure
        data.update({"metadata": meta, "run": only, "runs": [only] if only else []})
    run, runs = data.get("run"), [r for r in data.get("runs") or () if isinstance(r, dict)]
    if isinstance(run, dict) and run:
        # "run" is the newest run as every version wrote it, and what a relabel before
        # version 2's records updated alone: where it and the newest of "runs" differ, it wins
        if runs and runs[-1].get("started_at") == run.get("started_at"):
            runs[-1] = run
        elif not runs:
            runs = [run]
    if data.get("schema_version") in (1, 2):
        data["param_names"] = {}
    if data.get("schema_version") in (1, 2, 3):
        data["diagnostics"] = {}
    data.update({"runs": runs, "schema_version": SCHEMA_VERSION})
    return data


def check(data: Any, path: str) -> dict[str, Any]:
    """``data`` read from ``path``, if it is a sidecar this xferbench reads; else one
    sentence."""
    if not isinstance(data, dict):
        raise XferbenchError(f"metadata file {path} is not a JSON object: it may be damaged; "
                             "restore it from git or delete it")
    if not isinstance(data.get("param_names", {}), dict):
        raise XferbenchError(f"metadata file {path} has a 'param_names' that is not an object")
    if data.get("schema_version") not in SCHEMA_VERSIONS:
        raise XferbenchError(
            f"metadata file {path} has schema_version {data.get('schema_version')!r}: "
            f"this xferbench reads versions {', '.join(map(str, SCHEMA_VERSIONS))}")
    for key, kind, name in (("metadata", dict, "an object"), ("run", dict, "an object"),
                            ("benchmarks", dict, "an object"), ("outcomes", dict, "an object"),
                            ("runs", list, "a list")):
        if not isinstance(data.get(key) or kind(), kind):
            raise XferbenchError(f"metadata file {path} has a {key!r} that is not {name}: it "
                                 "may be damaged; restore it from git or delete it")
    return data


def load_sidecar(results_path: str) -> Sidecar | None:
    """The sidecar of the results file ``results_path``, upgraded; None where there is none."""
    path = metadata_path(results_path)
    if not os.path.exists(path):
        return None
    data = upgrade(check(load_json(path, "metadata file"), path))
    try:
        return Sidecar.from_dict(data)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # a field of a wrong type
        raise XferbenchError(f"metadata file {path} holds a malformed entry ({exc}): it may be "
                             "damaged; restore it from git or delete it") from None


def _readable(results_path: str) -> Sidecar | None:
    """The sidecar to update, or None where it is missing or unreadable (it is rewritten)."""
    try:
        return load_sidecar(results_path)
    except XferbenchError:
        return None


@dataclass(frozen=True)
class Findings:
    """What a run found beside its numbers, per benchmark: what its combinations saw
    (``observations``), those sampled under a budget cap (``capped``), and how each figure
    was read (``diagnostics``)."""

    observations: Mapping[str, list[Observation]] = field(default_factory=dict)
    capped: Mapping[str, list[Outcome]] = field(default_factory=dict)
    diagnostics: Mapping[str, list[Diagnostics]] = field(default_factory=dict)


def record_run(results_path: str, meta: MachineMetadata, run: RunRecord, saved: list[str],
               outcomes: Mapping[str, Sequence[Outcome]],
               unrun: Mapping[str, Sequence[Outcome]] | None = None,
               found: Findings | None = None) -> None:
    """Update the sidecar of ``results_path`` after ``run`` saved its benchmarks into it.

    Args:
        results_path: the asv results file the sidecar belongs to.
        meta: the machine's metadata for this run.
        run: the run's record.
        saved: the benchmarks the run saved into the file.
        outcomes: per benchmark, its combinations without a number.
        unrun: the outcomes of benchmarks the run did not start (cut by its budget). They
            are kept only where no run measured them before: a number saved earlier stays,
            with its outcomes.
        found: what the run found beside its numbers (observations, caps, diagnostics).

    The sidecar keeps every run that wrote into the file (``runs``), which run measured each
    benchmark (``benchmarks``), and each benchmark's combinations without a number
    (``outcomes``): a later run that re-measures some classes replaces their entries and keeps
    the others', so an interrupted run never hides the complete one before it.
    """
    old = _readable(results_path) or Sidecar(None)
    found = found or Findings()
    runs = [r for r in old.runs if r.started_at != run.started_at] + [run]
    benchmarks = dict(old.benchmarks)
    kept, kept_capped = dict(old.outcomes), dict(old.capped)
    seen, read = dict(old.observations), dict(old.diagnostics)
    names = dict(old.param_names)
    declared = _declared_names(results_path)
    for name in saved:
        benchmarks[name] = run.started_at
        kept[name] = tuple(outcomes.get(name, ()))
        kept_capped[name] = tuple(found.capped.get(name, ()))  # this run's, or none
        seen.pop(name, None)  # what an earlier run saw is not what this one measured
        if found.observations.get(name):
            seen[name] = tuple(found.observations[name])
        read.pop(name, None)  # as observations: this run's, or none
        if found.diagnostics.get(name):
            read[name] = tuple(found.diagnostics[name])
        if name in declared:
            names[name] = declared[name]
    for name, rows in (unrun or {}).items():
        if name not in benchmarks:
            kept[name] = tuple(rows)
    new = Sidecar(meta, tuple(runs[-RUNS_KEPT:]), MappingProxyType(benchmarks),
                  MappingProxyType(kept),
                  MappingProxyType({k: v for k, v in kept_capped.items() if v}),
                  observations=MappingProxyType(seen), param_names=MappingProxyType(names),
                  diagnostics=MappingProxyType(read))
    write_json_atomic(metadata_path(results_path), new.to_dict())


def _declared_names(results_path: str) -> dict[str, tuple[str, ...]]:
    """Each benchmark's parameter names in the benchmarks.json of the results folder holding
    ``results_path``, as asv wrote it for the run that just saved (empty where unreadable)."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(results_path))),
                        "benchmarks.json")
    try:
        data = load_json(path, "benchmark list")
    except XferbenchError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: tuple(str(n) for n in info.get("param_names") or ())
            for name, info in data.items() if isinstance(info, dict)}


def relabel_sidecar(old_results: str, new_results: str, commit: str, snapshot: str) -> None:
    """Move the sidecar of ``old_results`` beside ``new_results``, its newest run filed under
    the suite commit ``commit`` (``snapshot`` the one it was made at)."""
    side = load_sidecar(old_results)
    if side is None:
        return
    if side.runs:
        newest = replace(side.runs[-1], commit=commit, snapshot_commit=snapshot)
        side = replace(side, runs=(*side.runs[:-1], newest))
    write_json_atomic(metadata_path(new_results), side.to_dict())
    if metadata_path(new_results) != metadata_path(old_results):
        remove_file(metadata_path(old_results))

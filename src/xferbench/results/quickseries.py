"""Figures measured outside asv, filed as a quick series (``xferbench check --results DIR``):
one results file in asv's format and its sidecar, labelled quick, so that list, compare and
publish read them as any other series, never for citation. Each filing replaces the last one
of its machine, device, PyTorch and commit; the sidecar keeps the runs that wrote it.

The results file holds, per benchmark, the grid of the values filed (each parameter's values
in the order given), a NaN (skipped, with its reason in the sidecar) where a combination of
that grid was not measured, as asv does. The benchmarks are declared in benchmarks.json where
the folder has none; where it has them, each filed value joins its parameter's values."""

from __future__ import annotations

import itertools
import math
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import XferbenchError
from ..metadata import MachineMetadata
from .asvfiles import ASV_FORMAT_VERSION, benchmark_list
from .machines import (
    check_machine_name,
    check_same_machine,
    machine_record,
    slug,
    torch_label,
)
from .runrecords import ISO_FORMAT, SKIPPED, Outcome, RunRecord
from .safefiles import write_json_atomic
from .sidecar import record_run

#: asv 0.6's columns of a results row, in its order.
COLUMNS = ("result", "params", "version", "started_at", "duration", "stats_ci_99_a",
           "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat",
           "samples", "profile")
#: The version a benchmark declared here carries (asv's is its code's hash).
VERSION = "xferbench-quick-series-1"
NOT_FILED = "not among the figures this filing measured"


@dataclass(frozen=True)
class FiledFigure:
    """One figure to file: a benchmark at one combination, and its samples in seconds."""

    benchmark: str
    param_names: tuple[str, ...]
    params: tuple[str, ...]  # each value as text, in param_names' order
    samples: tuple[float, ...]


@dataclass(frozen=True)
class Filing:
    """Who measured, when and under which suite commit."""

    machine: str
    meta: MachineMetadata
    commit: str  # the suite's, 40 hex digits
    started_ms: int
    finished_ms: int
    what: str  # the command that measured ("xferbench check"), as the run record's bench


def file_quick_series(results_dir: str, filing: Filing, figures: Sequence[FiledFigure]) -> str:
    """Write ``figures`` into ``results_dir`` as a quick series of ``filing.machine``;
    returns the results file. One sentence (XferbenchError) for a machine name that is not
    one or a benchmark the folder declares with other parameters."""
    check_machine_name(filing.machine)
    check_same_machine(results_dir, filing.machine, filing.meta)
    folder = os.path.join(results_dir, filing.machine)
    os.makedirs(folder, exist_ok=True)
    grids = _grids(figures)
    _declare(results_dir, grids)
    if not os.path.exists(os.path.join(folder, "machine.json")):
        write_json_atomic(os.path.join(folder, "machine.json"),
                          {**machine_record(filing.machine, filing.meta), "version": 1})
    torch, cuda = torch_label(filing.meta)
    env = (f"quick-series-{slug(filing.what)}-{slug(str(filing.meta.device))}-"
           f"torch{slug(torch)}-cuda{slug(cuda)}")
    path = os.path.join(folder, f"{filing.commit[:8]}-{env}.json")
    rows = {name: _row(grid, [f for f in figures if f.benchmark == name], filing.started_ms)
            for name, grid in grids.items()}
    write_json_atomic(path, {
        "commit_hash": filing.commit, "date": filing.started_ms, "env_name": env,
        "params": {"machine": filing.machine, "torch": torch, "cuda": cuda,
                   "python": str(filing.meta.python or "unknown"),
                   "device": str(filing.meta.device), "quick": "yes"},
        "python": str(filing.meta.python or "unknown"), "requirements": {"torch": torch},
        "result_columns": list(COLUMNS), "results": {n: r for n, (r, _) in rows.items()},
        "durations": {}, "version": ASV_FORMAT_VERSION})
    run = RunRecord(commit=filing.commit, machine=filing.machine, device=filing.meta.device,
                    sweep=None, quick=True, bench=filing.what,
                    started_at=_iso(filing.started_ms), complete=True,
                    finished_at=_iso(filing.finished_ms))
    record_run(path, filing.meta, run, list(grids),
               MappingProxyType({n: skipped for n, (_, skipped) in rows.items()}))
    return path


def _iso(ms: int) -> str:
    return time.strftime(ISO_FORMAT, time.gmtime(ms / 1000))


def _grids(figures: Sequence[FiledFigure]) -> dict[str, tuple[tuple[str, ...], list[list[str]]]]:
    """{benchmark: (parameter names, each one's values in the order first filed)}."""
    out: dict[str, tuple[tuple[str, ...], list[list[str]]]] = {}
    for f in figures:
        names, values = out.setdefault(f.benchmark, (f.param_names, [[] for _ in f.params]))
        if names != f.param_names:
            raise XferbenchError(f"{f.benchmark} is filed with parameters {', '.join(names)} "
                                 f"and {', '.join(f.param_names)}: give one set")
        for known, value in zip(values, f.params):
            if value not in known:
                known.append(value)
    return out


def _declare(results_dir: str, grids: dict[str, tuple[tuple[str, ...], list[list[str]]]]
             ) -> None:
    """Declare each benchmark in benchmarks.json, or add the filed values to its own."""
    path = os.path.join(results_dir, "benchmarks.json")
    listed = benchmark_list(results_dir)
    if listed is None and os.path.exists(path):
        raise XferbenchError(f"benchmark list {path} does not parse: restore it from git, or "
                             "give --results a new folder")
    listed = listed or {"version": ASV_FORMAT_VERSION}
    for name, (names, values) in grids.items():
        quoted = [[repr(v) for v in vs] for vs in values]
        entry = listed.get(name)
        if not isinstance(entry, dict):
            listed[name] = {"code": f"filed by {VERSION}", "name": name,
                            "param_names": list(names), "params": quoted, "timeout": 60,
                            "type": "track", "unit": "seconds", "version": VERSION}
            continue
        if list(entry.get("param_names") or ()) != list(names):
            raise XferbenchError(f"{path} declares {name} with parameters "
                                 f"{', '.join(entry.get('param_names') or ())}, not "
                                 f"{', '.join(names)}: give --results a folder of this suite")
        entry["params"] = [list(have) + [v for v in new if v not in have]
                           for have, new in zip(entry.get("params") or [], quoted)]
    write_json_atomic(path, listed)


def _row(grid: tuple[tuple[str, ...], list[list[str]]], figures: list[FiledFigure],
         started_ms: int) -> tuple[list[Any], tuple[Outcome, ...]]:
    """A results row over the grid's combinations, and the combinations left unmeasured."""
    names, values = grid
    by_combo = {f.params: f.samples for f in figures}
    cols: dict[str, list[Any]] = {c: [] for c in COLUMNS if c not in ("params", "version",
                                                                      "started_at",
                                                                      "duration", "profile")}
    skipped = []
    for combo in itertools.product(*values):
        samples = sorted(by_combo.get(combo, ()))
        if not samples:
            skipped.append(Outcome(tuple(zip(names, combo)), SKIPPED, NOT_FILED))
        stats = _stats(samples)
        for key, value in zip(("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
                               "stats_q_75", "stats_number", "stats_repeat", "samples"),
                              stats):
            cols[key].append(value)
    return [cols["result"], [[repr(v) for v in vs] for vs in values], VERSION, started_ms,
            0.0, cols["stats_ci_99_a"], cols["stats_ci_99_b"], cols["stats_q_25"],
            cols["stats_q_75"], cols["stats_number"], cols["stats_repeat"], cols["samples"],
            None], tuple(skipped)


def _stats(samples: list[float]) -> tuple[Any, ...]:
    """(median, 99% CI low and high, quartiles, number, repeat, samples); NaN and None
    for a combination without samples. The interval is the samples' own range: no claim
    beyond what was seen."""
    if not samples:
        return (math.nan, None, None, None, None, None, None, None)
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive") if len(samples) > 1 \
        else (samples[0],) * 3
    return (statistics.median(samples), samples[0], samples[-1], q1, q3, 1, len(samples),
            list(samples))

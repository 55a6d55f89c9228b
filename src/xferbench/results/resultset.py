"""Results: asv's results folder read into flat, typed records (``Result``, one benchmark at
one parameter combination, in one series), gathered in a ``ResultSet`` with the sidecar of
each file; ``load`` and ``load_file`` are the entry points (one file: ``reading``; the
files of a folder: ``asvfiles``; the sidecars: ``sidecar``)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.version import InvalidVersion, Version

from ..errors import XferbenchError
from ..metadata import MachineMetadata
from .asvfiles import MEASURE_FIRST, iter_result_files, load_benchmarks
from .hosts import with_hosts
from .reading import literal, parse_results_file
from .result import Result, nbytes_of
from .safefiles import load_json, require
from .series import Host, Mode, Selection, SeriesKey, host_option, mode_option, pick
from .sidecar import Sidecar, load_sidecar

__all__ = ["Result", "ResultSet", "check_folder", "load", "load_file", "nbytes_of",
           "version_key"]


@dataclass
class ResultSet:
    results: list[Result]
    benchmarks: dict[str, dict[str, Any]]
    root: str
    sidecars: dict[str, Sidecar] = field(default_factory=dict)  # results path -> its sidecar
    #: results files left out, each with why: a problem in one file keeps out its series only
    skipped: dict[str, str] = field(default_factory=dict)
    # results by series and by benchmark, in order, made on first use: the page asks a set
    # of a few thousand results for one series or benchmark hundreds of times (`results` is
    # never changed in place: every narrowing is a new set)
    _by: dict[str, dict[Any, list[Result]]] = field(default_factory=dict, init=False,
                                                    repr=False, compare=False)

    def _index(self, attr: str) -> dict[Any, list[Result]]:
        if attr not in self._by:
            index: dict[Any, list[Result]] = {}
            for r in self.results:
                index.setdefault(getattr(r, attr), []).append(r)
            self._by[attr] = index
        return self._by[attr]

    def __iter__(self) -> Iterator[Result]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def _with(self, kept: list[Result]) -> ResultSet:
        return ResultSet(kept, self.benchmarks, self.root, self.sidecars, self.skipped)

    def unread(self, machine: str | None = None) -> str:
        """" (left out: <why>)" for the files of ``machine`` (of every machine where None)
        that could not be read, "" where none: what a sentence on a series not found adds."""
        why = [w for p, w in self.skipped.items()
               if machine is None or os.path.basename(os.path.dirname(p)) == machine]
        return f" (left out: {'; '.join(why)})" if why else ""

    def filter(self, *, torch: str | None = None, machine: str | None = None,
               commit: str | None = None, benchmark: str | None = None,
               path: str | None = None, series: SeriesKey | None = None,
               mode: Mode | None = None) -> ResultSet:
        pattern = re.compile(benchmark) if benchmark else None
        pool = self.results if series is None else self._index("series").get(series, [])
        return self._with([
            r for r in pool
            if (torch is None or r.torch == torch or r.torch.split("+")[0] == torch)
            and (machine is None or r.machine == machine)
            and (commit is None or r.commit.startswith(commit))
            and (pattern is None or pattern.search(r.benchmark))
            and (path is None or os.path.abspath(r.path) == os.path.abspath(path))
            and (mode is None or r.mode == mode)
        ])

    def find(self, benchmark: str, **params: Any) -> list[Result]:
        """Results of ``benchmark`` whose params include ``params`` (values compared as text)."""
        want = {k: str(v) for k, v in params.items()}
        return [
            r for r in self._index("benchmark").get(benchmark, [])
            if all(str(r.param_dict.get(k)) == v for k, v in want.items())
        ]

    def latest(self, benchmark: str, **params: Any) -> Result | None:
        """The most recent finite result of ``benchmark`` at ``params``."""
        found = [r for r in self.find(benchmark, **params) if r.ok]
        return max(found, key=lambda r: r.date_ms) if found else None

    def torch_versions(self) -> list[str]:
        return sorted({r.torch for r in self.results}, key=version_key)

    def machines(self) -> list[str]:
        return sorted({r.machine for r in self.results})

    def series(self) -> list[SeriesKey]:
        """Every series: machines by name, releases in order, the default mode first."""
        return sorted({r.series for r in self.results},
                      key=lambda s: (s.machine, version_key(s.torch), s.mode))

    def metadata_for(self, result: Result) -> MachineMetadata:
        """The machine ``result`` was measured on; every field None where its file has no
        sidecar."""
        side = self.sidecars.get(result.path)
        return side.metadata if side and side.metadata else MachineMetadata()

    def gpu_for(self, result: Result) -> str | None:
        """The GPU that measured ``result``: its sidecar's GPU, only where the device that
        measured it is an accelerator (a CPU run on a GPU machine names no GPU)."""
        meta = self.metadata_for(result)
        device = result.device if result.device != "unknown" else str(meta.device or "")
        if device.startswith("cpu") or not meta.gpu_name:
            return None
        return str(meta.gpu_name)

    def declared_params(self, benchmark: str) -> dict[str, list[Any]]:
        """The parameter names of ``benchmark`` and their values, in asv's declared order,
        then any name or value only the results files hold (the suite changed since)."""
        info = self.benchmarks.get(benchmark, {})
        out = {name: [literal(v) for v in values]
               for name, values in zip(info.get("param_names", []), info.get("params", []))}
        for r in self._index("benchmark").get(benchmark, []):
            for k, v in r.params:
                values = out.setdefault(k, [])
                if all(str(v) != str(x) for x in values):
                    values.append(v)
        return out

    def commits(self) -> list[str]:
        return sorted({r.commit for r in self.results})

    def match_torch(self, version: str) -> str:
        """The full torch version ``version`` names: "2.13.0" finds "2.13.0+cpu" when that
        is the only build of 2.13.0 here (narrow the set first: ``filter(machine=)``);
        raises XferbenchError naming those that exist."""
        known = self.torch_versions()
        if version in known:
            return version
        found = [v for v in known if v.split("+")[0] == version]
        if len(found) == 1:
            return found[0]
        where = self.root + (f" on {', '.join(self.machines())}"
                             if len(self.machines()) == 1 else "")
        if found:
            raise XferbenchError(
                f"PyTorch version {version!r} is ambiguous in {where}: it matches "
                f"{', '.join(found)}; give the full version (or --machine)")
        machines = self.machines()
        raise XferbenchError(
            f"PyTorch version {version!r} is not in {where}: it holds "
            f"{', '.join(known) or 'none'}"
            f"{self.unread(machines[0] if len(machines) == 1 else None)}")

    def newest(self) -> ResultSet:
        """One result per (series, benchmark, params): the one from the newest run (suite
        commit date, then start time), even where that run skipped or failed it."""
        best: dict[tuple, Result] = {}
        for r in self.results:
            key = (r.series, r.benchmark, r.params)
            old = best.get(key)
            if old is None or (r.date_ms, r.started_ms or 0, r.ok) > (
                    old.date_ms, old.started_ms or 0, old.ok):
                best[key] = r
        return self._with(list(best.values()))

    def select(self, sel: Selection) -> ResultSet:
        """The series ``sel`` leaves, every one of them (``one_series`` picks one per machine
        and release); one sentence where a value names none. The machine narrows first, so
        that a release is matched among that machine's builds."""
        rs = self
        if sel.machine is not None:
            if sel.machine not in rs.machines():
                raise XferbenchError(f"machine {sel.machine!r} is not in {rs.root}: it holds "
                                     f"{', '.join(rs.machines())}{rs.unread(sel.machine)}")
            rs = rs.filter(machine=sel.machine)
        if sel.torch is not None:
            rs = rs.filter(torch=rs.match_torch(sel.torch))
        if sel.mode is None and sel.host is None:
            return rs
        kept = {k for k in rs.series() if Selection(mode=sel.mode, host=sel.host).holds(k)}
        if not kept:
            asked = " and ".join(filter(None, (
                f"--mode {mode_option(sel.mode)}" if sel.mode is not None else "",
                f"--host {host_option(sel.host)}" if sel.host is not None else "")))
            raise XferbenchError(f"no series of {rs.root} is {asked}: it holds "
                                 f"{'; '.join(k.label for k in rs.series())}")
        return rs._with([r for r in rs.results if r.series in kept])

    def one_series(self, mode: Mode | None = None,
                   host: Host | None = None) -> tuple[ResultSet, list[SeriesKey]]:
        """One series per (machine, torch): the one ``series.pick`` chooses (``mode``, else
        the default, else the only one; ``host`` where the machine holds several), and the
        others it left, for the caller to name."""
        groups: dict[tuple[str, str], list[SeriesKey]] = {}
        for key in self.series():
            groups.setdefault((key.machine, key.torch), []).append(key)
        chosen: set[SeriesKey] = set()
        left: list[SeriesKey] = []
        for (machine, torch), keys in groups.items():
            one, others = pick(keys, mode, where=f"torch {torch} on {machine}", host=host)
            chosen.add(one)
            left += others
        return self._with([r for r in self.results if r.series in chosen]), left

    def runs(self, key: SeriesKey) -> list[str]:
        """The results files of series ``key``: each a run (or the runs asv filed into one
        file), newest last."""
        found: dict[str, tuple[int, int]] = {}
        for r in self.filter(series=key):
            found[r.path] = max(found.get(r.path, (0, 0)), (r.date_ms, r.started_ms or 0))
        return sorted(found, key=lambda p: (found[p], p))


def version_key(version: str) -> tuple:
    """PEP 440's order (``packaging.version``): "2.4.1" < "2.13.0" < "2.13.0+cu128", and a
    nightly or pre-release before its release ("2.16.0.dev20260101" < "2.16.0a0+git1" <
    "2.16.0"); a text that is no version ("unknown") first."""
    try:
        return (1, Version(version), "")
    except InvalidVersion:
        return (0, Version("0"), version)


def _read(path: str, benchmarks: dict[str, dict[str, Any]]) -> tuple[list[Result],
                                                                       Sidecar | None]:
    side = load_sidecar(path)
    return mark_capped(parse_results_file(path, benchmarks, side), side), side


def mark_capped(results: list[Result], side: Sidecar | None) -> list[Result]:
    """``results`` with each combination that its sidecar says was sampled under a budget
    cap marked so (``Result.capped``: how)."""
    if not side or not side.capped:
        return results
    def key(name: str, params: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
        return name, tuple(sorted((str(k), str(v)) for k, v in params))  # any order

    rows = {key(name, o.params): o.reason for name, outcomes in side.capped.items()
            for o in outcomes}
    return [replace(r, capped=why) if (why := rows.get(key(r.benchmark, r.params))) else r
            for r in results]


def load_file(path: str) -> ResultSet:
    """One asv results file, read with the benchmarks.json of the results folder it is in
    (``<results>/<machine>/<file>.json``)."""
    path = os.path.abspath(path)
    require(path, f"results file {path}")
    data = load_json(path, "results file")
    if not (isinstance(data, dict) and "result_columns" in data and "results" in data):
        raise XferbenchError(f"{path} is not an asv results file (no result_columns/results): "
                             "give a file from a results folder, RESULTS/<machine>/<file>.json")
    root = os.path.dirname(os.path.dirname(path))
    benchmarks = load_benchmarks(root)
    results, side = _read(path, benchmarks)
    if not results:
        raise XferbenchError(f"results file {path} holds no results")
    return ResultSet(results, benchmarks, root, {path: side} if side else {})


def check_folder(root: str, machine: str | None = None) -> None:
    """Raise XferbenchError naming the first file of results folder ``root`` (of its machine
    folder ``machine``, where given) that cannot be read (a folder with nothing in it yet is
    fine): what a run checks before it measures, of the folder it files into."""
    if not os.path.exists(os.path.join(root, "benchmarks.json")):
        return
    benchmarks = load_benchmarks(root)
    for folder, path in iter_result_files(root):
        if machine is None or folder == machine:
            _read(path, benchmarks)


def load(root: str = "results") -> ResultSet:
    """Every results file under ``root``; raises XferbenchError naming a broken or empty one."""
    if not root.strip():
        raise XferbenchError("the results folder is empty text: give a folder (--results DIR)")
    root = os.path.abspath(root)
    benchmarks = load_benchmarks(root)
    results: list[Result] = []
    sidecars: dict[str, Sidecar] = {}
    skipped: dict[str, str] = {}
    for _machine, path in iter_result_files(root):
        try:
            found, side = _read(path, benchmarks)
        except XferbenchError as exc:  # this file's series only: the others are read
            skipped[path] = str(exc)
            continue
        results.extend(found)
        if side:
            sidecars[path] = side
    if not results:
        raise XferbenchError(next(iter(skipped.values()), f"no results in {root}: "
                                                          f"{MEASURE_FIRST}"))
    for why in skipped.values():  # said where the files are read, once each, as pyperf warns
        print(f"xferbench: warning: {why} (left out: its series only; every other series "
              "is read)", file=sys.stderr)
    return ResultSet(with_hosts(results, sidecars), benchmarks, root, sidecars, skipped)

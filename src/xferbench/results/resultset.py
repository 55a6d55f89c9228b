"""Results: asv's results folder read into flat, typed records (``Result``, one benchmark at
one parameter combination), gathered in a ``ResultSet`` with the sidecar of each file;
``load`` and ``load_file`` are the entry points (the files: ``resultfiles``, ``sidecar``)."""

from __future__ import annotations

import ast
import itertools
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import XferbenchError
from ..metadata import MachineMetadata
from ..units import gbps, parse_size
from .asvfiles import ASV_FORMAT_VERSION, iter_result_files, load_benchmarks
from .safefiles import load_json
from .sidecar import Sidecar, load_sidecar


@dataclass(frozen=True)
class Result:
    """One benchmark at one parameter combination, from one results file."""

    benchmark: str  # e.g. "bench_copies.Copy.track_device_s"
    params: tuple[tuple[str, Any], ...]  # (name, value) in declaration order
    value: float | None  # None: failed; NaN: skipped
    unit: str
    machine: str
    commit: str
    date_ms: int
    torch: str
    cuda: str
    python: str
    env_name: str
    path: str
    samples: tuple[float, ...] | None = None
    q25: float | None = None
    q75: float | None = None
    ci_99: tuple[float, float] | None = None
    number: int | None = None
    repeat: int | None = None
    started_ms: int | None = None  # when asv started this benchmark (ms since the epoch)
    quick: bool = False  # measured with quick (shortened) budgets: a smoke run, not for citing
    #: why this combination was sampled under a budget cap (``--budget --cap``; its
    #: sidecar's "capped"), None where it was not: never a default figure, not for citing
    capped: str | None = None

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def ok(self) -> bool:
        return self.value is not None and math.isfinite(self.value)

    @property
    def spread(self) -> float | None:
        """IQR / median, or None without quartiles."""
        if not self.ok or self.q25 is None or self.q75 is None or not self.value:
            return None
        return (self.q75 - self.q25) / self.value

    @property
    def nbytes(self) -> int | None:
        """The bytes the ``size`` parameter names, or None where there is none."""
        return nbytes_of(self.param_dict)

    @property
    def gbps(self) -> float | None:
        """Bytes per second / 1e9, where the size parameter says how many bytes moved."""
        n = self.nbytes
        if n is None or not self.ok or self.unit != "seconds" or not self.value:
            return None
        return gbps(n, self.value)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        return (self.benchmark, self.params)

    def label(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.benchmark}({args})" if args else self.benchmark


@dataclass
class ResultSet:
    results: list[Result]
    benchmarks: dict[str, dict[str, Any]]
    root: str
    sidecars: dict[str, Sidecar] = field(default_factory=dict)  # results path -> its sidecar

    def __iter__(self) -> Iterator[Result]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def filter(self, *, torch: str | None = None, machine: str | None = None,
               commit: str | None = None, benchmark: str | None = None,
               path: str | None = None) -> ResultSet:
        pattern = re.compile(benchmark) if benchmark else None
        kept = [
            r for r in self.results
            if (torch is None or r.torch == torch or r.torch.split("+")[0] == torch)
            and (machine is None or r.machine == machine)
            and (commit is None or r.commit.startswith(commit))
            and (pattern is None or pattern.search(r.benchmark))
            and (path is None or os.path.abspath(r.path) == os.path.abspath(path))
        ]
        return ResultSet(kept, self.benchmarks, self.root, self.sidecars)

    def find(self, benchmark: str, **params: Any) -> list[Result]:
        """Results of ``benchmark`` whose params include ``params`` (values compared as text)."""
        want = {k: str(v) for k, v in params.items()}
        return [
            r for r in self.results
            if r.benchmark == benchmark
            and all(str(r.param_dict.get(k)) == v for k, v in want.items())
        ]

    def latest(self, benchmark: str, **params: Any) -> Result | None:
        """The most recent finite result of ``benchmark`` at ``params``."""
        found = [r for r in self.find(benchmark, **params) if r.ok]
        return max(found, key=lambda r: r.date_ms) if found else None

    def torch_versions(self) -> list[str]:
        return sorted({r.torch for r in self.results}, key=version_key)

    def machines(self) -> list[str]:
        return sorted({r.machine for r in self.results})

    def metadata_for(self, result: Result) -> MachineMetadata:
        """The machine ``result`` was measured on; every field None where its file has no
        sidecar."""
        side = self.sidecars.get(result.path)
        return side.metadata if side and side.metadata else MachineMetadata()

    def declared_params(self, benchmark: str) -> dict[str, list[Any]]:
        """The parameter names of ``benchmark`` and their values, in asv's declared order."""
        info = self.benchmarks.get(benchmark, {})
        return {name: [_literal(v) for v in values]
                for name, values in zip(info.get("param_names", []), info.get("params", []))}

    def commits(self) -> list[str]:
        return sorted({r.commit for r in self.results})

    def match_torch(self, version: str) -> str:
        """The full torch version ``version`` names: "2.13.0" finds "2.13.0+cpu" when that
        is the only build of 2.13.0 here; raises XferbenchError naming those that exist."""
        known = self.torch_versions()
        if version in known:
            return version
        found = [v for v in known if v.split("+")[0] == version]
        if len(found) == 1:
            return found[0]
        if found:
            raise XferbenchError(
                f"PyTorch version {version!r} is ambiguous in {self.root}: it matches "
                f"{', '.join(found)}; give the full version"
            )
        raise XferbenchError(
            f"PyTorch version {version!r} is not in {self.root}: it holds "
            f"{', '.join(known) or 'none'}"
        )

    def newest(self) -> ResultSet:
        """One result per (machine, torch, benchmark, params): the one from the newest run
        (suite commit date, then start time), even where that run skipped or failed it."""
        best: dict[tuple, Result] = {}
        for r in self.results:
            key = (r.machine, r.torch, r.benchmark, r.params)
            old = best.get(key)
            if old is None or (r.date_ms, r.started_ms or 0, r.ok) > (
                    old.date_ms, old.started_ms or 0, old.ok):
                best[key] = r
        return ResultSet(list(best.values()), self.benchmarks, self.root, self.sidecars)


def nbytes_of(params: dict[str, Any]) -> int | None:
    """The bytes of a ``size`` parameter ("64MiB"), or None where there is none or it is not
    a size."""
    if "size" not in params:
        return None
    try:
        return parse_size(str(params["size"]))
    except XferbenchError:
        return None


def version_key(version: str) -> tuple:
    """Order "2.4.1" < "2.13.0" < "2.13.0+cu128" numerically, local tags last."""
    base, _, local = version.partition("+")
    parts = []
    for piece in re.split(r"[.]", base):
        m = re.match(r"(\d+)(.*)", piece)
        parts.append((int(m.group(1)), m.group(2)) if m else (-1, piece))
    return (tuple(parts), local)


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_results_file(path: str, benchmarks: dict[str, dict[str, Any]],
                       quick: bool = False) -> list[Result]:
    """Every result in one asv results file; ``quick`` marks them as a quick run's (also
    when the file's params say ``quick: yes``)."""
    data = load_json(path, "results file")
    try:
        columns = data["result_columns"]
        params = data.get("params", {})
        commit = str(data["commit_hash"])
        date_ms = int(data.get("date") or 0)
        env_name = str(data.get("env_name", ""))
        entries = data["results"]
        if not (isinstance(columns, list) and isinstance(params, dict)
                and isinstance(entries, dict)):
            raise TypeError
    except (KeyError, TypeError, ValueError, AttributeError):
        raise XferbenchError(
            f"results file {path} is not an asv results file (no result_columns/results)"
        ) from None
    if data.get("version", ASV_FORMAT_VERSION) != ASV_FORMAT_VERSION:
        raise XferbenchError(
            f"results file {path} has asv format version {data.get('version')!r}: "
            f"this xferbench reads version {ASV_FORMAT_VERSION} (asv 0.6)"
        )
    machine = str(params.get("machine", os.path.basename(os.path.dirname(path))))
    requirements = data.get("requirements") or {}
    torch_version = str(params.get("torch") or requirements.get("torch") or "unknown")
    cuda = str(params.get("cuda", "unknown"))
    python = str(params.get("python", data.get("python", "unknown")))
    quick = quick or str(params.get("quick", "")) == "yes"
    out: list[Result] = []
    try:
        _parse_rows(out, entries, columns, benchmarks, path=path, machine=machine,
                    commit=commit, date_ms=date_ms, torch=torch_version, cuda=cuda,
                    python=python, env_name=env_name, quick=quick)
    except (TypeError, ValueError, AttributeError) as exc:
        raise XferbenchError(f"results file {path} holds a malformed result ({exc}): restore "
                             "it from git or delete it") from None
    return out


def _parse_rows(out: list[Result], entries: dict[str, Any], columns: list[str],
                benchmarks: dict[str, dict[str, Any]], **common: Any) -> None:
    for name, row in entries.items():
        if not isinstance(row, list):
            continue
        cols = dict(zip(columns, row))
        info = benchmarks.get(name, {})
        names = list(info.get("param_names", []))
        param_values = [[_literal(v) for v in values] for values in (cols.get("params") or [])]
        combos = list(itertools.product(*param_values)) if param_values else [()]
        values = cols.get("result")
        started = cols.get("started_at")
        if values is None:
            values = [None] * len(combos)

        for i, combo in enumerate(combos):
            column = _column_reader(cols, i)
            v = values[i] if i < len(values) else None
            samples = column("samples")
            ci_a, ci_b = column("stats_ci_99_a"), column("stats_ci_99_b")
            out.append(Result(
                benchmark=name,
                params=tuple(zip(names or [f"p{j}" for j in range(len(combo))], combo)),
                value=None if v is None else float(v),
                unit=str(info.get("unit", "unknown")), **common,
                samples=tuple(float(x) for x in samples) if samples else None,
                q25=column("stats_q_25"), q75=column("stats_q_75"),
                ci_99=(ci_a, ci_b) if ci_a is not None and ci_b is not None else None,
                number=column("stats_number"), repeat=column("stats_repeat"),
                started_ms=started if isinstance(started, int) else None,
            ))


def _column_reader(cols: dict[str, Any], i: int) -> Any:
    """column(key): entry ``i`` of asv's per-combination column ``key``, or None."""
    def column(key: str) -> Any:
        col = cols.get(key)
        return col[i] if isinstance(col, list) and i < len(col) else None

    return column


def _sidecar_quick(side: Sidecar | None) -> bool:
    """Whether the sidecar says its run had quick budgets (files from before the "quick"
    param say so only there)."""
    return bool(side and side.run and side.run.quick)


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


def check_labels(path: str, results: list[Result], side: Sidecar | None) -> None:
    """A results file whose PyTorch label disagrees with what its sidecar recorded was edited
    (or moved beside another's sidecar): it would be cited as what it is not."""
    recorded = side.metadata.torch if side and side.metadata else None
    labels = {r.torch for r in results} - {"unknown"}
    if recorded and labels and labels != {recorded}:
        raise XferbenchError(
            f"results file {path} says PyTorch {', '.join(sorted(labels))} but its sidecar "
            f"recorded PyTorch {recorded}: the file was edited or moved; restore it from git "
            "or delete it")


def load_file(path: str) -> ResultSet:
    """One asv results file, read with the benchmarks.json of the results folder it is in
    (``<results>/<machine>/<file>.json``)."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise XferbenchError(f"results file {path} does not exist")
    data = load_json(path, "results file")
    if not (isinstance(data, dict) and "result_columns" in data and "results" in data):
        raise XferbenchError(f"{path} is not an asv results file (no result_columns/results): "
                             "give a file from a results folder, RESULTS/<machine>/<file>.json")
    root = os.path.dirname(os.path.dirname(path))
    benchmarks = load_benchmarks(root)
    side = load_sidecar(path)
    results = mark_capped(parse_results_file(path, benchmarks, quick=_sidecar_quick(side)),
                          side)
    check_labels(path, results, side)
    if not results:
        raise XferbenchError(f"results file {path} holds no results")
    return ResultSet(results, benchmarks, root, {path: side} if side else {})


def check_folder(root: str) -> None:
    """Raise XferbenchError naming the first file of results folder ``root`` that cannot be
    read (a folder with nothing in it yet is fine): what a run checks before it measures."""
    if not os.path.exists(os.path.join(root, "benchmarks.json")):
        return
    benchmarks = load_benchmarks(root)
    for _machine, path in iter_result_files(root):
        side = load_sidecar(path)
        check_labels(path, parse_results_file(path, benchmarks, quick=_sidecar_quick(side)),
                     side)


def load(root: str = "results") -> ResultSet:
    """Every results file under ``root``; raises XferbenchError naming a broken or empty one."""
    if not root.strip():
        raise XferbenchError("the results folder is empty text: give a folder (--results DIR)")
    root = os.path.abspath(root)
    benchmarks = load_benchmarks(root)
    results: list[Result] = []
    sidecars: dict[str, Sidecar] = {}
    for _machine, path in iter_result_files(root):
        side = load_sidecar(path)
        found = mark_capped(parse_results_file(path, benchmarks, quick=_sidecar_quick(side)),
                            side)
        check_labels(path, found, side)
        results.extend(found)
        if side:
            sidecars[path] = side
    if not results:
        raise XferbenchError(f"no results in {root}: run 'xferbench run' first")
    return ResultSet(results, benchmarks, root, sidecars)

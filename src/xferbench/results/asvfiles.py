"""The files of a results folder: asv's ``benchmarks.json`` and results files, found and read
as JSON with one sentence for a damaged one, labelled with what asv does not record (torch,
CUDA, device) and relabelled with the real suite commit; the ``.metadata`` sidecars are
``sidecar.py``'s.

Layout (asv's, plus one sidecar per results file):
  <results>/benchmarks.json                      what asv discovered: params, units, types
  <results>/<machine>/machine.json               asv's machine record
  <results>/<machine>/<commit8>-<env>.json       asv's results for one commit and environment
  <results>/<machine>/<commit8>-<env>.metadata   xferbench's metadata for that run (JSON)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from ..errors import XferbenchError
from .safefiles import (
    load_json,
    loads_ok,
    path_kind,
    remove_file,
    require,
    write_bytes_safely,
    write_json_atomic,
)
from .sidecar import relabel_sidecar

# asv loads inside the functions that need it: `import xferbench` stays free of it.

#: What a command over an empty results folder says to do: the suite runs from any folder,
#: a clone's or the installed package's (suite.py).
MEASURE_FIRST = ("measure some with 'xferbench run' (from any folder: it writes ./results, or "
                 "--results DIR), or point --results at a folder that holds results")
#: The "version" of asv 0.6's results files and benchmarks.json.
ASV_FORMAT_VERSION = 2
#: Where a run keeps the benchmark list asv wrote when the folder's benchmarks.json is a
#: clone's tracked file, which the run then puts back as committed (``set_aside``): a run
#: changes no tracked file of the clone. Every reader takes the two together.
LOCAL_LIST = "benchmarks.local.json"
#: How asv names a results file: the suite commit's first 8 hex digits, then the environment.
RESULTS_NAME = re.compile(r"[0-9a-f]{8}-.+\.json")


def load_benchmarks(root: str) -> dict[str, dict[str, Any]]:
    """{benchmark: asv's entry} of ``root``: its benchmarks.json, each entry the local list
    holds (a run's, ``LOCAL_LIST``) taken from there."""
    kind = path_kind(root)
    if not kind.is_folder and kind.kind != "missing":  # missing: nothing measured yet
        raise XferbenchError(kind.refusal(f"results folder {root}", "a folder"))
    path = os.path.join(root, "benchmarks.json")
    if not os.path.lexists(path):
        raise XferbenchError(f"no results in {root} ({path} is missing): {MEASURE_FIRST}")
    out: dict[str, dict[str, Any]] = {}
    for one in (path, os.path.join(root, LOCAL_LIST)):
        if one != path and not os.path.exists(one):
            continue
        data = load_json(one, "benchmark list")
        if not isinstance(data, dict):
            raise XferbenchError(f"benchmark list {one} is not an asv benchmarks.json")
        if data.get("version", ASV_FORMAT_VERSION) != ASV_FORMAT_VERSION:
            raise XferbenchError(
                f"benchmark list {one} has asv format version {data.get('version')!r}: "
                f"this xferbench reads version {ASV_FORMAT_VERSION} (asv 0.6)")
        out.update({k: v for k, v in data.items() if isinstance(v, dict)})
    return out


def benchmark_list(root: str) -> dict[str, Any] | None:
    """``root``'s benchmarks.json as it is, each entry of the local list taken from there
    (None where there is none or it does not parse)."""
    found = None
    for name in ("benchmarks.json", LOCAL_LIST):
        path = os.path.join(root, name)
        if os.path.exists(path) and loads_ok(path):
            data = load_json(path, "benchmark list")
            if isinstance(data, dict):
                found = {**(found or {}), **data}
    return found


def set_aside(root: str, committed: bytes) -> None:
    """Move the benchmark list asv wrote into ``root``'s local list, and put the committed
    benchmarks.json (``committed``, its bytes) back: what a run learned of the suite is kept,
    and the clone's tracked file is as checked out."""
    listed = benchmark_list(root)
    path = os.path.join(root, "benchmarks.json")
    if listed is None:
        return
    with open(path, "rb") as fh:
        if fh.read() == committed:
            return
    write_json_atomic(os.path.join(root, LOCAL_LIST), listed)
    write_bytes_safely(path, committed, what="the committed benchmark list")


def keep_param_values(root: str, before: dict[str, Any] | None) -> None:
    """Put back into ``root``'s benchmarks.json what asv's rewrite dropped from ``before``.

    asv rewrites the file from the suite as one run sees it: a smoke sweep (one size), or a
    device that skips some values, would leave only its own parameter values, and the results
    other series hold at the other values could no longer be named (``cite`` refuses a value
    that is not listed). Each benchmark keeps the union of its values, the new ones first,
    where its parameter names did not change; a benchmark the rewrite dropped is kept whole."""
    after = benchmark_list(root)
    if not before or after is None:
        return
    changed = False
    for name, old in before.items():
        new = after.get(name)
        if not isinstance(old, dict):
            continue
        if not isinstance(new, dict):
            after[name], changed = old, True
            continue
        if new.get("param_names") != old.get("param_names"):
            continue  # the suite changed this benchmark: its old files name other params
        merged = [list(n) + [v for v in o if v not in n]
                  for n, o in zip(new.get("params") or [], old.get("params") or [])]
        if merged != new.get("params"):
            new["params"], changed = merged, True
    if changed:
        write_json_atomic(os.path.join(root, "benchmarks.json"), after)


def iter_result_files(root: str) -> Iterable[tuple[str, str]]:
    """(machine folder, results file path) for every asv results file under ``root``."""
    require(root, f"results folder {root}", "a folder")
    for entry in sorted(os.listdir(root)):
        folder = os.path.join(root, entry)
        if entry.startswith(".") or not os.path.isdir(folder):
            continue
        names = [n for n in sorted(os.listdir(folder))
                 if n.endswith(".json") and n not in ("machine.json", "benchmarks.json")]
        machine = path_kind(os.path.join(folder, "machine.json"))
        if machine.kind not in ("file", "missing"):
            raise XferbenchError(machine.refusal(f"machine file {folder}/machine.json"))
        if not machine.is_file:
            found = [n for n in names if RESULTS_NAME.fullmatch(n)]
            if found:  # asv skips such a folder without a word; its series would vanish
                raise XferbenchError(
                    f"machine folder {folder} holds {len(found)} results file(s) but no "
                    "machine.json (asv's machine record, without which asv and xferbench "
                    "would skip them): restore it from git, or copy it from the machine "
                    "that measured them")
            continue
        for name in names:
            yield entry, os.path.join(folder, name)


def label_results(path: str, torch_version: str, cuda: str, python: str, device: str,
                  series: dict[str, str] | None = None) -> None:
    """Record the installed torch and CUDA, the device and the series' options ("quick")
    in the results file's params, atomically."""
    if not os.path.exists(path) or not loads_ok(path):
        return
    data = load_json(path, "results file")
    data.setdefault("params", {}).update(
        {"torch": torch_version, "cuda": cuda, "python": python, "device": device,
         **(series or {})})
    data["requirements"] = {"torch": torch_version}
    write_json_atomic(path, data)


def relabel(results_dir: str, commit: str) -> list[str]:
    """Give every results file under ``results_dir`` the suite commit ``commit``.

    For runs made in a copy of the tree without its git history (a GPU machine's snapshot
    commit): the files are renamed to the new commit's prefix, their sidecars with them.
    ``scripts/relabel`` is its command line (the last step of scripts/gpu-check).
    """
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise XferbenchError(f"commit {commit!r} is not a full 40-character git hash")
    moved = []
    for _machine, path in list(iter_result_files(results_dir)):
        data = load_json(path, "results file")
        old = str(data.get("commit_hash", ""))
        if old == commit:
            continue
        data["commit_hash"] = commit
        name = os.path.basename(path)
        new_path = os.path.join(os.path.dirname(path), commit[:8] + name[len(old[:8]):])
        write_json_atomic(new_path, data)
        relabel_sidecar(path, new_path, commit, old)
        if new_path != path:
            remove_file(path)
        moved.append(new_path)
    return moved


def results_file(results_dir: str, machine: str, commit: str, wrapper: str) -> str:
    """The file asv writes for ``commit`` run through ``wrapper`` on ``machine``, named as asv
    names it (an environment name of 128 characters or more becomes "env-<md5>": a wrapper
    under a long temporary path, with a series suffix or two, reaches that)."""
    from asv.environment import get_env_name
    from asv.results import get_filename

    env_name = get_env_name("existing", wrapper.replace(os.path.sep, "_"), {}, {})
    return os.path.join(results_dir, get_filename(machine, commit, env_name))

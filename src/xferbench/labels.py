"""Writing results: the labels xferbench adds to asv's results files (torch, CUDA, device),
the ``.metadata`` sidecar, the backup that protects a file while asv rewrites it, and the
relabelling of a snapshot run with the real suite commit.

``python -m xferbench.labels relabel RESULTS COMMIT`` is the last step of scripts/gpu-check.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
from typing import Any

from .errors import XferbenchError
from .resultfiles import METADATA_SCHEMA_VERSION, iter_result_files, metadata_path


def check_output_folder(option: str, given: str) -> None:
    """One sentence, before anything is written, for a folder to write into that cannot be:
    a file, a link to nothing, inside a file, or where nothing may be written."""
    path = os.path.abspath(given)
    if os.path.exists(path) and not os.path.isdir(path):
        raise XferbenchError(f"{option} {given} is a file, not a folder")
    if os.path.islink(path) and not os.path.exists(path):
        raise XferbenchError(f"{option} {given} is a link to nothing: {os.readlink(path)}")
    parent = path
    while not os.path.exists(parent):  # the nearest existing ancestor must be a folder
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise XferbenchError(f"{option} {given} is inside {parent}, which is a file")
    try:  # the only sure test of a folder that may be written: write in it, and take it back
        os.rmdir(tempfile.mkdtemp(prefix=".xferbench-probe-", dir=parent))
    except OSError as exc:
        raise XferbenchError(
            f"{option} {given} cannot be written: {parent}: {exc.strerror}") from None


def loads_ok(path: str) -> bool:
    """Whether ``path`` holds complete JSON (a file cut short by a kill does not)."""
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
        return True
    except (OSError, ValueError):
        return False


def backup_path(path: str) -> str:
    return path + ".xferbench-bak"


def protect(path: str, backup: str) -> None:
    """Keep a copy of a results file that asv is about to rewrite (non-atomically)."""
    if os.path.exists(backup) and not loads_ok(path):
        os.replace(backup, path)  # a run killed mid-write: bring the earlier file back
    if os.path.exists(path):
        shutil.copy2(path, backup)


def discard(path: str, backup: str) -> None:
    """Put the results file back as it was before an asv call that did not finish (an
    interrupt, a kill, a class run by another interpreter): from its backup, or, where there
    was none, no file at all. Whatever that call saved was a class cut short."""
    if os.path.exists(backup):
        os.replace(backup, path)
    elif os.path.exists(path):
        os.remove(path)


def settle(path: str, backup: str) -> None:
    """After asv: a truncated file is replaced by its backup; the backup then goes."""
    if os.path.exists(backup):
        if not os.path.exists(path) or not loads_ok(path):
            os.replace(backup, path)
        else:
            os.remove(backup)


def label_results(path: str, torch_version: str, cuda: str, python: str, device: str,
                  series: dict[str, str] | None = None) -> None:
    """Record the installed torch and CUDA, the device and the series' options ("quick")
    in the results file's params, atomically."""
    if not os.path.exists(path) or not loads_ok(path):
        return
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    data.setdefault("params", {}).update(
        {"torch": torch_version, "cuda": cuda, "python": python, "device": device,
         **(series or {})})
    data["requirements"] = {"torch": torch_version}
    write_json_atomic(path, data)


def write_json_atomic(path: str, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` whole or not at all: through a temporary file that
    is removed if the write fails (a full disk, say)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=4, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


#: Runs kept in a sidecar's history.
RUNS_KEPT = 20


def record_run(results_path: str, meta: dict[str, Any], run: dict[str, Any],
               saved: list[str]) -> None:
    """Update the ``.metadata`` sidecar of ``results_path`` after ``run`` saved the
    benchmarks ``saved`` into it.

    The sidecar keeps every run that wrote into the file (``runs``, newest last), which run
    measured each benchmark (``benchmarks``), and each benchmark's combinations without a
    number (``outcomes``): a later run that re-measures some classes replaces their entries
    and keeps the others', so an interrupted run never hides the complete one before it.
    """
    path = metadata_path(results_path)
    old: dict[str, Any] = {}
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as fh:
                old = json.load(fh)
        except (OSError, ValueError):
            old = {}
    if not isinstance(old, dict):
        old = {}
    runs = [r for r in old.get("runs", []) if isinstance(r, dict)]
    if not runs and isinstance(old.get("run"), dict):
        runs = [old["run"]]  # a version-1 sidecar: its one run
    runs = [r for r in runs if r.get("started_at") != run.get("started_at")] + [run]
    benchmarks = dict(old.get("benchmarks") or {})
    outcomes = dict(old.get("outcomes") or {})
    for name in saved:
        benchmarks[name] = run.get("started_at")
        outcomes[name] = run.get("outcomes", {}).get(name, [])
    record = {k: v for k, v in run.items() if k != "outcomes"}
    write_json_atomic(path, {
        "schema_version": METADATA_SCHEMA_VERSION, "metadata": meta, "run": record,
        "runs": [{k: v for k, v in r.items() if k != "outcomes"} for r in runs[-RUNS_KEPT:]],
        "benchmarks": benchmarks, "outcomes": outcomes})


def clean_stale(results_dir: str) -> list[str]:
    """What a run that was killed left in ``results_dir``: a backup is put back where its
    results file is cut short (else removed), a temporary file of a dead process removed.
    Call it holding the folder's lock. Returns what was cleaned, as sentences."""
    done = []
    for folder, _dirs, files in os.walk(results_dir):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".xferbench-bak"):
                target = path[: -len(".xferbench-bak")]
                restored = not os.path.exists(target) or not loads_ok(target)
                settle(target, path)
                done.append(f"{'restored' if restored else 'removed the backup of'} {target}")
            elif (m := re.fullmatch(r"(.+)\.(\d+)\.tmp", name)) and not alive(int(m.group(2))):
                os.remove(path)
                done.append(f"removed {path}")
    return done


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 asks without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def relabel(results_dir: str, commit: str) -> list[str]:
    """Give every results file under ``results_dir`` the suite commit ``commit``.

    For runs made in a copy of the tree without its git history (a GPU machine's snapshot
    commit): the files are renamed to the new commit's prefix, their .metadata with them.
    """
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise XferbenchError(f"commit {commit!r} is not a full 40-character git hash")
    moved = []
    for _machine, path in list(iter_result_files(results_dir)):
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        old = str(data.get("commit_hash", ""))
        if old == commit:
            continue
        data["commit_hash"] = commit
        name = os.path.basename(path)
        new_path = os.path.join(os.path.dirname(path), commit[:8] + name[len(old[:8]):])
        write_json_atomic(new_path, data)
        if new_path != path:
            os.remove(path)
        meta = metadata_path(path)
        if os.path.exists(meta):
            with open(meta, encoding="utf-8") as fh:
                sidecar = json.load(fh)
            sidecar.setdefault("run", {}).update({"commit": commit, "snapshot_commit": old})
            write_json_atomic(metadata_path(new_path), sidecar)
            if metadata_path(new_path) != meta:
                os.remove(meta)
        moved.append(new_path)
    return moved


def main(argv: list[str] | None = None) -> int:
    """``python -m xferbench.labels relabel RESULTS COMMIT`` (used by scripts/gpu-check)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] != "relabel":
        print("usage: python -m xferbench.labels relabel RESULTS COMMIT", file=sys.stderr)
        return 2
    try:
        for path in relabel(args[1], args[2]):
            print(f"relabelled {path}")
    except XferbenchError as exc:
        print(f"xferbench: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

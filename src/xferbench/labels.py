"""Writing results: the labels xferbench adds to asv's results files (torch, CUDA, device),
the ``.metadata`` sidecar, the backup that protects a file while asv rewrites it, and the
relabelling of a snapshot run with the real suite commit.

``python -m xferbench.labels relabel RESULTS COMMIT`` is the last step of scripts/gpu-check.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from typing import Any

from .errors import XferbenchError
from .results import METADATA_SCHEMA_VERSION, iter_result_files, metadata_path


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


def settle(path: str, backup: str) -> None:
    """After asv: a truncated file is replaced by its backup; the backup then goes."""
    if os.path.exists(backup):
        if not os.path.exists(path) or not loads_ok(path):
            os.replace(backup, path)
        else:
            os.remove(backup)


def label_results(path: str, torch_version: str, cuda: str, python: str, device: str) -> None:
    """Record the installed torch and CUDA in the results file's params, atomically."""
    if not os.path.exists(path) or not loads_ok(path):
        return
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    data.setdefault("params", {}).update(
        {"torch": torch_version, "cuda": cuda, "python": python, "device": device})
    data["requirements"] = {"torch": torch_version}
    write_json_atomic(path, data)


def write_json_atomic(path: str, data: Any) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=4, sort_keys=True)
    os.replace(tmp, path)


def write_metadata(results_path: str, meta: dict[str, Any], run: dict[str, Any]) -> None:
    write_json_atomic(metadata_path(results_path),
                      {"schema_version": METADATA_SCHEMA_VERSION, "metadata": meta, "run": run})


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

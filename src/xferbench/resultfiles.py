"""The files of a results folder: asv's ``benchmarks.json`` and results files, found and read
as JSON with one sentence for a damaged one, and xferbench's ``.metadata`` sidecars.

Layout (asv's, plus one sidecar per results file):
  <results>/benchmarks.json                      what asv discovered: params, units, types
  <results>/<machine>/machine.json               asv's machine record
  <results>/<machine>/<commit8>-<env>.json       asv's results for one commit and environment
  <results>/<machine>/<commit8>-<env>.metadata   xferbench's metadata for that run (JSON)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from .errors import XferbenchError

#: Version of the .metadata sidecar. Changelog:
#:   1: first version ({"schema_version", "metadata", "run": {...}}).
#:   2: + "runs" (every run that wrote into the file, newest last), "benchmarks" (the run that
#:      measured each benchmark, by its started_at), "outcomes" (per benchmark, each
#:      combination without a number: skipped or failed, with its reason). Version 1 reads.
METADATA_SCHEMA_VERSION = 2
METADATA_SCHEMA_VERSIONS = (1, 2)
METADATA_SUFFIX = ".metadata"
#: The "version" of asv 0.6's results files and benchmarks.json.
ASV_FORMAT_VERSION = 2


def load_json(path: str, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise XferbenchError(
            f"{what} {path} is not valid JSON ({exc.msg} at line {exc.lineno}): "
            "it may be truncated; restore it from git or delete it"
        ) from None
    except UnicodeDecodeError as exc:
        raise XferbenchError(
            f"{what} {path} is not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}):"
            " it is damaged or not a results file; restore it from git or delete it") from None
    except OSError as exc:
        raise XferbenchError(f"{what} {path} cannot be read: {exc.strerror}") from None


def load_benchmarks(root: str) -> dict[str, dict[str, Any]]:
    path = os.path.join(root, "benchmarks.json")
    if not os.path.exists(path):
        raise XferbenchError(
            f"no results in {root}: {path} is missing (run 'xferbench run' first)"
        )
    data = load_json(path, "benchmark list")
    if not isinstance(data, dict):
        raise XferbenchError(f"benchmark list {path} is not an asv benchmarks.json")
    if data.get("version", ASV_FORMAT_VERSION) != ASV_FORMAT_VERSION:
        raise XferbenchError(
            f"benchmark list {path} has asv format version {data.get('version')!r}: "
            f"this xferbench reads version {ASV_FORMAT_VERSION} (asv 0.6)"
        )
    return {k: v for k, v in data.items() if isinstance(v, dict)}


def iter_result_files(root: str) -> Iterable[tuple[str, str]]:
    """(machine folder, results file path) for every asv results file under ``root``."""
    if not os.path.isdir(root):
        raise XferbenchError(f"results folder {root} does not exist")
    for entry in sorted(os.listdir(root)):
        folder = os.path.join(root, entry)
        if not os.path.isfile(os.path.join(folder, "machine.json")):
            continue
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json") and name not in ("machine.json", "benchmarks.json"):
                yield entry, os.path.join(folder, name)


def metadata_path(results_path: str) -> str:
    return results_path[: -len(".json")] + METADATA_SUFFIX


def load_metadata(results_path: str) -> dict[str, Any]:
    path = metadata_path(results_path)
    if not os.path.exists(path):
        return {}
    data = load_json(path, "metadata file")
    if not isinstance(data, dict):
        raise XferbenchError(f"metadata file {path} is not a JSON object: it may be damaged; "
                             "restore it from git or delete it")
    if data.get("schema_version") not in METADATA_SCHEMA_VERSIONS:
        raise XferbenchError(
            f"metadata file {path} has schema_version {data.get('schema_version')!r}: "
            f"this xferbench reads versions {', '.join(map(str, METADATA_SCHEMA_VERSIONS))}"
        )
    for key in ("metadata", "run"):
        if not isinstance(data.get(key, {}), dict):
            raise XferbenchError(f"metadata file {path} has a {key!r} that is not an object")
    return data

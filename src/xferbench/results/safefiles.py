"""Files read and written safely: JSON read with one sentence for a damaged file, JSON written
whole or not at all, a folder checked before anything is written into it, and whether the
process that left a file behind is still alive."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Any

from ..errors import XferbenchError


def load_json(path: str, what: str) -> Any:
    """The JSON in ``path``; one sentence naming ``what`` it is for a damaged or unreadable
    file."""
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


def loads_ok(path: str) -> bool:
    """Whether ``path`` holds complete JSON (a file cut short by a kill does not)."""
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
        return True
    except (OSError, ValueError):
        return False


def write_json_atomic(path: str, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` whole or not at all: through a temporary file that
    is removed if the write fails (a full disk, say). The temporary file is named
    ``<path>.<pid>.tmp``, so that one a killed process left is known (``alive``)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=4, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def check_output_folder(option: str, given: str) -> None:
    """One sentence, before anything is written, for a folder to write into that cannot be:
    a file, a link to nothing, inside a file, or where nothing may be written; an empty
    path is no folder (it would be the current one)."""
    if not given.strip():
        raise XferbenchError(f"{option} is empty: give a folder")
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


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 asks without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

"""The file system as xferbench meets it, for ``safefiles``: mount points (which a rename
cannot replace), free space and the file size limit (``ulimit -f``), why a write failed, a
folder checked before anything is written into it, the one name of a temporary file, whether
the process that left one is still there, and the removal of folders xferbench made. Nothing
here is ever applied to a file of the user's: what is removed is told by its exact name and a
process that is gone (``is_stale_temporary``)."""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import tempfile
from typing import Any

from ..errors import XferbenchError

try:
    import resource
except ImportError:  # no resource module (Windows): no file size limit to read
    resource = None  # type: ignore[assignment]

#: The name of every temporary file xferbench writes: hidden, beside its file, naming the
#: process that writes it; a killed process's is removed by the next run, nothing else is.
TEMP = re.compile(r"\.(?P<name>.+)\.xferbench-(?P<pid>\d+)-(?P<tag>[0-9a-f]{6})\.tmp")
#: Room left beside what a write needs, so that a file system is never filled to the brim.
SPACE_MARGIN = 64 * 1024


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_points() -> set[str]:
    """Every mount point of this process's view (Linux), files bind-mounted over included."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            return {_unescape(parts[4]) for line in fh if len(parts := line.split()) > 4}
    except OSError:
        return set()


def is_mount_point(path: str) -> bool:
    """Whether ``path`` (its real path) is a mount point: a folder or a file mounted there,
    which a rename can neither replace nor move (EBUSY, EXDEV)."""
    real = os.path.realpath(os.path.abspath(path))
    if os.path.isdir(real) and os.path.ismount(real):
        return True
    return real in mount_points()


def temp_path(real: str) -> str:
    """The temporary file a write of ``real`` goes through: beside it (one file system, so the
    rename is atomic), hidden, naming this process (``TEMP``)."""
    folder, base = os.path.split(real)
    return os.path.join(folder, f".{base[:120]}.xferbench-{os.getpid()}-{secrets.token_hex(3)}.tmp")


def shown_file(path: Any) -> str:
    """How a message names ``path``: a temporary file of xferbench's as the file it was
    written for (the user never saw the temporary one)."""
    folder, name = os.path.split(os.fsdecode(path))
    m = TEMP.fullmatch(name)
    return os.path.join(folder, m.group("name")) if m else os.path.join(folder, name)


def remove_tree(path: str) -> None:
    """Remove the folder ``path`` that xferbench made (a staging or work folder), never
    following a link out of it; what cannot be removed stays."""
    if os.path.islink(path):
        return  # never a link: whatever it leads to is not ours
    shutil.rmtree(path, ignore_errors=True)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 asks without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def left_by_dead_process(path: str, pid: int) -> bool:
    """Whether ``path`` (named for process ``pid``) is this user's and ``pid`` is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.geteuid() and not alive(pid)


def is_stale_temporary(folder: str, name: str) -> bool:
    """Whether ``name`` in ``folder`` is a temporary file a killed xferbench left: its exact
    name (``TEMP``), a regular file of this user's, and its process gone."""
    m = TEMP.fullmatch(name)
    path = os.path.join(folder, name)
    return bool(m) and os.path.isfile(path) and not os.path.islink(path) and \
        left_by_dead_process(path, int(m.group("pid")))


class UnwritableError(XferbenchError, OSError):
    """A file xferbench was to write that cannot be: one sentence naming the real file (and an
    ``OSError``, with its ``errno`` and ``filename``)."""

    def __init__(self, sentence: str, code: int | None = None, filename: str | None = None):
        OSError.__init__(self, code, sentence, filename)
        self.sentence = sentence

    def __str__(self) -> str:
        return self.sentence


def format_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def size_limit() -> int | None:
    """This process's file size limit (``ulimit -f``) in bytes, None where there is none."""
    if resource is None:
        return None
    soft, _hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def check_space(folder: str, size: int, shown: str, *, largest: int | None = None) -> None:
    """Refuse, naming ``shown``, a write of ``size`` bytes into ``folder`` that cannot fit: the
    file system's free space, or this shell's file size limit for its largest file
    (``largest``; by default the write is one file of ``size``)."""
    limit = size_limit()
    largest = size if largest is None else largest
    if limit is not None and largest > limit:
        what = "would be" if largest == size else "would hold a file of"
        raise UnwritableError(
            f"{shown} {what} {format_bytes(largest)}, over this shell's file size limit "
            f"(ulimit -f) of {format_bytes(limit)}: File too large", errno.EFBIG, shown)
    try:
        st = os.statvfs(folder)
    except OSError:
        return  # no word on its space: the write itself will say
    free = st.f_bavail * st.f_frsize
    if size and free < size + SPACE_MARGIN:
        raise UnwritableError(
            f"{shown}: No space left on device ({format_bytes(free)} free in {folder}, about "
            f"{format_bytes(size)} needed)", errno.ENOSPC, shown)


def why_failed(exc: OSError) -> str:
    """The system's reason, with what it means where it says too little."""
    if exc.errno == errno.EFBIG:
        limit = size_limit()
        if limit is not None:
            return f"File too large: over this shell's file size limit (ulimit -f) of " \
                   f"{format_bytes(limit)}"
    if exc.errno == errno.EROFS:
        return "Read-only file system (it is mounted read-only)"
    return exc.strerror or str(exc)


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
            f"{option} {given} cannot be written: {parent}: {why_failed(exc)}") from None

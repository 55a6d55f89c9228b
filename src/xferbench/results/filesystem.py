"""The file system as xferbench meets it, for ``safefiles`` and every command: what a path is,
in words (``path_kind``, the one place that tells a folder, a link loop or a FIFO from a
missing file), a regular file read without ever blocking on anything else
(``read_regular``), what a file's bytes are if not UTF-8 text (``text_problem``), mount
points (which a rename cannot replace), free space and the file size limit (``ulimit -f``),
why a write failed, a folder checked before anything is written into it, the one name of a
temporary file, whether the process that left one is still there, and the removal of folders
xferbench made. Nothing here is ever applied to a file of the user's: what is removed is
told by its exact name and a process that is gone (``is_stale_temporary``)."""

from __future__ import annotations

import codecs
import errno
import os
import re
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
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
    return m is not None and os.path.isfile(path) and not os.path.islink(path) and \
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
    kind = path_kind(path)
    if kind.kind not in ("folder", "missing", "through a file"):  # a missing one is made
        raise XferbenchError(kind.refusal(f"{option} {given}", "a folder"))
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


# -- what a path is ----------------------------------------------------------------------------

#: The file types that are neither a file nor a folder, in words: a reader never opens one
#: (a FIFO's open waits for a writer, a device's read may never end).
SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
           (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


@dataclass(frozen=True)
class PathKind:
    """What a path names. ``kind``: "file", "folder", "missing", "through a file" (a part of
    the path is a file), "dangling link", "link loop", "special" (a FIFO, a socket, a device),
    "unreachable" or "no working folder";
    ``words``: how a sentence says it after "is" ("a named pipe (FIFO)")."""

    kind: str
    words: str

    @property
    def is_file(self) -> bool:
        return self.kind == "file"

    @property
    def is_folder(self) -> bool:
        return self.kind == "folder"

    @property
    def noun(self) -> str:
        """The words after "path: " ("no such file or folder", "a named pipe (FIFO)")."""
        if self.kind in ("missing", "through a file"):
            return "no such file or folder" + self.words.removeprefix("missing")
        return self.words

    def refusal(self, subject: str, want: str = "a file") -> str:
        """The sentence refusing ``subject`` (as "results file x.json") that had to be
        ``want``."""
        if self.kind in ("missing", "through a file"):
            return f"{subject} does not exist{self.words.removeprefix('missing')}"
        if self.kind in ("file", "folder", "special"):
            return f"{subject} is {self.words}, not {want}"
        return f"{subject} is {self.words}"


def require(path: str, subject: str, want: str = "a file") -> None:
    """Raise XferbenchError, in one sentence, unless ``path`` is ``want`` ("a file" or "a
    folder")."""
    kind = path_kind(path)
    if not (kind.is_file if want == "a file" else kind.is_folder):
        raise XferbenchError(kind.refusal(subject, want))


def path_kind(path: str) -> PathKind:
    """What ``path`` is, links followed, without opening it."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return _unreachable(path, exc)
    except ValueError:  # a NUL in the name
        return PathKind("missing", "missing (no file name holds a NUL character)")
    if stat.S_ISREG(mode):
        return PathKind("file", "a file")
    if stat.S_ISDIR(mode):
        return PathKind("folder", "a folder")
    words = next((w for test, w in SPECIAL if test(mode)), "not a regular file")
    return PathKind("special", words)


def _unreachable(path: str, exc: OSError) -> PathKind:
    if exc.errno == errno.ELOOP:
        return PathKind("link loop", "a symbolic link loop (its links lead back to themselves)")
    if not os.path.isabs(path) and working_folder_gone():
        return PathKind("no working folder", f"relative to {gone_folder()}")
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return PathKind("dangling link", f"a symbolic link to nothing (it names "
                                         f"{os.readlink(path)}, which does not exist)")
    if exc.errno == errno.ENOENT:
        return PathKind("missing", "missing")
    if exc.errno == errno.ENOTDIR:
        return PathKind("through a file", "missing (a part of its path is a file, not a "
                                          "folder)")
    return PathKind("unreachable", f"out of reach ({exc.strerror or exc})")


def working_folder_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def gone_folder() -> str:
    """The working folder that no longer exists, in words (the shell's $PWD where it names
    one that is gone)."""
    shell = os.environ.get("PWD")
    named = f" ({shell})" if shell and not os.path.isdir(shell) else ""
    return f"the working folder{named}, which no longer exists (deleted or moved)"


class NotReadable(XferbenchError):
    """One sentence: why a file was not read (not a regular file, or unreadable)."""


def read_regular(path: str, what: str) -> bytes:
    """The bytes of the regular file ``path``. Anything else (a FIFO, a socket, a device, a
    folder, a link to nothing) is refused unopened, in one sentence naming ``what`` it was to
    be (raises NotReadable): a reader never waits on a pipe."""
    kind = path_kind(path)
    if not kind.is_file:
        raise NotReadable(kind.refusal(f"{what} {path}"))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise NotReadable(f"{what} {path} cannot be read: {why_failed(exc)}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since it was looked at
            raise NotReadable(path_kind(path).refusal(f"{what} {path}"))
        try:
            return fh.read()
        except OSError as exc:
            raise NotReadable(f"{what} {path} cannot be read: {why_failed(exc)}") from None


def text_problem(raw: bytes) -> str | None:
    """None where ``raw`` is UTF-8 text; else what it is instead, after "is"."""
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "UTF-32 text"
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or _utf16_without_bom(raw):
        return "UTF-16 text"
    if b"\0" in raw:
        return "a binary file (it holds NUL bytes)"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start} is 0x{raw[exc.start]:02x})"
    return None


def _utf16_without_bom(raw: bytes) -> bool:
    """Mostly ASCII in UTF-16: every other byte NUL, the others not."""
    sample = raw[:4096 - 4096 % 2]
    if len(sample) < 4:
        return False
    for zeros, chars in ((sample[1::2], sample[0::2]), (sample[0::2], sample[1::2])):
        if zeros.count(0) >= 0.9 * len(zeros) and chars.count(0) <= 0.1 * len(chars):
            return True
    return False

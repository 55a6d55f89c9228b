"""Every file xferbench writes, written one way: through a link to its target (the link kept),
a hard link kept one file, whole or not at all, never over what changed since it was read,
checked before the long work starts, and any failure one sentence naming the real file; and
JSON read with one sentence for a damaged file (docs/results-files.md, "What xferbench writes
and how it keeps your files"). What it needs of the file system is ``filesystem``'s.

The API the commands use (and ``lint --fix``):

- ``check_writable(path, what=..., size=...)``: before the work, refuse what cannot be written
  (a folder, no parent, a read-only file or file system, no space, over ``ulimit -f``);
- ``write_text_safely(path, text, expect=stamp)``, ``write_bytes_safely``,
  ``write_json_safely`` (``write_json_atomic``): the write itself; ``expect``, the ``Stamp``
  of the file as it was read (``read_text_stamped``), refuses a file changed since;
- ``replace_file``, ``remove_file``, ``remove_tree``: moving and removing what xferbench made;
- ``temp_path`` and ``is_stale_temporary``: the one name of a temporary file, and the test
  that one was left by a process that is gone (nothing else is ever cleaned up).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import signal
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import XferbenchError
from .filesystem import (
    NotReadable,
    PathKind,
    UnwritableError,
    alive,
    check_output_folder,
    check_space,
    is_mount_point,
    is_stale_temporary,
    left_by_dead_process,
    mount_points,
    path_kind,
    read_regular,
    remove_tree,
    require,
    temp_path,
    text_problem,
    why_failed,
)

__all__ = [  # the write path, and what the commands need of the file system with it
    "NotReadable", "PathKind", "Stamp", "Target", "UnwritableError", "alive",
    "check_output_folder", "check_space", "check_writable", "is_mount_point",
    "is_stale_temporary", "left_by_dead_process", "load_json", "loads_ok", "path_kind",
    "read_regular", "read_text_stamped", "remove_file", "remove_tree", "replace_file",
    "require", "stamp", "target_of", "temp_path", "text_problem", "unwritable", "write_all_safely",
    "write_bytes_safely", "write_json_atomic", "write_json_safely", "write_text_safely"]


# -- reading -----------------------------------------------------------------------------------

def load_json(path: str, what: str) -> Any:
    """The JSON in ``path``; one sentence naming ``what`` it is for a damaged or unreadable
    file, or for anything that is not a regular file (never opened: a FIFO would block)."""
    raw = read_regular(path, what)
    problem = text_problem(raw)
    if problem is not None:
        raise XferbenchError(f"{what} {path} is {problem}, not UTF-8 JSON: it is damaged or "
                             "not a results file; restore it from git or delete it")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise XferbenchError(
            f"{what} {path} is not valid JSON ({exc.msg} at line {exc.lineno}): "
            "it may be truncated; restore it from git or delete it"
        ) from None


def loads_ok(path: str) -> bool:
    """Whether ``path`` is a regular file that holds complete JSON (a file cut short by a
    kill does not)."""
    try:
        json.loads(read_regular(path, "file"))
    except (XferbenchError, ValueError):
        return False
    return True


@dataclass(frozen=True)
class Stamp:
    """A file's content as it was read: a write with ``expect=`` this refuses a file that
    holds anything else by then (an editor saved it meanwhile)."""

    size: int
    sha256: str


def stamp(path: str) -> Stamp | None:
    """The ``Stamp`` of ``path`` now (through links); None where there is no such file."""
    if path_kind(path).kind in ("missing", "dangling link"):
        return None
    data = read_regular(path, "file")
    return Stamp(len(data), hashlib.sha256(data).hexdigest())


def read_text_stamped(path: str, encoding: str = "utf-8") -> tuple[str, Stamp]:
    """``path``'s text and its ``Stamp``, read once: hand the stamp to ``write_text_safely``
    as ``expect`` to write the file back only if nothing changed it since."""
    data = read_regular(path, "file")
    return data.decode(encoding), Stamp(len(data), hashlib.sha256(data).hexdigest())


# -- where a write lands, checked before the work ----------------------------------------------

def target_of(path: str) -> str:
    """The file a write to ``path`` changes: every link followed (a link to a file that does
    not exist yet: the file it names), so that the link stays a link."""
    return os.path.realpath(os.path.abspath(path))


@dataclass(frozen=True)
class Target:
    """Where a write to ``given`` lands: ``real`` (links followed), and whether it must be
    rewritten in place (a hard link, a file mounted there: a rename would split the link or
    fail)."""

    given: str
    real: str
    in_place: bool


def _name(what: str, given: str, real: str) -> str:
    """How a sentence names the file: as given, with the real file where a link leads on."""
    link = f" (a link to {real})" if os.path.abspath(given) != real else ""
    return f"{what} {given}{link}".strip()


def check_writable(path: str, *, what: str = "", size: int = 0, parents: bool = False) -> Target:
    """Refuse, in one sentence naming the file, a file that cannot be written whole: an empty
    path, a folder, one inside a file, one whose folder is missing (``parents``: or cannot be
    made), a read-only file or folder or file system, not ``size`` bytes free, over ``ulimit
    -f``. Call it before the long work; the write itself checks again. Writes nothing (a
    probe file made and removed in the folder aside)."""
    if not path.strip():
        raise XferbenchError(f"{what or 'the file'} is empty: give a file name".strip())
    real = target_of(path)
    shown = _name(what, path, real)
    if os.path.isdir(real):
        raise UnwritableError(f"{shown} is a folder, not a file", errno.EISDIR, real)
    folder = os.path.dirname(real)
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UnwritableError(f"{shown} is inside {existing}, which is a file",
                              errno.ENOTDIR, real)
    if existing != folder and not parents:
        raise UnwritableError(f"{shown} cannot be written: its folder {folder} does not exist",
                              errno.ENOENT, real)
    try:  # the only sure test of a folder that may be written: write in it, and take it back
        os.rmdir(tempfile.mkdtemp(prefix=".xferbench-probe-", dir=existing))
    except OSError as exc:
        raise UnwritableError(f"{shown} cannot be written: {existing}: {why_failed(exc)}",
                              exc.errno, real) from None
    st = _stat(real)
    if st is not None and not os.access(real, os.W_OK):
        raise UnwritableError(f"{shown} is read-only: make it writable, or give another file",
                              errno.EACCES, real)
    check_space(existing, size, shown)
    return Target(path, real, _in_place(real, st))


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _in_place(real: str, st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISREG(st.st_mode) and (
        st.st_nlink > 1 or real in mount_points())


# -- writing -----------------------------------------------------------------------------------

def unwritable(real: str, exc: OSError, what: str = "") -> UnwritableError:
    """``exc``, met writing ``real``, as one sentence naming ``real`` (never a temporary)."""
    return UnwritableError(f"cannot write {what + ' ' if what else ''}{real}: {why_failed(exc)}",
                           exc.errno, real)


def write_bytes_safely(path: str, data: bytes, *, what: str = "", expect: Stamp | None = None,
                       mode: int | None = None, parents: bool = False) -> str:
    """Write ``data`` to ``path`` whole or not at all; returns the real file written.

    A link is written through to its target (the link stays). A file with other hard links,
    or mounted where it is, is rewritten in place (the links stay one file). Any other file
    is written through a temporary file beside it, renamed over it, its permissions kept.
    Any failure is an ``UnwritableError`` naming the real file, and leaves the file as it
    was and no temporary file behind.

    Args:
        what: what the file is, for messages ("the sidecar").
        expect: the file's ``Stamp`` as it was read. A file that holds anything else now is
            refused, not overwritten.
        mode: permissions to give the file instead of keeping its own (a new file's default
            is 0o666 less the umask).
        parents: create the folders above the file where missing.
    """
    real = target_of(path)
    if os.path.isdir(real):
        raise UnwritableError(f"{_name(what, path, real)} is a folder, not a file",
                              errno.EISDIR, real)
    if parents:
        try:
            os.makedirs(os.path.dirname(real), exist_ok=True)
        except OSError as exc:
            raise unwritable(real, exc, what) from None
    _refuse_changed(path, real, expect, what)
    st = _stat(real)
    try:
        if _in_place(real, st):
            _rewrite_in_place(real, data)
        else:
            _write_and_rename(real, data, st, mode, lambda: _refuse_changed(path, real, expect,
                                                                            what))
    except OSError as exc:
        if isinstance(exc, UnwritableError):
            raise
        raise unwritable(real, exc, what) from None
    return real


def _refuse_changed(path: str, real: str, expect: Stamp | None, what: str) -> None:
    if expect is not None and stamp(real) != expect:
        raise UnwritableError(
            f"{_name(what, path, real)} changed since it was read (saved by something else "
            "meanwhile): not overwritten; run again to work on what it holds now",
            errno.EAGAIN, real)


def _write_and_rename(real: str, data: bytes, st: os.stat_result | None, mode: int | None,
                      last_check: Any) -> None:
    tmp = _staged(real, data, st, mode)
    try:
        last_check()  # as late as can be: an edit saved during the work is never lost
        os.replace(tmp, real)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _staged(real: str, data: bytes, st: os.stat_result | None, mode: int | None) -> str:
    """``data`` in a new temporary file beside ``real``, with ``real``'s permissions (and
    owner, where root writes) or ``mode``; its path. Nothing is left behind on failure."""
    tmp = temp_path(real)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     0o666 if mode is None else mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            elif st is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))
            if st is not None and st.st_uid != os.geteuid():
                with contextlib.suppress(OSError):
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise
    return tmp


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held back for the block (a few renames), delivered after it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def write_all_safely(files: list[tuple[str, str]]) -> list[str]:
    """Write several text files as one change, as far as a file system allows: each file's
    bytes go to its temporary file first (the slow part: a kill or a full disk there leaves
    every file as it was, and only temporaries that the next run removes); then, with Ctrl-C
    and SIGTERM held back, each is renamed over its file in the order given, so put first
    what the others need (a folder's list before the files it lists, a sidecar before its
    results file). Through links, hard links kept, as ``write_bytes_safely``. Returns the
    real files written."""
    staged: list[tuple[str, str | None, bytes]] = []
    current = ""
    try:
        for path, text in files:
            current, data = target_of(path), text.encode("utf-8")
            os.makedirs(os.path.dirname(current), exist_ok=True)
            st = _stat(current)
            tmp = None if _in_place(current, st) else _staged(current, data, st, None)
            staged.append((current, tmp, data))
        with signals_held():
            while staged:
                current, tmp, data = staged[0]
                _rewrite_in_place(current, data) if tmp is None else os.replace(tmp, current)
                staged.pop(0)
    except OSError as exc:
        if isinstance(exc, UnwritableError):
            raise
        raise unwritable(current, exc) from None
    finally:
        for _real, tmp, _data in staged:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.remove(tmp)
    return [target_of(path) for path, _text in files]


def _rewrite_in_place(real: str, data: bytes) -> None:
    """A hard-linked or mounted file: its bytes rewritten, its old ones put back on failure."""
    with open(real, "r+b") as fh:
        old = fh.read()
        try:
            fh.seek(0)
            fh.write(data)
            fh.truncate()
            fh.flush()
        except BaseException:
            with contextlib.suppress(OSError):
                fh.seek(0)
                fh.write(old)
                fh.truncate()
                fh.flush()
            raise


def write_text_safely(path: str, text: str, *, what: str = "", expect: Stamp | None = None,
                      encoding: str = "utf-8", mode: int | None = None,
                      parents: bool = False) -> str:
    """``write_bytes_safely`` of ``text``: through links, hard links kept, whole or not at all,
    refused where the file changed since it was read (``expect``, from
    ``read_text_stamped``). Returns the real file written."""
    return write_bytes_safely(path, text.encode(encoding), what=what, expect=expect, mode=mode,
                              parents=parents)


def write_json_safely(path: str, data: Any, *, what: str = "", expect: Stamp | None = None,
                      parents: bool = False) -> str:
    """``data`` as JSON (indented, keys sorted, as asv writes its files), safely."""
    text = json.dumps(data, indent=4, sort_keys=True)
    return write_text_safely(path, text, what=what, expect=expect, parents=parents)


def write_json_atomic(path: str, data: Any) -> None:
    """``write_json_safely`` (the name every store module calls)."""
    write_json_safely(path, data)


# -- moving and removing what xferbench made ---------------------------------------------------

def replace_file(src: str, dst: str) -> None:
    """Move the file ``src`` (one xferbench made: a backup, a temporary) over ``dst``, through
    a link at ``dst`` to its target; a failure names ``dst``."""
    real = target_of(dst)
    try:
        os.replace(src, real)
    except OSError as exc:
        raise unwritable(real, exc) from None


def remove_file(path: str) -> None:
    """Remove the file ``path`` xferbench wrote (gone already is fine); a failure names it."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise UnwritableError(f"cannot remove {path}: {why_failed(exc)}", exc.errno, path) from None



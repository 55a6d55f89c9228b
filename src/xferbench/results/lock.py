"""The results folder's lock: one run writes into a results folder at a time; a second is
refused, not queued. The lock file goes when its holder lets go, so that a run (or a merge)
leaves nothing of its own in the folder; a holder checks that the file it locked is still the
one at the path, so two never hold two files under one name."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TextIO

from ..errors import XferbenchError

try:
    import fcntl
except ImportError:  # no fcntl (Windows): no concurrent-run protection
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".xferbench-run.lock"


@contextlib.contextmanager
def results_lock(results_dir: str) -> Iterator[int]:
    """Hold an exclusive lock on ``results_dir``; a second run is refused, not queued. Yields
    the lock's file descriptor: a process it is handed to holds the lock until it exits too."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, LOCK_NAME)
    fh = _locked(path, results_dir)
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield fh.fileno()
    finally:
        if fcntl is not None:  # removed while still held: the next holder makes it anew
            with contextlib.suppress(OSError):
                os.remove(path)
        fh.close()


def _locked(path: str, results_dir: str) -> TextIO:
    """``path`` opened and locked, the file at ``path`` when the lock was taken (one that its
    holder removed as it let go is opened again)."""
    while True:
        fh = open(path, "a+")  # noqa: SIM115 (held for the block, closed by the caller)
        if fcntl is None:
            return fh
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise XferbenchError(
                f"another xferbench run is writing to {results_dir}: wait for it to finish "
                "or give another --results folder"
            ) from None
        try:
            if os.stat(path).st_ino == os.fstat(fh.fileno()).st_ino:
                return fh
        except FileNotFoundError:
            pass
        fh.close()  # its holder removed it as it let go: take the new one


def lock_is_held(results_dir: str) -> bool:
    """Whether another run holds ``results_dir``'s lock now (checked without waiting)."""
    path = os.path.join(results_dir, LOCK_NAME)
    if fcntl is None:
        return False
    try:  # read-only: asking never makes a lock file
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False

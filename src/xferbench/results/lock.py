"""The results folder's lock: one run writes into a results folder at a time; a second is
refused, not queued."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

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
    fh = open(path, "a+")
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise XferbenchError(
                    f"another xferbench run is writing to {results_dir}: wait for it to finish "
                    "or give another --results folder"
                ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield fh.fileno()
    finally:
        fh.close()


def lock_is_held(results_dir: str) -> bool:
    """Whether another run holds ``results_dir``'s lock now (checked without waiting)."""
    path = os.path.join(results_dir, LOCK_NAME)
    if fcntl is None or not os.path.exists(path):
        return False
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False

"""The backup protocol that keeps a results file whole while asv rewrites it (non-atomically,
and perhaps to be interrupted or killed): ``protected(path)`` owns one asv call's part of it,
and ``clean_stale`` what a killed run left behind.

The order, which only this module knows: a copy of the file is taken before the call
(``protect``); a call that did not finish, or whose numbers must not be kept, puts the file
back as it was (``discard``); then a truncated file is replaced by the copy and the copy goes
(``settle``). The reaper (``commands/run/reaper.py``) calls ``discard`` itself when the run
that started the call dies, and the next run's ``clean_stale`` settles whatever is left.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator

from .safefiles import (
    NotReadable,
    is_stale_temporary,
    loads_ok,
    read_regular,
    remove_file,
    replace_file,
    temp_path,
    unwritable,
)

BACKUP_SUFFIX = ".xferbench-bak"


def backup_path(path: str) -> str:
    return path + BACKUP_SUFFIX


def protect(path: str, backup: str) -> None:
    """Keep a copy of a results file that asv is about to rewrite (non-atomically)."""
    if os.path.exists(backup) and not loads_ok(path):
        replace_file(backup, path)  # a run killed mid-write: bring the earlier file back
    if os.path.exists(path):
        partial = temp_path(backup)
        try:  # written beside, then renamed: a full disk leaves no half backup behind
            shutil.copy2(path, partial)
            os.replace(partial, backup)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(partial)
            raise unwritable(backup, exc, "the backup") from None


def discard(path: str, backup: str, *, existed: bool) -> None:
    """Put the results file back as it was before an asv call that did not finish (an
    interrupt, a kill, a class run by another interpreter): from its backup, or, where there
    was no file before the call (``existed`` False), no file at all. Whatever that call saved
    was a class cut short. A file that existed and has no backup any more was put back
    already (by the reaper, when this process stopped it): it is left as it is."""
    if os.path.exists(backup):
        replace_file(backup, path)
    elif not existed and os.path.exists(path):
        remove_file(path)


def settle(path: str, backup: str) -> None:
    """After asv: a truncated file is replaced by its backup; the backup then goes."""
    if os.path.exists(backup):
        if not os.path.exists(path) or not loads_ok(path):
            replace_file(backup, path)
        else:
            remove_file(backup)


def digest(path: str) -> str | None:
    """The SHA-256 of ``path``'s bytes, None where there is no such file."""
    try:
        return hashlib.sha256(read_regular(path, "file")).hexdigest()
    except NotReadable:
        return None


class ProtectedCall:
    """What the body of ``protected()`` can tell and ask about its file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.before = digest(path)  # None: there was no file before the call
        self.discarded = False

    def discard(self) -> None:
        """Put the file back as it was when the block ends (its numbers must not be kept)."""
        self.discarded = True

    def changed(self) -> bool:
        """Whether the file now holds other bytes than before the call (and exists)."""
        return digest(self.path) not in (None, self.before)


@contextlib.contextmanager
def protected(path: str) -> Iterator[ProtectedCall]:
    """Protect the results file ``path`` during the block (one asv call): a copy is taken
    first; a block that raises (an interrupt, an error) or calls ``discard()`` leaves the file
    as it was; one that finishes keeps what asv saved, a truncated file replaced by the copy.
    The copy is gone afterwards, whatever happened."""
    call = ProtectedCall(path)
    backup = backup_path(path)
    protect(path, backup)
    finished = False
    try:
        yield call
        finished = True
    finally:
        # an interrupted call may still have saved (asv marks a class whose process died as
        # failed, then saves): the file goes back as it was before the call
        if call.discarded or not finished:
            discard(path, backup, existed=call.before is not None)
        settle(path, backup)


def clean_stale(results_dir: str) -> list[str]:
    """What a run that was killed left in ``results_dir``, and nothing else: where xferbench
    writes (the folder itself and its machine folders, never deeper), a results file's backup
    is put back where the file is cut short (else removed), and a temporary file removed where
    its exact name says xferbench made it (``safefiles.TEMP``) for a process that is gone.
    Call it holding the folder's lock. Returns what was cleaned, as sentences."""
    done = []
    for folder in _writable_folders(results_dir):
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name.endswith(".json" + BACKUP_SUFFIX) and os.path.isfile(path) \
                    and not os.path.islink(path):
                target = path[: -len(BACKUP_SUFFIX)]
                restored = not os.path.exists(target) or not loads_ok(target)
                settle(target, path)
                done.append(f"{'restored' if restored else 'removed the backup of'} {target}")
            elif is_stale_temporary(folder, name):
                remove_file(path)
                done.append(f"removed {path}")
    return done


def _writable_folders(results_dir: str) -> list[str]:
    """The folders of ``results_dir`` that xferbench and asv write into: itself and the
    folders in it (machine folders; one a merge was killed making may have no machine.json
    yet), never deeper."""
    if not os.path.isdir(results_dir):
        return []
    inside = [os.path.join(results_dir, n) for n in sorted(os.listdir(results_dir))]
    return [results_dir, *(m for m in inside if os.path.isdir(m) and not os.path.islink(m))]

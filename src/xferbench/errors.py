"""The one exception type xferbench raises for bad input or a missing device, the exit
statuses of every command, output a limited terminal can take, and a Ctrl-C that a library
would swallow, kept."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from enum import IntEnum
from typing import Any


class XferbenchError(Exception):
    """Bad input or an absent resource, told in one sentence; the CLI exits 2 on it."""


class ExitCode(IntEnum):
    """The exit status of every command (``xferbench --help`` and the README list them)."""

    OK = 0
    #: compare: a benchmark significantly worse by more than the threshold, or failed in B
    #: where A measured it; lint: a finding at or above --fail-on; check: a figure below its
    #: range or above its link, or a device far behind the others.
    REGRESSION = 1
    #: Bad input or an environment error: one sentence on stderr, nothing written.
    BAD_INPUT = 2
    #: A run that measured nothing or lost results (a failed combination), or a compare side
    #: with no number at all.
    FAILED = 3
    #: Ctrl-C or SIGTERM (results saved before it are kept).
    INTERRUPTED = 130


#: The error handlers standard output and error had before ``tolerant_streams`` (a script
#: the audit runs gets them back, as under python).
STREAM_ERRORS: dict[str, str] = {}


def tolerant_streams() -> None:
    """Standard output and error write what the terminal's encoding cannot hold ("±" under
    LANG=C or PYTHONIOENCODING=ascii) as an escape ("\\xb1") instead of raising: set once, by
    the entry point."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            errors = stream.errors
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):  # not a text stream, or closed
            continue
        STREAM_ERRORS.setdefault(name, errors)


@contextlib.contextmanager
def interrupt_kept() -> Iterator[None]:
    """A Ctrl-C during the block stops the program even where the code it lands in swallows
    it: torch imports numpy from C++ and turns any exception there, KeyboardInterrupt too,
    into "Failed to initialize NumPy" and goes on. The signal is noted as it comes (and
    raised as usual); if the block ends without it, it is raised then."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield  # signals reach the main thread only; an ignored Ctrl-C stays ignored
        return
    seen: list[int] = []

    def note(signum: int, frame: Any) -> None:
        seen.append(signum)
        previous(signum, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if seen:
        raise KeyboardInterrupt

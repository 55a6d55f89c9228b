"""The one exception type xferbench raises for bad input or a missing device, and the exit
statuses of every command."""

from __future__ import annotations

from enum import IntEnum


class XferbenchError(Exception):
    """Bad input or an absent resource, told in one sentence; the CLI exits 2 on it."""


class ExitCode(IntEnum):
    """The exit status of every command (``xferbench --help`` and the README list them)."""

    OK = 0
    #: compare: a benchmark significantly worse by more than the threshold, or failed in B
    #: where A measured it; lint: a finding at or above --fail-on.
    REGRESSION = 1
    #: Bad input or an environment error: one sentence on stderr, nothing written.
    BAD_INPUT = 2
    #: A run that measured nothing or lost results (a failed combination), or a compare side
    #: with no number at all.
    FAILED = 3
    #: Ctrl-C or SIGTERM (results saved before it are kept).
    INTERRUPTED = 130

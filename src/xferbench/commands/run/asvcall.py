"""One asv call of a run, under the reaper (``reaper.py``): whatever asv starts dies with
``xferbench run``, and the results folder's lock is held until it has.

The reaper and asv run in a session of their own, so a Ctrl-C at the terminal reaches
``xferbench run`` alone (asv would print its KeyboardInterrupt traceback, 28 lines, before
the run's one line). An interrupt of ``xferbench run`` (Ctrl-C, or SIGTERM turned into one)
then ends the call through the reaper: everything below it is stopped and the results file is
put back as the call found it (the class in progress never finished; the classes before it
were saved by their own calls).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import IO, Any


def terminate_as_interrupt(signum: int, frame: Any) -> None:
    """SIGTERM stops the run the way Ctrl-C does: asv is stopped, results kept."""
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt (``terminate_as_interrupt``)."""
    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_asv(cmd: list[str], *, cwd: str, env: dict[str, str], lock_fd: int,
            results_file: str, stdout: IO[str] | None = None) -> int:
    """Run ``cmd`` (asv) under the reaper, which holds ``lock_fd`` and, should this process
    die, kills what asv started and restores ``results_file`` from its backup. asv's output,
    stderr included, goes to ``stdout`` (this process's own streams by default)."""
    reaper = [sys.executable, "-m", "xferbench.commands.run.reaper", str(os.getpid()),
              results_file, "--", *cmd]
    if stdout is not None:
        stdout.flush()
    proc = subprocess.Popen(reaper, cwd=cwd, env=env, pass_fds=(lock_fd,), stdout=stdout,
                            stderr=subprocess.STDOUT if stdout is not None else None,
                            start_new_session=True)  # the terminal's Ctrl-C: ours alone
    try:
        return proc.wait()
    except BaseException:
        if proc.poll() is None:
            proc.terminate()  # the reaper stops everything below it and restores the file
            proc.wait()
        raise

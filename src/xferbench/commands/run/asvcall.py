"""One asv call of a run, under the reaper (``reaper.py``): whatever asv starts dies with
``xferbench run``, and the results folder's lock is held until it has.

An interrupt of ``xferbench run`` (Ctrl-C, or SIGTERM turned into one) stops asv the way
Ctrl-C stops it, so that asv keeps what it saved; asv is given 15 s, then everything below
the reaper is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import IO, Any

#: Set by the SIGTERM handler: asv got no SIGINT from a terminal and must be asked to stop.
_TERMINATED: list[bool] = []


def terminate_as_interrupt(signum: int, frame: Any) -> None:
    """SIGTERM stops the run the way Ctrl-C does: asv is stopped, results kept."""
    _TERMINATED.append(True)
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
    die, kills what asv started and restores ``results_file`` from its backup. asv's output
    goes to ``stdout`` (this process's by default)."""
    reaper = [sys.executable, "-m", "xferbench.commands.run.reaper", str(os.getpid()),
              results_file, "--", *cmd]
    if stdout is not None:
        stdout.flush()
    proc = subprocess.Popen(reaper, cwd=cwd, env=env, pass_fds=(lock_fd,), stdout=stdout)
    try:
        return proc.wait()
    except BaseException:
        if proc.poll() is None:
            if _TERMINATED:  # a Ctrl-C reached asv already; a SIGTERM did not
                proc.send_signal(signal.SIGUSR1)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.terminate()  # the reaper kills everything below it
                proc.wait()
        raise

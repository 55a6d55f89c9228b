"""Whatever ``xferbench run`` starts dies with it.

Each asv call runs under this small process: ``python -m xferbench.commands.run.reaper
PARENT RESULTS_FILE -- asv run ...``. On Linux it makes itself the subreaper of everything
below it (asv, its fork server, the benchmark processes: orphans are re-parented here, not to
init) and asks the kernel for SIGTERM when ``xferbench run`` dies, however it dies (a
``kill -9`` included). Then it kills every process below it, puts the results file back as
it was before this asv call (the class in progress never finished), and exits. It holds the
results folder's lock (handed down as an open file), so a second run is refused until all of
this is over.

Signals: it runs in a session of its own (a terminal's Ctrl-C reaches ``xferbench run``
only); SIGUSR1 asks asv to stop as Ctrl-C would; SIGTERM (what ``xferbench run`` sends on an
interrupt) kills everything below at once and restores the results file.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time

from ...errors import ExitCode
from ...results.backup import backup_path, discard

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """Linux's prctl(2); False where it does not exist (then orphans are init's)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, read from /proc (children before grandchildren)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) "
        if len(fields) > 1 and fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(0), []):
            out.append(child)
            todo.append(child)
    return out


def kill_below(pid: int, grace_s: float = 2.0) -> None:
    """SIGTERM every process below ``pid``, then SIGKILL what is left after ``grace_s``."""
    deadline = time.monotonic() + grace_s
    sig = signal.SIGTERM
    while True:
        below = descendants(pid)
        if not below:
            return
        for p in below:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        _reap()
        if time.monotonic() > deadline:
            sig = signal.SIGKILL
        time.sleep(0.05)


def _reap() -> None:
    """Collect exited children (orphans re-parented here become ours to wait for)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: python -m xferbench.commands.run.reaper PARENT RESULTS_FILE -- CMD...",
              file=sys.stderr)
        return ExitCode.BAD_INPUT
    parent, results_file, cmd = int(argv[0]), argv[1], argv[3:]
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    orphaned = []
    signal.signal(signal.SIGTERM, lambda *_: orphaned.append(True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # asv has it already, from the terminal
    if os.getppid() != parent:  # xferbench run died before we could watch it
        return 1
    existed = os.path.exists(results_file)  # before asv starts: as the call found it
    child = subprocess.Popen(cmd, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                   signal.SIG_DFL))

    def stop_child(*_: object) -> None:
        if child.poll() is None:
            child.send_signal(signal.SIGINT)

    signal.signal(signal.SIGUSR1, stop_child)
    while True:
        try:
            code = child.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            if orphaned:  # the class in progress never finished: it leaves no trace
                kill_below(os.getpid(), grace_s=0.5)
                discard(results_file, backup_path(results_file), existed=existed)
                return 137
    kill_below(os.getpid())  # what asv left behind: its fork server, a stuck benchmark
    if orphaned:
        discard(results_file, backup_path(results_file), existed=existed)
    return code


if __name__ == "__main__":
    raise SystemExit(int(main(sys.argv[1:])))

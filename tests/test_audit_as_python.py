"""Under ``xferbench audit`` a script runs as under ``python``: one probe script, run both
ways, prints the same of everything a script can see (``__name__``, ``__file__``,
``sys.argv``, ``sys.path``, ``__spec__``, ``__loader__``, ``sys.modules["__main__"]``, the
working folder, warnings filters and what they show, the streams' error handling, stdin,
classes pickled into a spawned DataLoader worker), exits with the same status (``sys.exit(3)``,
``sys.exit("message")``, an exception) and writes the same traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).resolve().parent / "audit_probe" / "probe.py"
STDIN = b"first line\nsecond line\n"


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, str]:
    """A working folder, and the probe's path from it through a link to its real folder."""
    root = tmp_path_factory.mktemp("as_python")
    (root / "real").mkdir()
    shutil.copy(PROBE, root / "real" / "probe.py")
    (root / "linked").symlink_to(root / "real")
    (root / "work").mkdir()
    return root / "work", "../linked/probe.py"


def both(folders: tuple[Path, str], *args: str) -> tuple[subprocess.CompletedProcess, ...]:
    cwd, script = folders
    env = {**os.environ, "PYTHONWARNINGS": "", "PYTHONIOENCODING": ""}
    runs = ([sys.executable, script, *args],
            [sys.executable, "-m", "xferbench", "audit", "--format", "json", "--out",
             str(cwd / "report.json"), script, *args])
    return tuple(subprocess.run(argv, cwd=cwd, input=STDIN, capture_output=True, env=env,
                                timeout=300) for argv in runs)


def own_stderr(err: bytes) -> bytes:
    """``err`` less what multiprocessing's resource tracker (a process of its own, started
    for the DataLoader's spawned worker) may warn at exit: whether it finds a resource to
    clean up is a race with the worker's own exit, under python as under audit."""
    lines = err.decode().splitlines(keepends=True)
    out, skip = [], False
    for line in lines:
        if "resource_tracker" in line and "Warning" in line:
            skip = True  # the warning, then the source line it shows
            continue
        if skip and line.startswith("  "):
            skip = False
            continue
        skip = False
        out.append(line)
    return "".join(out).encode()


def probed(out: bytes) -> list[str]:
    return [line for line in out.decode().splitlines() if line.startswith("probe ")]


@pytest.mark.slow
def test_a_script_sees_the_same_under_audit_as_under_python(folders):
    python, audit = both(folders, "plain", "--flag")
    assert python.returncode == audit.returncode == 0, audit.stderr.decode()
    seen = probed(python.stdout)
    assert len(seen) == 16 and "probe workers: [[0, 1, 4]]" in seen
    assert probed(audit.stdout) == seen
    warned = [line for line in python.stderr.decode().splitlines() if "deprecation" in line]
    assert warned and warned == [line for line in audit.stderr.decode().splitlines()
                                 if "deprecation" in line]


@pytest.mark.slow
@pytest.mark.parametrize(("how", "status"), [("exit", 3), ("message", 1), ("raise", 1)])
def test_a_script_exits_and_fails_under_audit_as_under_python(folders, how, status):
    python, audit = both(folders, how)
    assert python.returncode == audit.returncode == status
    # the message or traceback, no audit frame in it
    assert own_stderr(audit.stderr) == own_stderr(python.stderr)
    if how == "raise":
        assert b"in deeper" in audit.stderr and b"xferbench" not in audit.stderr
    assert (folders[0] / "report.json").exists()  # and the report of the steps that ran

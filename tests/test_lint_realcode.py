"""lint on real code nobody here wrote: the installed torch package's Python sources. It
finishes with exit 0 or 1, no traceback and no file the analysis failed on (a syntax error
in a file torch ships for a newer Python is the one sentence allowed), and not absurdly
slowly: the speed target is measured by scripts/lint-speed; this floor, far below it, only
catches a collapse on a busy machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

# With the others, not alone: the floor is far below what lint reads even on a loaded host.

TORCH = Path(torch.__file__).resolve().parent
FLOOR_LINES_PER_S = 4_000


@pytest.mark.slow
def test_lint_the_installed_torch_sources(tmp_path):
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "xferbench", "lint", str(TORCH), "--no-gitignore",
         "--statistics", "--format", "json"],
        capture_output=True, text=True, timeout=900, check=False, cwd=tmp_path)
    elapsed = time.perf_counter() - started
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    problems = [line for line in proc.stderr.splitlines()
                if line.startswith("xferbench lint: ") and ": cannot parse: " not in line
                and " files read, " not in line and " below --fail-on " not in line
                and not line.split()[-2].startswith("XB")]
    assert problems == []
    stats = next(line for line in proc.stderr.splitlines() if " files read, " in line)
    read, files = (int(x) for x in stats.split()[2:5:2])
    assert files > 1500 and read >= files - 5
    lines = int(stats.split(", ")[1].split()[0])
    assert lines / elapsed > FLOOR_LINES_PER_S, f"{lines / elapsed:.0f} lines/s: {stats}"
    assert os.listdir(tmp_path) == []  # nothing written

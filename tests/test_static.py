"""ruff and mypy, as pyproject.toml configures them, find nothing: ruff over the repository
(the package, the suite, the tests, the scripts), mypy over the package. Each test is skipped,
saying so, where its tool is not installed (scripts/setup installs both, with the test extra).

``test_a_planted_problem_is_reported`` shows that both checks can fail.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CONFIG = REPO_ROOT / "pyproject.toml"


def run_tool(module: str, *args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m <module> <args>`` in ``cwd``, its output captured; skips the test where
    ``module`` is not installed."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: scripts/setup installs it (the test extra)")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, check=False)


def test_ruff_finds_nothing_in_the_repository():
    # every Python file but those [tool.ruff] excludes (and ruff's own: .venv, build)
    done = run_tool("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_mypy_finds_no_type_error_in_the_package():
    # which files, the Python version and what is left out: pyproject.toml's [tool.mypy]
    done = run_tool("mypy")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_planted_problem_is_reported(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text('import os\n\ncount: int = "three"\n')
    ruff = run_tool("ruff", "check", "--no-cache", "--config", str(CONFIG), str(planted),
                    cwd=tmp_path)
    assert ruff.returncode == 1 and "F401" in ruff.stdout, ruff.stdout + ruff.stderr
    mypy = run_tool("mypy", "--config-file", str(CONFIG), str(planted), cwd=tmp_path)
    assert mypy.returncode == 1 and "[assignment]" in mypy.stdout, mypy.stdout + mypy.stderr

"""lint's sources type-check clean under the package's own mypy configuration
(pyproject.toml's [tool.mypy]): the analyser's parts share one typed state, so a misspelt
attribute or a part called with the wrong value is an error here, not a silent None."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_finds_no_error_in_lint(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the `test` extra")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "src/xferbench/lint", "--cache-dir", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.stdout.startswith("Success: no issues found")


def test_every_type_ignore_in_lint_names_its_error_and_a_reason():
    bare = []
    for path in sorted((ROOT / "src" / "xferbench" / "lint").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            _, found, rest = line.partition("# type: ignore")
            if found and not (rest.startswith("[") and " - " in rest):
                bare.append(f"{path.name}:{number}: {line.strip()}")
    assert bare == [], "write `# type: ignore[code] - why`"

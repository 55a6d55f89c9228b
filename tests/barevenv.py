"""The bare interpreter of the gpu-check rehearsals (tests/rehearsals.py): a venv holding torch
and what the GPU image holds beside it, nothing of ours. The standard library only, so that
scripts/test can build it with the base interpreter while it sets up .venv (one pip beside
another, on the core the first leaves idle), and hand it to the rehearsals
(``XFERBENCH_TEST_BARE_VENV``); the ``bare`` fixture builds it itself otherwise.

    python3 tests/barevenv.py VENV TORCH_RELEASE
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: What the GPU image holds beside torch (the device tool's page), less what we cannot need
#: and less pytest-benchmark, which the image has: the bare rehearsal runs without it.
IMAGE_PACKAGES = ["numpy", "pytest", "nvidia-ml-py", "packaging", "filelock", "pyyaml"]
#: Written last: a venv without it was not finished (a build cut short, or still running).
COMPLETE = ".xferbench-bare-complete"


def build(venv: Path, torch_release: str, python: str = sys.executable) -> Path:
    """The venv made and filled; its interpreter."""
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    interpreter = venv / "bin" / "python"
    subprocess.run([str(interpreter), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", f"torch=={torch_release}", *IMAGE_PACKAGES],
                   check=True, timeout=900)
    (venv / COMPLETE).write_text(f"torch=={torch_release}\n")
    return interpreter


def built(venv: Path, torch_release: str) -> Path | None:
    """The interpreter of a venv ``build`` finished for ``torch_release``, else None."""
    try:
        done = (venv / COMPLETE).read_text().strip() == f"torch=={torch_release}"
    except OSError:
        return None
    return venv / "bin" / "python" if done else None


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 tests/barevenv.py VENV TORCH_RELEASE")
    print(build(Path(sys.argv[1]), sys.argv[2]))

"""The documented way to run the suite on the emulated device by hand measures: the command in
docs/emulated-device.md, read from the page (so the page and the test cannot drift), run from
the repository's top in a fresh environment with one class selected, files measured values."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import emu
import pytest

from xferbench.results import load

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "emulated-device.md"


def documented_command() -> str:
    """The page's one `xferbench run` command, its line continuations joined."""
    blocks = re.findall(r"```sh\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    commands = [" ".join(b.replace("\\\n", " ").split()) for b in blocks
                if "xferbench run" in b]
    assert len(commands) == 1, commands
    return commands[0]


def test_the_page_documents_one_run_on_emu_from_a_fresh_clone():
    words = shlex.split(documented_command())
    assert "--device" in words and words[words.index("--device") + 1] == "emu"
    assert {"--quick", "--sweep", "smoke", "--results"} <= set(words)


@pytest.mark.slow
def test_the_documented_command_measures_on_the_emulated_device(tmp_path):
    if not (REPO / ".venv" / "bin" / "xferbench").exists():
        pytest.skip("the documented command runs .venv/bin/xferbench: run scripts/setup")
    try:
        emu.build()  # not load(): this process stays off the emulated device
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    words = shlex.split(documented_command())
    at = words.index("--results")
    words[at + 1] = str(tmp_path / "results")  # the page's folder, kept out of the way
    command = shlex.join(words) + " --bench Creation"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XFERBENCH_", "PYTHONPATH", "ASV_"))}
    done = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    measured = int(re.search(r"; (\d+) values measured", done.stdout).group(1))
    assert measured > 0 and ", 0 failed" in done.stdout
    results = load(str(tmp_path / "results"))
    assert len(results) > 0 and all(r.machine.endswith("-xferbench-emulated-accelerator")
                                    for r in results)

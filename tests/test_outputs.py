"""Every command's output on a frozen dataset, byte for byte: a refactoring that changes what a
user reads fails here. The dataset (tests/golden/results, the two-release CPU run of suite
commit be608654) and the expected outputs (tests/golden/*.out) are files in the repository.

A deliberate change of output regenerates them, and the diff shows what changed:
    XFERBENCH_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_outputs.py
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("XFERBENCH_UPDATE_GOLDEN", "") not in ("", "0")

COPY_64 = "direction=h2d,host_memory=pageable,sync=blocking,layout=one,size=64MiB"

#: name -> argv after ``python -m``; each runs in a folder holding the dataset as ``results``.
COMMANDS: dict[str, list[str]] = {
    "headline": ["xferbench", "table", "--per-series"],
    "compare-text": ["xferbench", "compare", "2.13.0", "2.14.1"],
    "compare-json": ["xferbench", "compare", "2.13.0", "2.14.1", "--format", "json"],
    "compare-markdown": ["xferbench", "compare", "2.13.0", "2.14.1", "--format", "markdown"],
    "compare-bench": ["xferbench", "compare", "2.14.1", "2.13.0", "--bench", "Copy",
                      "--threshold", "5%", "--alpha", "0.01"],
    "compare-same": ["xferbench", "compare", "be608654", "be608654", "--torch", "2.13.0"],
    "compare-files": ["xferbench", "compare",
                      "results/cpu-2core-vm/be608654-existing-py_tmp_xferbench-0_torch2.13.0-"
                      "cpu-cudanone_python.json",
                      "results/cpu-2core-vm/be608654-existing-py_tmp_xferbench-0_torch2.14.1-"
                      "cu130-cuda13.0_python.json"],
    "compare-bad": ["xferbench", "compare", "2.13.0", "9.9"],
    "cite-copy": ["xferbench", "cite", "Copy.track_device_s", "--params", COPY_64,
                  "--allow-quick"],
    "cite-copy-json": ["xferbench", "cite", "Copy.track_device_s", "--params", COPY_64,
                       "--torch", "2.13.0", "--format", "json", "--allow-quick"],
    "cite-loop": ["xferbench", "cite", "Loop.track_step_s", "--param", "read=item_every_batch",
                  "--param", "width=256", "--torch", "2.14.1", "--allow-quick"],
    "cite-memory": ["xferbench", "cite", "CreationMemory.track_host_peak_bytes", "--params",
                    "factory=zeros,variant=to,size=64MiB", "--allow-quick"],
    "cite-ambiguous": ["xferbench", "cite", "Copy.track_device_s", "--params", "size=64MiB",
                       "--allow-quick"],
    "cite-bad-param": ["xferbench", "cite", "Copy.track_device_s", "--params", "colour=red"],
    "cite-quick-refused": ["xferbench", "cite", "Copy.track_device_s", "--params", COPY_64],
    "list": ["xferbench", "list"],
    "list-json": ["xferbench", "list", "--format", "json"],
}

#: asv publish writes these with the time of the build: not ours, not comparable; publish's
#: marker lists every file's digest, theirs among them.
TIMESTAMPED = {"asv/info.json", "asv/regressions.xml", ".xferbench-site"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("outputs")
    shutil.copytree(GOLDEN / "results", work / "results")
    return work


def _run(argv: list[str], cwd: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "100"})
    text = f"exit {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"
    return text.replace(str(cwd), "<work>")  # the temporary folder's name changes per run


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.out"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: run with XFERBENCH_UPDATE_GOLDEN=1 once"
    assert text == path.read_text(encoding="utf-8"), (
        f"the output of {name} changed; if deliberately, regenerate with "
        "XFERBENCH_UPDATE_GOLDEN=1 and commit the diff")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_output_is_unchanged(name, workdir):
    _check(name, _run(COMMANDS[name], workdir))


@pytest.mark.slow
def test_published_site_is_unchanged(workdir):
    from xferbench.results.repo import current_branch, own_remote, web_commit_url

    repo = str(GOLDEN.parents[1])
    branch = current_branch(repo)
    if branch not in (None, "main"):  # asv names its graph folders after the branch
        pytest.skip(f"the site's golden is taken on branch main; this checkout is on {branch}")
    link = web_commit_url(own_remote(repo))
    if link:  # the page links each suite commit to the clone's own remote
        pytest.skip(f"the site's golden is taken in a clone without a web remote; this one "
                    f"links its commits to {link}")
    site = workdir / "site"
    shutil.rmtree(site, ignore_errors=True)
    out = _run(["xferbench", "publish", "--results", "results", "--out", "site"], workdir)
    files = sorted(p for p in site.rglob("*") if p.is_file())
    lines = [out, "--- files"]
    for path in files:
        rel = path.relative_to(site).as_posix()
        digest = ("(timestamped by asv)" if rel in TIMESTAMPED
                  else hashlib.sha256(path.read_bytes()).hexdigest())
        lines.append(f"{digest}  {rel}")
    _check("publish", "\n".join(lines) + "\n")

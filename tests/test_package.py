"""The package as people install it, outside any clone: the wheel (built from the sdist, as
``python -m build`` does, so the sdist's path is taken too) holds the suite and the licence;
in a fresh venv with torch (this interpreter's, linked there: tests/venvs.py; the install of
the wheel is pip's), ``xferbench run`` measures in an empty folder and ``publish``,
``list``, ``cite`` and ``export`` read what it wrote, filed under the commit and date a
clone's run is; in a venv without torch ``lint`` and ``flake8 --select XB`` run and the
measuring commands say what is missing; the pre-commit hook's environment, made by
pre-commit itself, holds LibCST and no torch.

Slow (the build, three venvs, asv run once): ``-m slow``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import committed_results
from venvs import linked_venv

REPO = Path(__file__).resolve().parents[1]
# The README's install from scratch, end to end: scripts/test runs it after the gpu-check
# runs on the emulated device, in their process, beside the other tests.
pytestmark = [pytest.mark.slow, pytest.mark.end_to_end]

#: A training loop with a host read of the loss every batch: XB101.
TRAIN = ("import torch\n\ndef train(model, loader, opt, device):\n    for x in loader:\n"
         "        loss = model(x.to(device)).sum()\n        loss.backward()\n"
         "        opt.step()\n        print(loss.item())\n")


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: nothing pointing back at this checkout."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XFERBENCH_", "PYTHON", "VIRTUAL_ENV", "PRE_COMMIT"))}
    return {**env, **extra}


def _run(cmd: list[str], cwd: Path, timeout: float = 300, **env: str
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, text=True, capture_output=True, timeout=timeout,
                          env=_clean_env(**env))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def _venv(where: Path, *packages: str) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    if packages:
        proc = _run([str(where / "bin" / "python"), "-m", "pip", "install", "-q", *packages],
                    where.parent, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return where / "bin"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel built from it, as ``python -m build`` makes them."""
    out = tmp_path_factory.mktemp("dist")
    proc = _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("xferbench-*.whl")
    return wheel


def test_the_wheel_and_sdist_carry_the_suite_the_licence_and_the_commit(dist):
    names = zipfile.ZipFile(_wheel(dist)).namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for suite_file in ("asv.conf.json", "suite.json", "benchmarks/_asv.py",
                       "benchmarks/bench_copies.py"):
        assert f"xferbench/suite/{suite_file}" in names
    assert not any(n.startswith("benchmarks/") for n in names)  # never a top-level package
    identity = json.loads(zipfile.ZipFile(_wheel(dist)).read("xferbench/suite/suite.json"))
    assert identity["commit"] == _git("rev-parse", "HEAD")  # from the sdist: no git there
    assert identity["date_ms"] == int(_git("show", "-s", "--format=%at", "HEAD")) * 1000
    (sdist,) = dist.glob("xferbench-*.tar.gz")
    members = {m.split("/", 1)[-1] for m in tarfile.open(sdist).getnames()}
    assert {"LICENSE", "asv.conf.json", "suite.json", "benchmarks/bench_copies.py"} <= members
    license_text = (REPO / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in license_text


def _clone_benchmarks() -> set[str]:
    """Every benchmark the clone's benchmarks/ declares, as asv names them."""
    from xferbench.devices import Capabilities

    probe = {"device": "cpu", "capabilities": Capabilities("cpu", False, False, False,
                                                           "the CPU has none").to_dict()}
    proc = _run([sys.executable, "-m", "benchmarks._asv"], REPO,
                XFERBENCH_PROBE=json.dumps(probe))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {f"{c['file']}.{c['class']}.{m}" for c in json.loads(proc.stdout) for m in c["methods"]}


def test_pip_install_then_run_publish_list_cite_export_in_an_empty_folder(dist, tmp_path):
    bin_ = linked_venv(tmp_path / "venv", ["torch", "pip"])  # torch first, as the README says
    proc = _run([str(bin_ / "python"), "-m", "pip", "install", "-q", str(_wheel(dist))],
                tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    work = tmp_path / "empty"
    work.mkdir()
    xb = str(bin_ / "xferbench")
    ran = _run([xb, "run", "--quick", "--bench", "CreatedInForward"], work)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "(package xferbench " in ran.stdout  # says which suite ran
    (results_file,) = [p for p in (work / "results").glob("*/*.json")
                       if p.name != "machine.json"]
    data = json.loads(results_file.read_text())
    # filed as a clone's run at the commit the wheel was built from is
    assert data["commit_hash"] == _git("rev-parse", "HEAD")
    assert data["date"] == int(_git("show", "-s", "--format=%at", "HEAD")) * 1000
    ours = {n for n in json.loads((work / "results" / "benchmarks.json").read_text())
            if n != "version"}
    assert ours == _clone_benchmarks()  # the same names as the clone's suite gives asv
    side = json.loads(results_file.with_suffix(".metadata").read_text())
    assert side["run"]["suite"].startswith("package ")
    for argv in (["publish"], ["list"],
                 ["cite", "CreatedInForward.track_forward_s", "--params",
                  "mode=device_arg,seq=512", "--allow-quick"],
                 ["export", "--format", "bmf"]):
        proc = _run([xb, *argv], work)
        assert proc.returncode == 0, f"{argv}: {proc.stderr[-2000:]}"
    assert (work / "site" / "index.html").is_file()
    bmf = json.loads(proc.stdout)
    # a quick run, on the host's clock, on a CPU: each says so in the name BMF keeps
    assert len(bmf) == 3 and all(
        name.endswith(" [quick; host clock; a CPU run: not for citation]") for name in bmf), bmf
    assert all(m.get("lower_value", 0) >= 0 for ms in bmf.values() for m in ms.values())
    # the clone's committed results and this run's, read together by the package's compare
    theirs = sorted((committed_results() / "cpu-2core-vm").glob("*torch2.13.0*.json"))[0]
    compared = _run([xb, "compare", str(theirs), str(results_file), "--bench",
                     "CreatedInForward"], work)
    assert compared.returncode in (0, 1), compared.stderr[-2000:]  # 1: a regression found
    assert "CreatedInForward.track_forward_s" in compared.stdout


def test_without_torch_lint_and_flake8_run_and_measuring_says_what_is_missing(dist, tmp_path):
    bin_ = _venv(tmp_path / "venv", str(_wheel(dist)), "flake8")
    work = tmp_path / "code"
    work.mkdir()
    (work / "train.py").write_text(TRAIN)
    assert _run([str(bin_ / "python"), "-c", "import torch"], work).returncode != 0
    lint = _run([str(bin_ / "xferbench"), "lint", "train.py"], work)
    assert lint.returncode == 1 and "train.py:8:20: XB101" in lint.stdout, lint.stderr
    flake = _run([str(bin_ / "flake8"), "--isolated", "--select", "XB", "train.py"], work)
    assert "train.py:8:20: XB101" in flake.stdout, flake.stderr
    helped = _run([str(bin_ / "xferbench"), "--help"], work)
    assert helped.returncode == 0 and "NOT installed" in " ".join(helped.stdout.split())
    run = _run([str(bin_ / "xferbench"), "run"], work)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "xferbench run measures with PyTorch, which is not installed" in run.stderr
    assert sorted(p.name for p in work.iterdir()) == ["train.py"]  # nothing written
    prices = _run([str(bin_ / "python"), "-c", "import xferbench.analysis.prices"], work)
    assert prices.returncode == 0, prices.stderr


def _checkout(where: Path) -> str:
    """This tree as committed plus its uncommitted changes, as a repository of its own (what
    pre-commit clones at a rev); its commit."""
    for name in _git("ls-files").split("\n"):
        if name.startswith(("results/", "tests/")) or not (REPO / name).is_file():
            continue
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, where / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "copy"]):
        subprocess.run([*git, *args], cwd=where, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_the_pre_commit_hook_installs_without_torch_with_libcst(tmp_path):
    pytest.importorskip("pre_commit", reason="pre-commit comes with the test extra")
    hook_repo = tmp_path / "xferbench"
    rev = _checkout(hook_repo)
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n"
        "      - id: xferbench-lint\n        args: [--fail-on, error]\n")
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=project, check=True)
    home = tmp_path / "pre-commit-home"
    proc = _run([sys.executable, "-m", "pre_commit", "run", "--verbose", "--files", "train.py"],
                project, timeout=600, PRE_COMMIT_HOME=str(home))
    assert proc.returncode == 0, proc.stdout[-3000:]  # a warning only: --fail-on error passes
    assert "XB101" in proc.stdout and "below --fail-on error" in proc.stdout
    (python,) = home.glob("repo*/py_env-*/bin/python")
    assert _run([str(python), "-c", "import libcst, xferbench"], project).returncode == 0
    assert _run([str(python), "-c", "import torch"], project).returncode != 0

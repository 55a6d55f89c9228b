"""Stock asv in this repository (test_labels.py's class 3): ``asv run --python=same
--set-commit-hash HEAD`` labels its results with the torch that ran (asv alone writes the first
torch of asv.conf.json's matrix, 2.10.0) and how it measured (XFERBENCH_QUICK), or asv stops
before anything runs with one sentence (benchmarks/_asvplugin.py). Run for real: asv, in a git
repository holding this tree's asv.conf.json and benchmarks/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def suite(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A git repository of the suite as this tree has it (branch main, as asv.conf.json
    names), and an environment whose $HOME holds asv's machine record for "box"."""
    repo = tmp_path / "suite"
    repo.mkdir()
    shutil.copy(REPO / "asv.conf.json", repo)
    shutil.copytree(REPO / "benchmarks", repo / "benchmarks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "suite"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    for name in ("XFERBENCH_QUICK", "XFERBENCH_SWEEP", "XFERBENCH_DEVICE", "OMP_NUM_THREADS",
                 "XFERBENCH_PROBE"):
        env.pop(name, None)
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", "box"],
                   cwd=repo, env=env, check=True, capture_output=True)
    return repo, env


def asv(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "asv", *args], cwd=repo, env=env, text=True,
                          capture_output=True, timeout=600, check=False)


def torch_version() -> str:
    import torch

    return torch.__version__


@pytest.mark.slow
def test_stock_asv_labels_the_torch_that_ran_and_its_quick_budgets(suite, capsys):
    repo, env = suite
    proc = asv(repo, {**env, "XFERBENCH_QUICK": "1"}, "run", "--python=same",
               "--set-commit-hash", "HEAD", "--bench", "CreatedInForward", "--machine", "box",
               "--record-samples")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = [p for p in (repo / "results" / "box").glob("*.json") if p.name != "machine.json"]
    assert len(files) == 1 and "quickyes" in files[0].name
    raw = json.loads(files[0].read_text())
    ran = torch_version()
    assert raw["params"]["torch"] == ran != "2.10.0"  # not asv.conf.json's first matrix entry
    assert raw["params"]["quick"] == "yes" and raw["requirements"]["torch"] == ran
    results = str(repo / "results")
    assert main(["list", "--results", results, "--format", "json"]) == 0
    entry = next(e for e in json.loads(capsys.readouterr().out)
                 if e["benchmark"] == "bench_creation.CreatedInForward.track_forward_s")
    assert [(s["torch"], s["mode"], s["measured"]) for s in entry["series"]] == [
        (ran, "quick", 3)]
    # a quick run's number is refused, then cited as what it is
    assert main(["cite", "CreatedInForward.track_forward_s", "--params", "mode=buffer",
                 "--results", results]) == 2
    assert "measured as quick" in capsys.readouterr().err
    assert main(["cite", "CreatedInForward.track_forward_s", "--params", "mode=buffer",
                 "--results", results, "--mode", "quick", "--format", "json"]) == 0
    cited = json.loads(capsys.readouterr().out)
    assert cited["torch"] == ran and cited["not_for_citation"][0].startswith("a quick run")


def test_stock_asv_refuses_an_interpreter_without_torch(suite, tmp_path):
    repo, env = suite
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    proc = asv(repo, env, "run", "-E", f"existing:{bare / 'bin' / 'python'}",
               "--set-commit-hash", "HEAD", "--bench", "CreatedInForward", "--machine", "box")
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "xferbench:" in line]
    assert proc.returncode == 2 and len(said) == 1 and "has no torch to measure" in said[0]
    assert said[0].startswith("xferbench: ")
    assert not (repo / "results" / "box").exists() or not [
        p for p in (repo / "results" / "box").glob("*.json") if p.name != "machine.json"]


def test_stock_asv_refuses_a_quick_run_in_its_own_environments(suite):
    repo, env = suite
    proc = asv(repo, {**env, "XFERBENCH_QUICK": "1"}, "setup")
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "xferbench:" in line]
    assert proc.returncode == 2 and len(said) == 1
    assert "quick=yes would be filed as a full default run" in said[0]
    assert not (repo / ".asv" / "env").exists() or not any((repo / ".asv" / "env").iterdir())


def test_xferbench_runs_asv_without_the_plugin(tmp_path):
    """xferbench run labels its own files: its asv configuration carries no plugin."""
    from xferbench.results.repo import write_asv_config
    from xferbench.results.suite import CLONE, Suite

    conf = json.loads(Path(write_asv_config(Suite(str(REPO), CLONE), str(tmp_path / "r"),
                                            str(tmp_path))).read_text())
    assert "plugins" not in conf
    from asv import util

    assert util.load_json(str(REPO / "asv.conf.json"), js_comments=True)["plugins"] == [
        ".benchmarks._asvplugin"]

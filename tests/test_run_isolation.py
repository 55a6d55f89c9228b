"""A run is steered by its own options only, and leaves what it did not make as it was: every
variable it hands its benchmark processes is the run's (none left in a shell cuts it or
redirects its progress), a clone's tracked files are as checked out after it, and every view
holds the committed series beside the new one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT, committed_results

from xferbench.commands.publish.site import stage_for_asv
from xferbench.commands.run.plan import Options, RunPlan
from xferbench.devices import Device
from xferbench.flags import RUN_VARS, without_run_vars
from xferbench.metadata import MachineMetadata
from xferbench.results import load
from xferbench.results.asvfiles import LOCAL_LIST, benchmark_list, load_benchmarks, set_aside
from xferbench.results.sidecar import load_sidecar
from xferbench.results.suite import CLONE, Suite

RESULTS = committed_results()
LEFT = "left-in-the-shell"
#: What a shell may hold of each variable a run hands its processes: a deadline already
#: past, a cap, another run's progress file, another device's probe, devices not chosen.
HOSTILE = {"XFERBENCH_DEADLINE": "1", "XFERBENCH_CAP": "1", "XFERBENCH_DEVICE": "cuda:7",
           "XFERBENCH_DEVICES": "0,1", "XFERBENCH_PROBE": '{"device": "cuda:7"}'}


def _plan(tmp_path: Path) -> RunPlan:
    opts = Options(str(tmp_path / "results"), "results", None, None, None, "default", False)
    return RunPlan(opts, Device("cpu"), Suite(str(REPO_ROOT), CLONE), "0" * 40,
                   MachineMetadata(), "box", "2.13.0+cpu", "none", 1, (), ())


@pytest.mark.parametrize("name", RUN_VARS)
def test_each_variable_a_run_hands_its_processes_is_the_runs_own(name, monkeypatch, tmp_path):
    monkeypatch.setenv(name, LEFT)
    env = _plan(tmp_path).env()
    assert env.get(name) != LEFT  # set by the run, or not there at all
    expected = {"XFERBENCH_DEVICE": "cpu", "XFERBENCH_SWEEP": "default",
                "XFERBENCH_QUICK": "0", "XFERBENCH_CAP": "0",
                "XFERBENCH_PROBE": '{"device": "cpu", "capabilities": null}'}
    assert env.get(name) == expected.get(name)  # the deadline, progress, devices: none
    assert without_run_vars({name: LEFT, "PATH": "/bin"}) == {"PATH": "/bin"}


def test_the_suites_discovery_gets_none_of_the_shells_run_variables(monkeypatch):
    from xferbench.results import discovery

    seen = {}

    def fake_run(cmd, *, env, **kwargs):
        seen.update(env)
        raise OSError("stop here")

    for name in RUN_VARS:
        monkeypatch.setenv(name, LEFT)
    monkeypatch.setattr(discovery.subprocess, "run", fake_run)
    discovery._describe.cache_clear()
    assert discovery._describe(str(REPO_ROOT), "{}", "default") is None
    assert {k: v for k, v in seen.items() if v == LEFT} == {}
    assert seen["XFERBENCH_SWEEP"] == "default" and seen["XFERBENCH_PROBE"] == "{}"
    discovery._describe.cache_clear()


@pytest.mark.slow
def test_a_deadline_left_in_the_shell_cuts_nothing(tmp_path):
    """XFERBENCH_DEADLINE (and the others) set in the shell, no --budget: every combination
    is measured, and the sidecar says a complete run without a budget."""
    progress = tmp_path / "someone-elses-progress.jsonl"
    env = {**HOSTILE, "XFERBENCH_PROGRESS": str(progress), "XFERBENCH_DEADLINE": "1"}
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--quick", "--sweep",
                           "smoke", "--bench", r"bench_copies\.Copy\.", "--device", "cpu",
                           "--results", str(results)], cwd=REPO_ROOT, text=True,
                          capture_output=True, timeout=600,
                          env={**_environ(), **env})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "budget" not in proc.stdout and not progress.exists()
    path = next(p for p in results.glob("*/*.json") if p.name != "machine.json")
    side = load_sidecar(str(path))
    assert side.runs[-1].budget_s is None and side.runs[-1].complete is True
    assert not [o for rows in side.outcomes.values() for o in rows if "cut" in o.reason]
    assert any(r.ok for r in load(str(results)))


def _environ() -> dict[str, str]:
    return dict(os.environ)


# -- a clone's tracked files, and the views of the committed series ----------------------------

def test_a_run_sets_asvs_list_aside_and_puts_the_committed_one_back(tmp_path):
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root)
    committed = (root / "benchmarks.json").read_bytes()
    rewritten = json.loads(committed)
    name = next(k for k, v in rewritten.items() if isinstance(v, dict))
    rewritten[name]["version"] = "0" * 64  # what a newer suite's code hashes to
    rewritten["bench_new.New.track_s"] = {**rewritten[name], "unit": "seconds"}
    (root / "benchmarks.json").write_text(json.dumps(rewritten))
    set_aside(str(root), committed)
    assert (root / "benchmarks.json").read_bytes() == committed
    merged = load_benchmarks(str(root))
    assert merged[name]["version"] == "0" * 64 and "bench_new.New.track_s" in merged
    assert benchmark_list(str(root))["bench_new.New.track_s"]["unit"] == "seconds"
    assert (root / LOCAL_LIST).exists()


def test_asvs_view_keeps_the_results_of_an_older_benchmark_code(tmp_path):
    """asv's publish drops a result whose benchmark version is not the list's: the copy it
    is given keeps every one, and says which files it kept so."""
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root)
    listed = json.loads((root / "benchmarks.json").read_text())
    for info in listed.values():
        if isinstance(info, dict):
            info["version"] = "f" * 64  # every benchmark's code changed since
    (root / LOCAL_LIST).write_text(json.dumps(listed))
    rs = load(str(root))
    staged = tmp_path / "work" / "results"
    older = stage_for_asv(rs, str(staged))
    assert len(older) == len({r.path for r in rs}) == 18
    for path in staged.glob("*/*.json"):
        if path.name == "machine.json":
            continue
        raw = json.loads(path.read_text())
        column = raw["result_columns"].index("version")
        assert {row[column] for row in raw["results"].values()} == {None}
    assert json.loads((staged / "benchmarks.json").read_text())["version"] == 2
    (root / LOCAL_LIST).unlink()  # the list as committed: every file linked, none copied
    again = tmp_path / "again"
    assert stage_for_asv(load(str(root)), str(again)) == []
    assert all(p.is_symlink() for p in again.glob("*/*.json"))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="the clone needs git")
def test_the_readmes_first_run_changes_no_tracked_file_and_hides_no_committed_series(
        tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", "HEAD", "--", "results"], cwd=clone, check=True)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--quick", "--sweep",
                           "smoke", "--bench", r"bench_copies\.Copy\.", "--device", "cpu",
                           "--machine", "my-box"], cwd=clone, text=True,
                          capture_output=True, timeout=600, env=_environ())
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, text=True,
                            capture_output=True, check=True).stdout.splitlines()
    assert [line for line in status if not line.startswith("??")] == [], status
    proc = subprocess.run([sys.executable, "-m", "xferbench", "publish", "--out",
                           str(tmp_path / "site")], cwd=clone, text=True,
                          capture_output=True, timeout=600, env=_environ())
    assert proc.returncode == 0, proc.stderr[-3000:]
    committed = len(load(str(RESULTS)).series())
    assert f"asv data for {committed + 1} series" in proc.stdout, proc.stdout
    assert time.monotonic() - started < 600

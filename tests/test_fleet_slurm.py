"""xferbench fleet on a real Slurm: one node (tests/slurmctl.py) stands in for a cluster, and
two tasks with two machine names stand in for two machines. The tasks run the quick suite of
one small class (CreatedInForward: three combinations).

Skipped, with the reason, without Debian's slurm-wlm and munge or without root.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slurmctl import OneNodeSlurm, unavailable

pytestmark = pytest.mark.slow

BENCH = ["--quick", "--bench", "CreatedInForward"]


@pytest.fixture(scope="module")
def slurm():
    why = unavailable()
    if why:
        pytest.skip(why)
    cluster = OneNodeSlurm().start()
    yield cluster
    cluster.stop()


def fleet(slurm: OneNodeSlurm, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xferbench", "fleet", *args], env=slurm.env,
                          capture_output=True, text=True, timeout=300)


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def wait_for(what, timeout_s: float = 120.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_cancelled_task_loses_only_its_results_and_resume_completes_it(slurm, tmp_path):
    job, results = tmp_path / "job", tmp_path / "results"
    cmd = [sys.executable, "-m", "xferbench", "fleet", "run", "--executor", "slurm",
           "--nodes", "2", "--machine", "node-a", "--machine", "node-b", *BENCH,
           "--gpus-per-node", "0", "--partition", slurm.PARTITION, "--time", "10",
           "--folder", str(job), "--results", str(results), "--poll", "0.3"]
    proc = subprocess.Popen(cmd, env=slurm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        # task 1, once its xferbench run is under way (asv started), is cancelled mid-run
        def task1_running():
            plan = json.loads((job / "fleet.json").read_text()) if (job / "fleet.json").exists() \
                else None
            ids = plan and plan["tasks"][1]["jobs"]
            logs = list(job.glob(f"stage/{ids[-1]}-*/run.log")) if ids else []
            return ids[-1] if logs and "[1/1]" in logs[0].read_text() else None

        cancelled = wait_for(task1_running)
        assert slurm.run("scancel", cancelled).returncode == 0
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 3, out + err
    assert "task 0 (job" in out and "done on xfbnode, machine node-a" in out
    assert f"task 1 (job {cancelled}): failed" in err
    assert f"fleet run --resume {job}" in err
    assert (results / "node-a").is_dir() and not (results / "node-b").exists()
    assert list(job.glob(f"stage/{cancelled}-*/failed.json"))  # its partial run: never merged
    before = digests(results / "node-a")

    resumed = fleet(slurm, "run", "--resume", str(job), "--results", str(results),
                    "--poll", "0.3")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 of 2 tasks finished; resubmitting 1 (1)" in resumed.stdout
    assert "-> node-b: torch" in resumed.stdout and "3 measured" in resumed.stdout
    assert "| CreatedInForward.track_forward_s(mode=buffer, seq=512) |" in resumed.stdout
    assert digests(results / "node-a") == before  # task 0 is not run or merged again

    status = fleet(slurm, "status", str(job))
    assert status.returncode == 0
    rows = [ln.split() for ln in status.stdout.splitlines()[2:]]
    assert [(r[0], r[2], r[4]) for r in rows] == [("0", "merged", "node-a"),
                                                  ("1", "merged", "node-b")]

    site = tmp_path / "site"
    pub = subprocess.run([sys.executable, "-m", "xferbench", "publish", "--results",
                          str(results), "--out", str(site)], capture_output=True, text=True,
                         timeout=300)
    assert pub.returncode == 0, pub.stderr
    page = (site / "index.html").read_text()
    for machine in ("node-a", "node-b"):
        assert f'data-machine="{machine}"' in page
    assert 'id="machines"' in page  # the machines side by side, one PyTorch release


def test_a_partition_slurm_does_not_know_is_its_own_sentence(slurm, tmp_path):
    out = fleet(slurm, "run", "--executor", "slurm", "--partition", "nope", *BENCH,
                "--gpus-per-node", "0", "--folder", str(tmp_path / "job"),
                "--results", str(tmp_path / "results"))
    assert out.returncode == 2
    assert out.stderr == ("xferbench: Slurm refused the job: invalid partition specified: "
                          "nope (Batch job submission failed: Invalid partition name "
                          "specified)\n")
    assert not (tmp_path / "job").exists() and not (tmp_path / "results").exists()

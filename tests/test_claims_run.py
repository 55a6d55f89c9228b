"""The behaviour checks as part of a run, end to end on this machine's CPU: `xferbench run`
measures them, the sidecar keeps what each saw in the release's words, and `xferbench claims`
and `cite --claim` decide the claims from that run: the two `.to()` claims hold (against the
meta device), the mismatch claims and the unsynchronised timer are not measurable here, each
with the reason the run recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, slow_fixture

from xferbench.practices.unsynced import CPU_REASON
from xferbench.results.sidecar import metadata_path

pytestmark = pytest.mark.slow


def _xferbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xferbench", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
@slow_fixture
def run(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("claims-run") / "results"
    proc = _xferbench("run", "--device", "cpu", "--machine", "here", "--results", str(results),
                      "--bench", "Behaviour|UnsyncedTimer")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return results


def test_the_run_keeps_what_each_check_saw_in_the_sidecar(run):
    (path,) = [p for p in run.glob("here/*.json") if p.name != "machine.json"]
    side = json.loads(Path(metadata_path(str(path))).read_text())
    seen = {o["params"]["check"]: o["text"]
            for o in side["observations"]["bench_behaviour.Behaviour.track_holds"]}
    assert seen == {
        "tensor_to_new": "x.to('meta') returned a new tensor on meta; x stayed on cpu, its "
                         "values unchanged",
        "module_to_in_place": seen["module_to_in_place"]}
    assert seen["module_to_in_place"].startswith("model.to('meta') returned the module itself")
    skipped = side["outcomes"]["bench_behaviour.Behaviour.track_holds"]
    assert {o["params"]["check"] for o in skipped} == {
        "mismatch_batch_not_moved", "mismatch_created_in_forward", "mismatch_loss_weight"}


def test_claims_decide_the_behaviour_from_the_run(run):
    proc = _xferbench("claims", "--results", str(run), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    cells = {c["id"]: c["verdicts"][0] for c in json.loads(proc.stdout)["claims"]}
    for claim in ("tensor-to-new", "module-to-in-place"):
        assert cells[claim]["verdict"] == "holds", cells[claim]
        assert cells[claim]["figures"][0]["practice"]["value"] == 1.0
    assert cells["tensor-to-new"]["figures"][0]["observed"].startswith("x.to('meta') returned")
    for claim in ("mismatch-batch", "mismatch-forward", "mismatch-loss-weight"):
        assert cells[claim]["verdict"] == "not measurable here"
        assert cells[claim]["reason"].startswith("a device mismatch needs an accelerator")
    assert (cells["sync-before-timing"]["verdict"], cells["sync-before-timing"]["reason"]) == (
        "not measurable here", CPU_REASON)
    # the classes it did not run: what this run's grid and device say of them
    assert (cells["pinned-faster"]["verdict"], cells["pinned-faster"]["reason"]) == (
        "not measurable here", "pinned host memory needs an accelerator")
    assert cells["item-per-batch"]["verdict"] == "not measured"  # measurable, not run
    cite = _xferbench("cite", "--claim", "tensor-to-new", "--results", str(run))
    assert cite.returncode == 0, cite.stderr
    first = cite.stdout.splitlines()[0]
    assert first.startswith("Not for citation: measured on a CPU, no GPU")
    assert "holds on here (CPU" in first
    assert "the check: the check held (x.to('meta') returned a new tensor on meta" in first

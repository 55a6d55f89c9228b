"""The suite end to end on the emulated accelerator (tests/emu): ``xferbench run --device emu``
takes every practice's accelerator branch and verifies it, in processes that load emu through
its autoload (PYTHONPATH for the run, ASV_PYTHONPATH for asv's), and its results say they are
emulated, and the claims it decides are its behaviour checks', never its times. Also both
ways the suite learns its device: the probe the run hands down, and the
one the suite asks a child for under stock asv.

The run end to end is the one of the gpu-check run with a minimal interpreter
(tests/gpu_check_runs.py, a session fixture; its users are marked ``end_to_end``):
``xferbench run --quick --device emu`` over the whole smoke grid, its machine named as the run
names it. One grid is measured for both, not two.

The other tests start fresh processes and never load emu into this one, so they run in any
session; they need the library built (``scripts/build-emu``; built here if missing) and are
skipped, saying why, where it cannot be.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import emu
import pytest

from xferbench.devices import Capabilities
from xferbench.practices.sync import read_count_skip_reason
from xferbench.results import load
from xferbench.results.sidecar import metadata_path

REPO = Path(__file__).resolve().parents[1]
AUTOLOAD = str(REPO / "tests" / "emu" / "autoload")


@pytest.fixture(scope="module")
def emu_env() -> dict[str, str]:
    """The environment of a process tree that runs on emu: it loads in every process that
    imports torch (asv passes PYTHONPATH on only as ASV_PYTHONPATH)."""
    try:
        emu.build()  # not load(): this process stays off the emulated device
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    # the caller's own probe, sweep or quick setting would change what runs: empty is unset
    return {"XFERBENCH_EMU": "1", "PYTHONPATH": AUTOLOAD, "ASV_PYTHONPATH": AUTOLOAD,
            "XFERBENCH_PROBE": "", "XFERBENCH_SWEEP": "", "XFERBENCH_QUICK": ""}


@pytest.mark.slow
def test_autoload_loads_emu_when_torch_is_imported_and_not_before(run_python, emu_env):
    code = ("import sys\n"
            "before = 'torch' in sys.modules\n"
            "import torch\n"
            "print(before, torch.accelerator.current_accelerator().type)")
    proc = run_python("-c", code, env=emu_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "emu"]
    off = run_python("-c", "import torch; print(torch.accelerator.current_accelerator())",
                     env={**emu_env, "XFERBENCH_EMU": "0"})
    assert off.stdout.strip() == "None", off.stderr  # only XFERBENCH_EMU=1 loads it


def test_env_names_the_emulated_device_and_says_so(run_python, emu_env):
    proc = run_python("-m", "xferbench", "env", "--json", "--device", "emu", env=emu_env)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads(proc.stdout)
    assert (meta["device"], meta["accelerator"], meta["emulated"]) == ("emu:0", "emu", True)
    assert meta["capabilities"]["emulated"] is True
    assert all(meta["capabilities"][k] for k in ("pinned_memory", "timing_events",
                                                  "side_streams"))


@pytest.mark.slow
def test_suite_asks_a_child_for_the_emulated_device_without_a_hand_down(run_python, emu_env,
                                                                         tmp_path):
    # stock asv: no XFERBENCH_PROBE; the suite's child inherits the autoload, this process
    # (asv's discovery or fork server) never imports torch
    env = {**emu_env, "XFERBENCH_DEVICE": "emu", "TMPDIR": str(tmp_path)}
    code = ("import sys, benchmarks._asv as a\n"
            "print(a.DEVICE, a.CAPS.emulated, a.CAPS.pinned_memory, 'torch' in sys.modules)")
    proc = run_python("-c", code, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["emu:0", "True", "True", "False"]
    # the cache is keyed by XFERBENCH_EMU: without it the same device name is another entry
    again = run_python("-c", code, env={**env, "XFERBENCH_EMU": "0"})
    assert again.returncode != 0 and "device 'emu' is not a device type" in again.stderr


def test_run_refuses_to_file_emulated_results_in_the_repository(run_python, emu_env):
    proc = run_python("-m", "xferbench", "run", "--quick", "--device", "emu", env=emu_env)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("xferbench: device emu:0 is emulated: its times are not "
                                   "measurements, so they do not go into results/; give "
                                   "--results DIR")


#: What the run must have measured, one (benchmark, params) per accelerator branch.
BRANCHES = {
    "pinned non_blocking h2d, device events": (
        "bench_copies.Copy.track_device_s",
        {"direction": "h2d", "host_memory": "pinned", "sync": "non_blocking", "layout": "one"}),
    "1,000 pinned non_blocking h2d, completion clock": (
        "bench_copies.Copy.track_completion_s",
        {"direction": "h2d", "host_memory": "pinned", "sync": "non_blocking", "layout": "many"}),
    "non_blocking enqueue clock": (
        "bench_copies.Copy.track_enqueue_s",
        {"direction": "h2d", "host_memory": "pinned", "sync": "non_blocking", "layout": "one"}),
    "d2h into pinned memory": (
        "bench_copies.Copy.track_completion_s",
        {"direction": "d2h", "host_memory": "pinned", "sync": "non_blocking", "layout": "one"}),
    "pin_then_copy, cold": ("bench_copies.PinThenCopy.track_completion_s",
                            {"cache": "cold", "layout": "one"}),
    "pin_then_copy, warm, its allocations": ("bench_copies.PinThenCopy.track_allocs_per_call",
                                             {"cache": "warm", "layout": "many"}),
    "d2d": ("bench_copies.Copy.track_device_s",
            {"direction": "d2d", "host_memory": "pageable", "sync": "blocking", "layout": "one"}),
    "pin_memory, cold": ("bench_copies.PinMemory.track_host_s", {"cache": "cold"}),
    "overlap, pinned, copy first": ("bench_copies.Overlap.track_serialised_fraction",
                                    {"host_memory": "pinned", "order": "copy_first"}),
    "overlap, pageable, compute first": ("bench_copies.Overlap.track_serialised_fraction",
                                         {"host_memory": "pageable", "order": "compute_first"}),
    "device peak memory": ("bench_creation.Creation.track_device_peak_bytes",
                           {"factory": "zeros", "variant": "to"}),
    "creation, to non_blocking": ("bench_creation.Creation.track_ready_s",
                                  {"factory": "randn", "variant": "to_non_blocking"}),
    "training loop, per-epoch read": ("bench_sync.Loop.track_step_s",
                                      {"read": "device_accumulate"}),
    "forward, masks moved every call": ("bench_creation.CreatedInForward.track_forward_s",
                                        {"mode": "host_then_move"}),
    "pipeline, pinned + prefetch, 2 workers": (
        "bench_pipeline.Pipeline.track_step_s",
        {"size": "small", "host_memory": "pinned", "workers": "2", "move": "prefetch"}),
    "pipeline, starvation share": (
        "bench_pipeline.Pipeline.track_starvation_share",
        {"size": "small", "host_memory": "pageable", "workers": "0", "move": "blocking"}),
    "hazard: d2h read before sync": ("bench_hazards.Hazards.track_wrong_fraction",
                                     {"hazard": "d2h_read_before_sync", "stream": "idle"}),
    "hazard: pinned source, busy stream": ("bench_hazards.Hazards.track_wrong_fraction",
                                           {"hazard": "pinned_source_modified",
                                            "stream": "busy"}),
    "unsynchronised timer, as the call returns": ("bench_timer.UnsyncedTimer.track_unsynced_s",
                                                  {"n": "256"}),
    "unsynchronised timer, the real time": ("bench_timer.UnsyncedTimer.track_synced_s",
                                            {"n": "256"}),
    "behaviour: every check, mismatches included": ("bench_behaviour.Behaviour.track_holds", {}),
}


@pytest.fixture(scope="module")
def emu_run(minimal_gpu_check) -> tuple[Path, int, str]:
    """(results folder, the run's exit status, its output): the minimal interpreter's
    gpu-check run, the whole smoke grid on emu under a budget it fits in with room to spare
    (nothing cut). The status is ``xferbench run``'s, as gpu-check's last line gives it, not
    the check's: a gpu test of that run that fails is test_gpu_check's to report."""
    out = minimal_gpu_check["out"]
    try:
        said = (out / "run.log").read_text()
    except OSError as exc:
        said = f"(no run.log: {exc})\n{minimal_gpu_check['log'][-4000:]}"
    ran = re.search(r"^gpu-check: run exit (\d+), tests exit", minimal_gpu_check["log"], re.M)
    code = int(ran.group(1)) if ran else minimal_gpu_check["proc"].returncode
    return out / "results", code, said


@pytest.mark.slow
def test_the_smoke_grid_runs_every_accelerator_branch_on_emu_and_verifies(emu_run):
    results, code, said = emu_run
    assert code == 0, said[-4000:]
    assert "emu:0 is emulated on the host" in said.splitlines()[0]
    rs = load(str(results))
    for branch, (benchmark, params) in BRANCHES.items():
        rows = [r for r in rs if r.benchmark == benchmark
                and all(r.param_dict.get(k) == v for k, v in params.items())]
        assert rows and all(r.ok for r in rows), f"{branch}: no number ({benchmark} {params})"


@pytest.mark.slow
def test_emulated_results_say_so_and_each_gap_says_why(emu_run):
    results, code, said = emu_run
    assert code == 0, said[-4000:]
    files = [p for p in results.glob("*/*.json") if p.name != "machine.json"]
    assert len(files) == 1 and "emulated" in files[0].parent.name  # the machine's name
    sidecar = json.loads(Path(metadata_path(str(files[0]))).read_text())
    meta, run, outcomes = sidecar["metadata"], sidecar["run"], sidecar["outcomes"]
    assert meta["emulated"] is True and meta["capabilities"]["emulated"] is True
    assert run["complete"] is True and run["sweep"] == "smoke"
    statuses = {row["status"] for rows in outcomes.values() for row in rows}
    assert statuses == {"skipped"}  # nothing failed verification or timed out
    counts = outcomes["bench_sync.Loop.track_syncs_per_step"]
    caps = Capabilities(**meta["capabilities"])  # each read's own reason, as the run gave it
    # (a combination a loaded host's run cut by its budget says that instead)
    assert counts and all(row["reason"] == read_count_skip_reason(row["params"]["read"], caps)
                          or row["reason"].startswith("cut: the run's budget (--budget)")
                          for row in counts), counts
    assert {row["reason"] for row in counts} >= {read_count_skip_reason("cpu", caps)}
    assert "CUDA and ROCm only" in read_count_skip_reason("cpu", caps)
    for r in load(str(results)):
        if not r.ok:
            rows = outcomes.get(r.benchmark, [])
            want = {k: str(v) for k, v in r.params}
            assert any(row["params"] == want and row["reason"] for row in rows), r.label()


@pytest.mark.slow
def test_the_claims_decide_the_behaviour_on_emu_and_no_claim_about_time(emu_run):
    """On the emulated device every behaviour check runs, each claim decided with the words
    this release used; its times decide nothing."""
    results, code, said = emu_run
    assert code == 0, said[-4000:]
    out = subprocess.run([sys.executable, "-m", "xferbench", "claims", "--results", str(results),
                          "--format", "json"], cwd=REPO, capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    cells = {c["id"]: c["verdicts"][0] for c in json.loads(out.stdout)["claims"]}
    for claim in ("tensor-to-new", "module-to-in-place", "mismatch-batch", "mismatch-forward",
                  "mismatch-loss-weight"):
        assert cells[claim]["verdict"] == "holds", cells[claim]
    said = cells["mismatch-loss-weight"]["figures"][0]["observed"]
    assert said.startswith("RuntimeError: Expected all tensors to be on the same device")
    assert "emu:0" in said
    timer = cells["sync-before-timing"]
    assert timer["verdict"] == "not measurable here"
    assert timer["reason"].startswith("a claim about time: emu:0 is emulated on the host")

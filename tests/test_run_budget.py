"""``xferbench run --budget S``: the run ends within S seconds and no class is killed. The
classes run headlines first; each gets its share of what is left (its estimate's share with
time to spare, its whole estimate while the time lasts when short); a class left too little is
not started, every combination it would have measured recorded as skipped with the reason;
inside a class, each combination's sampling is capped and what no longer fits is cut."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import _asv
from xferbench.commands.run import budget
from xferbench.commands.run.budget import allot, check_budget, plan_text
from xferbench.commands.run.suite import PRIORITY, SuiteClass
from xferbench.errors import XferbenchError
from xferbench.metadata import MachineMetadata
from xferbench.results import load
from xferbench.results.runrecords import Outcome, RunRecord
from xferbench.results.sidecar import load_sidecar, record_run

REPO = Path(__file__).resolve().parents[1]


def test_with_time_to_spare_a_class_may_use_all_but_what_the_later_ones_need():
    # 200 s left after the report's reserve, estimates 30 + 70: the first may take 130
    first = allot(200 + budget.REPORT_S, 0, [30, 70], read_s=3)
    assert first.seconds == pytest.approx(130) and first.deadline(1000.0) == pytest.approx(1127)
    # the first class took 20 s: the last one gets all that is left
    assert allot(200 + budget.REPORT_S, 20, [70], read_s=3).seconds == pytest.approx(180)


def test_short_of_time_the_first_classes_get_their_whole_estimate_and_the_last_are_cut():
    spent, estimates = 0.0, [40.0, 30.0, 50.0]
    shares = []
    for i in range(len(estimates)):
        share = allot(80 + budget.REPORT_S, spent, estimates[i:], read_s=2)
        shares.append(share.seconds)
        spent += share.seconds or 0
    assert shares[:2] == [40, 30]  # in order, each in full
    assert shares[2] == pytest.approx(10)  # what is left: cut short inside
    # too little left to start a class: not started
    tiny = allot(80 + budget.REPORT_S, 78, [50.0], read_s=2)
    assert tiny.seconds is None and tiny.deadline(0) is None
    assert "had 2 s left for this class" in budget.cut_reason(80, tiny.left_s)


def test_a_bad_budget_is_one_sentence():
    assert check_budget(None) is None and check_budget(240.0) == 240.0
    for bad in (0.0, -3.0, float("nan"), float("inf")):
        with pytest.raises(XferbenchError, match=r"^--budget .* is not a time: give"):
            check_budget(bad)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "ten"])
def test_the_command_refuses_a_bad_budget_with_exit_2_and_writes_nothing(tmp_path, value):
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--budget", value,
                           "--results", str(results)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "--budget" in proc.stderr
    assert not results.exists()


def test_the_plan_says_what_the_budget_holds():
    groups = [("Copy", 50.0), ("Creation", 20.0), ("Pipeline", 60.0)]
    assert plan_text(500, groups).endswith("it holds every class, each combination within "
                                           "its share")
    text = plan_text(100, groups)
    assert "holds Copy, Creation in full (70 s)" in text
    assert "Pipeline will be cut short or left out" in text
    assert "holds no class in full" in plan_text(10, groups)


def test_headline_classes_run_first():
    assert PRIORITY[:4] == ("Copy", "Creation", "Loop", "Pipeline")
    probe = json.dumps({"device": "cpu", "capabilities": {
        "device": "cpu", "pinned_memory": False, "timing_events": False,
        "side_streams": False, "reason": "the CPU has none"}})
    from xferbench.commands.run.suite import BENCH_FILES, describe_suite

    classes = describe_suite(str(REPO), {**os.environ, "XFERBENCH_PROBE": probe,
                                         "XFERBENCH_SWEEP": "default"})
    names = [c.name for c in classes]
    assert names == sorted(names, key=lambda n: PRIORITY.index(n) if n in PRIORITY else 99)
    assert len(classes) >= len(BENCH_FILES)
    assert all(c.estimate_s > 0 for c in classes if c.measured)


def _cls(runs: dict[str, list[list[str]]]) -> SuiteClass:
    return SuiteClass("bench_sync", "Loop", tuple(runs), ("read", "width"), 2, 2, {}, {},
                      2.0, runs)


def test_a_class_left_out_records_each_combination_it_would_have_measured():
    c = _cls({"track_step_s": [["cpu", "256"], ["item_every_batch", "256"]],
              "track_syncs_per_step": []})
    out = c.cut("cut: no time")
    assert list(out) == ["bench_sync.Loop.track_step_s"]  # a method with nothing to measure
    assert out["bench_sync.Loop.track_step_s"] == [
        Outcome((("read", "cpu"), ("width", "256")), "skipped", "cut: no time"),
        Outcome((("read", "item_every_batch"), ("width", "256")), "skipped", "cut: no time")]


def test_a_cut_never_hides_a_number_an_earlier_run_saved(tmp_path):
    path = str(tmp_path / "r.json")
    Path(path).write_text("{}")
    meta = MachineMetadata.from_dict({"machine": "m"})
    earlier = RunRecord("c1", "m", "cpu", "default", False, None, "2026-01-01T00:00:00Z")
    kept = Outcome((("read", "cpu"),), "skipped", "measured before, this one skipped")
    record_run(path, meta, earlier, ["bench_sync.Loop.track_step_s"],
               {"bench_sync.Loop.track_step_s": [kept]})
    later = RunRecord("c1", "m", "cpu", "default", False, None, "2026-01-02T00:00:00Z",
                      budget_s=30.0)
    cut = Outcome((("read", "cpu"),), "skipped", "cut: the run's budget")
    record_run(path, meta, later, [], {}, {"bench_sync.Loop.track_step_s": [cut],
                                           "bench_pipeline.Pipeline.track_step_s": [cut]})
    side = load_sidecar(path)
    assert side.outcomes["bench_sync.Loop.track_step_s"] == (kept,)  # the earlier run's
    assert side.outcomes["bench_pipeline.Pipeline.track_step_s"] == (cut,)  # never measured
    assert side.runs[-1].budget_s == 30.0
    assert RunRecord.from_dict(side.runs[-1].to_dict()) == side.runs[-1]


class _Timed(_asv.Grid):
    params = ([1, 2, 3, 4],)
    param_names = ["n"]
    seen: list[float] = []

    def measure(self, n):
        cap = _asv.spec().max_time_s
        self.seen.append(cap)
        time.sleep(0.6)
        return {"track_x": float(n)}

    def track_x(self, n):
        return 0.0


def test_inside_a_class_sampling_is_capped_and_what_no_longer_fits_is_cut(monkeypatch):
    import torch  # noqa: F401  (imported before the clock starts: the grid imports it)

    _Timed.seen = []
    monkeypatch.setattr(_asv, "DEADLINE", time.time() + _asv.MIN_COMBINATION_S + 1.0)
    monkeypatch.setattr(_asv, "DEVICE", "cpu")
    out = _Timed().measure_grid()
    measured = [c for c, e in out.items() if "values" in e]
    cut = [e["skip"] for e in out.values() if "skip" in e]
    assert measured and cut and len(measured) + len(cut) == 4
    assert all(s.startswith("cut: the run's budget (--budget) left") for s in cut)
    # each measured combination's sampling: its share of what was left, not the default
    assert all(cap < _asv.DEFAULT_SPEC.max_time_s for cap in _Timed.seen)
    monkeypatch.setattr(_asv, "DEADLINE", None)
    _Timed.seen = []
    assert all("values" in e for e in _Timed().measure_grid().values())
    assert _Timed.seen == [_asv.DEFAULT_SPEC.max_time_s] * 4


@pytest.mark.slow
def test_a_run_under_a_budget_ends_in_time_and_says_what_it_cut(tmp_path):
    results = tmp_path / "results"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--budget", "25",
                           "--device", "cpu", "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert took < 25 + 15, f"{took:.0f} s for --budget 25"  # asv's exits, a loaded machine
    assert "--budget 25 s for a grid estimated at" in proc.stdout
    path = next(p for p in results.glob("*/*.json") if p.name != "machine.json")
    side = load_sidecar(str(path))
    assert side.runs[-1].budget_s == 25.0 and side.runs[-1].complete is True
    reasons = {row.reason.split(" had ")[0].split(" left ")[0]
               for rows in side.outcomes.values() for row in rows if "budget" in row.reason}
    assert reasons, "a 25 s budget cuts some of the default grid on this CPU"
    assert all(r.startswith("cut: the run's budget (--budget") for r in reasons)
    # the headline class ran first and saved its numbers
    assert "bench_copies.Copy.track_completion_s" in side.benchmarks
    assert any(r.ok for r in load(str(results)) if r.benchmark.startswith("bench_copies.Copy."))


def test_the_run_says_first_when_the_link_runs_below_its_maximum_under_load():
    import io
    from types import SimpleNamespace

    from xferbench.commands.run.transaction import announce
    from xferbench.results.suite import CLONE, Suite

    def said(**link):
        meta = MachineMetadata.from_dict({"machine": "m", "pcie_gen_max": 5,
                                          "pcie_width_max": 16, **link})
        plan = SimpleNamespace(meta=meta, options=SimpleNamespace(quick=False, sweep="default",
                                                                  budget=None),
                               torch_version="2.11.0", cuda="13.0",
                               device=SimpleNamespace(name="cuda:0"), machine="m",
                               commit="c" * 40, total=3, groups=(), threads=None,
                               suite=Suite("/clone", CLONE))
        out = io.StringIO()
        announce(plan, out)
        return out.getvalue()

    assert "caution: the PCIe link ran at Gen4 x16 under load, below its maximum Gen5 x16" in \
        said(pcie_gen_load=4, pcie_width_load=16)
    assert "caution" not in said(pcie_gen_load=5, pcie_width_load=16)
    assert "caution" not in said()  # not read (a CPU, no NVML): nothing said


def test_the_results_file_is_named_as_asv_names_it_even_for_a_long_environment():
    from xferbench.results.asvfiles import results_file

    short = results_file("/r", "box", "a" * 40, "/tmp/x/python")
    assert short == "/r/box/aaaaaaaa-existing-py_tmp_x_python.json"
    long_wrapper = "/tmp/" + "deep/" * 30 + "python-sweepsmoke-quick"
    name = os.path.basename(results_file("/r", "box", "a" * 40, long_wrapper))
    assert name.startswith("aaaaaaaa-env-") and len(name) < 60  # asv hashes a long name

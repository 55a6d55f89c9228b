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
from xferbench.commands.run.budget import (
    ClassPlan,
    allot,
    check_budget,
    check_headline,
    plan_text,
)
from xferbench.commands.run.suite import HEADLINE_CLASSES, PRIORITY, SuiteClass
from xferbench.errors import XferbenchError
from xferbench.metadata import MachineMetadata
from xferbench.results import load
from xferbench.results.runrecords import Outcome, RunRecord
from xferbench.results.sidecar import load_sidecar, record_run

# With the others, not alone: a run's budget counts what it has spent, so it holds on a
# loaded host.

REPO = Path(__file__).resolve().parents[1]


def test_every_headline_part_is_set_aside_and_the_spare_shared_among_the_rests():
    # 200 s left after the report's reserve; headline parts 30 + 20, rests 100 + 100: the
    # 150 s beyond the headline parts covers three quarters of each rest
    plans = [ClassPlan(30, 100, 5), ClassPlan(20, 100, 5)]
    first = allot(200 + budget.REPORT_S, 0, plans, read_s=3)
    assert first.seconds == pytest.approx(30 + 75) and first.deadline(1000.0) == \
        pytest.approx(1000 + 105 - 3)
    # the first class used 60 s of its 105: the last one gets all that is left
    assert allot(200 + budget.REPORT_S, 60, plans[1:], read_s=3).seconds == pytest.approx(140)
    # where the whole grid fits, a class may use all but what the later ones are planned at
    fits = allot(400 + budget.REPORT_S, 0, plans, read_s=3)
    assert fits.seconds == pytest.approx(400 - 120)


def test_short_of_time_every_class_gets_its_least_and_a_share_of_the_rest_by_headline_part():
    """A machine slower than planned: 80 s left for headline parts of 40 + 30 + 50 s. Each
    class's least (its start, its values' reading, MIN_SAMPLING_S: 9 s) is set aside first;
    the 53 s beyond go by what each headline part needs beyond its least (31, 21, 41 of 93),
    so each still measures its first headline combinations, none is left without a number."""
    spent = 0.0
    plans = [ClassPlan(40, 10, 5, 2), ClassPlan(30, 10, 5, 2), ClassPlan(50, 10, 5, 2)]
    shares = []
    for i in range(len(plans)):
        share = allot(80 + budget.REPORT_S, spent, plans[i:], read_s=2)
        shares.append(share.seconds)
        spent += share.seconds or 0
    first = 9 + 53 * 31 / 93
    second = 9 + (80 - first - 18) * 21 / 62
    assert shares == pytest.approx([first, second, 80 - first - second])
    assert spent == pytest.approx(80)
    # too little left to start a class: not started
    tiny = allot(80 + budget.REPORT_S, 76, [ClassPlan(50, 0, 5)], read_s=2)
    assert tiny.seconds is None and tiny.deadline(0) is None
    assert "had 4.0 s left for this class" in budget.cut_reason(80, tiny.left_s)


def test_a_class_whose_share_falls_below_its_least_is_still_started():
    """Shared by headline part alone, a class with a short headline part got less than its
    start, its reading and MIN_SAMPLING_S need (9.1 of 9.3 s here) and was never started,
    while the run ended with that time unused. Its least is now set aside first."""
    plans = [ClassPlan(100, 50, 5, 2), ClassPlan(10, 10, 5, 2.3)]
    first = allot(100 + budget.REPORT_S, 0, plans, read_s=2)
    assert 100 * 10 / 110 < plans[1].need_s  # what the old share by headline part gave
    second = allot(100 + budget.REPORT_S, first.seconds, plans[1:], read_s=2.3)
    assert second.seconds == pytest.approx(100 - first.seconds)
    assert second.seconds >= plans[1].need_s
    # where even the leasts do not fit, the classes start in order, each with its least
    tight = [ClassPlan(100, 0, 5, 2), ClassPlan(100, 0, 5, 2)]
    assert allot(14 + budget.REPORT_S, 0, tight, read_s=2).seconds == pytest.approx(9)


@pytest.mark.parametrize("budget_s", [210, 218, 230])
def test_every_class_of_the_cuda_plan_starts_under_a_short_budget(budget_s):
    """The real suite's CUDA plan, each class spending its whole share where its plan holds
    more: every class is started, and the run's time is used, not left over (the last class,
    whose whole grid fits, may leave a moment)."""
    plans = [budget.class_plan(c) for c in _cuda_classes()]
    spent = 0.0
    for i, plan in enumerate(plans):
        share = allot(budget_s, spent, plans[i:], read_s=plan.read_s)
        assert share.seconds is not None, f"class {i} of {len(plans)} not started"
        spent += min(share.seconds, plan.total_s)
    assert budget_s - budget.REPORT_S - spent < 1.0


def _cuda_classes() -> list[SuiteClass]:
    """The suite as a CUDA device measures it (scripts/budget-plan's probe), default sweep."""
    import runpy

    from xferbench.commands.run.suite import describe_suite

    caps = runpy.run_path(str(REPO / "scripts" / "budget-plan"))["PROBES"]["cuda"]
    env = {**os.environ, "XFERBENCH_SWEEP": "default", "XFERBENCH_QUICK": "0",
           "XFERBENCH_PROBE": json.dumps({"device": "cuda:0", "capabilities": caps})}
    return [c for c in describe_suite(str(REPO), env) if c.measured]


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
    groups = [("Copy", ClassPlan(50, 100)), ("Creation", ClassPlan(20, 10)),
              ("Pipeline", ClassPlan(60, 40))]
    assert plan_text(500, groups).endswith("it holds the whole grid")
    text = plan_text(200, groups)
    assert "the headline combinations (every class's, at the default spec" in text
    assert "planned at 130 s, the rest of the grid at 150 s" in text
    assert "it holds every class's headline combinations and about 45% of the rest" in text
    assert "nothing is sampled under a cap" in text
    text = plan_text(100, groups)
    assert "it holds the headline combinations of Copy, Creation (70 s)" in text
    assert "Pipeline will be cut short or left out" in text
    assert "of no class" in plan_text(10, groups)


def test_the_plan_holds_a_headline_part_only_where_its_class_would_start():
    """--budget 15 --bench Copy on a CPU said it held every headline part and then cut Copy
    whole: the run's own start had taken 5 s, and a class starts only with its start, its
    values' reading and some sampling beside (allot). The plan counts both now."""
    copy = [("Copy", ClassPlan(10, 20, start_s=9))]  # 9 s start: allot needs 13 s
    assert "holds every class's headline combinations" in plan_text(30, copy)
    assert "of no class" in plan_text(14, copy)  # 12 s left after the report's 2 s: no
    assert "of no class" in plan_text(20, copy, spent_s=6)
    assert allot(14, 0, [copy[0][1]], 2.0).seconds is None  # and allot agrees


def test_a_budget_too_short_for_the_headline_classes_is_one_sentence():
    classes = [_cls({"track_step_s": [["cpu", "256"]] * 4}, name="Copy", headline=2),
               _cls({"track_step_s": [["cpu", "256"]]}, name="Hazards", headline=1)]
    # Copy's headline part: its start 5 s, 2 combinations of 2 s, its values' reading
    need = 5 + 2 * 2 + budget.read_time_s(classes[0]) + budget.REPORT_S
    check_headline(need + 1, classes)
    with pytest.raises(XferbenchError, match=r"^--budget 10 s is too short for the headline "
                                             r"classes: Copy need [\d.]+ s for their headline "
                                             r"combinations at the default spec .*; give at "
                                             rf"least {int(need) + 1} s$"):
        check_headline(10, classes)


def test_headline_classes_run_first_then_the_tables_then_every_other_class_by_file():
    """The order is derived: the headlines' classes (analysis/headline.py), the copy table's
    and the hazards', then every other class of every benchmarks/bench_*.py in file order."""
    assert HEADLINE_CLASSES == ("Copy", "Creation", "Loop", "Pipeline")
    assert PRIORITY == (*HEADLINE_CLASSES, "Hazards")
    probe = json.dumps({"device": "cpu", "capabilities": {
        "device": "cpu", "pinned_memory": False, "timing_events": False,
        "side_streams": False, "reason": "the CPU has none"}})
    from xferbench.commands.run.suite import describe_suite

    classes = describe_suite(str(REPO), {**os.environ, "XFERBENCH_PROBE": probe,
                                         "XFERBENCH_SWEEP": "default"})
    names = [c.name for c in classes]
    assert names[:len(PRIORITY)] == list(PRIORITY)
    files = sorted(p.stem for p in (REPO / "benchmarks").glob("bench_*.py"))
    rest = [c.file for c in classes[len(PRIORITY):]]
    assert rest == sorted(rest, key=files.index) and {c.file for c in classes} == set(files)
    assert "Behaviour" in names and "Peer" in names  # every class, measured here or not
    assert all(c.estimate_s > 0 for c in classes if c.measured)


def _cls(runs: dict[str, list[list[str]]], name: str = "Loop", headline: int = 0
         ) -> SuiteClass:
    measured = max((len(r) for r in runs.values()), default=0)
    return SuiteClass("bench_sync", name, tuple(runs), ("read", "width"), measured, measured,
                      {}, {}, 2.0 * measured, runs, headline, 2.0, 5.0, 2.0 * headline,
                      2.0 * (measured - headline))


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

    @classmethod
    def combination_s(cls, combo):
        return 0.7  # planned: it sleeps 0.6 s

    def measure(self, n):
        self.seen.append(_asv.spec().max_time_s)
        time.sleep(0.6)
        return {"track_x": float(n)}

    def track_x(self, n):
        return 0.0


def _grid_under(monkeypatch, budget_s: float, cap: bool) -> dict:
    import torch  # noqa: F401  (imported before the clock starts: the grid imports it)

    from benchmarks import _budget

    _Timed.seen = []
    monkeypatch.setattr(_asv, "BUDGET", _budget.Budget(time.time() + budget_s, cap))
    monkeypatch.setattr(_asv, "DEVICE", "cpu")
    return _Timed().measure_grid()


def test_under_a_budget_each_combination_runs_at_its_default_spec_or_is_cut(monkeypatch):
    out = _grid_under(monkeypatch, 1.6, cap=False)
    measured = [c for c, e in out.items() if "values" in e]
    cut = [e["skip"] for e in out.values() if "skip" in e]
    assert len(measured) == 2 and len(cut) == 2, out  # 0.7 s planned each, 1.6 s in all
    assert all(s.startswith("cut: the run's budget (--budget) had") and "planned at 0.7 s"
               in s and "never sampled under a cap" in s for s in cut)
    # nothing sampled under a cap: the default spec's budget, and no entry says capped
    assert _Timed.seen == [_asv.DEFAULT_SPEC.max_time_s] * 2
    assert not any("capped" in e for e in out.values())
    monkeypatch.setattr(_asv, "BUDGET", _asv._budget.Budget(None, False))
    _Timed.seen = []
    assert all("values" in e for e in _Timed().measure_grid().values())
    assert _Timed.seen == [_asv.DEFAULT_SPEC.max_time_s] * 4


def test_a_class_that_was_started_always_measures_its_first_combination(monkeypatch):
    """Its start slower than planned (a loaded machine), a class may find its deadline
    already near at its first combination: it measures that one (one combination past the
    deadline at most) and cuts the rest, so that every class started saves a number."""
    out = _grid_under(monkeypatch, 0.2, cap=False)
    entries = list(out.values())
    assert "values" in entries[0] and all("skip" in e for e in entries[1:]), out
    assert _Timed.seen == [_asv.DEFAULT_SPEC.max_time_s]


class _NoFigureFirst(_Timed):
    """Its first ``blank`` combinations give no figure here (as the busy-stream hazard on a
    device that does not hold the work behind its spin), the rest a number."""

    blank = 1
    deadlines: list[float | None] = []

    def measure(self, n):
        self.seen.append(_asv.spec().max_time_s)
        self.deadlines.append(_asv.BUDGET.combination_deadline)
        time.sleep(0.6)
        if n <= self.blank:
            raise _asv.NoFigure(f"no figure for n={n} here")
        return {"track_x": float(n)}


@pytest.mark.parametrize("blank", [1, 2, 4])
def test_a_started_class_whose_first_combination_gives_no_figure_still_saves_one(
        monkeypatch, blank):
    """A class whose first combination gives no figure (the busy-stream hazard on the
    emulated device) and whose deadline then cut the rest would save no number. So a class
    with no number yet measures past its time, up to MAX_OVERRUNS combinations: with one
    blank it saves the second; with MAX_OVERRUNS blanks or more it stops there, so a run's
    overrun stays bounded. Each such combination is measured whole: no deadline
    for its fixed-count work (Hazards' trials would stop at once, and be cut)."""
    from benchmarks import _budget

    _NoFigureFirst.blank = blank
    _NoFigureFirst.seen = []
    _NoFigureFirst.deadlines = []
    monkeypatch.setattr(_asv, "BUDGET", _budget.Budget(time.time() + 0.2, False))
    monkeypatch.setattr(_asv, "DEVICE", "cpu")
    entries = list(_NoFigureFirst().measure_grid().values())
    tried = min(blank + 1, _budget.MAX_OVERRUNS)
    assert len(_NoFigureFirst.seen) == tried, entries
    assert _NoFigureFirst.deadlines == [None] * tried
    assert all(e["skip"].startswith("no figure") for e in entries[:min(blank, tried)])
    if blank < _budget.MAX_OVERRUNS:
        assert entries[blank] == {"values": {"track_x": float(blank + 1)}}, entries
    assert all(e["skip"].startswith("cut: the run's budget") for e in entries[tried:])


def test_with_cap_sampling_is_capped_and_each_capped_combination_says_so(monkeypatch):
    out = _grid_under(monkeypatch, 2.2, cap=True)
    measured = {c: e for c, e in out.items() if "values" in e}
    cut = [e["skip"] for e in out.values() if "skip" in e]
    assert measured and cut and len(measured) + len(cut) == 4
    assert all(s.startswith("cut: the run's budget (--budget) left") for s in cut)
    # each measured combination's sampling: its share of what was left, not the default
    assert all(cap < _asv.DEFAULT_SPEC.max_time_s for cap in _Timed.seen)
    assert all(e["capped"].startswith("sampled under a budget cap: max_time_s ")
               for e in measured.values())


def test_a_run_whose_budget_cannot_hold_the_headline_classes_is_refused_before_it_runs(
        tmp_path):
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--budget", "5",
                           "--device", "cpu", "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--budget 5 s is too short for the headline classes" in lines[0]
    assert not results.exists()


def test_cap_without_a_budget_is_one_sentence(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--cap", "--results",
                           str(tmp_path / "r")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "xferbench: --cap caps sampling to fit a --budget: give --budget S with it"]


@pytest.mark.slow
def test_a_run_under_a_budget_ends_in_time_and_says_what_it_cut(tmp_path):
    results = tmp_path / "results"
    started = time.monotonic()
    # 16 s: Copy's start and its headline row fit (planned at 10 s, the run's own start and end
    # beside); its whole CPU grid is planned past it, but what a host measures in 16 s
    # varies (three of ten here when loaded, all ten in a quiet CI run at 20 s and once at
    # 16 s): what is not measured must be cut, saying so. Cutting itself is pinned in process
    # (test_under_a_budget_each_combination_runs_at_its_default_spec_or_is_cut).
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--budget", "16",
                           "--bench", "bench_copies.Copy", "--device", "cpu",
                           "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - started
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert took < 16 + 15, f"{took:.0f} s for --budget 16"  # asv's exits, a loaded machine
    assert "xferbench run: --budget 16 s: the headline combinations (every class's" \
        in proc.stdout
    path = next(p for p in results.glob("*/*.json") if p.name != "machine.json")
    side = load_sidecar(str(path))
    assert side.runs[-1].budget_s == 16.0 and side.runs[-1].complete is True
    assert not side.runs[-1].capped and not side.capped  # nothing sampled under a cap
    reasons = {row.reason for rows in side.outcomes.values() for row in rows
               if "budget" in row.reason}
    assert all(r.startswith("cut: the run's budget (--budget") for r in reasons)
    # every combination without a number says why (cut by the budget, or not on a CPU)
    name = "bench_copies.Copy.track_completion_s"
    said = {frozenset(row.params) for row in side.outcomes.get(name, ())}
    missing = [frozenset((k, str(v)) for k, v in r.params)
               for r in load(str(results)) if r.benchmark == name and not r.ok]
    assert missing and all(params in said for params in missing), (missing, said)
    # the headline combination (the copy table's row at 64 MiB) came first and has its number
    assert any(r.ok and r.param_dict["size"] == "64MiB" for r in load(str(results))
               if r.benchmark == "bench_copies.Copy.track_completion_s")


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
                               suite=Suite("/clone", CLONE), commit_source="git")
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


def test_every_class_of_the_suite_has_a_measured_cost():
    """benchmarks/costs.json holds what scripts/grid-time costs measured for every class of
    the suite: a class without one would be planned at a default typed in the code."""
    from xferbench.commands.run.suite import describe_suite

    probe = json.dumps({"device": "cpu", "capabilities": {
        "device": "cpu", "pinned_memory": False, "timing_events": False,
        "side_streams": False, "reason": "the CPU has none"}})
    names = {c.name for c in describe_suite(str(REPO), {**os.environ, "XFERBENCH_PROBE": probe})}
    costs = json.loads((REPO / "benchmarks" / "costs.json").read_text())["classes"]
    again = ("measure them again with `DEVICE=emu SWEEP=smoke "
             "COSTS_OUT=benchmarks/costs.json scripts/grid-time costs`")
    for name in sorted(names):
        cost = costs.get(name, {})
        assert all(isinstance(cost.get(k), (int, float)) for k in ("start_s", "combination_s")), \
            f"benchmarks/costs.json has no cost for the class {name}: {again}"
    assert set(costs) <= names, \
        f"benchmarks/costs.json names {sorted(set(costs) - names)}, not in the suite: {again}"


def test_a_run_that_cut_classes_says_what_a_second_run_needs():
    """The report names a narrower second run: --bench the classes the budget left out or cut
    short, --budget their whole plans, the run's own start and its report."""
    from types import SimpleNamespace

    from xferbench.commands.run.report import RUN_START_S, SECOND_RUN, RunReport

    copy = _cls({"track_step_s": [["cpu", "256"]] * 3}, name="Copy", headline=1)
    hazards = _cls({"track_step_s": [["cpu", "256"]] * 2}, name="Hazards")
    plan = SimpleNamespace(options=SimpleNamespace(budget=60.0, sweep="smoke", results_dir="r"),
                           meta=MachineMetadata(), ran=None, torch_version="2.13.0")
    report = RunReport(plan, "r.json", None, 50.0, (0,), (), cut_classes=("Hazards",),
                       second=(copy, hazards))
    regex, seconds = report.second_run()
    assert regex == r"^(bench_sync\.Copy|bench_sync\.Hazards)\."
    planned = sum(budget.class_plan(c).total_s for c in (copy, hazards))
    assert seconds == int(planned + RUN_START_S + budget.REPORT_S) + 1
    assert f"{SECOND_RUN} --bench '{regex}' --budget {seconds}" in report.text()
    assert RunReport(plan, "r.json", None, 50.0, (0,), ()).second_run() is None

"""Numbers that read as what they are not, each said for what it is: a count of missing
combinations that is a count of missing numbers, a noise too wide to quote bare, a run's
first estimate of the time left, a run still going that is not cut short, a figure filed
under another machine's name, a CPU build drawn as a step between CUDA releases, a practice
that does nothing on a CPU, the default grid called full."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO_ROOT, committed_results

from xferbench.analysis.cautions import NOISY, noise_caution, noise_text
from xferbench.analysis.claims import DECIDED, evaluate
from xferbench.analysis.claimtable import load_table
from xferbench.analysis.provenance import CUT_SHORT, RUNNING, series_provenance
from xferbench.cli import main
from xferbench.commands.publish.catalog import catalog
from xferbench.commands.publish.unmeasured import Unmeasured, gaps
from xferbench.commands.publish.views import benchmark_views
from xferbench.commands.run.progress import Progress
from xferbench.results import load
from xferbench.results.lock import results_lock
from xferbench.results.runrecords import ProgressLine

RESULTS = committed_results()
GOLDEN = Path(__file__).resolve().parent / "golden" / "results"


def test_a_reason_counts_the_numbers_it_leaves_missing_not_only_its_combinations():
    items = [Unmeasured(f"box{i}", "2.13.0", "b.C.track_s", (("size", "4KiB"),), "skipped",
                        "needs a GPU") for i in range(60)]
    items.append(Unmeasured("box0", "2.13.0", "b.C.track_s", (("size", "64MiB"),), "skipped",
                            "needs a GPU"))
    (gap,) = gaps({"size": ["4KiB", "64MiB"]}, items, "b.C.track_s")
    assert len(gap.combos) == 2 and gap.missing == 61 and len(gap.series) == 60


def test_a_noise_above_the_bound_is_marked_wherever_it_is_shown():
    assert noise_text(0.028) == "2.8%" and noise_text(None) == "n/a"
    assert noise_text(0.52) == "52.0% (noisy)" and noise_text(NOISY) == "10.0%"
    assert noise_text(0.10004) == "10.0%"  # marked as shown: "10.0%" is not above 10%
    rs = load(str(RESULTS))
    quiet = next(r for r in rs if r.spread is not None and r.spread < NOISY)
    assert noise_caution(quiet) is None
    noisy = next((r for r in rs if r.spread is not None and r.spread > NOISY), None)
    assert noisy is not None, "the committed results hold no noisy figure to check against"
    assert noise_caution(noisy).startswith(f"noisy: its IQR is {noisy.spread:.0%} of the median")


def test_cite_cautions_a_noisy_number(tmp_path, capsys):
    rs = load(str(RESULTS))
    r = next(r for r in rs if r.spread is not None and r.spread > NOISY and r.machine ==
             "cpu-2core-vm" and not r.mode)
    params = ",".join(f"{k}={v}" for k, v in r.params)
    assert main(["cite", r.benchmark, "--params", params, "--torch", r.torch, "--machine",
                 r.machine, "--results", str(RESULTS), "--format", "json"]) == 0
    cited = json.loads(capsys.readouterr().out)
    assert "noisy: its IQR is" in cited["caution"] and "Caution: noisy" in cited["sentence"]


def _line(event: str, seconds: float = 0.0) -> ProgressLine:
    return ProgressLine(event, "bench_copies.Copy", 1, 61, ("h2d",), "measured", seconds)


def test_the_first_estimate_of_the_time_left_does_not_spread_a_start_over_every_combination(
        tmp_path):
    progress = Progress(str(tmp_path / "p.jsonl"), 61, io.StringIO())
    progress._param_names = {f"bench_x.C{i}": [] for i in range(6)}  # six classes to start
    progress._line(json.dumps({"event": "start", "class_name": "bench_x.C0", "done": 0,
                               "total": 61}))
    progress._line(json.dumps({"event": "combination", "class_name": "bench_x.C0",
                               "done": 1, "total": 61, "status": "measured",
                               "seconds": 0.2}))
    # 2.4 s in: the class's start took 2.2 s, its first combination 0.2 s
    left = progress.left_s(2.4)
    assert left == pytest.approx(0.2 * 60 + 2.2 * 5)
    assert left < 2.4 / 1 * 60 / 4  # the old estimate (elapsed per done) read 5x this


@pytest.fixture
def unfinished(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    shutil.copytree(RESULTS, root)
    side = next(root.glob("cpu-2core-vm/*2.13.0*.metadata"))
    data = json.loads(side.read_text())
    for run in (data["run"], data["runs"][-1]):
        run["complete"] = False
        run.pop("finished_at", None)
    side.write_text(json.dumps(data))
    return root


def test_a_run_still_going_is_not_called_cut_short(unfinished):
    rs = load(str(unfinished))
    key = next(k for k in rs.series() if k.machine == "cpu-2core-vm" and "2.13.0" in k.torch)
    assert CUT_SHORT in series_provenance(rs, key).reasons()  # no run holds the folder
    with results_lock(str(unfinished)):
        reasons = series_provenance(load(str(unfinished)), key).reasons()
    assert RUNNING in reasons and CUT_SHORT not in reasons


def test_a_figure_drawn_in_another_machines_chart_says_so(capsys):
    assert main(["cite", "Loop.track_step_s", "--params", "read=cpu,width=256", "--torch",
                 "2.13.0", "--machine", "cpu-2core-vm-rerun", "--results", str(RESULTS),
                 "--format", "json"]) == 0
    cited = json.loads(capsys.readouterr().out)
    assert "/trend/cpu-2core-vm/" in cited["figure"] and cited["chart"] == "cpu-2core-vm"
    assert "(cpu-2core-vm's chart, which draws cpu-2core-vm-rerun beside it)" \
        in cited["sentence"]
    assert main(["cite", "Loop.track_step_s", "--params", "read=cpu,width=256", "--torch",
                 "2.13.0", "--machine", "cpu-2core-vm", "--results", str(RESULTS),
                 "--format", "json"]) == 0
    assert "chart" not in json.loads(capsys.readouterr().out)  # its own chart: nothing to say


def test_a_cpu_build_is_a_line_of_its_own_never_a_step_between_releases():
    """The golden dataset: 2.13.0+cpu and 2.14.1+cu130 on one machine."""
    views = benchmark_views(catalog(load(str(GOLDEN))), 0.05)
    trend = next(t for v in views for t in v.trends if len(t.points) == 2)
    assert [line.name for line in trend.lines] == ["cpu-2core-vm", "cpu-2core-vm (+cpu builds)"]
    assert all(line.steps == () for line in trend.lines)  # one point each: no step drawn
    assert trend.machines == ("cpu-2core-vm",)


def test_no_claim_is_decided_on_a_cpu_by_a_practice_that_does_nothing_there():
    """A ratio claim a CPU series decides says what its figures mean there (``cpu_note``):
    the others (a move to the device, non_blocking) are not measurable on a CPU."""
    report = evaluate(load(str(RESULTS)), load_table(), repo=str(REPO_ROOT))
    decided = {claim.id for claim, cells in report.rows for c in cells
               if c.verdict in DECIDED and c.provenance.cpu_only and claim.rule.kind == "ratio"}
    assert decided == {"item-per-batch"}
    assert all(claim.cpu_note for claim, _ in report.rows if claim.id in decided)

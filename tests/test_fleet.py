"""xferbench fleet without Slurm: merging folders made elsewhere (from the golden dataset, a
real two-release run), job folders after the fact, bad input, the local executor end to end,
and the machines side by side on the published page. The real Slurm: test_fleet_slurm.py."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.analysis.stats import THRESHOLD
from xferbench.cli import main
from xferbench.commands.fleet import job as fleetjob
from xferbench.commands.publish.machines import machine_tables
from xferbench.commands.publish.sections import machines_section
from xferbench.commands.publish.views import page_views
from xferbench.results import load
from xferbench.results.merging import FINISHED, STARTED, write_marker

GOLDEN = Path(__file__).resolve().parent / "golden" / "results"
MACHINE = "cpu-2core-vm"
OLD = "be608654-existing-py_tmp_xferbench-0_torch2.13.0-cpu-cudanone_python"
NEW = "be608654-existing-py_tmp_xferbench-0_torch2.14.1-cu130-cuda13.0_python"
LOOP = "bench_sync.Loop.track_step_s"


def made_elsewhere(where: Path, *, machine: str = MACHINE, host: str = "vm",
                   keep: tuple[str, ...] = (OLD, NEW)) -> Path:
    """The golden results as another node made them: its machine name and host name."""
    shutil.copytree(GOLDEN, where)
    folder = where / MACHINE
    for name in (OLD, NEW):
        if name not in keep:
            (folder / f"{name}.json").unlink()
            (folder / f"{name}.metadata").unlink()
            continue
        side = json.loads((folder / f"{name}.metadata").read_text())
        side["metadata"]["hostname"] = host
        (folder / f"{name}.metadata").write_text(json.dumps(side))
        data = json.loads((folder / f"{name}.json").read_text())
        data["params"]["machine"] = machine
        (folder / f"{name}.json").write_text(json.dumps(data))
    if machine != MACHINE:
        folder.rename(where / machine)
    return where


def digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "lock" not in p.name}


def fleet(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["fleet", *args])
    out, err = capsys.readouterr()
    return code, out, err


# -- merging -----------------------------------------------------------------------------------

def test_merge_files_a_results_folder_whole_and_again_changes_nothing(tmp_path, capsys):
    src, dest = made_elsewhere(tmp_path / "copied"), tmp_path / "results"
    code, out, err = fleet(capsys, "merge", str(src), "--results", str(dest))
    assert (code, err) == (0, "")
    assert f"{src} -> {MACHINE}: torch 2.13.0+cpu, 65 measured" in out
    merged, given = load(str(dest)), load(str(src))
    assert sorted((r.key, r.torch, r.value) for r in merged) == \
        sorted((r.key, r.torch, r.value) for r in given)
    before = digests(dest)
    assert fleet(capsys, "merge", str(src), "--results", str(dest))[0] == 0
    assert digests(dest) == before


def _constant(data: dict, name: str, value: float) -> None:
    """Every measured value of ``name`` made ``value``, its quartiles and samples with it (a
    median outside its own quartiles is a damaged file)."""
    cols = dict(zip(data["result_columns"], data["results"][name]))
    count = len(cols["result"])
    for key in ("result", "stats_q_25", "stats_q_75", "stats_ci_99_a", "stats_ci_99_b"):
        if cols.get(key):
            cols[key] = [value] * count
    if cols.get("samples"):
        cols["samples"] = [[value] * 5] * count
    data["results"][name] = [cols[c] for c in data["result_columns"][: len(data["results"][name])]]


def test_merge_keeps_the_newer_result_of_each_benchmark(tmp_path, capsys):
    dest = made_elsewhere(tmp_path / "results", keep=(OLD,))
    older = made_elsewhere(tmp_path / "older", keep=(OLD,))
    path = older / MACHINE / f"{OLD}.json"
    data = json.loads(path.read_text())
    started = data["result_columns"].index("started_at")
    for row in data["results"].values():  # every result a day older than the destination's
        row[started] -= 86_400_000
    _constant(data, LOOP, 9.0)
    ready = "bench_creation.Creation.track_ready_s"
    _constant(data, ready, 7.0)  # older: not taken
    del data["results"]["bench_copies.Copy.track_device_s"]
    path.write_text(json.dumps(data))
    (dest / MACHINE / f"{OLD}.json").write_text(json.dumps(
        {**json.loads((dest / MACHINE / f"{OLD}.json").read_text()),
         "results": {k: v for k, v in json.loads(
             (dest / MACHINE / f"{OLD}.json").read_text())["results"].items() if k != LOOP}}))
    code, out, _ = fleet(capsys, "merge", str(older), "--results", str(dest))
    assert code == 0 and "kept, newer in the destination" in out
    rs = load(str(dest))
    assert rs.find("bench_copies.Copy.track_device_s")  # only the destination had it: kept
    loop = rs.find(LOOP)  # only the source had it: taken, its values as they were
    assert loop and all(r.value == 9.0 for r in loop)
    assert rs.find(ready) and not any(r.value == 7.0 for r in rs.find(ready))


def test_a_damaged_results_file_merges_nothing(tmp_path, capsys):
    dest = made_elsewhere(tmp_path / "results", keep=(OLD,))
    good = made_elsewhere(tmp_path / "good", machine="other", host="other")
    bad = made_elsewhere(tmp_path / "bad", machine="third", host="third")
    path = bad / "third" / f"{NEW}.json"
    path.write_bytes(path.read_bytes()[:5000])  # cut short, as a kill mid-write leaves it
    before = digests(dest)
    code, out, err = fleet(capsys, "merge", str(good), str(bad), "--results", str(dest))
    assert code == 2 and out == ""
    assert err.startswith(f"xferbench: results file {path} is not valid JSON") and \
        err.count("\n") == 1
    assert digests(dest) == before and not (dest / "other").exists()


def test_a_run_that_did_not_finish_is_not_merged(tmp_path, capsys):
    src = made_elsewhere(tmp_path / "cut")
    side = src / MACHINE / f"{NEW}.metadata"
    side.write_text(json.dumps({**json.loads(side.read_text()),
                                "run": {"complete": False, "started_at": "x"}}))
    code, _, err = fleet(capsys, "merge", str(src), "--results", str(tmp_path / "r"))
    assert code == 2 and "is from a run that did not finish" in err
    stage = tmp_path / "stage"
    stage.mkdir()
    write_marker(str(stage), STARTED, {"task": 0})
    shutil.copytree(GOLDEN, stage / "results")
    code, _, err = fleet(capsys, "merge", str(stage), "--results", str(tmp_path / "r"))
    assert code == 2 and err == (f"xferbench: {stage} is a fleet task's folder whose run did "
                                 f"not finish (no {FINISHED}): nothing of it is merged\n")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("argv, sentence", [
    (["merge", "{tmp}"], "{tmp} is not a results folder (no benchmarks.json in it or in its "
                         "results/), a fleet task's folder or a fleet job folder"),
    (["status", "{tmp}"], "{tmp} is not a fleet job folder: it has no fleet.json (xferbench "
                          "fleet run writes one)"),
    (["status", "{tmp}/gone"], "{tmp}/gone is not a fleet job folder: it does not exist"),
    (["run", "--resume", "{tmp}"], "{tmp} is not a fleet job folder: it has no fleet.json "
                                   "(xferbench fleet run writes one)"),
    (["run", "--nodes", "0"], "--nodes 0 is not a node count: give 1 or more"),
    (["run", "--time", "0"], "--time 0 is not a time limit: give minutes, 1 or more"),
    (["run", "--nodes", "2", "--machine", "a"],
     "--machine is given 1 times for --nodes 2: give it once per node, or not at all"),
    (["run", "--nodes", "2", "--machine", "a", "--machine", "a"],
     "--machine a is given twice: two nodes never share a machine name"),
    (["run", "--machine", "../x"], "--machine '../x' is not a machine name: use up to 100 "
                                   "letters, digits, '.', '_' and '-', starting with a letter "
                                   "or digit"),
    (["run", "--resume", "{tmp}", "--nodes", "3"],
     "--resume reuses the job's options: --nodes cannot be given with it"),
])
def test_bad_input_is_one_sentence_and_exit_2(tmp_path, capsys, argv, sentence):
    code, out, err = fleet(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert (code, out) == (2, "")
    assert err == f"xferbench: {sentence.format(tmp=tmp_path)}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_unknown_executor_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fleet", "run", "--executor", "k8s"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --executor: invalid choice: 'k8s' (choose from 'slurm', 'local')" in err
    assert err.count("\n") == 1


def test_slurm_without_its_commands_is_one_sentence_and_leaves_no_folder(tmp_path):
    pytest.importorskip("submitit")
    bin_dir = tmp_path / "bin"  # git, and no srun or sbatch
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    out = subprocess.run(
        [sys.executable, "-m", "xferbench", "fleet", "run", "--folder",
         str(tmp_path / "new" / "job"), "--results", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=120,
        env={"PATH": f"{Path(sys.executable).parent}:{bin_dir}", "HOME": str(tmp_path)})
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == ("xferbench: Slurm's srun is not on PATH: this machine cannot submit "
                          "to Slurm (use --executor local to run the tasks here)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


def test_without_submitit_fleet_run_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit raises ImportError
    code, _, err = fleet(capsys, "run", "--executor", "local")
    assert code == 2
    assert err == ("xferbench: xferbench fleet run needs submitit, which is not installed: "
                   "pip install 'xferbench[fleet]'\n")


# -- two nodes, one name -----------------------------------------------------------------------

def test_two_hosts_under_one_machine_name_get_two_series(tmp_path, capsys):
    a = made_elsewhere(tmp_path / "a", machine="gpu-box", host="node7")
    b = made_elsewhere(tmp_path / "b", machine="gpu-box", host="node8")
    dest = tmp_path / "results"
    code, out, _ = fleet(capsys, "merge", str(a), str(b), "--results", str(dest))
    assert code == 0
    assert (f"xferbench fleet: {b} names its machine 'gpu-box', which another node ({a}) "
            "already holds: its results go to 'gpu-box-node8'") in out
    assert sorted(load(str(dest)).machines()) == ["gpu-box", "gpu-box-node8"]
    assert json.loads((dest / "gpu-box-node8" / "machine.json").read_text())["machine"] == \
        "gpu-box-node8"
    # later, a third host under the name: the destination's sidecars say whose it is
    c = made_elsewhere(tmp_path / "c", machine="gpu-box", host="node9")
    code, out, _ = fleet(capsys, "merge", str(c), "--results", str(dest))
    assert "which another node (host node7 in" in out and "go to 'gpu-box-node9'" in out
    # the first host again: its own series, no new name
    again = made_elsewhere(tmp_path / "again", machine="gpu-box", host="node7")
    code, out, _ = fleet(capsys, "merge", str(again), "--results", str(dest))
    assert code == 0 and "names its machine" not in out and f"{again} -> gpu-box:" in out


def test_two_folders_from_one_host_share_its_series(tmp_path, capsys):
    first = made_elsewhere(tmp_path / "first", machine="ci-gpu", host="runner1", keep=(OLD,))
    second = made_elsewhere(tmp_path / "second", machine="ci-gpu", host="runner1", keep=(NEW,))
    dest = tmp_path / "results"
    code, out, _ = fleet(capsys, "merge", str(first), str(second), "--results", str(dest))
    assert code == 0 and "names its machine" not in out
    rs = load(str(dest))
    assert rs.machines() == ["ci-gpu"] and rs.torch_versions() == ["2.13.0+cpu", "2.14.1+cu130"]


# -- a job folder after the fact ---------------------------------------------------------------

def fake_job(tmp_path: Path) -> Path:
    """A local job of two tasks whose processes are gone: task 0 finished, task 1 was
    killed mid-run (started, no end marker)."""
    folder = tmp_path / "job"
    folder.mkdir()
    plan = fleetjob.new_plan(str(folder), executor="local", repo="/", python=sys.executable,
                             results=str(tmp_path / "results"), run_args=["--quick"],
                             scheduler={}, submissions=[],
                             tasks=[{"index": i, "machine": None, "jobs": [f"99999999{i}"]}
                                    for i in range(2)])
    fleetjob.save(plan)
    for i in range(2):
        stage = folder / "stage" / f"99999999{i}-n{i}"
        made_elsewhere(stage / "results", host="vm")
        write_marker(str(stage), STARTED, {"task": i, "node": f"n{i}"})
    write_marker(str(folder / "stage" / "999999990-n0"), FINISHED,
                 {"task": 0, "node": "n0", "machine": MACHINE,
                  "node_key": fleetjob.node_key(plan, 0)})
    return folder


def test_a_job_folder_merges_its_finished_tasks_and_names_the_others(tmp_path, capsys):
    job = fake_job(tmp_path)
    code, out, _ = fleet(capsys, "status", str(job))
    assert code == 3  # a task failed: status says so in its exit status too
    assert [ln.split()[:3] for ln in out.splitlines()[2:4]] == [
        ["0", "999999990", "done"], ["1", "999999991", "failed"]]
    assert "its job left the queue before the run finished" in out
    assert f"'xferbench fleet run --resume {job}' runs them again" in out
    dest = tmp_path / "results"
    code, out, err = fleet(capsys, "merge", str(job), "--results", str(dest))
    assert code == 3  # a task failed: its results are lost, the other's are merged
    assert "task 0 (job 999999990 on n0) -> cpu-2core-vm" in out
    assert "task 1 (job 999999991): failed on n1" in err
    assert load(str(dest)).machines() == [MACHINE]
    plan = json.loads((job / "fleet.json").read_text())
    assert plan["merged"]["0"]["target"] == MACHINE and "1" not in plan["merged"]
    assert "merged" in fleet(capsys, "status", str(job))[1].splitlines()[2]


def test_a_merge_is_refused_while_a_run_writes_the_results_folder(tmp_path, capsys):
    from xferbench.results.lock import results_lock

    dest = made_elsewhere(tmp_path / "results", keep=(OLD,))
    before = digests(dest)
    with results_lock(str(dest)):  # an xferbench run in progress
        code, out, err = fleet(capsys, "merge", str(fake_job(tmp_path)), "--results", str(dest))
    assert (code, out) == (2, "")
    assert err == (f"xferbench: another xferbench run is writing to {dest}: wait for it to "
                   "finish or give another --results folder\n")
    assert digests(dest) == before


# -- the local executor, end to end ------------------------------------------------------------

@pytest.mark.slow
def test_local_executor_runs_each_task_and_merges_it(tmp_path):
    pytest.importorskip("submitit")
    out = subprocess.run(
        [sys.executable, "-m", "xferbench", "fleet", "run", "--executor", "local",
         "--quick", "--bench", "CreatedInForward", "--machine", "here",
         "--folder", str(tmp_path / "job"), "--results", str(tmp_path / "results"),
         "--poll", "0.3"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 task submitted as local processes" in out.stdout
    assert "done on" in out.stdout and ", machine here" in out.stdout
    assert "-> here: torch" in out.stdout and "3 measured, 0 skipped, 0 failed" in out.stdout
    assert load(str(tmp_path / "results")).machines() == ["here"]
    stage = next((tmp_path / "job" / "stage").iterdir())
    assert sorted(p.name for p in stage.iterdir()) == [
        "finished.json", "results", "run.log", "started.json"]


# -- the published page: the machines side by side ---------------------------------------------

def test_machines_side_by_side_for_one_release(tmp_path, capsys):
    dest = tmp_path / "results"
    for name, host in (("h100-box", "n1"), ("h200-box", "n2")):
        src = made_elsewhere(tmp_path / name, machine=name, host=host)
        assert fleet(capsys, "merge", str(src), "--results", str(dest))[0] == 0
    rs = load(str(dest))
    v = page_views(rs, 0.05, THRESHOLD)
    tables = machine_tables(v.series, v.headlines, v.copies)
    assert [(t.release, [s.machine for s in t.series]) for t in tables] == [
        ("2.14.1", ["h100-box", "h200-box"]), ("2.13.0", ["h100-box", "h200-box"])]
    newest = tables[0]
    assert [what for what, _ in newest.copies] == ["h2d, pageable, blocking, one",
                                                   "h2d, pageable, blocking, many"]
    assert all(c is not None for _, cells in newest.copies for c in cells)
    assert newest.values and all(len(cells) == 2 for _, cells in newest.values)
    assert "torch.zeros(n, device=dev) vs torch.zeros(n).to(dev), 64MiB" in [
        title for title, _ in newest.headlines]
    html = "\n".join(machines_section(tables, "64MiB"))
    assert html.count('<details class="release"') == 2 and 'id="machines"' in html
    # the golden runs were quick: each column says so (its trend: the machine and its mode)
    assert "h100-box (quick)<br><small>torch 2.14.1+cu130</small>" in html
    # one machine per release: no such section (the single-machine page stays as it was)
    one = load(str(GOLDEN))
    v1 = page_views(one, 0.05, THRESHOLD)
    assert machine_tables(v1.series, v1.headlines, v1.copies) == []

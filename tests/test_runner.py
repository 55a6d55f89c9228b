"""xferbench run: bad input, the results lock, interrupts, and a real asv run on the CPU."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import all_committed_results, committed_results, slow_fixture

from xferbench.cli import main
from xferbench.metadata import MachineMetadata
from xferbench.results import asvconfig, asvfiles, load, lock, machines
from xferbench.results.backup import backup_path, discard, protect, protected, settle
from xferbench.results.sidecar import metadata_path

REPO = Path(__file__).resolve().parents[1]


def _one_stderr_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_run_with_absent_device_exits_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "--device", "cuda:3", "--results", str(out)]) == 2
    assert "cuda:3" in _one_stderr_line(capsys)
    assert not out.exists()


def test_run_with_bad_regex_exits_2(tmp_path, capsys):
    assert main(["run", "--bench", "Copy(", "--results", str(tmp_path / "r")]) == 2
    assert "regular expression" in _one_stderr_line(capsys)
    assert not (tmp_path / "r").exists()


def test_run_with_typo_option_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--quik"])
    assert exc.value.code == 2
    assert "--quik" in _one_stderr_line(capsys)


def test_second_run_on_same_results_is_refused(tmp_path, capsys):
    with lock.results_lock(str(tmp_path)):
        assert main(["run", "--quick", "--results", str(tmp_path)]) == 2
    assert "another xferbench run is writing" in _one_stderr_line(capsys)


def test_two_torch_versions_get_two_result_files(tmp_path):
    a = asvfiles.results_file(str(tmp_path), "m", "0" * 40,
                             asvconfig.interpreter_wrapper("2.13.0+cpu", "none"))
    b = asvfiles.results_file(str(tmp_path), "m", "0" * 40,
                             asvconfig.interpreter_wrapper("2.14.1+cu130", "13.0"))
    assert a != b
    assert "torch2.13.0-cpu-cudanone" in a and "torch2.14.1-cu130-cuda13.0" in b


def test_truncated_results_file_is_restored_from_its_backup(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": {"x": 1}}))
    backup = backup_path(str(path))
    protect(str(path), backup)
    path.write_text('{"results": {"x"')  # what a kill in the middle of asv's write leaves
    settle(str(path), backup)
    assert json.loads(path.read_text()) == {"results": {"x": 1}}
    assert not os.path.exists(backup)


def test_default_machine_name_names_the_gpu():
    assert machines.default_machine_name(MachineMetadata(
        hostname="node7", gpu_name="NVIDIA H200", accelerator="cuda")) == "node7-nvidia-h200"
    assert machines.default_machine_name(MachineMetadata(hostname="vm")) == "vm-cpu"


def test_an_emulated_device_says_so_in_the_machine_name():
    meta = MachineMetadata(hostname="vm", accelerator="npu", gpu_name="Ascend 910",
                           emulated=True)
    assert machines.default_machine_name(meta) == "vm-ascend-910-emulated"
    meta = replace(meta, gpu_name="xferbench emulated accelerator")  # said once, not twice
    assert machines.default_machine_name(meta) == "vm-xferbench-emulated-accelerator"


# -- end to end: real asv runs on this machine -------------------------------------------------

BENCH = r"Copy\.track_completion_s"


def _run(results: Path, *extra: str, **kw) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "xferbench", "run", "--quick", "--device", "cpu",
           "--machine", "testbox", "--results", str(results), "--bench", BENCH, *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kw)


@pytest.fixture(scope="module")
@slow_fixture
def cpu_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    proc = _run(results)
    out, _ = proc.communicate(timeout=600)
    return results, proc.returncode, out


@pytest.mark.slow
def test_run_records_cpu_numbers_and_skips_accelerator_rows(cpu_run):
    import torch

    results, code, out = cpu_run
    assert code == 0, out
    rs = load(str(results))
    assert rs.torch_versions() == [torch.__version__]
    rows = rs.find("bench_copies.Copy.track_completion_s")
    ran = [r for r in rows if r.ok]
    assert {(r.param_dict["direction"], r.param_dict["host_memory"], r.param_dict["sync"])
            for r in ran} == {("h2d", "pageable", "blocking")}
    assert len(ran) == 10  # 5 sizes x 2 layouts
    assert all(r.samples and r.value > 0 for r in ran)
    pinned = rs.find("bench_copies.Copy.track_completion_s", host_memory="pinned")
    assert pinned and all(r.value is not None and r.value != r.value for r in pinned)  # NaN
    meta = json.loads(Path(metadata_path(ran[0].path)).read_text())
    assert meta["metadata"]["torch"] == torch.__version__
    assert meta["run"]["complete"] is True
    assert "pinned vs pageable H2D" in out and "n/a" in out


@pytest.mark.slow
def test_interrupted_run_keeps_earlier_results_loadable(cpu_run, tmp_path):
    import shutil

    results, code, _ = cpu_run
    assert code == 0
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    (copy / lock.LOCK_NAME).unlink(missing_ok=True)
    before = {r.key: r.value for r in load(str(copy))}
    sidecars = {p: p.read_bytes() for p in copy.rglob("*.metadata")}
    proc = _run(copy, start_new_session=True)
    deadline = time.monotonic() + 120
    seen = ""
    while time.monotonic() < deadline:  # interrupt once a class is measuring
        line = proc.stdout.readline()
        seen += line
        if "measuring" in line or not line:
            break
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, seen + out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    after = {r.key: r.value for r in load(str(copy))}
    assert after.keys() == before.keys()
    assert all(after[k] == before[k] or (after[k] != after[k] and before[k] != before[k])
               for k in before)
    assert not list(copy.rglob("*.xferbench-bak"))
    # a run that saved nothing leaves the complete run's record alone
    assert {p: p.read_bytes() for p in copy.rglob("*.metadata")} == sidecars


@pytest.mark.slow
def test_asv_check_finds_no_problems_in_the_suite(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path))  # asv may write its machine file in $HOME
    cmd = [sys.executable, "-m", "asv", "check", "-E", f"existing:{sys.executable}"]
    proc = subprocess.run(cmd,
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No problems found" in proc.stdout


def test_the_results_page_figures_are_those_of_the_committed_results():
    page = (REPO / "docs" / "results.md").read_text()
    begin, end = "<!-- headline:begin -->\n", "\n<!-- headline:end -->"
    quoted = page[page.index(begin) + len(begin): page.index(end)]
    # the committed results only: a user's own run adds results/<host>/ beside them
    proc = subprocess.run([sys.executable, "-m", "xferbench", "table",
                           "--results", str(all_committed_results())],
                          capture_output=True, text=True, check=True)
    assert quoted == proc.stdout.rstrip(), (
        "docs/results.md's figures differ from results/: paste the output of "
        "'xferbench table' between the headline markers")


def test_relabel_gives_snapshot_results_the_real_commit(tmp_path):
    import shutil

    shutil.copytree(committed_results(), tmp_path / "r")
    real = "f" * 40
    moved = asvfiles.relabel(str(tmp_path / "r"), real)
    assert moved and all(Path(p).name.startswith("ffffffff-") for p in moved)
    rs = load(str(tmp_path / "r"))
    assert {r.commit for r in rs} == {real}
    assert all(json.loads(Path(metadata_path(p)).read_text())["run"]["commit"] == real
               for p in moved)
    bad = subprocess.run([sys.executable, str(REPO / "scripts" / "relabel"), str(tmp_path / "r"),
                          "abc"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr == "relabel: commit 'abc' is not a full 40-character git hash\n"


@pytest.mark.slow
def test_run_format_json_prints_a_summary_on_stdout_and_progress_on_stderr(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "xferbench", "run", "--quick", "--device", "cpu", "--machine",
         "jsonbox", "--results", str(tmp_path / "r"), "--bench", r"^bench_sync\.",
         "--format", "json"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)  # nothing else on stdout
    assert summary["machine"] == "jsonbox" and summary["quick"] is True
    progress = [line for line in proc.stderr.splitlines() if "] Loop(" in line]
    assert summary["measured"] == len(progress) > 0 and summary["failed"] == 0
    assert Path(summary["results"]).is_file() and Path(summary["metadata"]).is_file()
    assert "item_per_epoch" in summary["headlines"]
    assert "Loop(item_every_batch, 256): step_s" in proc.stderr  # the progress


def test_an_unfinished_asv_call_leaves_the_results_file_as_it_was(tmp_path):
    """asv marks a class whose process died as failed and saves: the run puts the file back."""
    path = tmp_path / "r.json"
    path.write_text('{"results": {"x": 1}}')
    backup = backup_path(str(path))
    protect(str(path), backup)
    path.write_text('{"results": {"x": null}}')  # what the interrupted call saved
    discard(str(path), backup, existed=True)
    assert json.loads(path.read_text()) == {"results": {"x": 1}}
    # a second discard (the reaper put the file back already) leaves it as it is
    discard(str(path), backup, existed=True)
    assert json.loads(path.read_text()) == {"results": {"x": 1}}
    fresh = tmp_path / "new.json"  # a file the interrupted call created: no trace left
    fresh.write_text("{}")
    discard(str(fresh), backup_path(str(fresh)), existed=False)
    assert not fresh.exists()


def test_a_protected_call_that_raises_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"results": {"x": 1}}')
    with pytest.raises(KeyboardInterrupt):
        with protected(str(path)):
            path.write_text('{"results": {"x": null}}')  # asv saved a class cut short
            raise KeyboardInterrupt
    assert json.loads(path.read_text()) == {"results": {"x": 1}}
    assert not os.path.exists(backup_path(str(path)))


def test_a_protected_call_stopped_after_the_reaper_put_the_file_back_keeps_it(tmp_path):
    """asv slow to stop: the run terminates the reaper, which restores the file from its
    backup (the backup is gone), then the run's own discard must not remove the file."""
    path = tmp_path / "r.json"
    path.write_text('{"results": {"x": 1}}')
    with pytest.raises(KeyboardInterrupt):
        with protected(str(path)):
            path.write_text('{"results": {"x": null}}')
            discard(str(path), backup_path(str(path)), existed=True)
            raise KeyboardInterrupt
    assert json.loads(path.read_text()) == {"results": {"x": 1}}


def test_a_protected_call_keeps_what_asv_saved_unless_told_to_discard_it(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"results": {"x": 1}}')
    with protected(str(path)) as call:
        path.write_text('{"results": {"x": 2}}')
    assert call.changed() and json.loads(path.read_text()) == {"results": {"x": 2}}
    with protected(str(path)) as call:
        path.write_text('{"results": {"x": 3}}')  # measured by another interpreter
        call.discard()
    assert not call.changed() and json.loads(path.read_text()) == {"results": {"x": 2}}
    with protected(str(path)) as call:
        path.write_text('{"results": {"x"')  # cut short while asv wrote it
    assert not call.changed() and json.loads(path.read_text()) == {"results": {"x": 2}}
    fresh = tmp_path / "new.json"
    with protected(str(fresh)) as call:
        fresh.write_text("{}")
    assert call.changed() and fresh.exists()
    assert not list(tmp_path.glob("*.xferbench-bak"))

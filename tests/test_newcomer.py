"""What a newcomer met that lost data, deleted a user's file or took bad input: each test
failed on the code before its fix."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench.analysis.stats import parse_threshold
from xferbench.commands.options import parse_params
from xferbench.errors import XferbenchError
from xferbench.results import check_folder, load

REPO = Path(__file__).resolve().parents[1]


def _xferbench(*args: str, env: dict[str, str] | None = None,
               cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xferbench", *args], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=600)


def _one_sentence(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), proc.stderr


@pytest.mark.slow
def test_a_smoke_run_never_replaces_a_default_runs_numbers(tmp_path):
    results = tmp_path / "results"
    common = ("--quick", "--device", "cpu", "--machine", "box", "--results", str(results),
              "--bench", r"bench_creation\.Creation\.track_ready_s")
    first = _xferbench("run", *common)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr
    # asv's own tables and warnings go to a log the run names; the run shows its progress
    assert "··" not in first.stdout and "measuring" in first.stdout
    log = next(line.rsplit(" ", 1)[-1] for line in first.stdout.splitlines()
               if "asv's own output goes to " in line)
    assert "Benchmarking existing" in Path(log).read_text()
    before = {r.key: r.value for r in load(str(results))}
    assert any(r.param_dict["size"] == "64MiB" for r in load(str(results)) if r.ok)
    smoke = _xferbench("run", *common, "--sweep", "smoke")
    assert smoke.returncode == 0, smoke.stdout[-2000:] + smoke.stderr
    files = [p for p in (results / "box").glob("*.json") if p.name != "machine.json"]
    assert len(files) == 2 and any("-sweepsmoke" in p.name for p in files)
    after = {r.key: r.value for r in load(str(results))}
    assert all(k in after and (after[k] == v or v != v) for k, v in before.items())
    listed = json.loads((results / "benchmarks.json").read_text())
    sizes = listed["bench_creation.Creation.track_ready_s"]["params"][-1]
    assert "'64MiB'" in sizes and "'1MiB'" in sizes  # every series' values stay listed


@pytest.mark.slow
def test_publish_never_deletes_a_file_it_did_not_write(tmp_path, committed_site):
    site = tmp_path / "site"
    shutil.copytree(committed_site, site)  # a site publish made
    (site / "notes.txt").write_text("mine")
    again = _xferbench("publish", "--results", str(committed_results()), "--out", str(site))
    _one_sentence(again, "notes.txt", "publish did not write")
    assert (site / "notes.txt").read_text() == "mine"
    (site / "notes.txt").unlink()
    assert _xferbench("publish", "--results", str(committed_results()), "--out",
                      str(site)).returncode == 0


@pytest.mark.slow
def test_a_killed_publish_leaves_no_staging_folder_behind(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".site-new-{dead.pid}-abc123"
    stale.mkdir()
    (stale / "half.html").write_text("x")
    proc = _xferbench("publish", "--results", str(committed_results()), "--out",
                      str(tmp_path / "site"))
    assert proc.returncode == 0 and not stale.exists()


@pytest.mark.parametrize("command", [("run", "--budget", "5"), ("list",), ("publish",)])
def test_an_empty_results_path_is_bad_input(tmp_path, command):
    proc = _xferbench(*command, "--results", "", cwd=tmp_path)
    _one_sentence(proc, "empty")
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_results_file_of_the_runs_machine_is_said_before_anything_is_measured(
        tmp_path):
    results = tmp_path / "results"
    shutil.copytree(committed_results(), results)
    other = next(p for p in results.glob("*/*.json") if p.name != "machine.json")
    other.write_text("{not json")  # another machine's: that machine's problem alone
    box = results / "box"
    box.mkdir()
    (box / "machine.json").write_text(json.dumps({"machine": "box", "version": 1}))
    victim = box / other.name
    victim.write_text("{not json")
    check_folder(str(results), "cpu-2core-vm-intel")  # a run of another machine goes on
    started = time.monotonic()
    proc = _xferbench("run", "--quick", "--device", "cpu", "--machine", "box", "--results",
                      str(results))
    _one_sentence(proc, str(victim))
    assert time.monotonic() - started < 60 and proc.stdout == ""


@pytest.mark.parametrize(("text", "value"), [("10", 0.1), ("10%", 0.1), ("0.1", 0.1),
                                             ("2.5", 0.025), ("0", 0.0)])
def test_a_threshold_reads_as_the_readme_writes_it(text, value):
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["100", "100%", "-5", "ten", "0.1%x"])
def test_a_bad_threshold_says_what_to_write(text):
    with pytest.raises(argparse.ArgumentTypeError, match="is not a threshold"):
        parse_threshold(text)


def test_compare_takes_the_threshold_as_the_docs_write_it():
    rs = load(str(committed_results()))
    a, b = rs.torch_versions()[:2]
    proc = _xferbench("compare", a, b, "--threshold", "10", "--results",
                      str(committed_results()))
    assert proc.returncode in (0, 1), proc.stderr


def test_quick_off_is_off_and_a_bad_flag_is_one_sentence(tmp_path):
    bad = _xferbench("run", "--results", str(tmp_path / "r"), env={"XFERBENCH_QUICK": "maybe"})
    _one_sentence(bad, "XFERBENCH_QUICK='maybe' is not a yes or no")
    assert not (tmp_path / "r").exists()
    from xferbench.flags import parse_flag

    assert parse_flag("XFERBENCH_QUICK", "false") is False
    assert parse_flag("XFERBENCH_QUICK", "No") is False and parse_flag("X", "on") is True


def test_more_threads_than_cores_and_a_bench_that_matches_nothing_are_refused(tmp_path):
    many = _xferbench("run", "--threads", str((os.cpu_count() or 1) + 1), "--results",
                      str(tmp_path / "r"))
    _one_sentence(many, "cores here")
    started = time.monotonic()
    none = _xferbench("run", "--quick", "--device", "cpu", "--bench", "nomatch", "--results",
                      str(tmp_path / "r"))
    _one_sentence(none, "'nomatch' matches no benchmark")
    assert time.monotonic() - started < 30 and not (tmp_path / "r").exists()


def test_a_parameter_given_twice_is_refused():
    assert parse_params(["size=64MiB,size=64MiB"], []) == {"size": "64MiB"}
    with pytest.raises(XferbenchError, match="size is given twice"):
        parse_params(["size=64MiB"], ["size=4KiB"])


def test_compare_into_a_closed_pipe_is_quiet():
    rs = load(str(committed_results()))
    a, b = rs.torch_versions()[:2]
    cmd = (f"{sys.executable} -m xferbench compare {a} {b} --results "
           f"{committed_results()} | head -1")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert "Broken pipe" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.returncode in (0, 1), proc.stderr


@pytest.mark.slow
def test_ctrl_c_during_a_run_prints_one_line_not_asvs_traceback(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "xferbench", "run", "--quick", "--device", "cpu",
         "--results", str(tmp_path / "r"), "--bench", "Creation"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    seen = ""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        seen += line
        if "measuring" in line or not line:
            break
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, seen + out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out[-3000:]
    assert "interrupted" in out


def test_compare_says_when_more_than_the_release_differs_and_strict_refuses(tmp_path):
    import dataclasses

    from xferbench.commands.compare import confounds
    from xferbench.results import ResultSet

    rs = load(str(committed_results()))
    a = rs.filter(torch=rs.torch_versions()[0])
    other = [dataclasses.replace(r, torch="9.9.9+other", machine="elsewhere") for r in a]
    b = ResultSet(other, rs.benchmarks, rs.root)
    said = confounds(a, b, by_machine=False)
    assert any(s.startswith("the build differs (") and "other" in s for s in said)
    assert any(s.startswith("the machine differs (") for s in said)
    assert confounds(a, a, by_machine=False) == ()
    # the committed data: consecutive releases of one build on one machine, nothing else
    versions = rs.torch_versions()
    if len({v.partition("+")[2] for v in versions}) == 1:
        proc = _xferbench("compare", versions[0], versions[1], "--strict", "--results",
                          str(committed_results()))
        assert proc.returncode in (0, 1) and "CAUTION" not in proc.stdout, proc.stderr


def test_cite_of_a_cpu_run_carries_the_pages_caveat():
    from xferbench.analysis.citation import as_dict, cite, sentence
    from xferbench.analysis.provenance import CPU_ONLY

    rs = load(str(committed_results()))
    r = next(r for r in rs if r.ok and r.benchmark.endswith("Copy.track_completion_s"))
    c = cite(rs, r.benchmark, {k: str(v) for k, v in r.params}, torch=r.torch,
             machine=r.machine)
    assert CPU_ONLY in c.not_for_citation
    assert sentence(c).startswith(f"Not for citation: {CPU_ONLY}")
    data = as_dict(c)
    assert data["not_for_citation"] == [CPU_ONLY] and data["gpu"] is None


def test_a_results_file_whose_label_was_edited_is_left_out_saying_why(tmp_path):
    import shutil

    results = tmp_path / "results"
    shutil.copytree(committed_results(), results)
    path = next(p for p in results.glob("*/*.json") if p.name != "machine.json")
    data = json.loads(path.read_text())
    data["params"]["torch"] = "9.9.9+fake"
    path.write_text(json.dumps(data))
    rs = load(str(results))  # that file's series is left out, every other one read
    assert "says PyTorch 9.9.9+fake but its sidecar recorded PyTorch " in rs.skipped[str(path)]
    proc = _xferbench("list", "--results", str(results))
    warned = proc.stderr.strip().splitlines()
    assert proc.returncode == 0 and len(warned) == 1, proc.stderr
    assert "9.9.9+fake" in warned[0] and "restore it from git" in warned[0]


def test_a_significant_change_within_the_threshold_reads_the_same():
    import dataclasses

    from xferbench.analysis.stats import FASTER, SAME, verdict

    rs = load(str(committed_results()))
    r = next(r for r in rs if r.ok and r.unit == "seconds")
    base = [1.0 + 0.001 * i for i in range(20)]  # tight samples: 3% is significant
    a = dataclasses.replace(r, samples=base, value=base[10])
    slower = [x * 1.03 for x in base]
    b = dataclasses.replace(r, samples=slower, value=slower[10])
    v = verdict(a, b, threshold=0.10)
    assert v.significant and v.word == SAME  # its whole interval lies within 10%
    assert verdict(a, b, threshold=0.01).word == "slower"
    faster = dataclasses.replace(r, samples=[x / 2 for x in base], value=base[10] / 2)
    assert verdict(a, faster, threshold=0.10).word == FASTER


def test_a_copy_that_copied_nothing_warns_of_its_impossible_rate(no_quick):
    import torch

    from xferbench.timing import measure

    x = torch.ones(2**24)  # 64 MiB
    m = measure(lambda: x.to("cpu"), device="cpu", nbytes=x.nbytes, warmup_s=0.0,
                min_time_s=0.02, max_time_s=0.05)
    assert m.gbps > 1_000 and any("copied nothing" in w for w in m.warnings), m.warnings
    real = measure(lambda: x.clone(), device="cpu", nbytes=x.nbytes, warmup_s=0.0,
                   min_time_s=0.05, max_time_s=0.2)
    assert not any("copied nothing" in w for w in real.warnings)


def test_compare_of_a_file_that_is_not_a_results_file_says_so(tmp_path):
    other = tmp_path / "notes.json"
    other.write_text('{"a": 1}')
    rs = load(str(committed_results()))
    proc = _xferbench("compare", str(other), rs.torch_versions()[0], "--results",
                      str(committed_results()))
    _one_sentence(proc, "is not an asv results file")


def test_a_folder_with_only_a_benchmark_list_is_no_reason_to_refuse_a_run(tmp_path):
    from xferbench.results import check_folder

    (tmp_path / "benchmarks.json").write_text('{"version": 2}')
    check_folder(str(tmp_path))  # a run that saved nothing yet left only this
    check_folder(str(tmp_path / "new"))  # and a folder that does not exist yet

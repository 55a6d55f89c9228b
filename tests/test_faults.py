"""Faults: a run killed with SIGKILL mid-class and a second run at once, two checkouts' runs
side by side, a full and a read-only disk, and every bad input met with one sentence and exit
status 2 (3 for a run or comparison with nothing measured), nothing written, nothing lost."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import series_options, tmpfs

from xferbench.commands.run.progress import Progress
from xferbench.results import asvconfig, load, lock, safefiles
from xferbench.results.sidecar import metadata_path

REPO = Path(__file__).resolve().parents[1]


def xferbench(*args: str, cwd: Path = REPO, env: dict | None = None,
              timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xferbench", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout, env={**os.environ, **(env or {})})


def start(*args: str, cwd: Path = REPO, python: str = sys.executable) -> subprocess.Popen[str]:
    return subprocess.Popen([python, "-m", "xferbench", *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def one_sentence(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("xferbench: ")
    return lines[0]


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and p.name != lock.LOCK_NAME}


def processes_with(marker: str) -> list[int]:
    """Live processes whose environment names ``marker`` (a run's own results folder)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


# -- a run killed with SIGKILL, and a second one at once ---------------------------------------

@pytest.mark.slow
def test_sigkill_mid_class_then_a_second_run_loses_nothing(tmp_path):
    results = tmp_path / "results"
    first = start("run", "--quick", "--device", "cpu", "--machine", "box", "--results",
                  str(results))
    seen = []
    for line in first.stdout:  # kill once class 2 is measuring: class 1 is saved by then
        seen.append(line)
        if line.startswith("[2/"):
            break
    for line in first.stdout:
        seen.append(line)
        if line.strip().startswith("[") and "/" in line and "] " in line and " s" in line:
            break
    saved = tree(results)
    copy = [p for p in saved if p.endswith(".json") and "/" in p and "machine.json" not in p]
    assert copy, "".join(seen)
    marker = f"xferbench-run-{first.pid}-"  # in the environment of all it started
    assert processes_with(marker)
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    first.stdout.close()
    # the second run at once: refused only while the first's processes are being killed
    deadline = time.monotonic() + 20
    while True:
        second = xferbench("run", "--quick", "--device", "cpu", "--machine", "box",
                           "--results", str(results), "--bench", r"^bench_sync\.")
        if second.returncode != 2 or time.monotonic() > deadline:
            break
        assert "another xferbench run is writing" in second.stderr
        time.sleep(0.2)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr
    assert processes_with(marker) == []  # nothing of the first run is left to write later
    time.sleep(3)
    after = tree(results)
    rs = load(str(results))
    copies = [r for r in rs if r.benchmark == "bench_copies.Copy.track_completion_s" and r.ok]
    loops = [r for r in rs if r.benchmark == "bench_sync.Loop.track_step_s" and r.ok]
    assert copies and loops  # the first run's finished class and the second's
    import torch

    assert {r.torch for r in rs} == {torch.__version__}  # labels kept
    (path,) = {r.path for r in rs}
    assert json.loads(Path(path).read_text())["params"]["device"] == "cpu"
    meta_file = next(p for p in after if p.endswith(".metadata"))
    sidecar = json.loads(after[meta_file])
    assert sidecar["benchmarks"]["bench_copies.Copy.track_completion_s"] != \
        sidecar["benchmarks"]["bench_sync.Loop.track_step_s"]  # each class its own run
    assert len(sidecar["runs"]) == 2
    assert not [p for p in after if p.endswith((".xferbench-bak", ".tmp"))]
    # the killed run's work folder is gone from the temporary folder both runs used
    assert not list(Path(tempfile.gettempdir()).glob(f"xferbench-run-{first.pid}-*"))
    assert tree(results) == after  # and nothing rewrites it later


# -- two checkouts side by side --------------------------------------------------------------

def _checkout(where: Path) -> Path:
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    for name in files:
        if name.startswith(("results/", "tests/golden/")) or not (REPO / name).is_file():
            continue
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, where / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=where, check=True)
    subprocess.run([*git, "add", "-A"], cwd=where, check=True)
    subprocess.run([*git, "commit", "-qm", "copy"], cwd=where, check=True)
    return where


def _venv_like_ours(where: Path) -> Path:
    """A second interpreter with the same packages: a venv whose site-packages points at
    this one's (a .pth file), so it has torch and xferbench but a path of its own."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    ours = next(Path(p) for p in sys.path if p.endswith("site-packages"))
    site = next(where.glob("lib/python*/site-packages"))
    # a site dir of its own: its .pth files (the editable install's among them) run too
    (site / "ours.pth").write_text(f"import site; site.addsitedir({str(ours)!r})\n")
    return where / "bin" / "python"


@pytest.mark.slow
def test_two_checkouts_side_by_side_each_carry_their_own_interpreter(tmp_path):
    a, b = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    python_b = str(_venv_like_ours(tmp_path / "venv-b"))
    args = ("run", "--quick", "--device", "cpu", "--bench", r"^bench_sync\.")
    run_a = start(*args, "--machine", "CheckoutA", "--results", str(a / "results"), cwd=a)
    run_b = start(*args, "--machine", "CheckoutB", "--results", str(b / "results"), cwd=b,
                  python=python_b)
    out_a, _ = run_a.communicate(timeout=300)
    out_b, _ = run_b.communicate(timeout=300)
    assert run_a.returncode == 0, out_a[-2000:]
    assert run_b.returncode == 0, out_b[-2000:]
    for root, python, machine in ((a, sys.executable, "CheckoutA"), (b, python_b, "CheckoutB")):
        rs = load(str(root / "results"))
        assert rs.machines() == [machine]  # the name as given, not lowercased
        (path,) = {r.path for r in rs}
        meta = json.loads(Path(metadata_path(path)).read_text())
        assert meta["metadata"]["executable"] == python
        assert meta["run"]["commit"] == subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    env_a = {r.env_name for r in load(str(a / "results"))}
    env_b = {r.env_name for r in load(str(b / "results"))}
    assert env_a != env_b  # two interpreters: two wrappers, never one rewritten by the other


def test_a_class_run_by_another_interpreter_is_refused(tmp_path):
    path = tmp_path / "progress.jsonl"
    progress = Progress(str(path), 1, open(os.devnull, "w")).start(  # noqa: SIM115
        {}, expect={"executable": sys.executable, "torch": "2.14.1+cu130"})
    path.write_text(json.dumps({"event": "start", "class": "bench_copies.Copy", "done": 0,
                                "total": 1, "executable": sys.executable,
                                "torch": "2.13.0+cpu"}) + "\n")
    time.sleep(0.4)
    progress.stop()
    progress.out.close()
    assert progress.mismatch == ("bench_copies.Copy ran with torch 2.13.0+cpu, not this run's "
                                 "2.14.1+cu130: something else's interpreter answered")


def test_the_wrapper_is_private_to_its_interpreter_and_checked(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    ours = asvconfig.interpreter_wrapper("2.13.0+cpu", "none")
    monkeypatch.setattr(sys, "executable", "/elsewhere/venv/bin/python")
    theirs = asvconfig.interpreter_wrapper("2.13.0+cpu", "none")
    assert ours != theirs and Path(theirs).read_text().count("/elsewhere/venv/bin/python") == 1
    # something rewrites our wrapper to run another interpreter: caught before the next call
    monkeypatch.undo()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    Path(ours).write_text('#!/bin/sh\nexec "/elsewhere/venv/bin/python" "$@"\n')
    with pytest.raises(asvconfig.XferbenchError, match="no longer runs"):
        asvconfig.check_wrapper(ours)
    quick = asvconfig.interpreter_wrapper("2.13.0+cpu", "none", "-quick")
    assert quick != ours and "cudanone-quick" in quick


# -- disks -------------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs (root only: skipped where mounting is not allowed)."""
    where = tmp_path / "small"
    where.mkdir()
    with tmpfs(where, "512k"):
        yield where


def _fill(where: Path, leave: int = 16 * 1024) -> None:
    st = os.statvfs(where)
    free = st.f_bavail * st.f_frsize
    with open(where / "filler", "wb") as fh:
        fh.write(b"\0" * max(0, free - leave))


def test_a_full_disk_leaves_no_temporary_file_and_the_old_file_intact(small_disk):
    target = small_disk / "r.json"
    target.write_text('{"kept": true}')
    _fill(small_disk)
    with pytest.raises(OSError):
        safefiles.write_json_atomic(str(target), {"x": "y" * 100_000})
    assert json.loads(target.read_text()) == {"kept": True}
    assert not list(small_disk.glob("*.tmp"))


@pytest.mark.slow
def test_publish_to_a_full_disk_is_one_sentence_and_leaves_nothing(small_disk):
    from conftest import committed_results

    _fill(small_disk, leave=64 * 1024)
    proc = xferbench("publish", "--results", str(committed_results()), "--out",
                     str(small_disk / "site"))
    assert "No space left on device" in one_sentence(proc)
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


def test_a_read_only_results_folder_is_one_sentence(small_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    proc = xferbench("run", "--quick", "--device", "cpu", "--results", str(small_disk / "r"))
    assert "cannot be written" in one_sentence(proc) or "Read-only" in proc.stderr


# -- every bad input ---------------------------------------------------------------------------

@pytest.fixture
def results_copy(tmp_path):
    from conftest import committed_results

    dest = tmp_path / "results"
    shutil.copytree(committed_results(), dest)
    return dest


def _first_results_file(root: Path) -> Path:
    return next(p for p in sorted(root.glob("*/*.json")) if p.name != "machine.json")


@pytest.mark.parametrize("argv, words", [
    (["run", "--results", "README.md/sub"], "is inside"),
    (["run", "--results", "/proc/x"], "cannot be written"),
    (["run", "--results", "/proc/x/y"], "cannot be written"),
    (["run", "--machine", ".."], "is not a machine name"),
    (["run", "--machine", "."], "is not a machine name"),
    (["run", "--machine", "a/b"], "is not a machine name"),
    (["run", "--machine", "My Box"], "is not a machine name"),
    (["run", "--threads", "0"], "is not a thread count"),
    (["run", "--bench", "Copy("], "is not a regular expression"),
    (["publish", "--out", "README.md/site"], "is inside"),
])
def test_bad_arguments_are_one_sentence_and_write_nothing(argv, words, tmp_path):
    before = tree(REPO / "results")
    if argv[0] == "run" and "--results" not in argv:
        argv = [*argv, "--results", str(tmp_path / "r")]
    assert words in one_sentence(xferbench(*argv))
    assert not (tmp_path / "r").exists()
    assert tree(REPO / "results") == before


def test_a_dangling_link_as_results_folder_is_one_sentence(tmp_path):
    link = tmp_path / "results"
    link.symlink_to(tmp_path / "gone")
    proc = xferbench("run", "--quick", "--device", "cpu", "--results", str(link))
    assert "is a symbolic link to nothing (it names " in one_sentence(proc)


@pytest.mark.parametrize("damage, words", [
    ("non-utf8", "is not UTF-8 text"),
    ("metadata-list", "is not a JSON object"),
    ("result-string", "is not an asv results file"),
    ("values-strings", "holds a malformed result"),
    ("truncated", "is not valid JSON"),
])
@pytest.mark.parametrize("command", ["compare", "cite", "publish", "list"])
def test_a_damaged_results_file_fails_every_command_that_needs_its_series(
        damage, words, command, results_copy, tmp_path):
    """The file's series alone is left out: a command that needs it fails in one sentence
    (after the warning that names the file), one that does not reads every other series."""
    victim = _first_results_file(results_copy)
    needs = series_options(victim)
    if damage == "non-utf8":
        victim.write_bytes(victim.read_bytes()[:200] + b"\xff\xfe" + victim.read_bytes()[200:])
    elif damage == "metadata-list":
        Path(metadata_path(str(victim))).write_text("[1, 2]")
    elif damage == "result-string":
        victim.write_text('"just a string"')
    elif damage == "values-strings":
        data = json.loads(victim.read_text())
        name = next(iter(data["results"]))
        data["results"][name][0] = ["abc"] * len(data["results"][name][0] or [1])
        victim.write_text(json.dumps(data))
    else:
        victim.write_text(victim.read_text()[:300])
    argv = {"compare": ["compare", needs[3].split("+")[0], "2.13.0", *needs[:2]],
            "cite": ["cite", "Behaviour.track_holds", "--params", "check=tensor_to_new",
                     *needs],
            "publish": ["publish", "--out", str(tmp_path / "site"), *needs],
            "list": ["list", *needs]}[command]
    proc = xferbench(*argv, "--results", str(results_copy))
    *warned, last = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and words in last and "Traceback" not in proc.stderr
    assert len(warned) == 1 and warned[0].startswith("xferbench: warning: ") and words in warned[0]
    assert not (tmp_path / "site").exists()
    if command == "list":  # without the series: every other one, one warning
        proc = xferbench("list", "--results", str(results_copy))
        assert proc.returncode == 0 and proc.stderr.count("\n") == 1 and words in proc.stderr


def _with_values(results: Path, value: float | None) -> None:
    """Every result of the newest torch's files set to ``value`` (None: failed)."""
    for path in results.glob("*/*.json"):
        if path.name == "machine.json" or "2.14.1" not in path.name:
            continue
        data = json.loads(path.read_text())
        for row in data["results"].values():
            cols = dict(zip(data["result_columns"], row))
            n = len(cols["result"]) if isinstance(cols.get("result"), list) else 1
            row[data["result_columns"].index("result")] = [value] * n
        path.write_text(json.dumps(data))


def test_compare_with_a_side_that_measured_nothing_is_exit_3(results_copy):
    _with_values(results_copy, None)
    proc = xferbench("compare", "2.13.0", "2.14.1", "--results", str(results_copy))
    assert "has no measured number" in one_sentence(proc, code=3)


def test_compare_counts_a_benchmark_that_broke_in_b_as_a_regression(results_copy):
    path = next(p for p in results_copy.glob("*/*.json") if "2.14.1" in p.name)
    data = json.loads(path.read_text())
    col = data["result_columns"].index("result")
    name = "bench_sync.Loop.track_step_s"
    data["results"][name][col] = [None] * len(data["results"][name][col])
    path.write_text(json.dumps(data))
    proc = xferbench("compare", "2.13.0", "2.14.1", "--results", str(results_copy))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed in B" in proc.stdout and "measured in A but failed in B" in proc.stdout


def test_compare_of_a_series_with_itself_is_refused(results_copy):
    proc = xferbench("compare", "2.13.0", "2.13.0", "--results", str(results_copy))
    assert "are the same results" in one_sentence(proc)


# -- the lock ----------------------------------------------------------------------------------

def test_a_second_run_is_refused_at_once_before_torch_loads(tmp_path):
    """A torch that marks its import stands in for the real one: the refusal comes before it
    (asserted by what ran, not by how long it took)."""
    results = tmp_path / "results"
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    marker = tmp_path / "torch-imported"
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n"
                                      "raise ImportError('the stand-in torch')\n")
    with lock.results_lock(str(results)):
        proc = xferbench("run", "--quick", "--device", "cpu", "--results", str(results),
                         env={"PYTHONPATH": str(fake.parent)})
    assert "another xferbench run is writing" in one_sentence(proc)
    assert not marker.exists(), "torch was imported before the refusal"

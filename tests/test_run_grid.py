"""The whole default grid through ``xferbench run --quick`` on this CPU, once: each class imports
torch in one process (a test counts them), progress comes line by line with no long silence,
every class is saved, and each combination without a number says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import slow_fixture

from xferbench.results import load
from xferbench.results.sidecar import metadata_path

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

#: Loaded at start-up by every Python process of the run (via PYTHONPATH, which asv hands its
#: processes as ASV_PYTHONPATH): logs each process that imports torch, once.
HOOK = '''
import os, sys
_log = os.environ.get("XFERBENCH_TEST_TORCH_LOG")
_seen = []
def _hook(event, args):
    if event == "import" and args and args[0] == "torch" and not _seen and _log:
        _seen.append(1)
        with open(_log, "a") as fh:
            fh.write(f"{os.getpid()} {' '.join(sys.argv)[:300]}\\n")
if _log:
    sys.addaudithook(_hook)
'''


@pytest.fixture(scope="module")
@slow_fixture
def grid_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("grid")
    hook = work / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    log = work / "torch-imports.log"
    env = {**os.environ, "PYTHONPATH": str(hook), "ASV_PYTHONPATH": str(hook),
           "XFERBENCH_TEST_TORCH_LOG": str(log)}
    cmd = [sys.executable, "-m", "xferbench", "run", "--quick", "--device", "cpu",
           "--machine", "gridbox", "--results", str(work / "results")]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines: list[tuple[float, str]] = []
    with proc.stdout:
        for line in proc.stdout:
            lines.append((time.monotonic() - started, line.rstrip("\n")))
    code = proc.wait(timeout=600)
    imports = log.read_text().splitlines() if log.exists() else []
    return work / "results", code, lines, imports


def _describe() -> list[dict]:
    probe = json.dumps({"device": "cpu", "capabilities": {
        "device": "cpu", "pinned_memory": False, "timing_events": False,
        "side_streams": False, "reason": "the CPU has none"}})
    proc = subprocess.run([sys.executable, "-m", "benchmarks._asv"],
                          cwd=REPO, capture_output=True, text=True, check=True,
                          env={**os.environ, "XFERBENCH_PROBE": probe,
                               "XFERBENCH_SWEEP": "default"})
    return json.loads(proc.stdout)


def test_the_grid_runs_and_saves_every_class(grid_run):
    results, code, lines, _ = grid_run
    out = "\n".join(text for _, text in lines)
    assert code == 0, out[-3000:]
    rs = load(str(results))
    classes = _describe()
    measured = {f"{c['file']}.{c['class']}" for c in classes if c["measured"]}
    got = {r.benchmark.rsplit(".", 1)[0] for r in rs if r.ok}
    assert got == measured
    every = {f"{c['file']}.{c['class']}.{m}" for c in classes for m in c["methods"]}
    assert {r.benchmark for r in rs} == every  # skipped benchmarks are there too, as n/a
    assert all(r.samples for r in rs if r.ok and r.unit == "seconds")


def test_each_class_imports_torch_in_one_process(grid_run):
    _, code, _, imports = grid_run
    assert code == 0
    classes = [c for c in _describe() if c["measured"]]
    # one process per class that measures something, and `xferbench run` itself (which
    # reads the installed torch for the labels and metadata); asv's discovery, its fork
    # server and every combination's process import none
    assert len(imports) <= len(classes) + 1, "\n".join(imports)
    assert sum("setup_cache" in line for line in imports) == len(classes), "\n".join(imports)


def test_progress_comes_line_by_line_with_no_silence_over_10_s(grid_run):
    _, code, lines, _ = grid_run
    assert code == 0
    progress = [text for _, text in lines if text.lstrip().startswith("[") and "/" in text
                and " s" in text and "]" in text and "combinations" not in text]
    total = sum(c["measured"] for c in _describe())
    counts = [t.strip().split()[0].lstrip("[") for t in progress if t.startswith("  [")]
    assert counts[-1] == f"{total}/{total}"
    gaps = [(b[0] - a[0], a[1], b[1]) for a, b in zip(lines, lines[1:])]
    longest = max(gaps)
    assert longest[0] < 10, f"{longest[0]:.1f} s between\n{longest[1]}\n{longest[2]}"


def test_the_sidecar_says_why_each_missing_number_is_missing(grid_run):
    results, code, _, _ = grid_run
    assert code == 0
    path = next(p for p in results.glob("*/*.json") if p.name != "machine.json")
    sidecar = json.loads(Path(metadata_path(str(path))).read_text())
    assert sidecar["run"]["complete"] is True
    outcomes = sidecar["outcomes"]
    rs = load(str(results))
    missing = [r for r in rs if not r.ok]
    assert missing
    for r in missing:
        rows = outcomes.get(r.benchmark, [])
        want = {k: str(v) for k, v in r.params}
        found = [row for row in rows if row["params"] == want]
        assert found and found[0]["reason"], f"{r.label()} has no reason recorded"
    pinned = [row for row in outcomes["bench_copies.Copy.track_completion_s"]
              if row["params"]["host_memory"] == "pinned" and row["params"]["direction"] == "h2d"]
    assert pinned and all(row["reason"] == "pinned host memory needs an accelerator"
                          for row in pinned)

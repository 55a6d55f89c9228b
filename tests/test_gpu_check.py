"""scripts/gpu-check run on the emulated device as a GPU machine may meet it, twice, one after
the other (tests/gpu_check_runs.py: session fixtures, shared with tests/test_run_emu.py). The
first runs with the README's interpreter in a fresh clone, at the default spec. The second
runs with a minimal interpreter (torch only: no git, xferbench, asv or pytest-benchmark), quick.

Each must exit 0 with every class but Peer saved with numbers, none sampled under a cap, and
a test log that names each test and holds pytest's summary line. scripts/test runs them
beside the other tests (the ``end_to_end`` mark), so each check meets a loaded host."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from gpu_check_runs import SUITE_COMMIT, emu_env, gpu_check_env, suite_classes
from packaging.utils import canonicalize_name

from xferbench.results import load
from xferbench.results.sidecar import load_sidecar

REPO = Path(__file__).resolve().parents[1]
# The tests that read a gpu-check run are marked ``end_to_end`` by their fixtures
# (tests/gpu_check_runs.py): scripts/test runs them beside the other tests, on a process of
# their own.
pytestmark = pytest.mark.slow


def fetched_and_image() -> tuple[set[str], set[str]]:
    """What scripts/fetch-gpu-wheels downloads, and what it says the image holds."""
    text = (REPO / "scripts" / "fetch-gpu-wheels").read_text()
    image = re.search(r"^# the image holds: (.*)$", text, re.M)
    assert image, "scripts/fetch-gpu-wheels no longer says what the image holds"
    held = {canonicalize_name(n) for n in image.group(1).split()}
    args = text.split('-d "$dest"', 1)[1].split("\nls ", 1)[0]
    fetched = {canonicalize_name(re.split(r"[=<>]", a)[0]) for a in args.replace("\\", " ").split()}
    return fetched, held


@pytest.mark.parametrize("python", ["3.12"])
def test_every_dependency_is_fetched_or_in_the_image(python):
    """A dependency added to pyproject.toml and not to the wheels the check carries breaks
    the minimal interpreter at import (pathspec did): each is fetched or the image has it."""
    import tomllib
    from packaging.requirements import Requirement

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    fetched, held = fetched_and_image()
    assert {"asv", "torch", "matplotlib"} <= fetched | held
    env = {"python_version": python, "sys_platform": "linux", "platform_system": "Linux"}
    needed = {canonicalize_name(r.name) for r in map(Requirement, deps)
              if r.marker is None or r.marker.evaluate(env)}
    assert sorted(needed - fetched - held) == []


# The refusals first, while the README's gpu-check run goes on (``readme_started`` starts it
# and returns): a few seconds each, they need the minimal venv and no quiet machine. The
# minimal interpreter's run starts once the README's has ended, with the tests below.
def test_gpu_check_refuses_a_machine_without_an_accelerator_at_once(readme_started,
                                                                    minimal_machine, tmp_path):
    """One sentence, exit 2, nothing written; the torch found is read from stdout alone, so
    a warning on stderr at import (here: a sitecustomize that prints one) leaves it whole."""
    python, tree, tmp, _path = minimal_machine
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    (noisy / "sitecustomize.py").write_text(
        "import sys\nprint('UserWarning: a warning at import', file=sys.stderr)\n")
    proc = _gpu_check(python, tree, tmp, tmp_path / "out", PYTHONPATH=str(noisy))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-check: no accelerator here"), proc.stderr
    assert proc.stdout.startswith("gpu-check: torch 2.") and " (CUDA " in proc.stdout
    assert "UserWarning" not in proc.stdout
    assert not (tmp_path / "out").exists()


def test_gpu_check_refuses_a_budget_too_short_for_the_headline_classes(readme_started,
                                                                       minimal_machine,
                                                                       tmp_path):
    python, tree, tmp, path = minimal_machine
    proc = _gpu_check(python, tree, tmp, tmp_path / "out", PATH=path, **emu_env(),
                      XFERBENCH_SWEEP="smoke", XFERBENCH_GPU_CHECK_BUDGET="60",
                      XFERBENCH_GPU_CHECK_TESTS="15")
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "is too short for the headline classes" in lines[0], proc.stderr
    assert "== gpu tests" not in proc.stdout  # nothing ran after it
    assert not list((tmp_path / "out").glob("results/*/*.json"))


def test_gpu_check_refuses_host_memory_it_cannot_pin_before_it_measures(readme_started,
                                                                         minimal_machine,
                                                                         tmp_path):
    """The grid's largest pins are tried first: a machine that cannot pin them is one
    sentence, exit 2, with its memory zones said, and nothing is measured."""
    python, tree, tmp, path = minimal_machine
    proc = _gpu_check(python, tree, tmp, tmp_path / "out", PATH=path, **emu_env(),
                      XFERBENCH_SWEEP="smoke", XFERBENCH_GPU_CHECK_PIN_BYTES=str(2**60))
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-check: pinning 1.07e+09 GiB of host "
                                                   "memory failed ("), proc.stderr
    assert "gpu-check: memory zones: " in proc.stdout and "== grid" not in proc.stdout
    assert not list((tmp_path / "out").glob("results/*/*.json"))


def _gpu_check(python: Path, tree: Path, tmp: Path, out: Path,
               **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tree / "scripts" / "gpu-check"), str(out)], cwd=tree,
                          capture_output=True, text=True, timeout=900,
                          env=gpu_check_env(python, tmp, **env))


def _run_log_of(run_log: Path, classes: set[str]) -> str:
    """The run's plan line and, for each of ``classes``, its lines in ``run_log`` (its call's
    header, its share, each combination's outcome): why a class saved no number."""
    try:
        lines = run_log.read_text().splitlines()
    except OSError as exc:
        return f"(no run.log: {exc})"
    names = tuple(f"{c}(" for c in classes) + tuple(f".{c} " for c in classes) \
        + tuple(f"  {c}: " for c in classes) + ("xferbench run: --budget",)
    return "\n".join(line[:400] for line in lines if any(n in line for n in names))


def _saves_every_class(r: dict, quick: bool = False) -> None:
    """Every class saved, none capped, at the default spec or (``quick``) all of it filed as
    quick: a quick run's figures never pass for ones at the default spec."""
    assert r["proc"].returncode == 0, r["log"][-6000:]
    out = r["out"]
    assert "device emu" in r["log"].splitlines()[0]
    rs = load(str(out / "results"))
    saved = {x.benchmark.split(".")[1] for x in rs if x.ok}
    assert saved == suite_classes(), (
        f"classes without a number: {suite_classes() - saved}; what the run said of them:\n"
        + _run_log_of(out / "run.log", suite_classes() - saved))
    assert not any(x.capped for x in rs)
    assert {x.quick for x in rs} == {quick}
    assert r["machine"], f"one machine folder under results/: {list((out / 'results').iterdir())}"
    meta = next(out.glob(f"results/{r['machine']}/*.metadata"))
    side = load_sidecar(str(meta.with_suffix(".json")))
    assert side.runs[-1].complete is True and side.runs[-1].quick is quick
    assert not side.runs[-1].capped and not side.capped
    assert {x.commit for x in rs} == {SUITE_COMMIT}  # the real suite commit
    assert {x.machine for x in rs} == {r["machine"]}
    assert "Benchmarking existing" in (out / "asv.log").read_text()  # asv's own output kept
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert len(files) <= 8, files  # a few files: easy to copy back or keep as a CI artifact
    assert all(len(Path(f).parts) <= 3 for f in files)  # no more than 2 folders down
    assert "| headline |" in (out / "table.md").read_text()
    assert "tensor-to-new: tensor.to() returns a new tensor" in (out / "table.md").read_text()


def _names_each_test_and_ends_with_the_summary(r: dict) -> str:
    tests = (r["out"] / "pytest-gpu.log").read_text()
    assert "Plugin already registered" not in tests and "emulated device: not loaded" not in tests
    assert re.search(r"^tests/test_copies\.py::test_accelerator_copy_runs_and_verifies\[.*\] "
                     r"PASSED", tests, re.MULTILINE), tests[-3000:]
    # the summary line, as scripts/gpu-check reads it: the share's SIGINT may come after it,
    # while pytest exits, and append its traceback
    summaries = re.findall(r"^=+ .* in [0-9.]+s.*$", tests, re.MULTILINE)
    assert summaries, tests[-3000:]
    last = summaries[-1]
    assert " passed" in last, last
    assert " failed" not in last and " error" not in last, last
    # every gpu test selected ran to its end, none cut by the tests' share of the check's
    # time budget: these runs are scripts/test's run of the gpu tests on the emulated device
    # (a module skipped whole at collection, as without pytest-benchmark, counts as skipped)
    collected = re.search(r"collected \d+ items / \d+ deselected(?: / (\d+) skipped)? / "
                          r"(\d+) selected", tests)
    assert collected, tests[:3000]
    ran = sum(int(n) for n, _ in re.findall(r"(\d+) (passed|skipped|xfailed|xpassed)", last))
    assert ran == int(collected.group(2)) + int(collected.group(1) or 0), \
        f"{collected.group(0)}, but: {last}"
    # the tests that pin a GPU-only behaviour ran first, from every file (here: skipped)
    telling = tests.index("tests/test_timing.py::test_non_blocking_pinned_h2d_enqueue_is_much_"
                          "shorter_than_its_completion SKIPPED")
    assert telling < tests.index("tests/test_audit_device.py::test_a_faulty_step_is_reported_"
                                 "exactly")
    return tests


def test_the_readme_interpreter_in_a_fresh_clone_saves_every_class(readme_gpu_check):
    _saves_every_class(readme_gpu_check)


def test_the_readme_interpreter_runs_the_gpu_tests_with_its_installed_plugin(readme_gpu_check):
    tests = _names_each_test_and_ends_with_the_summary(readme_gpu_check)
    assert "carried wheels" not in readme_gpu_check["log"]  # asv is installed there
    plugins = next(line for line in tests.splitlines() if line.startswith("plugins: "))
    assert "xferbench-" in plugins and "benchmark-" in plugins, plugins  # the entry points


def test_a_minimal_interpreter_without_git_saves_every_class(minimal_gpu_check,
                                                           minimal_machine):
    _saves_every_class(minimal_gpu_check, quick=minimal_gpu_check["quick"])
    log = minimal_gpu_check["log"]
    assert "carried wheels" in log
    assert "no git checkout here: asv files the results under XFERBENCH_SUITE_COMMIT's" in log
    # the machine's own packages are never shadowed: only what it lacked was installed
    site = minimal_machine[2] / "xferbench-site"
    assert (site / "asv").is_dir() and (site / "asv_runner").is_dir()
    assert not (site / "packaging").exists() and not (site / "yaml").exists()


def test_a_minimal_interpreter_runs_the_gpu_tests_without_pytest_benchmark(minimal_gpu_check):
    tests = _names_each_test_and_ends_with_the_summary(minimal_gpu_check)
    assert "xfer_benchmark needs pytest-benchmark" in tests  # skipped, saying so


def test_the_sidecar_says_the_run_was_planned_under_the_check_budget(default_spec_gpu_check):
    """The run's budget is in its record, and every combination the budget left out is in the
    sidecar as cut, saying why, none as failed."""
    out = default_spec_gpu_check["out"]
    meta = next(out.glob(f"results/{default_spec_gpu_check['machine']}/*.metadata"))
    data = json.loads(meta.read_text())
    assert data["run"]["budget_s"] > 0
    failed = [o for rows in data["outcomes"].values() for o in rows if o["status"] == "failed"]
    assert failed == []
    assert "the headline combinations (every class's, at the default spec" in \
        default_spec_gpu_check["log"]


def test_the_check_says_what_a_second_run_needs(default_spec_gpu_check):
    """The check's worst case (its budget and its time-outs' margins), that a whole second run
    needs as much again, and, where the budget cut anything, the narrower second run."""
    log = default_spec_gpu_check["log"]
    assert re.search(r"gpu-check: its worst case is \d+ s \(the budget of \d+ s and the "
                     r"margins its time-outs keep\); a whole second run needs as much again",
                     log), log[-2000:]
    cut = "a second run of what --budget cut: xferbench run --bench '" in log
    assert cut == ("gpu-check: what this run cut needs a grid of " in log)


def test_the_diagnostics_of_the_run_are_filed_and_cited(default_spec_gpu_check):
    """Each device-time figure of the grid says in the sidecar how it was read: its clock,
    its event batches and the SM clock per sample, one per sample asv filed."""
    results = default_spec_gpu_check["out"] / "results"
    found = [r for r in load(str(results)) if r.benchmark == "bench_copies.Copy.track_device_s"
             and r.ok]
    assert found and all(r.diagnostics and r.diagnostics.device_clock for r in found)
    assert all(r.sm_mhz and len(r.sm_mhz) == len(r.samples) for r in found)

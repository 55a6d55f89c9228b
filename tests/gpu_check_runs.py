"""scripts/gpu-check run on the emulated device, twice, one after the other, as session
fixtures (tests/conftest.py registers them), so that every test that reads one reads the same
run. Each run measures the grid and then runs every gpu-marked test on the emulated device, as
the check does: this is where scripts/test runs the gpu tests (tests/test_gpu_check.py fails if
one failed or was left unrun; the session's last lines give the counts).

- The gpu-check run with the README's interpreter (this one: xferbench installed,
  pytest-benchmark there) in a fresh clone (the tree committed into a new git repository). It
  measures at the default spec (no --quick), under the check's time budget.
- The gpu-check run with a minimal interpreter (a venv with torch and the packages a GPU image
  usually holds; no xferbench, asv or pytest-benchmark), in a copy of the tree without .git
  and with no git on PATH. asv comes from wheels fetched for that Python, and the suite commit
  is passed in. It runs quick (XFERBENCH_GPU_CHECK_QUICK=1) under the same budget, its machine
  named as ``xferbench run`` names it: what it alone tries (no git, the carried wheels, no
  pytest-benchmark) does not depend on the spec, and its quick figures must be filed as quick.
  Where this interpreter is not the README's, the README's run is skipped and this one runs at
  the default spec instead. Its grid is the whole smoke grid on the emulated device:
  tests/test_run_emu.py reads it as the suite's end-to-end run on emu.

Every test that uses one of these fixtures is marked ``end_to_end`` (``mark_end_to_end``, from
tests/conftest.py's collection hook), and scripts/test runs those in a pytest of their own,
beside the other tests. Each run's plan counts the time it has spent, so its budget holds on a
loaded host: the grid's measurement is timed, so load costs it samples rather than seconds.
The tests that hold a stream for milliseconds must pass whatever the host's load (the
busy-stream hazard tries again a trial whose spin the host outlasted; the pinned allocation
counts assert reuse: tests/test_pinning.py says why)."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slowmark import slow_fixture
from venvs import linked_venv

REPO = Path(__file__).resolve().parents[1]

#: What a GPU image usually holds beside torch, less what the check cannot need and less
#: pytest-benchmark: the minimal interpreter runs without it. pip is there too:
#: scripts/gpu-check installs the carried wheels with it.
IMAGE_PACKAGES = ["numpy", "pytest", "nvidia-ml-py", "packaging", "filelock", "pyyaml", "pip"]
#: The check's time budget on the emulated device, in seconds.
CHECK_BUDGET_S = 330
#: The check's settings: the smoke sweep's sizes at the default spec, planned as on a GPU
#: (costs.json). The grid gets 290 s, enough for the headline parts that `scripts/budget-plan
#: --device emu --sweep smoke` plans with MIN_SPARE to spare (test_budget_plan.py checks it
#: as the suite grows). The tests get 25 s at least; they are cut short there, saying so. A
#: grid budget above the whole smoke grid's plan costs a fast host nothing: the run ends when
#: its grid is done.
CHECK_ENV = {"XFERBENCH_SWEEP": "smoke", "XFERBENCH_GPU_CHECK_BUDGET": str(CHECK_BUDGET_S),
             "XFERBENCH_GPU_CHECK_TESTS": "25", "XFERBENCH_GPU_CHECK_GRID": "290"}
#: The share beyond the planned headline parts that the grid budget must hold: room for a
#: loaded host, whose classes start more slowly than planned. Too little, and the last
#: classes (Hazards, UnsyncedTimer) are cut before they save a number.
MIN_SPARE = 0.25
#: The machine name of the run with the README's interpreter; the minimal interpreter's run
#: takes the name ``xferbench run`` gives.
README_MACHINE = "emu-readme"
#: The suite commit both runs pass in (a copy of the tree without .git has no commit).
SUITE_COMMIT = "b" * 40


def emu_plan_env() -> dict[str, str]:
    """The environment the suite is described in for the emulated device, as scripts/budget-plan
    plans it: its probe (one device), the smoke sweep, the default spec."""
    # the probe is read from the script (a copy here could drift)
    caps = runpy.run_path(str(REPO / "scripts" / "budget-plan"))["PROBES"]["emu"]
    return {**os.environ, "XFERBENCH_SWEEP": CHECK_ENV["XFERBENCH_SWEEP"], "XFERBENCH_QUICK": "0",
            "XFERBENCH_PROBE": json.dumps({"device": "emu:0", "capabilities": caps})}


@functools.cache
def suite_classes() -> frozenset[str]:
    """Every class of the suite that one emulated device measures (Peer needs a second), as
    the suite's own discovery finds them: a class added to benchmarks/ is expected at once."""
    from xferbench.commands.run.suite import describe_suite

    return frozenset(c.name for c in describe_suite(str(REPO), emu_plan_env()) if c.measured)


def gpu_check_fixture(func):
    """Under ``@pytest.fixture``: a fixture that starts or waits for a gpu-check run; every
    test that uses it, directly or through another fixture, is marked ``end_to_end``."""
    func.xferbench_gpu_check = True
    return func


def mark_end_to_end(items: list[pytest.Item]) -> None:
    """Mark ``end_to_end`` every test that uses a gpu-check run (call it before ``-m`` reads
    the marks), and put them first (stable). scripts/test runs the tests marked
    ``end_to_end`` in a process of their own, so that each gpu-check run happens once, the
    README's from the start, and no xdist process of the other tests starts one of its own.
    The tests marked so by hand (the package installed as users get it) come after them."""
    using = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is not None and any(defs and getattr(defs[-1].func, "xferbench_gpu_check", False)
                                    for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.end_to_end)
            using.add(item)
    items.sort(key=lambda item: item not in using)


def copy_tree(dest: Path) -> None:
    """The tracked and untracked-not-ignored files, without results/ and .git."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    for name in filter(None, files):
        if name.startswith("results/") or not (REPO / name).is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, dest / name)


def path_without(tool: str, shadow: Path) -> str:
    """PATH with ``tool`` hidden: each folder holding it shadowed by one of links to the rest."""
    parts = []
    for i, folder in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if folder and (Path(folder) / tool).exists():
            mirror = shadow / str(i)
            mirror.mkdir(parents=True, exist_ok=True)
            for entry in Path(folder).iterdir():
                if entry.name != tool and not (mirror / entry.name).exists():
                    (mirror / entry.name).symlink_to(entry)
            folder = str(mirror)
        parts.append(folder)
    return os.pathsep.join(parts)


def emu_env() -> dict[str, str]:
    import emu

    try:
        emu.build()  # this interpreter's torch is both runs': one build serves both
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    from emu._build import cache_root

    return {"XFERBENCH_EMU": "1", "XFERBENCH_EMU_CACHE": str(cache_root())}


@pytest.fixture(scope="session")
@gpu_check_fixture
@slow_fixture
def minimal_machine(tmp_path_factory):
    """(interpreter, tree, tmpdir, PATH without git): a venv with torch and IMAGE_PACKAGES
    only (this interpreter's, linked: tests/venvs.py), and a copy of the tree without .git,
    with .whl/ fetched for that Python."""
    work = tmp_path_factory.mktemp("gpu-machine")
    python = linked_venv(work / "venv", ["torch", *IMAGE_PACKAGES]) / "python"
    for absent in ("asv", "xferbench", "pytest_benchmark"):
        proc = subprocess.run([str(python), "-c", f"import {absent}"], capture_output=True)
        assert proc.returncode != 0, f"the minimal interpreter must not hold {absent}"
    tree = work / "tree"
    copy_tree(tree)
    version = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info"
                              "[:2])"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([str(REPO / "scripts" / "fetch-gpu-wheels")], cwd=REPO, check=True,
                   capture_output=True, timeout=600,
                   env={**os.environ, "XFERBENCH_WHEELS_PYTHON": version,
                        "XFERBENCH_WHEELS_DIR": str(tree / ".whl")})
    tmp = work / "tmp"
    tmp.mkdir()
    return python, tree, tmp, path_without("git", work / "nogit")


def gpu_check_env(python: Path, tmp: Path, **env: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "ASV_PYTHONPATH", "VIRTUAL_ENV", "XFERBENCH_QUICK",
                          "XFERBENCH_MACHINE")}
    return {**clean, "PYTHON": str(python), "TMPDIR": str(tmp), **env}


def _start_gpu_check(python: Path, tree: Path, tmp: Path, out: Path, **env: str) -> dict:
    """The check started, its output to a file beside OUTDIR (two run at once: no pipes)."""
    log = out.parent / f"{out.name}.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [str(tree / "scripts" / "gpu-check"), str(out)], cwd=tree, stdout=fh,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,  # stopped as a group
            env=gpu_check_env(python, tmp, **emu_env(), **CHECK_ENV,
                              XFERBENCH_SUITE_COMMIT=SUITE_COMMIT, **env))
    return {"proc": proc, "logfile": log, "out": out}


def _in_session(sid: int) -> list[int]:
    """The processes of session ``sid`` (Linux's /proc): the check and all it started, in
    whatever process group (``timeout`` makes one of its own)."""
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        with contextlib.suppress(OSError, ValueError, IndexError):
            state, _ppid, _group, session = \
                Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:4]
            if int(session) == sid and state != "Z":  # a zombie is only waiting to be reaped
                pids.append(int(entry))
    return pids


def _stop(started: dict) -> None:
    """The check and all it started (its own session) stopped, if any of it still runs."""
    proc = started["proc"]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _in_session(proc.pid) if os.path.isdir("/proc") else [proc.pid]
        if not pids and proc.poll() is not None:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _in_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)


def _finish(started: dict) -> dict:
    try:
        started["proc"].wait(timeout=900)
    except subprocess.TimeoutExpired:
        _stop(started)
    return {**started, "log": started["logfile"].read_text()}


@pytest.fixture(scope="session")
@gpu_check_fixture
def readme_started(tmp_path_factory):
    """The check with the README's interpreter (xferbench installed: its pytest11 entry point
    loads the plugin) in a fresh clone of the tree (git there), started: the reason instead
    where this interpreter is not the README's. A check no test waited for (a selection of
    the refusals alone) is stopped, with what it started, when the session ends."""
    try:
        importlib.metadata.distribution("xferbench")
    except importlib.metadata.PackageNotFoundError:
        yield "this interpreter is not the README's (xferbench is not installed in it)"
        return
    work = tmp_path_factory.mktemp("clone")
    tree = work / "tree"
    copy_tree(tree)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "clone"]):
        subprocess.run([*git, *args], cwd=tree, check=True, capture_output=True)
    tmp = work / "tmp"
    tmp.mkdir()
    started = _start_gpu_check(Path(sys.executable), tree, tmp, work / "out",
                               XFERBENCH_MACHINE=README_MACHINE)
    yield {**started, "machine": README_MACHINE}
    _stop(started)


#: (which gpu-check run, its pytest-gpu.log) for each that ran in this session: the log's
#: last lines count its gpu tests (report_emulated_gpu_tests).
GPU_LOGS: list[tuple[str, Path]] = []


def report_emulated_gpu_tests(terminalreporter) -> None:
    """Each gpu-check run's count of the gpu tests it ran on the emulated device (the
    plugin's line) and pytest's summary of them: scripts/test runs them there and nowhere
    else."""
    for name, log in GPU_LOGS:
        try:
            lines = log.read_text().splitlines()
        except OSError as exc:
            terminalreporter.write_line(f"{name}: no pytest-gpu.log ({exc})")
            continue
        counts = [line for line in lines if line.startswith("emulated device ")]
        summary = [line.strip("= ") for line in lines if re.match(r"^=+ .* in [0-9.]+s", line)]
        terminalreporter.write_line(
            f"{name}, its gpu tests: {(counts or ['no count line'])[-1].split(';')[0]}; "
            f"pytest: {(summary or ['no summary line'])[-1]}")


@pytest.fixture(scope="session")
@gpu_check_fixture
@slow_fixture
def gpu_check_runs(readme_started, minimal_machine, tmp_path_factory):
    """Both gpu-check runs, one after the other: the README's (started by ``readme_started``,
    at the default spec) to its end, then the minimal interpreter's, in the tree without .git
    and with git hidden from PATH, its machine unnamed (``xferbench run`` names it).
    scripts/test runs the other tests beside them, so each run meets a loaded host and its
    budget must hold all the same (each run's plan counts what it has spent)."""
    python, tree, tmp, path = minimal_machine
    # quick where the README's run measures at the default spec; else this one does
    quick = not isinstance(readme_started, str)
    readme = readme_started if isinstance(readme_started, str) else _finish(readme_started)
    minimal_started = _start_gpu_check(python, tree, tmp,
                                       tmp_path_factory.mktemp("minimal") / "out", PATH=path,
                                       XFERBENCH_GPU_CHECK_QUICK=str(int(quick)))
    minimal_started["quick"] = quick
    try:  # on ^C (it no longer reaches it) the minimal interpreter's run stops here
        minimal_done = _finish(minimal_started)
    finally:
        _stop(minimal_started)
    if not isinstance(readme, str):
        GPU_LOGS.append(("scripts/gpu-check with the README's interpreter", readme["out"] /
                         "pytest-gpu.log"))
    GPU_LOGS.append(("scripts/gpu-check with a minimal interpreter", minimal_done["out"] /
                     "pytest-gpu.log"))
    return {"readme": readme, "minimal": minimal_done}


@pytest.fixture(scope="session")
def readme_gpu_check(gpu_check_runs):
    if isinstance(gpu_check_runs["readme"], str):
        pytest.skip(gpu_check_runs["readme"])
    return gpu_check_runs["readme"]


@pytest.fixture(scope="session")
def minimal_gpu_check(gpu_check_runs):
    """The minimal interpreter's check: its ``out`` holds ``run.log`` and ``results/``, its
    machine the one ``xferbench run`` named (the only folder under ``results/``)."""
    r = gpu_check_runs["minimal"]
    machines = [p.name for p in (r["out"] / "results").glob("*") if p.is_dir()]
    return {**r, "machine": machines[0] if len(machines) == 1 else None}


@pytest.fixture(scope="session")
def default_spec_gpu_check(gpu_check_runs, minimal_gpu_check):
    """The gpu-check run at the default spec: the README's, or the minimal interpreter's
    where it ran alone."""
    readme = gpu_check_runs["readme"]
    return minimal_gpu_check if isinstance(readme, str) else readme

"""scripts/gpu-check rehearsed as a GPU machine may meet it, on the emulated device, twice, one
after the other: session fixtures (tests/conftest.py registers them), so that every test that
reads a rehearsal reads the same one. Every test that uses one is marked ``rehearsal``
(``mark_rehearsals``, from tests/conftest.py's collection hook), and scripts/test runs those
in a pytest of their own, one rehearsal of each, beside the other tests' two processes.
Each runs every gpu-marked test on the emulated device after its grid, as the check does:
scripts/test's run of them there (tests/test_gpu_check.py fails if one failed or was left
unrun; the session's last lines give the counts).

- the README's own interpreter (this one: xferbench installed, pytest-benchmark there) in a
  fresh clone (the tree committed into a new git repository): the lease itself, at the
  default measurement spec (no --quick), under the lease's budget (tests/test_gpu_check.py);
- a bare interpreter (a venv with torch and the image's usual packages, no xferbench, no asv,
  no pytest-benchmark) in a copy of the tree without .git, with no git on PATH: asv comes
  from wheels fetched for that Python, the suite commit is passed in; as a smoke rehearsal
  (XFERBENCH_GPU_CHECK_QUICK=1), under the same budget, its machine named as ``xferbench
  run`` names it: what it alone rehearses (no git, the carried wheels, no pytest-benchmark)
  does not depend on the spec, and its quick figures must be filed as quick (where this
  interpreter is not the README's, the README rehearsal is skipped and the bare one is the
  lease, at the default spec). Its grid is the whole smoke grid, quick, on the emulated
  device, under the budget it fits in with room to spare: tests/test_run_emu.py reads it as
  the suite's end-to-end run on emu (one grid measured for both, not two).

Beside the other tests, the 2-core machine runs more threads than it has cores: each run's
plan counts what it has spent, so their budgets must hold all the same (the grid's
measurement is timed, so a loaded host costs it samples, not seconds; the classes' starts and
the gpu tests are what the load stretches), and the tests that hold a stream for milliseconds
must hold whatever the host's load (the busy-stream hazard tries again a trial whose spin the
host outlasted; the pinned allocation counts assert reuse, not a count the load sets:
tests/test_pinning.py says why)."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import re
import runpy
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slowmark import slow_fixture
from venvs import linked_venv

REPO = Path(__file__).resolve().parents[1]

#: What the GPU image holds beside torch (the device tool's page), less what we cannot need
#: and less pytest-benchmark, which the image has: the bare rehearsal runs without it. pip is
#: the image's too: scripts/gpu-check installs the carried wheels with it.
IMAGE_PACKAGES = ["numpy", "pytest", "nvidia-ml-py", "packaging", "filelock", "pyyaml", "pip"]
#: The rehearsal's lease: the smoke sweep's sizes at the default spec, planned as on a GPU
#: (costs.json); its grid 260 s, to hold the lease parts that `scripts/lease-plan --device
#: emu --sweep smoke` plans with at least MIN_SPARE to spare for a loaded CI machine (tested
#: in test_rehearsal_plan.py: the plan grows with the suite), the tests 25 s at least (they
#: are cut short there, saying so). The whole smoke grid is planned at 225 s, so a grid
#: budget above it costs a quick machine nothing: the run ends when its grid is done.
LEASE = {"XFERBENCH_SWEEP": "smoke", "XFERBENCH_GPU_CHECK_BUDGET": "300",
         "XFERBENCH_GPU_CHECK_TESTS": "25", "XFERBENCH_GPU_CHECK_GRID": "260"}
#: The share of the planned lease parts the rehearsal's grid budget holds beyond them. It
#: was 10% (grid 230 s for 204 s planned, 13% to spare) until CI on 02eed7f, a loaded
#: machine, ran the README interpreter's rehearsal 268 s of its 270 s and saved no number
#: of Hazards or UnsyncedTimer; here the same grid took 200 s to reach its last class.
MIN_SPARE = 0.25
#: The README rehearsal's machine name; the bare one takes the name ``xferbench run`` gives.
README_MACHINE = "emu-rehearsal"
#: The suite commit both rehearsals pass in (a GPU machine's copy of the tree has no git).
SUITE_COMMIT = "b" * 40


def emu_plan_env() -> dict[str, str]:
    """The environment the suite is described in for the emulated device, as scripts/lease-plan
    plans it: its probe (one device), the smoke sweep, the default spec."""
    # the probe is read from the script (a copy here could drift)
    caps = runpy.run_path(str(REPO / "scripts" / "lease-plan"))["PROBES"]["emu"]
    return {**os.environ, "XFERBENCH_SWEEP": LEASE["XFERBENCH_SWEEP"], "XFERBENCH_QUICK": "0",
            "XFERBENCH_PROBE": json.dumps({"device": "emu:0", "capabilities": caps})}


@functools.cache
def suite_classes() -> frozenset[str]:
    """Every class of the suite that one emulated device measures (Peer needs a second), as
    the suite's own discovery finds them: a class added to benchmarks/ is expected at once."""
    from xferbench.commands.run.suite import describe_suite

    return frozenset(c.name for c in describe_suite(str(REPO), emu_plan_env()) if c.measured)


def rehearsal_fixture(func):
    """Under ``@pytest.fixture``: a fixture that starts or waits for a rehearsal; every test
    that uses it, directly or through another fixture, is marked ``rehearsal``."""
    func.xferbench_rehearsal = True
    return func


def mark_rehearsals(items: list[pytest.Item]) -> None:
    """Mark ``rehearsal`` every test that uses a rehearsal (call it before ``-m`` reads the
    marks), and put them first (stable): scripts/test runs the tests marked ``rehearsal`` in a
    process of their own, so that each rehearsal runs once, the README one from the start, and
    no xdist process of the other tests starts one of its own; the other tests marked so by
    hand (the package installed as users get it) come after them there."""
    using = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is not None and any(defs and getattr(defs[-1].func, "xferbench_rehearsal", False)
                                    for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.rehearsal)
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
        emu.build()  # this interpreter's torch is the rehearsals': one build serves both
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    from emu._build import cache_root

    return {"XFERBENCH_EMU": "1", "XFERBENCH_EMU_CACHE": str(cache_root())}


@pytest.fixture(scope="session")
@rehearsal_fixture
@slow_fixture
def bare(tmp_path_factory):
    """(interpreter, tree, tmpdir, PATH without git): a venv with torch and the image's
    packages only (this interpreter's, linked: tests/venvs.py), and a copy of the
    tree without .git, with .whl/ fetched for that Python."""
    work = tmp_path_factory.mktemp("gpu-machine")
    python = linked_venv(work / "venv", ["torch", *IMAGE_PACKAGES]) / "python"
    for absent in ("asv", "xferbench", "pytest_benchmark"):
        proc = subprocess.run([str(python), "-c", f"import {absent}"], capture_output=True)
        assert proc.returncode != 0, f"the bare interpreter must not hold {absent}"
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


def _start_rehearsal(python: Path, tree: Path, tmp: Path, out: Path, **env: str) -> dict:
    """The check started, its output to a file beside OUTDIR (two run at once: no pipes)."""
    log = out.parent / f"{out.name}.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [str(tree / "scripts" / "gpu-check"), str(out)], cwd=tree, stdout=fh,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,  # stopped as a group
            env=gpu_check_env(python, tmp, **emu_env(), **LEASE,
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
@rehearsal_fixture
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
    started = _start_rehearsal(Path(sys.executable), tree, tmp, work / "out",
                               XFERBENCH_MACHINE=README_MACHINE)
    yield {**started, "machine": README_MACHINE}
    _stop(started)


#: (which rehearsal, its pytest-gpu.log) for each that ran in this session: the run's last
#: lines count its gpu tests (rehearsed_gpu_tests), the emulated device's run of them.
GPU_LOGS: list[tuple[str, Path]] = []


def rehearsed_gpu_tests(terminalreporter) -> None:
    """Each rehearsal's count of the gpu tests it ran on the emulated device (the plugin's
    line) and pytest's summary of them: scripts/test runs them there and nowhere else."""
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
@rehearsal_fixture
@slow_fixture
def rehearsals(readme_started, bare, tmp_path_factory):
    """Both checks, one after the other: the README one (started by ``readme_started``, the
    lease at the default spec) to its end, then the bare one, in the tree without .git and
    git hidden from PATH, its machine unnamed (``xferbench run`` names it). scripts/test runs
    the other tests beside them on two processes: each check shares the 2-core machine with
    those as a lease's run would a loaded host, and its budget must hold all the same (each
    run's plan counts what it has spent). Side by side beside the other tests, the README
    one's grid took 206 to 241 s of its 260; one after the other, 176 to 187 s."""
    python, tree, tmp, path = bare
    # quick where the README one rehearses the lease at the default spec, else the lease
    quick = not isinstance(readme_started, str)
    readme = readme_started if isinstance(readme_started, str) else _finish(readme_started)
    bare_started = _start_rehearsal(python, tree, tmp, tmp_path_factory.mktemp("bare") / "out",
                                    PATH=path, XFERBENCH_GPU_CHECK_QUICK=str(int(quick)))
    bare_started["quick"] = quick
    try:  # on ^C (it no longer reaches it) the bare one stops here
        bare_done = _finish(bare_started)
    finally:
        _stop(bare_started)
    if not isinstance(readme, str):
        GPU_LOGS.append(("the README rehearsal of scripts/gpu-check", readme["out"] /
                         "pytest-gpu.log"))
    GPU_LOGS.append(("the bare rehearsal of scripts/gpu-check", bare_done["out"] /
                     "pytest-gpu.log"))
    return {"readme": readme, "bare": bare_done}


@pytest.fixture(scope="session")
def readme_rehearsal(rehearsals):
    if isinstance(rehearsals["readme"], str):
        pytest.skip(rehearsals["readme"])
    return rehearsals["readme"]


@pytest.fixture(scope="session")
def bare_rehearsal(rehearsals):
    """The bare interpreter's check: its ``out`` holds ``run.log`` and ``results/``, its
    machine the one ``xferbench run`` named (the only folder under ``results/``)."""
    r = rehearsals["bare"]
    machines = [p.name for p in (r["out"] / "results").glob("*") if p.is_dir()]
    return {**r, "machine": machines[0] if len(machines) == 1 else None}


@pytest.fixture(scope="session")
def lease_rehearsal(rehearsals, bare_rehearsal):
    """The rehearsal at the default spec: the README one, or the bare one where it ran alone."""
    readme = rehearsals["readme"]
    return bare_rehearsal if isinstance(readme, str) else readme

"""Shared fixtures: the device under test, capability probes real and fake, small budgets.

Tests marked ``gpu`` are skipped here when PyTorch reports no accelerator, so a CPU-only
machine runs the whole suite with them shown as skipped (``-ra`` lists why).

With ``XFERBENCH_EMU=1`` the session runs on the emulated accelerator (tests/emu): it is
built if needed and loaded when pytest starts, becomes torch's accelerator for the whole
session, and the ``gpu`` tests run on it (``scripts/gpu-check`` runs ``-m gpu`` so, and
scripts/test through its gpu-check runs, tests/gpu_check_runs.py). If it cannot be built,
the header says why in one line and the ``gpu`` tests stay skipped. On it, a test that asserts
timing is skipped ("hardware only": its times are host threads'), and one that
needs CUDA itself is skipped too ("CUDA only"): the markers ``timing`` and ``cuda_only(what)``
say so, and the summary at the end counts both.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import emu  # tests/emu: stdlib only until load(), which imports torch
import pytest
from gpu_check_runs import (  # noqa: F401  scripts/gpu-check on the emulated device
    default_spec_gpu_check,
    gpu_check_runs,
    mark_end_to_end,
    minimal_gpu_check,
    minimal_machine,
    readme_gpu_check,
    readme_started,
    report_emulated_gpu_tests,
)
from manyversions import write_many_versions
from slowmark import mark_slow_and_order, report_unmarked_slow, slow_fixture

from xferbench.cli import main
from xferbench.devices import Capabilities, Device, capabilities, is_emulated, resolve_device
from xferbench.spec import MeasureSpec

#: The checkout's root: ``benchmarks/`` and ``src/`` live here.
REPO_ROOT = Path(__file__).resolve().parents[1]

#: Why XFERBENCH_EMU=1 asked for the emulated device and did not get it (one line), else None.
EMU_UNAVAILABLE: str | None = None

#: How a skip's reason starts, by why the test cannot run on this device.
CUDA_ONLY = "CUDA only: "
HARDWARE_ONLY = "hardware only: "
#: Warnings torch emits only on a real GPU: cuBLAS making the context a thread lacked, NVML
#: or CUDA failing to start, torch.cuda's own (pynvml's deprecation). On a real accelerator a
#: gpu test records them in the warnings summary instead of failing on them; every other
#: warning, and every warning elsewhere, is an error (pyproject.toml's filterwarnings).
REAL_GPU_WARNINGS = (
    "always:.*cuBLAS.*:UserWarning",
    "always:.*(NVML|nvml).*:UserWarning",
    "always:CUDA initialization.*:UserWarning",
    r"always::UserWarning:torch\.cuda.*",
    r"always::FutureWarning:torch\.cuda.*",
)


def real_gpu_warnings(dev: Device | None) -> tuple[str, ...]:
    """The warning filters a gpu test gets on ``dev``: REAL_GPU_WARNINGS on a real
    accelerator, none on the emulated one (it emits none of them) or the CPU."""
    return REAL_GPU_WARNINGS if dev is not None and not is_emulated(dev) else ()


@pytest.fixture(autouse=True)
def _not_an_xdist_worker_below(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pytest a test starts (pytester, a script) is not an xdist worker of this session:
    pytest-benchmark reads PYTEST_XDIST_WORKER and would disable itself there."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def emu_requested() -> bool:
    return os.environ.get("XFERBENCH_EMU") == "1"


def pytest_configure(config: pytest.Config) -> None:
    global EMU_UNAVAILABLE
    if not emu_requested():
        return
    try:
        emu.load()  # builds once per torch version (cached in the venv), then loads
    except emu.BuildUnavailable as exc:
        EMU_UNAVAILABLE = str(exc)
    except Exception as exc:  # a bad XFERBENCH_EMU_* value, a library torch refuses
        EMU_UNAVAILABLE = f"{type(exc).__name__}: {exc}"


def pytest_report_header(config: pytest.Config) -> str | None:
    if not emu_requested():
        return None
    if EMU_UNAVAILABLE is not None:
        return f"emulated device: not loaded, the gpu tests stay skipped: {EMU_UNAVAILABLE}"
    return (f"emulated device: {accelerator()} (tests/emu) is torch's accelerator in this "
            "session; correctness and flow only, timing assertions are skipped")


@functools.cache
def accelerator() -> Device | None:
    """The accelerator PyTorch reports here (what ``resolve_device("auto")`` picks), or None;
    with XFERBENCH_EMU=1, the emulated one."""
    dev = resolve_device("auto")
    return dev if dev.is_accelerator else None


def _no_accelerator_reason() -> str:
    reason = "needs an accelerator: resolve_device('auto') is the CPU"
    if EMU_UNAVAILABLE is not None:
        reason += f" (the emulated device is not loaded: {EMU_UNAVAILABLE})"
    return reason


def telling(item: pytest.Item) -> bool:
    """Whether ``item`` pins a GPU-only behaviour (``cuda_only`` or ``timing``): what a short
    time budget on a real GPU must run first, since no emulated run can stand in for it."""
    return any(item.get_closest_marker(m) for m in ("cuda_only", "timing"))


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_slow_and_order(config, items)
    mark_end_to_end(items)
    if os.environ.get("XFERBENCH_TELLING_FIRST") == "1":  # scripts/gpu-check's test stage
        items.sort(key=lambda item: not telling(item))  # stable: file order within each
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and accelerator() is not None:
        for item in gpu_items:
            for spec in real_gpu_warnings(accelerator()):
                item.add_marker(pytest.mark.filterwarnings(spec))
    if not gpu_items or accelerator() is not None:
        return
    skip = pytest.mark.skip(reason=_no_accelerator_reason())
    for item in gpu_items:
        item.add_marker(skip)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    report_unmarked_slow(terminalreporter)
    _emulated_counts(terminalreporter)
    report_emulated_gpu_tests(terminalreporter)


def _emulated_counts(terminalreporter: pytest.TerminalReporter) -> None:
    """On the emulated device, one line counting the gpu tests: passed, failed, and skipped
    by why (CUDA only, hardware only, or the practice's own skip of a combination)."""
    dev = accelerator() if emu_requested() and EMU_UNAVAILABLE is None else None
    if dev is None or not is_emulated(dev):
        return
    stats = terminalreporter.stats
    gpu = {kind: [r for r in stats.get(kind, []) if "gpu" in getattr(r, "keywords", {})
                  and r.when in ("call", "setup")]
           for kind in ("passed", "failed", "error", "skipped")}
    reasons = [str(r.longrepr[-1]).removeprefix("Skipped: ") for r in gpu["skipped"]
               if isinstance(r.longrepr, tuple)]
    cuda = sum(r.startswith(CUDA_ONLY) for r in reasons)
    hardware = sum(r.startswith(HARDWARE_ONLY) for r in reasons)
    terminalreporter.write_line(
        f"emulated device {dev}: {len(gpu['passed'])} gpu tests passed, "
        f"{len(gpu['failed']) + len(gpu['error'])} failed, {len(gpu['skipped'])} skipped "
        f"({cuda} CUDA only, {hardware} hardware only (timing), "
        f"{len(reasons) - cuda - hardware} combinations the practice itself skips); "
        "each skip's reason is listed below")


def _suite_modules() -> dict[str, object]:
    return {name: module for name, module in sys.modules.items()
            if name == "benchmarks" or name.startswith("benchmarks.")}


@pytest.fixture
def fresh_suite():
    """``fresh_suite("bench_x")`` imports a module of benchmarks/ afresh, so that it reads the
    environment the test set (a probe, a sweep) at import, as asv's class processes do. Every
    module of benchmarks/ is put back as it was afterwards: none imported under one test's
    probe is seen by another (a class and the NoFigure it raises from another import)."""
    import importlib

    saved = _suite_modules()
    for name in saved:
        del sys.modules[name]
    yield lambda module: importlib.import_module(f"benchmarks.{module}")
    for name in _suite_modules():
        del sys.modules[name]
    sys.modules.update(saved)


@pytest.fixture
def gpu_device(request: pytest.FixtureRequest) -> Device:
    """The accelerator under test; skips the test when there is none, and where its markers
    say it cannot run: ``cuda_only(what)`` off CUDA, ``timing`` on an emulated device."""
    dev = accelerator()
    if dev is None:
        pytest.skip(_no_accelerator_reason())
    cuda_only = request.node.get_closest_marker("cuda_only")
    if cuda_only is not None and dev.type != "cuda":
        pytest.skip(f"{CUDA_ONLY}{cuda_only.args[0]} exists for CUDA and ROCm, not {dev}")
    if request.node.get_closest_marker("timing") is not None and is_emulated(dev):
        pytest.skip(f"{HARDWARE_ONLY}asserts timing, and {dev} is emulated on the host: its "
                    "times are host threads', not a device's (the correctness twin runs)")
    return dev


@pytest.fixture
def no_accelerator() -> None:
    """For a CPU-only behaviour (e.g. "cuda" is absent): skips where an accelerator exists."""
    if accelerator() is not None:
        pytest.skip(f"this machine has {accelerator()}")


@pytest.fixture
def cpu_caps() -> Capabilities:
    """The real capability probe of the CPU (no pinned memory, events or side streams)."""
    return capabilities("cpu")


@pytest.fixture
def gpu_caps() -> Capabilities:
    """A fake accelerator that supports everything, for skip logic tested on any machine."""
    return Capabilities("cuda:0", True, True, True, stream_hold=True)


@pytest.fixture
def mps_caps() -> Capabilities:
    """A fake MPS device: events, but pinning means nothing there and it has one stream."""
    return Capabilities("mps", False, True, False,
                        reason="mps has unified memory (pinning changes nothing) and one stream")


@pytest.fixture
def small_budget() -> MeasureSpec:
    """A spec whose budgets keep a measured workload to about a tenth of a second."""
    return MeasureSpec(warmup_s=0.01, min_time_s=0.02, max_time_s=0.1)


@pytest.fixture
def no_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Budgets as given: XFERBENCH_QUICK from the caller's shell would scale them down."""
    monkeypatch.delenv("XFERBENCH_QUICK", raising=False)


def _run_python(*args: str, env: dict[str, str] | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, *args], cwd=REPO_ROOT, env=full_env, capture_output=True,
        text=True, timeout=timeout, check=False,
    )


@pytest.fixture
def run_python():
    """``run_python("-m", "xferbench", ...)``: this interpreter in a fresh process, from the
    repository root, stdout/stderr captured as text; ``env=`` adds to the environment."""
    return _run_python


def probe(device: str = "cpu", **caps: object) -> str:
    """XFERBENCH_PROBE's JSON for ``device`` with ``caps`` (none by default: the CPU's)."""
    return json.dumps({"device": device, "capabilities": {
        "device": device, "pinned_memory": False, "timing_events": False,
        "side_streams": False, "reason": "the CPU has none" if device == "cpu" else "",
        **caps}})


#: The CPU's probe, as `xferbench run` hands it to the suite: describe needs no torch.
CPU_PROBE = probe()
#: A CUDA device's probe that can do everything the suite asks.
GPU_PROBE = probe("cuda:0", pinned_memory=True, timing_events=True, side_streams=True,
                  stream_hold=True)


def emu_runs_in_process(session: pytest.Session, path: Path) -> bool:
    """Whether the emulated device's own tests in ``path`` run in this process: loading it
    makes it torch's accelerator for the whole process, so only where that is harmless (the
    file alone, or a session already on it); otherwise ``rerun_in_fresh_process`` runs them."""
    return emu.is_loaded() or all(Path(item.path) == path for item in session.items)


def rerun_in_fresh_process(path: Path, timeout: float = 600) -> None:
    """Run the tests of ``path`` in a fresh interpreter: skipped if all of them skip there,
    failed (with the end of their output) if any fails."""
    done = _run_python("-m", "pytest", "-q", "-ra", "-p", "no:cacheprovider", str(path),
                       timeout=timeout)
    output = done.stdout + done.stderr
    if done.returncode == 0 and not re.search(r"\d+ passed", output):
        reasons = re.findall(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", output)
        pytest.skip(reasons[0] if reasons else f"every test of {path.name} was skipped")
    assert done.returncode == 0, output[-6000:]


#: The committed series the tests' figures come from: per machine folder of results/, the
#: suite commit its results files were measured at (six PyTorch releases each).
#: committed_results() copies these alone, so that results committed later (a GPU's first
#: series, another release, another machine) change no test.
TEST_SERIES = {"cpu-2core-vm": "d61e069d", "cpu-2core-vm-rerun": "d61e069d",
               "cpu-2core-vm-intel": "2c8287b0"}


def series_files(results: Path, series: dict[str, str] = TEST_SERIES) -> list[Path]:
    """The files of ``series`` ({machine: commit prefix}) in the folder ``results``: its
    benchmarks.json, and per machine its machine.json and the results files (with their
    sidecars) whose names start with the commit prefix; those that exist (a copy of the tree
    made for a GPU machine has no results/)."""
    found = [results / "benchmarks.json"]
    for machine, commit in series.items():
        found += [results / machine / "machine.json",
                  *sorted((results / machine).glob(f"{commit}-*"))]
    return [p for p in found if p.is_file()]


@functools.cache
def committed_results() -> Path:
    """A copy of the committed series the tests were written against (TEST_SERIES), so that
    neither what a user's own runs add to results/ (the README's first command adds
    results/<host>/) nor results committed later change a test. XFERBENCH_TEST_RESULTS
    points the tests elsewhere."""
    chosen = os.environ.get("XFERBENCH_TEST_RESULTS")
    if chosen:
        return Path(chosen)
    source = REPO_ROOT / "results"
    dest = Path(tempfile.mkdtemp(prefix="xferbench-committed-")) / "results"
    for path in series_files(source):
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return dest


@functools.cache
def all_committed_results() -> Path:
    """Every file git tracks under results/, copied: what the README's generated blocks and
    the shipped price table are made from (a user's own runs left out)."""
    source = REPO_ROOT / "results"
    try:
        proc = subprocess.run(["git", "ls-files", "-z", "results"], cwd=REPO_ROOT,
                              capture_output=True, check=False)
    except OSError:  # no git binary (a GPU machine's image): the folder as it is
        return source
    tracked = [name for name in proc.stdout.decode().split("\0") if name]
    if proc.returncode != 0 or not tracked:
        return source  # not a git checkout: the folder as it is
    dest = Path(tempfile.mkdtemp(prefix="xferbench-committed-")) / "results"
    for name in tracked:
        target = dest / Path(name).relative_to("results")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)
    return dest


@pytest.fixture
def results_copy(tmp_path: Path) -> Path:
    """A copy of committed_results() in the test's own folder, for a test that alters it."""
    dest = tmp_path / "results"
    shutil.copytree(committed_results(), dest,
                    ignore=shutil.ignore_patterns(".xferbench-run.lock"))
    return dest


def series_options(path: Path) -> list[str]:
    """``--machine`` and ``--torch`` of the series of results file ``path``: what a command
    that needs that series is given (read it before a test damages the file)."""
    params = json.loads(path.read_text())["params"]
    return ["--machine", path.parent.name, "--torch", str(params["torch"])]


@pytest.fixture(scope="session")
@slow_fixture
def committed_site(tmp_path_factory) -> Path:
    """The site published from the committed results, once a session (once an xdist
    worker): read it, or copy it (``shutil.copytree``) to change it; never change it."""
    out = tmp_path_factory.mktemp("committed-site") / "site"
    assert main(["publish", "--results", str(committed_results()), "--out", str(out)]) == 0
    return out


#: Versions in the generated dataset that the site must scale to, and the bounds it must keep.
MANY_VERSIONS = 20


@pytest.fixture(scope="session")
@slow_fixture
def many_versions_site(tmp_path_factory) -> tuple[Path, float, list[str]]:
    """The site published from a generated results folder with ``MANY_VERSIONS`` PyTorch
    versions (tests/manyversions.py): (site folder, seconds the publish took, versions)."""
    work = tmp_path_factory.mktemp("many-versions")
    versions = write_many_versions(committed_results(), work / "results", MANY_VERSIONS)
    started = time.perf_counter()
    assert main(["publish", "--results", str(work / "results"), "--out", str(work / "site")]) == 0
    return work / "site", time.perf_counter() - started, versions


@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    """A fresh tmpfs of ``size`` ("4m") mounted on the folder ``where`` for the block (root
    only: the test is skipped, saying why, where mounting is not allowed), unmounted after."""
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)

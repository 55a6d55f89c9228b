"""Shared fixtures: the device under test, capability probes real and fake, small budgets.

Tests marked ``gpu`` are skipped here when PyTorch reports no accelerator, so a CPU-only
machine runs the whole suite with them shown as skipped (``-ra`` lists why).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from manyversions import write_many_versions

from xferbench.cli import main
from xferbench.devices import Capabilities, Device, capabilities, resolve_device
from xferbench.practices import Budget

#: The checkout's root: ``benchmarks/`` and ``src/`` live here.
REPO_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def accelerator() -> Device | None:
    """The accelerator PyTorch reports here (what ``resolve_device("auto")`` picks), or None."""
    dev = resolve_device("auto")
    return dev if dev.is_accelerator else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items or accelerator() is not None:
        return
    skip = pytest.mark.skip(reason="needs an accelerator: resolve_device('auto') is the CPU")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture
def gpu_device() -> Device:
    """The accelerator under test; skips the test when there is none."""
    dev = accelerator()
    if dev is None:
        pytest.skip("needs an accelerator: resolve_device('auto') is the CPU")
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
    return Capabilities("cuda:0", True, True, True)


@pytest.fixture
def mps_caps() -> Capabilities:
    """A fake MPS device: events, but pinning means nothing there and it has one stream."""
    return Capabilities("mps", False, True, False,
                        reason="mps has unified memory (pinning changes nothing) and one stream")


@pytest.fixture
def small_budget() -> Budget:
    """A budget that keeps a measured workload to about a tenth of a second."""
    return Budget(warmup_s=0.01, min_time_s=0.02, max_time_s=0.1)


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


@functools.cache
def committed_results() -> Path:
    """The results folder as committed: a copy of the files git tracks under results/, so
    that what a user's own runs added there (the README's first command adds
    results/<host>/) changes no test. XFERBENCH_TEST_RESULTS points the tests elsewhere."""
    chosen = os.environ.get("XFERBENCH_TEST_RESULTS")
    if chosen:
        return Path(chosen)
    source = REPO_ROOT / "results"
    proc = subprocess.run(["git", "ls-files", "-z", "results"], cwd=REPO_ROOT,
                          capture_output=True, check=False)
    tracked = [name for name in proc.stdout.decode().split("\0") if name]
    if proc.returncode != 0 or not tracked:
        return source  # not a git checkout: the folder as it is
    dest = Path(tempfile.mkdtemp(prefix="xferbench-committed-")) / "results"
    for name in tracked:
        target = dest / Path(name).relative_to("results")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)
    return dest


#: Versions in the generated dataset that the site must scale to, and the bounds it must keep.
MANY_VERSIONS = 20


@pytest.fixture(scope="session")
def many_versions_site(tmp_path_factory) -> tuple[Path, float, list[str]]:
    """The site published from a generated results folder with ``MANY_VERSIONS`` PyTorch
    versions (tests/manyversions.py): (site folder, seconds the publish took, versions)."""
    work = tmp_path_factory.mktemp("many-versions")
    versions = write_many_versions(committed_results(), work / "results", MANY_VERSIONS)
    started = time.perf_counter()
    assert main(["publish", "--results", str(work / "results"), "--out", str(work / "site")]) == 0
    return work / "site", time.perf_counter() - started, versions

"""scripts/gpu-check rehearsed as the GPU machine meets it: a copy of the tree without .git, an
interpreter holding torch, numpy and pytest but neither xferbench nor asv, asv from wheels
fetched for that interpreter's Python. It passes only if results with numbers come back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xferbench.results import load

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

#: What the GPU image holds beside torch (the device tool's page), less what we cannot need.
IMAGE_PACKAGES = ["numpy", "pytest", "pytest-benchmark", "nvidia-ml-py", "packaging",
                  "filelock", "pyyaml"]


@pytest.fixture(scope="module")
def machine(tmp_path_factory):
    """(interpreter, tree, tmpdir): a venv with torch only (and the image's usual packages),
    and a copy of the tracked tree without .git, with .whl/ fetched for that Python."""
    import torch

    work = tmp_path_factory.mktemp("gpu-machine")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, f"torch=={torch.__version__.split('+')[0]}", *IMAGE_PACKAGES],
                   check=True, timeout=900)
    absent = subprocess.run([str(python), "-c", "import asv"], capture_output=True)
    assert absent.returncode != 0, "the rehearsal's interpreter must not hold asv"
    tree = work / "tree"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    for name in filter(None, files):
        if name.startswith("results/") or not (REPO / name).is_file():
            continue
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, tree / name)
    version = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info"
                              "[:2])"], capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([str(REPO / "scripts" / "fetch-gpu-wheels")], cwd=REPO, check=True,
                   capture_output=True, timeout=600,
                   env={**os.environ, "XFERBENCH_WHEELS_PYTHON": version,
                        "XFERBENCH_WHEELS_DIR": str(tree / ".whl")})
    tmp = work / "tmp"
    tmp.mkdir()
    return python, tree, tmp


def _gpu_check(machine, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    python, tree, tmp = machine
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "ASV_PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(tree / "scripts" / "gpu-check"), str(out)], cwd=tree,
                          capture_output=True, text=True, timeout=900,
                          env={**clean, "PYTHON": str(python), "TMPDIR": str(tmp), **env})


def test_gpu_check_refuses_a_machine_without_an_accelerator_at_once(machine, tmp_path):
    proc = _gpu_check(machine, tmp_path / "out")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-check: no accelerator here"), proc.stderr
    assert proc.stdout.startswith("gpu-check: torch 2.")  # the torch found, first
    assert not (tmp_path / "out").exists()


def test_gpu_check_rehearsal_brings_back_results_with_numbers(machine, tmp_path):
    out = tmp_path / "out"
    proc = _gpu_check(machine, out, XFERBENCH_GPU_CHECK_ALLOW_CPU="1",
                      XFERBENCH_GPU_CHECK_QUICK="1",
                      XFERBENCH_SUITE_COMMIT="a" * 40, XFERBENCH_MACHINE="rehearsal")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    first = log.splitlines()[0]
    assert first.startswith("gpu-check: torch 2.") and "device cpu" in first
    assert "carried wheels" in log
    # the machine's own packages are never shadowed: only what it lacked was installed
    site = machine[2] / "xferbench-site"
    assert (site / "asv").is_dir() and (site / "asv_runner").is_dir()
    assert not (site / "packaging").exists() and not (site / "yaml").exists()
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert len(files) <= 8, files  # what the device tool brings back
    assert all(len(Path(f).parts) <= 3 for f in files)  # no more than 2 folders down
    rs = load(str(out / "results"))
    measured = [r for r in rs if r.ok]
    assert measured and all(r.value > 0 for r in measured if r.unit == "seconds")
    assert {r.commit for r in rs} == {"a" * 40}  # relabelled with the real suite commit
    assert {r.machine for r in rs} == {"rehearsal"}
    meta = next(out.glob("results/rehearsal/*.metadata"))
    assert json.loads(meta.read_text())["run"]["complete"] is True
    assert "| headline |" in (out / "table.md").read_text()
    assert "tensor-to-new: tensor.to() returns a new tensor" in (out / "table.md").read_text()


#: Every class of the suite that one device measures (Peer needs a second): the rehearsal on
#: the emulated device must save each with numbers.
SUITE_CLASSES = {"Copy", "PinMemory", "PinThenCopy", "Overlap", "Creation", "CreatedInForward",
                 "Loop", "Pipeline", "Hazards", "Contention", "UnsyncedTimer", "Behaviour"}


def test_gpu_check_rehearsed_on_the_emulated_device_saves_every_class(machine, tmp_path):
    """The whole check as a GPU machine meets it, on tests/emu: the grid under its budget plan
    saves every class with numbers, and the test stage's log names each test and ends with
    its summary line."""
    import emu

    try:
        emu.build()  # this interpreter's torch is the rehearsal's: the same build serves both
    except emu.BuildUnavailable as exc:
        pytest.skip(f"the emulated device is not available: {exc}")
    from emu._build import cache_root

    out = tmp_path / "out"
    proc = _gpu_check(machine, out, XFERBENCH_EMU="1", XFERBENCH_EMU_CACHE=str(cache_root()),
                      XFERBENCH_GPU_CHECK_QUICK="1", XFERBENCH_SWEEP="smoke",
                      XFERBENCH_GPU_CHECK_BUDGET="420", XFERBENCH_GPU_CHECK_GRID="200",
                      XFERBENCH_SUITE_COMMIT="b" * 40, XFERBENCH_MACHINE="emu-rehearsal")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    assert "device emu" in log.splitlines()[0]
    rs = load(str(out / "results"))
    saved = {r.benchmark.split(".")[1] for r in rs if r.ok}
    assert saved == SUITE_CLASSES, f"classes without a number: {SUITE_CLASSES - saved}"
    assert "Benchmarking existing" in (out / "asv.log").read_text()  # asv's own output kept
    assert len([p for p in out.rglob("*") if p.is_file()]) <= 8  # what the device tool returns
    tests = (out / "pytest-gpu.log").read_text()
    assert "tests/test_copies.py::test_accelerator_copy_runs_and_verifies" in tests
    assert " PASSED" in tests
    last = [line for line in tests.splitlines() if line.strip()][-1]
    assert last.startswith("=") and " passed" in last and " in " in last, last

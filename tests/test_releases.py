"""The committed dataset: consecutive PyTorch releases of one build on one machine, each with
the whole default grid, and `xferbench compare` between each consecutive pair."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench.results import load

REPO = Path(__file__).resolve().parents[1]
MACHINE = "cpu-2core-vm"


def _series():
    rs = load(str(committed_results())).filter(machine=MACHINE)
    return rs, rs.torch_versions()


def test_six_releases_of_one_build_type_each_with_the_whole_default_grid():
    rs, versions = _series()
    assert [v.split("+")[0] for v in versions] == [
        "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0"]
    assert all(v.split("+")[1].startswith("cu") for v in versions)  # PyPI's CUDA builds
    measured = {v: {(r.benchmark, r.params) for r in rs.filter(torch=v) if r.ok}
                for v in versions}
    first = measured[versions[0]]
    assert len(first) >= 60  # every value a CPU measures of the default grid
    for v in versions:
        assert measured[v] == first, f"{v} lacks {sorted(first - measured[v])[:3]}"
        side = rs.filter(torch=v)
        assert all(rs.metadata_for(r).torch == v for r in side)  # each with its sidecar


@pytest.mark.parametrize("step", range(5))
def test_compare_between_consecutive_releases_is_a_verdict_not_an_error(step):
    _rs, versions = _series()
    a, b = versions[step], versions[step + 1]
    proc = subprocess.run([sys.executable, "-m", "xferbench", "compare", a, b, "--machine",
                           MACHINE, "--results", str(committed_results())],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    assert f"A: torch {a}" in proc.stdout and f"B: torch {b}" in proc.stdout

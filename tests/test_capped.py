"""A figure sampled under a budget cap (``xferbench run --budget S --cap``) is never read as a
default figure: its series is one of its own (params ``capped: yes``, the wrapper's
``-capped``), each combination sampled under a cap is in its sidecar's ``capped`` with how,
and ``list``, ``cite`` (text and JSON) and the page's banner all say so. A plain ``--budget``
run never caps: what does not fit at the default spec is cut."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import committed_results
from manyversions import write_many_versions

from xferbench.analysis.citation import as_dict, cite
from xferbench.analysis.provenance import CAPPED, banner, provenance
from xferbench.commands.list import listing
from xferbench.commands.publish.sections import banner_html
from xferbench.errors import XferbenchError
from xferbench.results import load
from xferbench.results.runrecords import CAPPED as CAPPED_STATUS
from xferbench.results.sidecar import load_sidecar

# With the others, not alone: a run's budget counts what it has spent, so it holds on a
# loaded host.

REPO = Path(__file__).resolve().parents[1]
BENCH = "bench_copies.Copy.track_completion_s"
ROW = {"direction": "h2d", "host_memory": "pageable", "sync": "blocking", "layout": "one",
       "size": "64MiB"}
HOW = "sampled under a budget cap: max_time_s 0.17 s of its default 1 s (--budget --cap)"


@pytest.fixture
def gpu_results(tmp_path: Path) -> tuple[Path, Path]:
    """A GPU-labelled results folder (one series, may be cited) and its one results file."""
    root = tmp_path / "results"
    write_many_versions(committed_results(), root, n=1)
    path = next(p for p in root.glob("gpu-synthetic/*.json") if p.name != "machine.json")
    return root, path


def _cap(path: Path) -> None:
    """Mark ``path`` as a --cap run's, ROW of BENCH sampled under a cap."""
    data = json.loads(path.read_text())
    data["params"]["capped"] = "yes"
    path.write_text(json.dumps(data))
    side_path = path.with_suffix(".metadata")
    side = json.loads(side_path.read_text())
    side["run"]["capped"] = True
    side["runs"][-1]["capped"] = True
    side["capped"] = {BENCH: [{"params": ROW, "status": CAPPED_STATUS, "reason": HOW}]}
    side_path.write_text(json.dumps(side))


def test_a_capped_combination_is_marked_in_list_cite_and_the_banner(gpu_results):
    root, path = gpu_results
    plain = cite(load(str(root)), BENCH, ROW)
    assert plain.capped is None and plain.not_for_citation == ()  # before: may be cited
    _cap(path)
    rs = load(str(root))
    marked = [r for r in rs if r.capped]
    assert [(r.benchmark, r.param_dict) for r in marked] == [(BENCH, ROW)]
    assert marked[0].capped == HOW
    with pytest.raises(XferbenchError, match="only numbers measured as capped, which are not "
                                             "for citation.*--mode capped=yes"):
        cite(rs, BENCH, ROW)  # a capped series is cited only when asked for
    c = cite(rs, BENCH, ROW, allow_quick=True)
    data = as_dict(c)
    assert data["capped"] == HOW and CAPPED in data["not_for_citation"]
    assert data["sentence"].startswith("Not for citation: ") and CAPPED in data["sentence"]
    # another combination of the capped series: not capped itself, but of a capped series
    other = as_dict(cite(rs, BENCH, {**ROW, "size": "4MiB"}, allow_quick=True))
    assert other["capped"] is None and CAPPED in other["not_for_citation"]
    entry = next(e for e in listing(rs) if e["benchmark"] == BENCH)
    assert [s["capped"] for s in entry["series"]] == [1]
    series = provenance(rs)
    assert series[0].capped and CAPPED in series[0].reasons()
    assert banner(series) == [(CAPPED, series)]
    assert any(CAPPED in line for line in banner_html(series))


def test_the_list_command_says_how_many_were_capped(gpu_results):
    root, path = gpu_results
    _cap(path)
    proc = subprocess.run([sys.executable, "-m", "xferbench", "list", "--results", str(root)],
                          cwd=REPO, capture_output=True, text=True, check=True)
    line = next(x for x in proc.stdout.splitlines() if "sampled under a budget cap" in x)
    assert "(1 sampled under a budget cap: not for citation)" in line


@pytest.mark.slow
def test_a_run_with_cap_is_a_series_of_its_own_and_says_what_it_capped(tmp_path):
    results = tmp_path / "results"
    proc = subprocess.run([sys.executable, "-m", "xferbench", "run", "--budget", "20", "--cap",
                           "--bench", "bench_copies.Copy", "--device", "cpu",
                           "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    path = next(p for p in results.glob("*/*.json") if p.name != "machine.json")
    assert path.name.endswith("-capped_python.json") or "env-" in path.name
    assert json.loads(path.read_text())["params"]["capped"] == "yes"
    side = load_sidecar(str(path))
    assert side.runs[-1].capped is True
    rows = side.capped.get(BENCH, ())
    assert rows and all(r.status == CAPPED_STATUS and r.reason.startswith(
        "sampled under a budget cap: max_time_s ") for r in rows)
    rs = load(str(results))
    assert any(r.ok and r.capped for r in rs) and provenance(rs)[0].capped
    assert "[sampled under a budget cap]" in proc.stdout
    assert "--budget 20 s --cap for a grid planned at" in proc.stdout

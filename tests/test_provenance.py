"""Where each series came from and what it left without a number: the provenance read from
the sidecars (one thread count, the benchmark processes'), the banner's reasons (CPU-only for
the committed full run, quick and CPU-only for the golden quick run), what differs between
two series, and a reason for every combination without a number."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import committed_results
from manyversions import write_many_versions

from xferbench.analysis.provenance import (
    CPU_ONLY,
    EMULATED,
    NO_METADATA,
    QUICK,
    banner,
    differences,
    provenance,
)
from xferbench.commands.publish.unmeasured import NOT_RECORDED, NOT_RUN, gaps, unmeasured
from xferbench.results import load

RESULTS = committed_results()
GOLDEN = Path(__file__).resolve().parent / "golden" / "results"


def test_committed_series_are_a_full_cpu_run_not_for_citation():
    series = provenance(load(str(RESULTS)))
    assert len(series) >= 2
    for p in series:
        assert p.cpu_only and not p.quick and p.complete is True
        assert p.threads == 1 and p.cpu_model and p.python and p.os and p.gpu is None
        assert p.hardware == f"CPU {p.cpu_model}" and len(p.commit) == 40
    assert banner(series) == [(CPU_ONLY, series)]


def test_golden_series_are_quick_and_their_threads_are_the_benchmark_processes():
    series = provenance(load(str(GOLDEN)))
    sidecar = json.loads(next(GOLDEN.glob("*/*torch2.14.1*.metadata")).read_text())
    # schema 1 recorded the parent process's count under metadata and the benchmark
    # processes' under run: the one figure shown is the latter
    assert (sidecar["metadata"]["torch_threads"], sidecar["run"]["torch_threads"]) == (2, 1)
    assert [p.threads for p in series] == [1, 1]
    assert [reason for reason, _ in banner(series)] == [QUICK, CPU_ONLY]


def test_committed_sidecars_hold_one_thread_count():
    for path in RESULTS.glob("*/*.metadata"):
        side = json.loads(path.read_text())
        recorded = {side["metadata"]["torch_threads"]}
        for run in [side["run"], *side.get("runs", [])]:
            for key in ("threads", "torch_threads"):
                if run.get(key) is not None:
                    recorded.add(run[key])
        assert len(recorded) == 1, (path.name, recorded)


def test_a_gpu_series_may_be_cited_and_a_bare_one_may_not(tmp_path: Path):
    write_many_versions(RESULTS, tmp_path / "many", 2)
    series = provenance(load(str(tmp_path / "many")))
    assert banner(series) == [] and series[0].hardware == "NVIDIA H200"
    assert differences(series[0], series[1]) == []  # only the release differs
    bare = tmp_path / "bare"
    shutil.copytree(RESULTS, bare)
    for side in bare.glob("*/*.metadata"):
        side.unlink()
    series = provenance(load(str(bare)))
    assert [r for r, _ in banner(series)] == [NO_METADATA]


def test_a_series_of_an_emulated_device_is_not_for_citation_even_in_full(tmp_path: Path):
    write_many_versions(RESULTS, tmp_path / "many", 2)
    for path in (tmp_path / "many").glob("*/*.metadata"):
        side = json.loads(path.read_text())
        side["metadata"].update(emulated=True, gpu_name="xferbench emulated accelerator")
        path.write_text(json.dumps(side))
    series = provenance(load(str(tmp_path / "many")))
    assert [p.emulated for p in series] == [True, True]
    assert banner(series) == [(EMULATED, series)]


def test_differences_name_the_build_and_cuda():
    a, b = provenance(load(str(RESULTS)))[:2]  # 2.10.0+cu128 and 2.11.0+cu130, one machine
    diffs = {what: (x, y) for what, x, y in differences(a, b)}
    assert diffs["build"] == ("+cu128", "+cu130") and diffs["CUDA"] == ("12.8", "13.0")
    assert "threads" not in diffs and "machine" not in diffs


def test_every_combination_without_a_number_has_its_recorded_reason():
    rs = load(str(RESULTS))
    missing = unmeasured(rs)
    # every result without a number, and each benchmark a series never ran: the Intel host's
    # series ran the behaviour checks alone
    ran = [u for u in missing if u.status != NOT_RUN]
    assert len(ran) == sum(1 for r in rs.newest() if not r.ok)
    not_run = {(u.machine, u.benchmark) for u in missing if u.status == NOT_RUN}
    assert {m for m, _ in not_run} == {"cpu-2core-vm", "cpu-2core-vm-rerun",
                                        "cpu-2core-vm-intel"}
    # the sweeps predate the behaviour checks (and the suite's newest classes); the Intel
    # host ran the behaviour checks alone
    swept = {b for m, b in not_run if m != "cpu-2core-vm-intel"}
    assert "bench_behaviour.Behaviour.track_holds" in swept
    assert "bench_sync.Loop.track_step_s" not in swept
    assert "bench_behaviour.Behaviour.track_holds" not in {
        b for m, b in not_run if m == "cpu-2core-vm-intel"}
    assert {u.reason for u in missing} and NOT_RECORDED not in {u.reason for u in missing}
    # the benchmarks the issue found missing from the site: each has its reasons
    for name in ("bench_copies.Overlap.track_serialised_fraction",
                 "bench_copies.PinMemory.track_host_s", "bench_copies.Copy.track_enqueue_s",
                 "bench_creation.Creation.track_device_peak_bytes",
                 "bench_sync.Loop.track_syncs_per_step"):
        found = gaps(rs.declared_params(name), ran, name)
        assert found and all(g.reason for g in found), name
        declared = 1
        for values in rs.declared_params(name).values():
            declared *= len(values)
        assert sum(len(g.combos) for g in found) == declared, name


def test_old_sidecars_say_the_reason_was_not_recorded_and_absent_benchmarks_not_run(
        tmp_path: Path):
    rs = load(str(GOLDEN))
    assert {u.reason for u in unmeasured(rs)} == {NOT_RECORDED}
    copy = tmp_path / "results"
    shutil.copytree(RESULTS, copy)
    path = next(p for p in sorted(copy.glob("cpu-2core-vm/*.json")) if p.name != "machine.json")
    raw = json.loads(path.read_text())
    before = {(u.machine, u.torch, u.benchmark) for u in unmeasured(load(str(copy)))
              if u.status == NOT_RUN}
    del raw["results"]["bench_sync.Loop.track_step_s"]
    path.write_text(json.dumps(raw))
    after = {(u.machine, u.torch, u.benchmark) for u in unmeasured(load(str(copy)))
             if u.status == NOT_RUN}
    assert [b for _, _, b in after - before] == ["bench_sync.Loop.track_step_s"]

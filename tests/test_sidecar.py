"""The .metadata sidecar and the run's records: typed, round-tripped through their dicts, and
every older version read as the current one by one function (sidecar.upgrade)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xferbench.errors import XferbenchError
from xferbench.metadata import MachineMetadata
from xferbench.results.runrecords import AsvCall, Observation, Outcome, ProgressLine, RunRecord
from xferbench.results.sidecar import (
    SCHEMA_VERSION,
    Findings,
    Sidecar,
    load_sidecar,
    record_run,
    upgrade,
)

GOLDEN = Path(__file__).resolve().parent / "golden" / "results"


def _run(started: str, **changes) -> RunRecord:
    base = dict(commit="c" * 40, machine="box", device="cpu", sweep="default", quick=False,
                bench=None, started_at=started)
    return RunRecord(**{**base, **changes})


def _write(tmp_path: Path, data: dict) -> str:
    results = tmp_path / "r.json"
    results.write_text("{}")
    (tmp_path / "r.metadata").write_text(json.dumps(data))
    return str(results)


def test_a_version_1_sidecar_reads_as_the_current_version():
    path = next(GOLDEN.glob("*/*torch2.14.1*.json"))
    raw = json.loads(Path(str(path)[: -len(".json")] + ".metadata").read_text())
    assert raw["schema_version"] == 1 and "runs" not in raw  # the fixture is what it says
    side = load_sidecar(str(path))
    assert side is not None and len(side.runs) == 1 and side.run == side.runs[0]
    # version 1 kept the benchmark processes' threads in the run, the parent's in metadata
    assert (raw["run"]["torch_threads"], raw["metadata"]["torch_threads"]) == (1, 2)
    assert side.metadata.torch_threads == 1
    assert side.run.quick is bool(raw["run"]["quick"] or raw["run"]["short_budgets"])
    assert side.to_dict()["schema_version"] == SCHEMA_VERSION


def test_records_round_trip_through_their_dicts():
    run = _run("2026-01-02T03:04:05Z", complete=True, files=(AsvCall("^x", 0),),
               finished_at="2026-01-02T03:05:00Z")
    outcome = Outcome((("size", "4KiB"), ("sync", "blocking")), "skipped", "no device")
    side = Sidecar(MachineMetadata(device="cpu", torch="2.13.0+cpu"), (run,),
                   {"b.C.track_x": run.started_at}, {"b.C.track_x": (outcome,)})
    again = Sidecar.from_dict(upgrade(json.loads(json.dumps(side.to_dict()))))
    assert again.runs == (run,) and again.metadata == side.metadata
    assert dict(again.outcomes) == {"b.C.track_x": (outcome,)}
    line = ProgressLine("combination", "b.C", 1, 2, params=("4KiB",), status="measured",
                        seconds=0.5, values=(("track_x", 1e-3),))
    assert ProgressLine.from_dict(json.loads(json.dumps(line.to_dict()))) == line
    assert "finished_at" not in _run("t").to_dict()  # written once the run is over


def test_the_newest_run_as_written_wins_over_a_stale_copy_in_runs(tmp_path):
    """A relabel before these records updated "run" alone; "run" is what it says."""
    stale = _run("2026-01-02T03:04:05Z").to_dict()
    relabelled = {**stale, "commit": "f" * 40, "snapshot_commit": "c" * 40}
    path = _write(tmp_path, {"schema_version": 2, "metadata": {"device": "cpu"},
                             "run": relabelled, "runs": [stale]})
    side = load_sidecar(path)
    assert side.run.commit == "f" * 40 and side.run.snapshot_commit == "c" * 40


def test_a_sidecar_of_an_unknown_version_is_one_sentence(tmp_path):
    path = _write(tmp_path, {"schema_version": 99, "metadata": {}, "run": {}})
    with pytest.raises(XferbenchError, match="schema_version 99: this xferbench reads versions"):
        load_sidecar(path)


def test_record_run_keeps_earlier_runs_and_the_benchmarks_it_did_not_measure(tmp_path):
    path = _write(tmp_path, {"schema_version": 2, "metadata": {}, "run": {}})
    meta = MachineMetadata(device="cpu")
    first, second = _run("2026-01-01T00:00:00Z"), _run("2026-01-02T00:00:00Z")
    gap = Outcome((("size", "4KiB"),), "failed", "boom")
    record_run(path, meta, first, ["a", "b"], {"a": [gap]})
    record_run(path, meta, second, ["b"], {})
    side = load_sidecar(path)
    assert [r.started_at for r in side.runs] == [first.started_at, second.started_at]
    assert dict(side.benchmarks) == {"a": first.started_at, "b": second.started_at}
    assert dict(side.outcomes) == {"a": (gap,), "b": ()}


def test_observations_travel_with_the_run_and_are_replaced_per_benchmark(tmp_path):
    """What a behaviour check saw (its words) is kept per benchmark like its outcomes: a later
    run that measures the benchmark again replaces them, one that does not keeps them."""
    path = _write(tmp_path, {"schema_version": 2, "metadata": {}, "run": {}})
    meta = MachineMetadata(device="cuda:0")
    said = Observation((("check", "mismatch_loss_weight"),), "RuntimeError: Expected all ...")
    name = "bench_behaviour.Behaviour.track_holds"
    record_run(path, meta, _run("2026-01-01T00:00:00Z"), [name], {}, None,
               Findings(observations={name: [said]}))
    side = load_sidecar(path)
    assert dict(side.observations) == {name: (said,)}
    assert Observation.from_dict(json.loads(json.dumps(said.to_dict()))) == said
    record_run(path, meta, _run("2026-01-02T00:00:00Z"), ["b.C.track_x"], {})
    assert dict(load_sidecar(path).observations) == {name: (said,)}  # not re-measured: kept
    record_run(path, meta, _run("2026-01-03T00:00:00Z"), [name], {})
    assert dict(load_sidecar(path).observations) == {}  # re-measured and nothing said: gone
    line = ProgressLine("combination", "bench_behaviour.Behaviour", 1, 1,
                        params=("tensor_to_new",), status="measured",
                        values=(("track_holds", 1.0),), texts=(("track_holds", "x.to(...)"),))
    assert ProgressLine.from_dict(json.loads(json.dumps(line.to_dict()))) == line

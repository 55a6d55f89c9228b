"""``xferbench export``: every measured figure as CSV, Bencher Metric Format (checked against
Bencher's published JSON schema), PyTorch HUD v3 records (checked against the columns of
PyTorch's oss_ci_benchmark_v3 table) and github-action-benchmark's custom JSON (checked
against the fields the action documents), each with its interval, samples, unit, clock,
machine, PyTorch and suite commit read from the results, never typed."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from conftest import committed_results
from manyversions import write_many_versions

from xferbench.analysis.export import figure_clock
from xferbench.cli import main
from xferbench.commands.export import COLUMNS
from xferbench.results import load

#: Bencher's schema for BMF, as published at https://bencher.dev/bmf.json (draft-07): an
#: object of benchmarks, each an object of measures, each with a required number "value" and
#: optional "lower_value" and "upper_value".
BMF_SCHEMA = {
    "$id": "https://bencher.dev/bmf.json",
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {".+": {
        "type": "object",
        "patternProperties": {".+": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                           "upper_value": {"type": "number"}},
            "required": ["value"]}}}},
}
#: Bencher's limits (docs/reference/bencher-metric-format): a benchmark name of at most 1024
#: characters, a measure's name or slug of at most 64.
BMF_NAME_MAX, BMF_MEASURE_MAX = 1024, 64

#: github-action-benchmark's custom JSON (the "customSmallerIsBetter" and
#: "customBiggerIsBetter" tools of benchmark-action/github-action-benchmark: its README, and
#: the BenchmarkResult interface of its src/extract.ts): an array of entries, each a string
#: name and unit and a number value, optionally a string range and extra; the action reads
#: nothing else. A range "± x" (or "+- x") is what the action rescales when the unit changes.
ACTION_SCHEMA = {
    "type": "array", "minItems": 1,
    "items": {"type": "object", "additionalProperties": False,
              "required": ["name", "unit", "value"],
              "properties": {"name": {"type": "string", "minLength": 1},
                             "unit": {"type": "string", "minLength": 1},
                             "value": {"type": "number"},
                             "range": {"type": "string", "pattern": "^(\\+-|±) ?[0-9]"},
                             "extra": {"type": "string"}}},
}

#: PyTorch's oss_ci_benchmark_v3 table (pytorch/test-infra,
#: clickhouse_db_schema/oss_ci_benchmark_v3/schema.sql): each column's type, as JSON carries
#: it; a Map(String, String) is an object of strings, Array(Float32) a list of numbers.
TEXT, INT, TEXT_MAP = "text", "int", "text map"
HUD_COLUMNS = {"timestamp": INT, "schema_version": TEXT, "name": TEXT, "repo": TEXT,
               "head_branch": TEXT, "head_sha": TEXT, "workflow_id": INT, "run_attempt": INT,
               "job_id": INT}
HUD_RUNNER = {"name": TEXT, "type": TEXT, "cpu_info": TEXT, "cpu_count": INT, "mem_info": TEXT,
              "avail_mem_in_gb": INT, "gpu_info": TEXT, "gpu_count": INT,
              "gpu_mem_info": TEXT, "avail_gpu_mem_in_gb": INT, "extra_info": TEXT_MAP}
HUD_TUPLES = {
    "benchmark": {"name": TEXT, "mode": TEXT, "dtype": TEXT, "extra_info": TEXT_MAP},
    "model": {"name": TEXT, "type": TEXT, "backend": TEXT, "origins": "text list",
              "extra_info": TEXT_MAP},
    "metric": {"name": TEXT, "benchmark_values": "numbers", "target_value": "number",
               "extra_info": TEXT_MAP},
}


def _ok(value, kind: str) -> bool:
    return {
        TEXT: lambda v: isinstance(v, str),
        INT: lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        TEXT_MAP: lambda v: isinstance(v, dict) and all(
            isinstance(k, str) and isinstance(x, str) for k, x in v.items()),
        "text list": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "numbers": lambda v: isinstance(v, list) and v and all(
            isinstance(x, (int, float)) and math.isfinite(x) for x in v),
        "number": lambda v: isinstance(v, (int, float)),
    }[kind](value)


def hud_problems(record: dict) -> list[str]:
    """Where ``record`` would not load into the oss_ci_benchmark_v3 table."""
    out = [f"{k}: {record.get(k)!r} is not {t}" for k, t in HUD_COLUMNS.items()
           if not _ok(record.get(k), t)]
    for name, fields in HUD_TUPLES.items():
        part = record.get(name) or {}
        out += [f"{name}.{k}: {part.get(k)!r} is not {t}" for k, t in fields.items()
                if not _ok(part.get(k), t)]
    for runner in record.get("runners") or [None]:
        out += [f"runners.{k}: is not {t}" for k, t in HUD_RUNNER.items()
                if not _ok((runner or {}).get(k), t)]
    if record.get("schema_version") != "v3":
        out.append("schema_version is not v3")
    return out


def bmf_valid(data: dict) -> None:
    """``data`` against Bencher's schema (jsonschema comes with the test extra; a minimal GPU
    image without it skips the check, saying so)."""
    jsonschema = pytest.importorskip("jsonschema", reason="the BMF schema check needs jsonschema")
    jsonschema.validate(data, BMF_SCHEMA)


def name_of(r) -> str:
    return f"{r.benchmark}({', '.join(f'{k}={v}' for k, v in r.params)})"


def export(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["export", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def results() -> Path:
    return committed_results()


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory) -> Path:
    """Two generated GPU series (an H200, 'gpu-synthetic') from the committed figures."""
    dest = tmp_path_factory.mktemp("export-gpu") / "results"
    write_many_versions(committed_results(), dest, 2)
    return dest


def test_csv_has_a_row_per_measured_figure_with_its_interval_and_samples(capsys, results):
    code, out, _ = export(capsys, "--results", str(results))
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == COLUMNS
    rs = load(str(results))
    measured = [r for r in rs if r.ok]
    assert len(rows) == len(measured)
    r = next(r for r in measured if r.benchmark == "bench_copies.Copy.track_completion_s"
             and r.param_dict["size"] == "64MiB" and r.torch == "2.13.0+cu130"
             and r.machine == "cpu-2core-vm" and r.param_dict["layout"] == "one")
    row = next(x for x in rows if x["benchmark"] == r.benchmark and x["torch"] == r.torch
               and x["machine"] == r.machine
               and x["params"] == ";".join(f"{k}={v}" for k, v in r.params))
    assert float(row["value"]) == r.value
    assert (float(row["ci99_low"]), float(row["ci99_high"])) == tuple(sorted(r.ci_99))
    assert (float(row["q25"]), float(row["q75"])) == (r.q25, r.q75)
    assert [float(s) for s in row["samples"].split()] == list(r.samples)
    assert int(row["n_samples"]) == len(r.samples)
    assert row["commit"] == r.commit and len(row["commit"]) == 40
    assert row["unit"] == "seconds" and row["clock"] == "host"  # a CPU series: host copies
    assert float(row["gbps"]) == pytest.approx(64 * 2**20 / r.value / 1e9)
    low, high = float(row["gbps_ci99_low"]), float(row["gbps_ci99_high"])
    assert low < float(row["gbps"]) < high  # the slow end of the time is the low rate
    assert "measured on a CPU" in row["not_for_citation"]


def test_the_clock_of_each_figure_follows_the_benchmark_and_the_device():
    gpu = "cuda:0"
    assert figure_clock("bench_copies.Copy.track_device_s", "seconds", gpu) == "device"
    assert figure_clock("bench_copies.Copy.track_completion_s", "seconds", gpu) == "completion"
    assert figure_clock("bench_copies.Copy.track_enqueue_s", "seconds", gpu) == "enqueue"
    assert figure_clock("bench_contention.Contention.track_alone_s", "seconds", gpu) == "device"
    assert figure_clock("bench_sync.Loop.track_step_s", "seconds", gpu) == "completion"
    assert figure_clock("bench_copies.Copy.track_device_s", "seconds", "cpu") == "host"
    assert figure_clock("bench_sync.Loop.track_syncs_per_step", "syncs", gpu) == "none"


def test_bmf_is_bencher_shaped_with_times_in_nanoseconds(capsys, gpu_results):
    code, out, err = export(capsys, "--results", str(gpu_results), "--format", "bmf",
                            "--torch", "2.5.0")
    assert code == 0, err
    data = json.loads(out)
    bmf_valid(data)
    assert data and all(len(name) <= BMF_NAME_MAX for name in data)
    assert all(len(m) <= BMF_MEASURE_MAX for measures in data.values() for m in measures)
    rs = load(str(gpu_results)).filter(torch="2.5.0+cu128")
    r = next(r for r in rs if r.ok and r.benchmark == "bench_copies.Copy.track_completion_s")
    key = name_of(r) + " [completion clock]"  # the clock a time was read on, in its name
    latency = data[key]["latency"]
    assert latency["value"] == pytest.approx(r.value * 1e9)
    assert (latency["lower_value"], latency["upper_value"]) == pytest.approx(
        tuple(x * 1e9 for x in sorted(r.ci_99)))
    assert data[key]["bandwidth-gb-per-s"]["value"] == pytest.approx(r.gbps)
    other = next(r for r in rs if r.ok and r.unit == "bytes")  # a unit of its own
    assert data[name_of(other)]["bytes"]["value"] == other.value


def test_bmf_over_several_series_says_how_to_choose_one(capsys, results):
    code, out, err = export(capsys, "--results", str(results), "--format", "bmf")
    assert code == 2 and out == ""
    assert "18 series" in err and "--machine, --torch, --mode and --host" in err
    assert "\n" not in err.strip()
    code, out, err = export(capsys, "--results", str(results), "--format", "bmf",
                            "--machine", "cpu-2core-vm-rerun", "--torch", "2.13.0")
    assert code == 0, err
    bmf_valid(json.loads(out))


def test_hud_records_fit_the_v3_table(capsys, gpu_results):
    code, out, err = export(capsys, "--results", str(gpu_results), "--format", "hud",
                            "--bench", "Copy.track_completion_s|Loop")
    assert code == 0, err
    records = json.loads(out)
    assert records
    assert [p for rec in records for p in hud_problems(rec)] == []
    rec = next(x for x in records if x["model"]["name"].startswith("bench_copies.Copy"))
    assert rec["benchmark"]["extra_info"]["clock"] == "completion"  # cuda:0: not a CPU's
    assert rec["runners"][0]["gpu_info"] == "NVIDIA H200"
    # what the sidecar recorded of the host, not zeros; a number it did not record is named
    runner = rec["runners"][0]
    meta = load(str(gpu_results)).metadata_for(next(
        r for r in load(str(gpu_results)) if r.machine == runner["name"]))
    assert runner["cpu_info"] == (meta.cpu_model or "")
    assert runner["cpu_count"] == (meta.cpu_count if isinstance(meta.cpu_count, int) else 0)
    assert "avail_mem_in_gb" in runner["extra_info"]["not_recorded"]
    if not isinstance(meta.cpu_count, int):
        assert "cpu_count" in runner["extra_info"]["not_recorded"]
    assert rec["dependencies"]["torch"]["version"].startswith("2.")
    assert len(rec["head_sha"]) == 40


def test_hud_check_finds_a_bad_record():
    assert "metric.extra_info: {'median': 1.0} is not text map" in hud_problems(
        {"metric": {"extra_info": {"median": 1.0}}})


def test_nothing_matching_is_one_sentence_and_exit_2(capsys, results):
    code, out, err = export(capsys, "--results", str(results), "--bench", "NoSuchBench")
    assert code == 2 and out == ""
    assert "no measured figure matches" in err


def action_valid(data: list) -> None:
    """``data`` against the action's documented fields, and names unique in one file (the
    action follows each name from one run to the next)."""
    jsonschema = pytest.importorskip("jsonschema", reason="the shape check needs jsonschema")
    jsonschema.validate(data, ACTION_SCHEMA)
    names = [entry["name"] for entry in data]
    assert len(names) == len(set(names))


def test_github_action_benchmark_files_take_the_action_s_documented_shape(capsys, gpu_results):
    files = {}
    for better in ("smaller", "bigger"):
        code, out, err = export(capsys, "--results", str(gpu_results), "--format",
                                "github-action-benchmark", "--torch", "2.5.0", "--better",
                                better)
        assert code == 0, err
        files[better] = {entry["name"]: entry for entry in json.loads(out)}
        action_valid(list(files[better].values()))
    rs = load(str(gpu_results)).filter(torch="2.5.0+cu128")
    copy = next(r for r in rs if r.ok and r.benchmark == "bench_copies.Copy.track_completion_s")
    name = name_of(copy) + " [completion clock]"  # a time names its clock
    time, rate = files["smaller"][name], files["bigger"][name]
    low, high = sorted(copy.ci_99)
    assert (time["unit"], time["value"]) == ("ns", pytest.approx(copy.value * 1e9))
    wider = max(copy.value - low, high - copy.value) * 1e9
    assert float(time["range"].removeprefix("± ")) == pytest.approx(wider, rel=1e-5)
    assert (rate["unit"], rate["value"]) == ("GB/s", pytest.approx(copy.gbps))
    assert "torch 2.5.0+cu128 on gpu-synthetic" in time["extra"]
    units = {e["unit"] for e in files["smaller"].values()}
    assert "ns" in units and not any(u.endswith("/s") for u in units)
    assert {e["unit"] for e in files["bigger"].values()} <= {"GB/s", "holds"}


def test_the_action_s_file_over_several_series_says_how_to_choose_one(capsys, results):
    code, out, err = export(capsys, "--results", str(results), "--format",
                            "github-action-benchmark")
    assert code == 2 and out == ""
    assert err.startswith("xferbench: github-action-benchmark follows one series per file")
    code, out, err = export(capsys, "--results", str(results), "--format", "bmf", "--better",
                            "bigger")
    assert code == 2 and "--better chooses the figures of --format github-action" in err

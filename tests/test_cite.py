"""cite: the numbers in a citation are those in the results files, read back from the raw
asv JSON here; bad names and parameters are one sentence and exit 2."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import os
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench import XferbenchError
from xferbench.analysis.cautions import value_caution
from xferbench.analysis.citation import (
    as_dict,
    citation,
    cite,
    format_markdown,
    rows,
    sentence,
)
from xferbench.analysis.repeats import chart_machines as repeats
from xferbench.analysis.sitemap import figure_path
from xferbench.cli import main
from xferbench.commands.options import parse_params
from xferbench.results import Result, ResultSet, load
from xferbench.units import format_seconds

RESULTS = committed_results()


def raw_measurements() -> list[dict]:
    """Every measured value in the committed results, straight from the JSON files."""
    benchmarks = json.loads((RESULTS / "benchmarks.json").read_text())
    out = []
    for path in sorted(RESULTS.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        raw = json.loads(path.read_text())
        meta_path = path.with_suffix(".metadata")
        meta = json.loads(meta_path.read_text())["metadata"] if meta_path.exists() else {}
        for name, row in raw["results"].items():
            cols = dict(zip(raw["result_columns"], row))
            names = benchmarks[name]["param_names"]
            combos = [[]]
            for values in cols.get("params") or []:
                combos = [c + [str(ast.literal_eval(v))] for c in combos for v in values]
            for i, x in enumerate(cols.get("result") or []):
                if x is None or math.isnan(x):
                    continue
                def col(key: str, i: int = i, cols: dict = cols):
                    return cols[key][i] if isinstance(cols.get(key), list) else None

                out.append({
                    "path": path, "benchmark": name, "params": dict(zip(names, combos[i])),
                    "value": x, "q25": col("stats_q_25"), "q75": col("stats_q_75"),
                    "samples": col("samples"), "raw": raw, "meta": meta,
                    "started_at": cols.get("started_at"),
                    "unit": benchmarks[name]["unit"],
                })
    assert out, f"no measured value in {RESULTS}"
    return out


def citable() -> dict:
    """A measured value that only one series holds at its parameters, or the newest one."""
    rows = raw_measurements()
    by_key: dict = {}
    for m in rows:
        by_key.setdefault((m["benchmark"], tuple(m["params"].items())), []).append(m)
    # prefer a copy with a size: it also has a bandwidth
    ordered = sorted(by_key.values(), key=lambda ms: "size" not in ms[0]["params"])
    group = ordered[0]
    return max(group, key=lambda m: (m["raw"]["date"], m["started_at"] or 0,
                                     m["raw"]["params"]["torch"]))


def test_citation_numbers_are_those_in_the_results_file(capsys):
    m = citable()
    params = ",".join(f"{k}={v}" for k, v in m["params"].items())
    args = ["cite", m["benchmark"], "--results", str(RESULTS), "--format", "json"]
    assert main(args + (["--params", params] if params else [])) == 0
    c = json.loads(capsys.readouterr().out)
    raw = m["raw"]
    assert c["value"] == m["value"]
    assert (c["q25"], c["q75"]) == (m["q25"], m["q75"])
    assert c["n_samples"] == (len(m["samples"]) if m["samples"] else None)
    assert c["torch"] == raw["params"]["torch"]
    assert c["cuda"] == raw["params"]["cuda"]
    assert c["commit"] == raw["commit_hash"]
    assert c["machine"] == raw["params"]["machine"]
    assert c["measured_ms"] == (m["started_at"] or raw["date"])
    assert c["driver"] == (m["meta"].get("driver") or "unknown")
    cpu = str(m["meta"].get("device") or "").startswith("cpu")  # a CPU run has no GPU: null
    assert c["gpu"] == (m["meta"].get("gpu_name") or (None if cpu else "unknown"))
    assert Path(c["results_file"]).resolve() == m["path"].resolve()
    chart = repeats(load(str(RESULTS)))[c["machine"]]  # a host's repeats share its charts
    assert c["figure"] == os.path.join("site", figure_path(m["benchmark"], m["params"], chart))
    if "size" in m["params"] and m["unit"] == "seconds":
        assert c["gbps"] == pytest.approx(c["nbytes"] / m["value"] / 1e9)


def test_markdown_citation_quotes_the_value_and_figure(capsys):
    m = citable()
    params = [f"--param={k}={v}" for k, v in m["params"].items()]
    assert main(["cite", m["benchmark"].split(".", 1)[1], "--results", str(RESULTS),
                 *params]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    unit = m["unit"]
    shown = format_seconds(m["value"]) if unit == "seconds" else f"{m['value']:.3g} {unit}"
    assert f"median of {shown}" in lines[0]
    assert f"| median | {shown} |" in lines
    assert f"| PyTorch | {m['raw']['params']['torch']} |" in lines
    assert f"| suite commit | {m['raw']['commit_hash']} |" in lines
    assert any(line.startswith("| figure | `site/figures/") for line in lines)
    assert lines[2:4] == ["| | |", "| --- | --- |"]


def test_cite_chooses_a_version_with_torch():
    rs = load(str(RESULTS))
    m = citable()
    for version in rs.torch_versions():
        try:
            c = cite(rs, m["benchmark"], m["params"], torch=version)
        except XferbenchError:
            continue  # not measured under this version
        assert c.torch == version


def test_figure_exists_is_reported(tmp_path: Path):
    rs = load(str(RESULTS))
    m = citable()
    c = cite(rs, m["benchmark"], m["params"], site=str(tmp_path))
    assert not c.figure_exists
    assert "not built yet" in "\n".join(format_markdown(c))
    target = tmp_path / figure_path(m["benchmark"], m["params"], repeats(rs)[c.machine])
    target.parent.mkdir(parents=True)
    target.write_text("<svg/>")
    assert cite(rs, m["benchmark"], m["params"], site=str(tmp_path)).figure_exists


def _cli_error(args: list[str], capsys) -> str:
    assert main(["cite", *args, "--results", str(RESULTS)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    return err


def test_unknown_benchmark_lists_the_known_ones(capsys):
    err = _cli_error(["NoSuch.track_x"], capsys)
    assert "'NoSuch.track_x' is not in" in err and citable()["benchmark"] in err


def test_unknown_parameter_lists_the_valid_ones(capsys):
    m = citable()
    err = _cli_error([m["benchmark"], "--param", "colour=red"], capsys)
    assert "'colour' is not a parameter" in err
    assert all(k in err for k in m["params"])


def test_unknown_parameter_value_lists_the_valid_ones(capsys):
    m = citable()
    if not m["params"]:
        pytest.fail("the cited benchmark should take parameters")
    key = next(iter(m["params"]))
    err = _cli_error([m["benchmark"], "--param", f"{key}=bogus"], capsys)
    assert f"{key}=bogus is not a value" in err and m["params"][key] in err


def test_missing_parameters_name_what_to_add(capsys):
    m = citable()
    err = _cli_error([m["benchmark"]], capsys)
    assert "give also" in err


def test_unknown_version_names_those_that_exist(capsys):
    err = _cli_error([citable()["benchmark"], "--torch", "0.1.2"], capsys)
    assert "'0.1.2' is not in" in err


def test_empty_results_folder_exit_2(tmp_path: Path, capsys):
    assert main(["cite", "Copy.track_device_s", "--results", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no results" in err


def test_params_parse_groups_and_singles():
    assert parse_params(["a=1,b=2"], ["c=x"]) == {"a": "1", "b": "2", "c": "x"}
    with pytest.raises(XferbenchError, match="not name=value"):
        parse_params(["a"], [])


def _fraction(benchmark: str, value: float) -> Result:
    return Result(benchmark=benchmark, params=(("size", "64MiB"),), value=value,
                  unit="fraction", machine="box", commit="a" * 40, date_ms=1, torch="2.13.0",
                  cuda="12.8", python="3.12", env_name="e", path="/nowhere.json")


@pytest.mark.parametrize(("value", "words"), [
    (2.4, "above 1: the copy and the matmuls together took longer than one after the other"),
    (-0.7, "below 0: together the copy and the matmuls took less than the longer of the two"),
])
def test_a_serialised_fraction_outside_0_to_1_is_cited_with_what_it_measured(value, words):
    """Overlap's fraction is derived from three medians: outside 0 to 1 it is no share of the
    copy, and a quote must say so (cite's sentence, its rows and its JSON)."""
    r = _fraction("bench_copies.Overlap.track_serialised_fraction", value)
    c = citation(ResultSet([r], {}, "/nowhere"), r, figure="f.svg")
    assert c.caution and words in c.caution
    assert f"Caution: {c.caution}." in sentence(c)
    assert ("caution", c.caution) in rows(c) and as_dict(c)["caution"] == c.caution


def test_a_fraction_within_0_to_1_carries_no_caution_and_another_outside_says_so():
    assert value_caution(_fraction("bench_copies.Overlap.track_serialised_fraction", 1.0)) \
        is None
    assert value_caution(_fraction("bench_copies.Overlap.track_serialised_fraction", 0.0)) \
        is None
    other = value_caution(_fraction("bench_pipeline.Pipeline.track_starvation_share", 1.5))
    assert other and "outside 0 to 1" in other
    seconds = _fraction("bench_sync.Loop.track_step_s", 1.5)
    assert value_caution(dataclasses.replace(seconds, unit="seconds")) is None


def _copy(direction: str) -> Result:
    params = (("direction", direction), ("host_memory", "pageable"), ("sync", "blocking"),
              ("layout", "one"), ("size", "64MiB"))
    return Result(benchmark="bench_copies.Copy.track_device_s", params=params, value=2e-5,
                  unit="seconds", machine="box", commit="a" * 40, date_ms=1, torch="2.13.0",
                  cuda="12.8", python="3.12", env_name="e", path="/nowhere.json")


def test_a_d2d_rate_is_cited_as_bytes_copied_with_twice_that_in_traffic():
    r = _copy("d2d")
    c = citation(ResultSet([r], {}, "/nowhere"), r, figure="f.svg")
    assert "GB/s copied (its memory traffic, read and write, is twice that)" in sentence(c)
    assert "is twice that" in dict(rows(c))["bandwidth"]
    h2d = _copy("h2d")
    assert "twice" not in sentence(citation(ResultSet([h2d], {}, "/nowhere"), h2d,
                                            figure="f.svg"))


def test_the_copy_table_marks_a_d2d_rate_as_copied_and_says_what_it_counts():
    from xferbench.analysis.headline import format_copy_rows
    from xferbench.units import D2D_COPIED

    rows_ = [{"clock": "device", "direction": d, "host_memory": "pageable", "sync": "blocking",
              "gbps": 3355.4, "noise": 0.01, "share_of_pcie": None} for d in ("d2d", "h2d")]
    text = "\n".join(format_copy_rows(rows_))
    assert "| d2d | pageable | blocking | device | 3355.40 copied |" in text
    assert "| h2d | pageable | blocking | device | 3355.40 |" in text
    assert D2D_COPIED in text
    assert D2D_COPIED not in "\n".join(format_copy_rows(rows_[1:]))

"""The results loader on the committed results and on broken copies of them: an empty folder,
a truncated file, an unknown format version, each refused in one sentence."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench import XferbenchError
from xferbench.results import load, load_file, version_key

#: The committed results; XFERBENCH_TEST_RESULTS points these tests at another folder.
RESULTS = committed_results()


def result_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/*.json") if p.name != "machine.json")


def test_committed_results_hold_two_pytorch_versions():
    rs = load(str(RESULTS))
    assert len(rs.torch_versions()) >= 2, (
        f"{RESULTS} should hold two PyTorch versions (scripts/make-dataset): "
        f"it has {rs.torch_versions()}")
    assert rs.machines()
    assert any(r.ok for r in rs)


def first_measured(raw: dict) -> tuple[str, int, dict]:
    """(benchmark, combination index, columns) of the first measured value in a raw file."""
    for name, row in raw["results"].items():
        cols = dict(zip(raw["result_columns"], row))
        for i, x in enumerate(cols.get("result") or []):
            if x is not None and not math.isnan(x):
                return name, i, cols
    raise AssertionError("no measured value in the file")


def test_loaded_values_are_those_in_the_results_file():
    path = result_files(RESULTS)[0]
    raw = json.loads(path.read_text())
    name, i, cols = first_measured(raw)
    mine = [r for r in load_file(str(path)) if r.benchmark == name][i]
    assert mine.value == cols["result"][i]
    assert mine.q25 == cols["stats_q_25"][i] and mine.q75 == cols["stats_q_75"][i]
    assert mine.commit == raw["commit_hash"]
    assert mine.torch == raw["params"]["torch"]
    assert mine.started_ms == cols["started_at"]
    if cols.get("samples") and cols["samples"][i]:
        assert list(mine.samples) == cols["samples"][i]


def test_empty_folder_is_refused_in_one_sentence(tmp_path: Path):
    with pytest.raises(XferbenchError, match="no results in") as err:
        load(str(tmp_path))
    assert "\n" not in str(err.value)


def test_missing_folder_is_refused(tmp_path: Path):
    with pytest.raises(XferbenchError, match="no results in"):
        load(str(tmp_path / "absent"))


def test_folder_with_benchmark_list_but_no_results_is_refused(results_copy: Path):
    for p in result_files(results_copy):
        p.unlink()
    with pytest.raises(XferbenchError, match="no results in .*xferbench run"):
        load(str(results_copy))


def left_out(results: Path, victim: Path, capsys, named: Path | None = None) -> str:
    """Why ``victim`` was left out of the folder's results: every other file is read, its
    series alone is missing, and one warning line says so, naming the file at fault
    (``named``: the victim, or its sidecar)."""
    every = {r.series for r in load(str(RESULTS))}
    capsys.readouterr()
    rs = load(str(results))
    warned = capsys.readouterr().err
    assert list(rs.skipped) == [str(victim)] and warned.count("\n") == 1, warned
    assert str(named or victim) in warned and "its series only" in warned
    assert not [r for r in rs if r.path == str(victim)] and len(rs.series()) == len(every) - 1
    return rs.skipped[str(victim)]


def test_a_truncated_results_file_is_named_and_left_out_alone(results_copy: Path, capsys):
    victim = result_files(results_copy)[-1]
    text = victim.read_text()
    victim.write_text(text[: len(text) // 2])
    message = left_out(results_copy, victim, capsys)
    assert str(victim) in message and "truncated" in message and "\n" not in message


def test_a_file_of_an_unknown_asv_format_version_is_left_out(results_copy: Path, capsys):
    victim = result_files(results_copy)[0]
    data = json.loads(victim.read_text())
    data["version"] = 99
    victim.write_text(json.dumps(data))
    assert "format version 99: this xferbench reads version 2" in left_out(
        results_copy, victim, capsys)


def test_a_file_whose_sidecar_has_an_unknown_schema_is_left_out(results_copy: Path, capsys):
    sidecar = next(results_copy.glob("*/*.metadata"), None)
    assert sidecar, f"{RESULTS} has no .metadata sidecar: make it with xferbench run"
    data = json.loads(sidecar.read_text())
    data["schema_version"] = 99
    sidecar.write_text(json.dumps(data))
    assert "schema_version 99" in left_out(results_copy, sidecar.with_suffix(".json"), capsys,
                                           named=sidecar)


def test_a_results_file_that_is_not_asv_is_left_out(results_copy: Path, capsys):
    victim = result_files(results_copy)[0]
    victim.write_text(json.dumps({"hello": "world"}))
    assert "is not an asv results file" in left_out(results_copy, victim, capsys)


def test_the_only_results_file_damaged_is_one_sentence(tmp_path: Path):
    dest = tmp_path / "results"
    dest.mkdir()
    shutil.copy(RESULTS / "benchmarks.json", dest)
    victim = result_files(RESULTS)[0]
    (dest / victim.parent.name).mkdir()
    shutil.copy(victim.parent / "machine.json", dest / victim.parent.name)
    (dest / victim.parent.name / victim.name).write_text(json.dumps({"hello": "world"}))
    with pytest.raises(XferbenchError, match="is not an asv results file"):
        load(str(dest))


def test_version_without_local_tag_finds_the_build():
    rs = load(str(RESULTS))
    for full in rs.torch_versions():
        base = full.split("+")[0]
        if sum(v.split("+")[0] == base for v in rs.torch_versions()) == 1:
            assert rs.match_torch(base) == full
        assert rs.match_torch(full) == full


def test_unknown_version_names_those_that_exist():
    rs = load(str(RESULTS))
    with pytest.raises(XferbenchError) as err:
        rs.match_torch("1.0.0")
    assert all(v in str(err.value) for v in rs.torch_versions())


def test_two_builds_of_one_release_are_ambiguous(results_copy: Path):
    victim = result_files(results_copy)[0]
    twin = victim.with_name("twin-" + victim.name)
    data = json.loads(victim.read_text())
    base = data["params"]["torch"].split("+")[0]
    data["params"]["torch"] = base + "+cu999"
    twin.write_text(json.dumps(data))
    rs = load(str(results_copy))
    with pytest.raises(XferbenchError, match="ambiguous"):
        rs.match_torch(base)
    assert rs.match_torch(base + "+cu999") == base + "+cu999"


def test_newest_keeps_the_later_run(results_copy: Path):
    victim = result_files(results_copy)[0]
    later = victim.with_name("later-" + victim.name)
    data = json.loads(victim.read_text())
    data["date"] += 1000
    for name, row in data["results"].items():
        cols = dict(zip(data["result_columns"], row))
        for key in ("result", "stats_q_25", "stats_q_75"):  # a slower run, its quartiles too
            if cols.get(key):
                cols[key] = [None if v is None else v * 2 for v in cols[key]]
        if cols.get("samples"):
            cols["samples"] = [xs and [x * 2 for x in xs] for xs in cols["samples"]]
        data["results"][name] = [cols[c] for c in data["result_columns"][: len(row)]]
    later.write_text(json.dumps(data))
    rs = load(str(results_copy))
    newest = rs.newest()
    assert len(newest) < len(rs)
    series = (data["params"]["torch"], data["params"]["machine"])
    mine = [r for r in newest if (r.torch, r.machine) == series]
    assert mine and all(r.path == str(later) for r in mine if r.ok)


def test_version_key_orders_numerically():
    assert sorted(["2.13.0", "2.4.1", "2.13.0+cu128", "2.9.0"], key=version_key) == [
        "2.4.1", "2.9.0", "2.13.0", "2.13.0+cu128"]


def test_the_series_and_benchmark_indexes_give_what_a_scan_gives():
    """filter(series=), find and declared_params read an index made on first use: each answer
    is the scan's, in the scan's order, and a narrowed set indexes its own results."""
    rs = load(str(RESULTS))
    for key in rs.series():
        assert rs.filter(series=key).results == [r for r in rs if r.series == key]
    assert rs.filter(series=None).results == rs.results
    names = sorted({r.benchmark for r in rs})
    for name in names[:10]:
        rows = [r for r in rs if r.benchmark == name]
        assert rs.find(name) == rows
        narrowed = rs.filter(torch=rows[0].torch)
        assert narrowed.find(name) == [r for r in rows if r.torch == rows[0].torch]
    assert rs.find("bench_copies.NoSuch.track_x") == []
    other = rs.series()[0]
    assert rs.filter(machine="no-such-machine").filter(series=other).results == []


def test_an_interval_asv_put_below_zero_is_read_from_zero(results_copy):
    """A few spread samples can give asv a 99% interval of the median reaching below 0; no
    figure of the suite can be negative, so its lower end is read as 0, the upper kept."""
    path = next(p for p in sorted(results_copy.glob("*/*.json")) if p.name != "machine.json")
    data = json.loads(path.read_text())
    cols = data["result_columns"]
    name, row = next((k, v) for k, v in data["results"].items()
                     if isinstance(v, list) and v[cols.index("stats_ci_99_a")])
    at = next(i for i, x in enumerate(row[cols.index("stats_ci_99_a")]) if x is not None)
    high = row[cols.index("stats_ci_99_b")][at]
    row[cols.index("stats_ci_99_a")][at] = -abs(high)
    path.write_text(json.dumps(data))
    read = [r for r in load(str(results_copy)) if r.benchmark == name and r.path == str(path)]
    assert read[at].ci_99 == (0.0, high)

"""The price table: every spec reads a benchmark that exists; the shipped table is the one the
committed results give; a CPU-only or quick run is never quoted as a GPU figure; the GPU path,
on fabricated GPU results (test data: the committed CPU figures relabelled as an H200's, plus
a few copy figures typed here), gives the ratio of the raw values and a cite command that
``xferbench cite`` accepts."""

from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, all_committed_results, committed_results
from manyversions import write_many_versions

from xferbench.analysis.prices import PRICE_KEYS, PRICES, PriceBook, build_table, table_text
from xferbench.cli import main as cli_main
from xferbench.errors import XferbenchError
from xferbench.results import load

SHIPPED = REPO_ROOT / "src" / "xferbench" / "data" / "prices.json"
FAKE_GPU = "NVIDIA H200"  # manyversions' fabricated GPU series


def _set_value(path: Path, benchmark: str, params: dict[str, str], value: float) -> None:
    """Write ``value`` (and a 2% IQR) into one combination of an asv results file."""
    data = json.loads(path.read_text())
    bench = json.loads((path.parent.parent / "benchmarks.json").read_text())[benchmark]
    columns = data["result_columns"]
    cols = dict(zip(columns, data["results"][benchmark]))
    combos = list(itertools.product(*[[ast.literal_eval(v) for v in values]
                                      for values in cols["params"]]))
    want = tuple(params[name] for name in bench["param_names"])
    i = combos.index(want)
    for key, x in (("result", value), ("stats_q_25", value * 0.99), ("stats_q_75", value * 1.01)):
        cols[key][i] = x
    data["results"][benchmark] = [cols[c] for c in columns[: len(data["results"][benchmark])]]
    path.write_text(json.dumps(data))


def _add_benchmark(path: Path, benchmark: str, params: dict[str, list[str]],
                   values: dict[tuple[str, ...], float], unit: str = "seconds") -> None:
    """Add ``benchmark`` (absent from the older suite the committed data came from) to a
    results file and its benchmarks.json: ``values`` by combination, NaN elsewhere."""
    bench_file = path.parent.parent / "benchmarks.json"
    declared = json.loads(bench_file.read_text())
    declared[benchmark] = {"name": benchmark, "param_names": list(params), "unit": unit,
                           "params": [[repr(v) for v in vs] for vs in params.values()],
                           "type": "track", "version": "0"}
    bench_file.write_text(json.dumps(declared))
    data = json.loads(path.read_text())
    combos = list(itertools.product(*params.values()))
    result = [values.get(c, float("nan")) for c in combos]
    cols = {"result": result, "params": [[repr(v) for v in vs] for vs in params.values()],
            "stats_q_25": [x * 0.99 for x in result], "stats_q_75": [x * 1.01 for x in result]}
    data["results"][benchmark] = [cols.get(c) for c in data["result_columns"]]
    path.write_text(json.dumps(data))


DONE = "bench_copies.Copy.track_completion_s"
ONE = {"direction": "h2d", "sync": "blocking", "layout": "one"}


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory) -> Path:
    """Fabricated test data: two GPU series (torch 2.4.0 and 2.5.0 on 'gpu-synthetic', an
    H200) from the committed CPU figures, with pinned and pin-then-copy figures added to the
    newer one: pinned 2 ms and pageable 4 ms for 64 MiB, pin-then-copy 6 ms vs 4 ms."""
    dest = tmp_path_factory.mktemp("gpu") / "results"
    write_many_versions(committed_results(), dest, 2)
    newest = sorted((dest / "gpu-synthetic").glob("*2.5.0*.json"))[0]
    for host_memory, seconds in (("pinned", 0.002), ("pageable", 0.004)):
        _set_value(newest, DONE, {**ONE, "host_memory": host_memory, "size": "64MiB"}, seconds)
    _set_value(newest, DONE, {**ONE, "host_memory": "pinned", "size": "4MiB"}, 0.0002)
    _add_benchmark(newest, "bench_copies.PinThenCopy.track_completion_s",
                   {"cache": ["warm", "cold"], "layout": ["one", "many"], "size": ["64MiB"]},
                   {("warm", "one", "64MiB"): 0.006})
    return dest


@pytest.mark.skipif(bool(os.environ.get("XFERBENCH_TEST_RESULTS")),
                    reason="XFERBENCH_TEST_RESULTS points the tests at other results")
def test_shipped_table_is_the_committed_results_table():
    assert table_text(load(str(all_committed_results()))) == SHIPPED.read_text(), \
        "src/xferbench/data/prices.json is stale: run scripts/make-prices"


def test_make_prices_check_finds_a_stale_table(tmp_path):
    table = json.loads(SHIPPED.read_text())
    table["prices"] = table["prices"][1:]
    stale = tmp_path / "prices.json"
    stale.write_text(json.dumps(table))
    script = str(REPO_ROOT / "scripts" / "make-prices")
    env = {**os.environ, "PYTHON": sys.executable, "TABLE": str(stale)}
    proc = subprocess.run([script, "--check"], env=env, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "is stale: regenerate it with scripts/make-prices" in proc.stderr
    current = subprocess.run([script], env=env, capture_output=True, text=True)
    assert current.returncode == 0, current.stderr
    assert stale.read_text() == SHIPPED.read_text()


def test_a_book_of_cpu_runs_only_has_no_gpu_price_and_says_so():
    assert PriceBook.load().source == "the shipped price table"
    book = PriceBook.load(str(committed_results()))
    for key in PRICE_KEYS:
        assert book.get(key) is None
        reason = book.reason(key)
        assert reason.startswith("no GPU price yet (the results hold only CPU runs: ")
        assert "cpu-2core-vm, torch 2." in reason  # each CPU series named
        assert book.describe(key) == reason
    cpu = book.get("item_per_epoch", allow_cpu=True)
    assert cpu is not None and not cpu.is_gpu
    assert "(a CPU, no GPU)" in cpu.text() and "GPU" not in cpu.text().replace("no GPU", "")
    assert book.copy_gbps("h2d", "pageable", 64 << 20) is None


def test_shipped_book_equals_one_built_from_the_results():
    shipped = PriceBook.load()
    built = PriceBook.load(str(all_committed_results()))
    assert shipped.prices == built.prices and shipped.rates == built.rates


def test_gpu_price_is_the_ratio_of_the_raw_medians(gpu_results):
    book = PriceBook.load(str(gpu_results))
    rs = load(str(gpu_results)).filter(torch="2.5.0+cu128")
    c = next(s for s in PRICES if s.key == "item_per_epoch").comparison
    practice = rs.latest(c.practice.benchmark, **c.practice.param_dict).value
    baseline = rs.latest(c.baseline.benchmark, **c.baseline.param_dict).value
    price = book.get("item_per_epoch")
    assert price is not None and price.is_gpu
    assert price.series.torch == "2.5.0+cu128"  # the newest release wins
    assert price.ratio == pytest.approx(baseline / practice)
    text = price.text()
    assert text.startswith(f"per-batch `.item()`: steps/s {practice / baseline:.2f}x of one "
                           "read per epoch (")
    assert f"on {FAKE_GPU} (gpu-synthetic), torch 2.5.0+cu128" in text
    assert book.reason("item_per_epoch") == ""
    assert book.describe("item_per_epoch") == f"{text} [{price.command}]"


def test_gpu_copy_prices_in_gbps(gpu_results):
    book = PriceBook.load(str(gpu_results))
    pinned = book.get("pinned_vs_pageable")
    assert pinned.ratio == pytest.approx(2.0)
    assert "a pageable source: H2D GB/s 0.50x of a pinned one (16.8 GB/s vs 33.6 GB/s" \
        in pinned.text()
    pin = book.get("pin_then_copy")
    assert pin.ratio == pytest.approx(6 / 4)
    assert "speed 1.50x" not in pin.text() and "speed 0.67x of a plain `.to(dev)`" in pin.text()
    rate = book.copy_gbps("h2d", "pinned", 5 << 20)  # nearest measured: 4 MiB
    assert rate.nbytes == 4 << 20 and rate.gbps == pytest.approx((4 << 20) / 0.0002 / 1e9)
    assert book.copy_gbps("h2d", "pinned", 100 << 20).nbytes == 64 << 20


def test_gpu_cite_commands_print_their_figures(gpu_results, capsys):
    book = PriceBook.load(str(gpu_results))
    for price in book.prices:
        args = price.command.split()[1:]
        assert cli_main([*args, "--results", str(gpu_results)]) == 0, price.command
        out = capsys.readouterr().out
        assert f"GPU {FAKE_GPU}" in out or not price.is_gpu


def _relabel_sidecars(root: Path, **metadata) -> None:
    for side in root.glob("*/*.metadata"):
        data = json.loads(side.read_text())
        data["metadata"].update(metadata)
        side.write_text(json.dumps(data))


def test_emulated_or_quick_runs_are_never_gpu_prices(gpu_results, tmp_path):
    import shutil

    emulated = tmp_path / "emulated"
    shutil.copytree(gpu_results, emulated)
    _relabel_sidecars(emulated, emulated=True)
    book = PriceBook.load(str(emulated))
    assert book.get("item_per_epoch") is None
    assert "emulated device" in book.get("item_per_epoch", allow_cpu=True).text()

    quick = tmp_path / "quick"
    shutil.copytree(gpu_results, quick)
    for side in quick.glob("*/*.metadata"):  # a quick run, as its file and sidecar say
        data = json.loads(side.read_text())
        data["run"]["quick"] = True
        side.write_text(json.dumps(data))
        results = side.with_suffix(".json")
        raw = json.loads(results.read_text())
        raw["params"]["quick"] = "yes"
        results.write_text(json.dumps(raw))
    book = PriceBook.load(str(quick))
    assert all(book.get(k, allow_cpu=True) is None for k in PRICE_KEYS)
    assert book.reason("item_per_epoch") == \
        "no GPU price yet (the results hold only quick runs: smoke tests)"


def test_unknown_key_and_broken_table():
    book = PriceBook.load()
    with pytest.raises(KeyError, match="not a price key"):
        book.get("nonsense")
    with pytest.raises(XferbenchError, match="version 99"):
        PriceBook.from_table({"schema_version": 99}, source="t")
    with pytest.raises(XferbenchError, match="malformed"):
        PriceBook.from_table({"schema_version": 1, "series": []}, source="t")


def test_build_table_is_deterministic():
    rs = load(str(committed_results()))
    assert json.dumps(build_table(rs), sort_keys=True) == \
        json.dumps(build_table(rs), sort_keys=True)

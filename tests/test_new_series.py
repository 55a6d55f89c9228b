"""Results committed after the tests were written (a GPU's first series beside the CPU ones,
another commit's run on a machine the tests know) change no test: committed_results() copies
only the series the tests were written against, and every command the tests cover reads a
results folder that holds more."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import TEST_SERIES, committed_results, series_files
from manyversions import write_many_versions

from xferbench.analysis.prices import PriceBook
from xferbench.cli import main
from xferbench.results import load

NEW = "gpu-synthetic"  # manyversions' fabricated GPU machine, torch 2.4.0 and 2.5.0


@pytest.fixture(scope="module")
def grown(tmp_path_factory) -> Path:
    """The tests' series, a fabricated GPU machine beside them (test data, not a measurement),
    and a run of another suite commit in one of the tests' machine folders."""
    dest = tmp_path_factory.mktemp("grown") / "results"
    shutil.copytree(committed_results(), dest)
    write_many_versions(committed_results(), dest, 2)
    machine, commit = next(iter(TEST_SERIES.items()))
    for path in sorted((dest / machine).glob(f"{commit}-*torch2.15.0*")):
        shutil.copy2(path, path.with_name("e" * 8 + path.name[len(commit):]))
    return dest


def test_the_repository_holds_the_series_the_tests_were_written_against():
    found = {p.parent.name for p in series_files(committed_results()) if p.suffix == ".json"
             and p.name not in ("machine.json", "benchmarks.json")}
    assert found == set(TEST_SERIES), (
        f"results/ holds no results of {sorted(set(TEST_SERIES) - found)} at the commit "
        "TEST_SERIES in tests/conftest.py names: the series the tests were written against")


def test_the_tests_read_the_same_files_from_a_folder_that_holds_more(grown):
    def names(root: Path) -> list[str]:
        return [p.relative_to(root).as_posix() for p in series_files(root)]

    assert names(grown) == names(committed_results())
    left_out = {p.relative_to(grown).as_posix() for p in grown.rglob("*") if p.is_file()} \
        - set(names(grown))
    assert any(n.startswith(f"{NEW}/") for n in left_out)
    assert any(n.split("/")[1].startswith("eeeeeeee-") for n in left_out)
    assert NEW in load(str(grown)).machines()


@pytest.mark.parametrize("argv", [
    ["claims"], ["claims", "--format", "json"], ["claims", "--format", "markdown"],
    ["cite", "--claim", "item-per-batch"], ["table"], ["table", "--per-series"], ["list"],
    ["export"], ["compare", "2.4.0", "2.5.0", "--machine", NEW],
])
def test_every_command_reads_a_folder_with_a_new_series(grown, capsys, argv):
    code = main([*argv, "--results", str(grown)])
    out, err = capsys.readouterr()
    assert code in (0, 1), err  # compare: 1 is a regression found
    assert NEW in out or argv[0] == "cite", out[-2000:]


def test_a_new_gpu_series_gives_the_price_book_its_first_gpu_price(grown):
    """The shipped table would change with such results (scripts/make-prices): the tests
    that price findings read the tests' own series instead."""
    assert PriceBook.load(str(committed_results())).get("item_per_epoch") is None
    price = PriceBook.load(str(grown)).get("item_per_epoch")
    assert price is not None and price.series.machine == NEW
    assert json.loads(json.dumps(price.series.__dict__))["gpu"] == "NVIDIA H200"

"""compare as a pull request uses it: two suite commits of one series, each change confirmed
by a repeat measured at the same two commits; and ``--format markdown``, read back with a
CommonMark parser with GitHub's table extension (markdown-it-py), as GitHub renders a
comment or a job summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import committed_results
from suitechange import MACHINE, RERUN, write_change

from xferbench.cli import main

RESULTS = committed_results()


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(["compare", *args])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def change(tmp_path_factory) -> tuple[Path, str, str, str]:
    dest = tmp_path_factory.mktemp("change") / "results"
    return (dest, *write_change(RESULTS, dest))


def test_a_slower_commit_is_a_regression_a_repeat_confirms(change, capsys):
    results, base, head, slower = change
    code, out = run(capsys, base[:8], head[:8], "--machine", MACHINE, "--results",
                    str(results), "--confirmed", "--format", "json")
    report = json.loads(out)
    worse = [r for r in report["rows"] if r["mark"] == "worse"]
    assert code == 1 and report["confirmed_worse"] == 1
    assert [(r["benchmark"], r["confirmation"], r["confirmed_by"]) for r in worse] == [
        (slower, "confirmed", [RERUN])]
    assert worse[0]["ratio"] == pytest.approx(1.3)


def test_a_slowdown_the_repeat_does_not_show_stays_suspected(tmp_path, capsys):
    base, head, _ = write_change(RESULTS, tmp_path / "results", repeat_factor=1.0)
    code, out = run(capsys, base, head, "--machine", MACHINE, "--results",
                    str(tmp_path / "results"), "--confirmed", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["suspected_worse"] == 1 and report["confirmed_worse"] == 0
    row = next(r for r in report["rows"] if r["mark"] == "worse")
    assert row["suspected_why"] == f"the repeat marked it otherwise ({RERUN}: same)"

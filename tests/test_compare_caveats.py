"""What a comparison says beside its rows: why its series are not for citation (a CPU run,
an emulated device, a quick run), in text, JSON and markdown, and a ratio of medians that
lies outside its own interval."""

from __future__ import annotations

import json

from conftest import committed_results

from xferbench.analysis.provenance import CPU_ONLY
from xferbench.cli import main

RESULTS = committed_results()


def _compare(capsys, *extra: str) -> str:
    code = main(["compare", "2.12.1", "2.13.0", "--results", str(RESULTS), *extra])
    assert code in (0, 1)
    return capsys.readouterr().out


def test_a_comparison_of_cpu_series_says_they_are_not_for_citation_in_every_format(capsys):
    assert f"NOT FOR CITATION: {CPU_ONLY} (every series)" in _compare(capsys).splitlines()
    doc = json.loads(_compare(capsys, "--format", "json"))
    assert doc["not_for_citation"] == [f"{CPU_ONLY} (every series)"]
    assert f"**Not for citation**: {CPU_ONLY} (every series)" in _compare(
        capsys, "--format", "markdown").splitlines()


def test_json_flags_a_ratio_of_medians_outside_its_own_interval(capsys):
    rows = json.loads(_compare(capsys, "--format", "json"))["rows"]
    bounded = [r for r in rows if r["interval"] and None not in r["interval"]]
    outside = [r for r in bounded if not r["interval"][0] <= r["ratio"] <= r["interval"][1]]
    assert outside, "the committed results should hold a row whose sides differ in shape"
    assert all(r["ratio_outside"] for r in outside)
    assert not any(r["ratio_outside"] for r in bounded if r not in outside)


def test_the_legend_says_a_behaviour_check_is_better_higher(capsys):
    legend = next(line for line in _compare(capsys).splitlines() if line.startswith("B/A:"))
    assert "behaviour checks (1 holds, 0 does not): higher is better" in legend

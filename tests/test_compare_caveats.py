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

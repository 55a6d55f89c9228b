"""Each view shows a GPU's headline copy figures beside their reference (analysis/reference.py
judges, each view formats): given the results of an H200 on PCIe Gen5 x16 (built from the
committed results, every label naming the H200), cite, list, the run's copy table and the page
show the H200's range and verdict; a 14 GB/s pinned H2D is below, with the link the run
recorded under load as its likely cause; a rate above the link's theoretical one is refused
as a record. On a GH200 (NVLink-C2C) the claim that pinned is faster does not apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gpuresults import COMPLETION, DEVICE, copy, write_gpu_results

from xferbench.analysis.claims import DOES_NOT_APPLY, evaluate
from xferbench.analysis.claimtable import ClaimTable, load_table
from xferbench.analysis.headline import series_tables
from xferbench.analysis.reference import ABOVE_LINK, BELOW, WITHIN
from xferbench.cli import main
from xferbench.commands.publish.sections import copy_section
from xferbench.commands.publish.views import page_views
from xferbench.results import load

PINNED = "direction=h2d,host_memory=pinned,sync=blocking,layout=one,size=64MiB"
FAST = "direction=h2d,host_memory=pinned,sync=non_blocking,layout=one,size=64MiB"
CAUSE = "the link ran at Gen3 x16 under load, below its maximum Gen5 x16"


@pytest.fixture(scope="module")
def h200(tmp_path_factory) -> Path:
    """An H200 whose link trained to Gen3 under load: a 14 GB/s pinned copy, a pageable one
    within its range, and an 80 GB/s copy no Gen5 x16 link carries."""
    root = tmp_path_factory.mktemp("h200") / "results"
    write_gpu_results(root, {
        (COMPLETION, copy("h2d", "pinned")): 14.0,
        (COMPLETION, copy("h2d", "pageable")): 12.0,
        (DEVICE, copy("h2d", "pinned", "non_blocking")): 80.0,
    }, meta={"pcie_gen_load": 3})
    return root


def _cite(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(["cite", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cite_shows_the_h200s_range_and_a_low_figure_below_with_its_cause(h200, capsys):
    code, out, _ = _cite(["Copy.track_completion_s", "--params", PINNED, "--results",
                          str(h200)], capsys)
    assert code == 0
    expected = ("48-55.41 GB/s for NVIDIA H200 (SXM, NVL) on PCIe Gen5 x16 (reference "
                f"h200-pcie5): below; likely cause: {CAUSE}")
    sentence, table = out.split("\n", 1)
    assert "14.00 GB/s" in sentence and f"Expected: {expected}." in sentence
    assert f"; expected {expected} |" in table


def test_cites_json_holds_the_range_verdict_and_cause(h200, capsys):
    code, out, _ = _cite(["Copy.track_completion_s", "--params", PINNED, "--results",
                          str(h200), "--format", "json"], capsys)
    ref = json.loads(out)["reference"]
    assert code == 0 and (ref["low"], ref["high"], ref["verdict"]) == (48.0, 55.41, BELOW)
    assert ref["reference"] == "h200-pcie5" and ref["cause"] == CAUSE
    assert ref["value"] == pytest.approx(14.0)


def test_cite_refuses_a_rate_above_the_link_as_a_measurement_problem(h200, capsys):
    code, out, err = _cite(["Copy.track_device_s", "--params", FAST, "--results", str(h200)],
                           capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "is not quoted: 80.0 GB/s is above the PCIe Gen5 x16 link's " \
        "theoretical 63.0 GB/s per direction" in lines[0]
    assert "a measurement problem" in lines[0] and "never a record" in lines[0]


def test_list_shows_each_copy_beside_its_range(h200, capsys):
    assert main(["list", "--results", str(h200)]) == 0
    out = capsys.readouterr().out
    assert (f"    h2d pinned blocking one 64MiB: 14.00 GB/s, expected 48-55.41 GB/s: below "
            f"({CAUSE})") in out
    assert "    h2d pageable blocking one 64MiB: 12.00 GB/s, expected 9.98-16.95 GB/s: within" \
        in out
    assert "80.00 GB/s, expected 48-55.41 GB/s: above link (80.0 GB/s is above" in out


def test_the_runs_copy_table_has_the_range_and_verdict_columns(h200):
    text = "\n".join(series_tables(load(str(h200)), frozenset({COMPLETION, DEVICE})))
    assert "| GB/s | noise | share of PCIe | expected | verdict |" in text
    assert "| h2d | pinned | blocking | completion | 14.00 | 2.0% | 22% | 48-55.41 GB/s | " \
        "below |" in text
    assert f"h2d pinned blocking (completion): below: {CAUSE}" in text


def test_the_page_shows_the_range_and_marks_a_rate_above_the_link(h200):
    views = page_views(load(str(h200)), 0.05, 0.05)
    html = "\n".join(copy_section(views.copies, "64MiB"))
    assert "<th>expected</th><th>verdict</th>" in html
    assert '<td data-label="expected">48-55.41 GB/s</td>' in html
    assert '<span class="verdict sig" title="48-55.41 GB/s for NVIDIA H200' in html
    assert f">{BELOW}</span>" in html and f">{ABOVE_LINK}</span>" in html
    assert f">{WITHIN}</span>" in html
    # the row's citation on the page says it is no record
    assert "Not for citation: 80.0 GB/s is above the PCIe Gen5 x16 link" in html


def test_a_cpu_series_shows_no_reference_columns():
    from conftest import committed_results

    text = "\n".join(series_tables(load(str(committed_results()))))
    assert "| expected | verdict |" not in text


def test_pinned_faster_does_not_apply_on_nvlink_c2c_and_holds_elsewhere(tmp_path):
    rates = {(COMPLETION, copy("h2d", "pinned")): 50.0,
             (COMPLETION, copy("h2d", "pageable")): 12.0}
    table = load_table()
    one = ClaimTable(table.path, (table.get("pinned-faster"),))
    cells = {}
    for gpu, machine in (("NVIDIA GH200 480GB", "gh200"), ("NVIDIA H200", "h200")):
        write_gpu_results(tmp_path / machine, rates, gpu=gpu, machine=machine)
        (cells[machine],) = evaluate(load(str(tmp_path / machine)), one).cells("pinned-faster")
    assert (cells["h200"].verdict, cells["h200"].reason) == ("holds", "")
    gh200 = cells["gh200"]
    assert gh200.verdict == DOES_NOT_APPLY
    assert gh200.reason.startswith("NVLink-C2C, pageable is nearly pinned here (NVIDIA GH200")
    assert gh200.reason.endswith("; the figures alone: holds")

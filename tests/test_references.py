"""The reference ranges shipped with the package (data/references.toml): every row names its
sources with their origin and setup, a row without one is refused, GPU names select rows by
whole words, and a figure is judged against its range, its link's ceiling and what the run
recorded (analysis/reference.py)."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import pytest

from xferbench.analysis.reference import (
    ABOVE,
    ABOVE_LINK,
    BELOW,
    NO_CAUSE,
    NO_REFERENCE,
    SLOWER,
    WITHIN,
    Assessment,
    claim_exception,
    cpu_set,
    figure_of,
    judge,
    likely_causes,
)
from xferbench.analysis.references import (
    FIGURES,
    SOURCE_FIELDS,
    load_references,
    row_for,
    rows_for,
    shipped,
    shipped_path,
)
from xferbench.errors import XferbenchError
from xferbench.metadata import MachineMetadata

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: An H200 whose link trained to its maximum (Gen5 x16) under load, on its own NUMA node.
H200 = MachineMetadata(gpu_name="NVIDIA H200", device="cuda:0", accelerator="cuda",
                       pcie_gen=5, pcie_width=16, pcie_gen_max=5, pcie_width_max=16,
                       pcie_gen_load=5, pcie_width_load=16, gpu_numa_node=0,
                       gpu_numa_cpus="0-47", cpu_affinity="0-47", virtualized=False)


def _meta(**changes) -> MachineMetadata:
    from dataclasses import replace

    return replace(H200, **changes)


# --- the shipped table


def test_the_shipped_table_has_six_rows_or_more_each_figure_with_a_full_source():
    table = shipped()
    assert len(table.rows) >= 6
    for row in table.rows:
        assert row.figures, row.id
        for name, rng in row.figures.items():
            assert rng.sources, (row.id, name)
            for source in rng.sources:
                for field in SOURCE_FIELDS:
                    assert getattr(source, field).strip(), (row.id, name, field)
                assert source.origin.startswith("https://"), source.origin


def test_the_docs_table_shows_every_rows_ranges():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "check.md").read_text()
    lines = {line.split("|")[1].strip(): line for line in doc.splitlines()
             if line.startswith("| `")}
    for row in shipped().rows:
        line = lines.get(f"`{row.id}`")
        assert line is not None, f"docs/check.md has no row {row.id}"
        for name, rng in row.figures.items():
            shown = Assessment(name, 0.0, FIGURES[name], "", rng.low, rng.high, row.id,
                               row.setup).expected
            assert f"| {shown} |" in line, (row.id, name, shown)


def test_the_shipped_table_follows_its_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(resources.files("xferbench").joinpath(
        "data", "references.schema.json").read_text())
    with open(shipped_path(), "rb") as fh:
        jsonschema.validate(tomllib.load(fh), schema)


def _table(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "references.toml"
    path.write_text(text, encoding="utf-8")
    return path


SOURCE = """schema_version = 1
[sources.log]
origin = "https://example.org/log"
date = "2026-01-01"
tool = "nvbandwidth"
setup = "one GPU"
says = "H2D 50 GB/s"
"""


def _row(figure: str) -> str:
    """One row of GPU "X1" on PCIe Gen5 x16 with ``figure`` (a figures.NAME = {...} line)."""
    return ('[[rows]]\nid = "x"\naccelerator = "X"\nnames = ["X1"]\n'
            f'link = {{ kind = "pcie", gen = 5, width = 16 }}\n{figure}\n')


@pytest.mark.parametrize(("text", "message"), [
    (SOURCE + _row("figures.pinned_h2d = { low = 40.0, high = 50.0 }"),
     "figure 'pinned_h2d' names no source"),
    (SOURCE.replace('setup = "one GPU"\n', "")
     + _row('figures.pinned_h2d = { low = 40.0, high = 50.0, sources = ["log"] }'),
     "source 'log' needs 'setup' as text"),
    (SOURCE + _row('figures.pinned_h2d = { low = 40.0, sources = ["blog"] }'),
     "cites 'blog', which is not one of"),
    (SOURCE + _row('figures.pinned_h2d = { low = 50.0, high = 40.0, sources = ["log"] }'),
     "low 50 is above high 40"),
])
def test_a_row_without_a_full_source_or_a_range_is_refused(tmp_path, text, message):
    with pytest.raises(XferbenchError, match=message):
        load_references(str(_table(tmp_path, text)))


# --- names and links


@pytest.mark.parametrize(("name", "row"), [
    ("NVIDIA H200", "h200-pcie5"),
    ("NVIDIA H200 NVL", "h200-pcie5"),
    ("H100 80GB HBM3", "h100-pcie5"),
    ("NVIDIA H100 NVL", "h100-pcie5"),
    ("NVIDIA GH200 480GB", "gh200-c2c"),
    ("NVIDIA A100-SXM4-40GB", "a100-pcie4"),
    ("NVIDIA GeForce RTX 4090", "rtx4090-pcie4"),
    ("AMD Instinct MI300X VF", "mi300x-pcie5"),
    ("NVIDIA H20", None),
    ("NVIDIA GeForce RTX 409", None),
    ("emu", None),
])
def test_a_gpu_name_selects_its_row_by_whole_words(name, row):
    found = rows_for(shipped(), name)
    assert [r.id for r in found][:1] == ([row] if row else [])


def test_a_pcie_row_applies_on_its_own_link_only():
    table = shipped()
    assert row_for(table, H200)[0].id == "h200-pcie5"
    row, why = row_for(table, _meta(pcie_gen_max=4))
    assert row is None and "on PCIe Gen4 x16 (the table has it on PCIe Gen5 x16)" in why
    # a link not recorded (no NVML) takes the GPU's row on trust
    assert row_for(table, _meta(pcie_gen_max=None, pcie_width_max=None))[0].id == "h200-pcie5"


def test_an_nvlink_c2c_row_applies_whatever_pcie_link_is_recorded():
    meta = _meta(gpu_name="NVIDIA GH200 480GB", pcie_gen_max=5)
    assert row_for(shipped(), meta)[0].id == "gh200-c2c"
    # 120 GB/s is above PCIe Gen5 but within C2C: a record, judged against the C2C range
    a = judge("pinned_h2d", 120.0, meta)
    assert a.verdict == WITHIN and a.ceiling == "NVLink-C2C" and a.ceiling_gbps == 450.0


# --- verdicts


def test_a_14_gbps_pinned_h2d_on_an_h200_is_below_with_the_link_as_its_cause():
    meta = _meta(pcie_gen_load=3, pcie_width_load=16)
    a = judge("pinned_h2d", 14.0, meta)
    assert (a.verdict, a.reference, a.low, a.high) == (BELOW, "h200-pcie5", 48.0, 55.41)
    assert a.cause == "the link ran at Gen3 x16 under load, below its maximum Gen5 x16"
    assert "below; likely cause: the link ran at Gen3 x16" in a.sentence()


def test_a_figure_below_its_range_with_nothing_recorded_says_so():
    a = judge("pinned_h2d", 14.0, H200)
    assert (a.verdict, a.cause) == (BELOW, NO_CAUSE)


def test_a_figure_within_tolerance_of_its_range_is_within():
    assert judge("pinned_h2d", 54.0, H200).verdict == WITHIN
    assert judge("pinned_h2d", 48.0 * 0.91, H200).verdict == WITHIN
    assert judge("pinned_h2d", 48.0 * 0.89, H200).verdict == BELOW
    assert judge("pinned_h2d", 62.0, H200).verdict == ABOVE  # over 55.41 * 1.1, under 63


def test_a_rate_above_the_links_theoretical_one_is_a_measurement_problem():
    a = judge("pinned_h2d", 80.0, H200)
    assert a.verdict == ABOVE_LINK and a.ceiling == "PCIe Gen5 x16"
    assert a.ceiling_gbps == pytest.approx(63.0, abs=0.1)
    assert "a measurement problem" in a.cause and "never a record" in a.cause


def test_an_unknown_gpu_gets_its_links_ceiling_only_and_says_so():
    meta = _meta(gpu_name="NVIDIA L4", pcie_gen_max=4, pcie_gen=4)
    a = judge("pinned_h2d", 20.0, meta)
    assert a.verdict == NO_REFERENCE and a.expected == "at most 31.5 GB/s (link)"
    assert a.sentence().startswith("no reference for NVIDIA L4: the PCIe Gen4 x16 link's "
                                   "theoretical 31.5 GB/s per direction is the only bound")
    assert judge("pinned_h2d", 40.0, meta).verdict == ABOVE_LINK


@pytest.mark.parametrize(("gen", "gbps"), [(3, 15.75), (4, 31.5), (5, 63.0), (6, 121.0)])
def test_the_ceiling_is_the_generation_times_the_width(gen, gbps):
    meta = _meta(gpu_name="NVIDIA L4", pcie_gen_max=gen, pcie_gen=gen)
    assert judge("pinned_h2d", 1.0, meta).ceiling_gbps == pytest.approx(gbps, rel=0.01)


def test_an_emulated_device_has_no_reference():
    a = judge("pinned_h2d", 500.0, _meta(emulated=True, gpu_name="emu"))
    assert a.verdict == NO_REFERENCE and a.ceiling_gbps is None and "emulated" in a.setup


def test_a_round_trip_is_judged_the_other_way_up(tmp_path):
    path = _table(tmp_path, SOURCE + _row(
        'figures.item_roundtrip = { low = 10.0, high = 20.0, sources = ["log"] }'))
    table, meta = load_references(str(path)), _meta(gpu_name="X1")
    assert judge("item_roundtrip", 50.0, meta, table).verdict == SLOWER
    assert judge("item_roundtrip", 15.0, meta, table).verdict == WITHIN
    assert judge("item_roundtrip", 15.0, meta, table).ceiling_gbps is None


@pytest.mark.parametrize(("changes", "words"), [
    ({"cpu_affinity": "48-95"}, "not all on the GPU's NUMA node 0 (CPUs 0-47)"),
    ({"throttle_reasons_load": ("power",)}, "the GPU throttled under load (power)"),
    ({"sm_clock_mhz_load": 900, "sm_clock_max_mhz": 1980}, "SM clock ran at 900 of 1980 MHz"),
    ({"virtualized": True}, "a virtual machine"),
])
def test_each_recorded_slowdown_is_a_likely_cause(changes, words):
    causes = likely_causes(_meta(**changes))
    assert len(causes) == 1 and words in causes[0]


def test_cpu_lists_read_as_sets():
    assert cpu_set("0-3,6") == {0, 1, 2, 3, 6} and cpu_set(None) == set()
    assert cpu_set("unknown") == set()


@pytest.mark.parametrize(("params", "figure"), [
    ({"direction": "h2d", "host_memory": "pinned", "layout": "one", "size": "64MiB"},
     "pinned_h2d"),
    ({"direction": "d2h", "host_memory": "pageable", "layout": "one", "size": "256MiB"},
     "pageable_d2h"),
    ({"direction": "d2d", "host_memory": "pageable", "layout": "one", "size": "64MiB"}, "d2d"),
    ({"direction": "h2d", "host_memory": "pinned", "layout": "one", "size": "4MiB"}, None),
    ({"direction": "h2d", "host_memory": "pinned", "layout": "many", "size": "64MiB"}, None),
])
def test_only_copies_of_one_large_tensor_are_reference_figures(params, figure):
    assert figure_of("bench_copies.Copy.track_completion_s", params) == figure
    assert figure_of("bench_copies.PinThenCopy.track_completion_s", params) is None


def test_pinned_faster_does_not_apply_where_pageable_is_nearly_pinned():
    gh200 = _meta(gpu_name="NVIDIA GH200 480GB")
    why = claim_exception("pageable-nearly-pinned", gh200)
    assert why is not None and why.startswith("NVLink-C2C, pageable is nearly pinned here")
    assert claim_exception("pageable-nearly-pinned", H200) is None

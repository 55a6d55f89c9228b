"""The figures of docs/results.md (``xferbench table``): per machine one table, a column
per PyTorch release oldest first, a figure no release measured said once with its reason."""

from __future__ import annotations

from conftest import committed_results

from xferbench.analysis.provenance import CPU_ONLY
from xferbench.analysis.release_table import machine_table, readme_tables
from xferbench.results import load


def test_one_column_per_release_oldest_first_and_the_gaps_said_once():
    rs = load(str(committed_results()))
    machine = rs.machines()[0]
    on = rs.filter(machine=machine)
    versions = on.torch_versions()
    lines = machine_table(machine, {v: on.filter(torch=v) for v in versions})
    assert lines[0] == f"#### {machine}: {len(versions)} PyTorch releases"
    header = next(line for line in lines if line.startswith("| figure |"))
    assert header == "| figure | " + " | ".join(versions) + " |"
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| figure")]
    assert all(line.count("|") == len(versions) + 2 for line in rows)
    # a CPU measures no pinned copies and no hazards: each is named once, with its reason
    gaps = next(line for line in lines if line.startswith("Not measured here: "))
    assert "pinned vs pageable H2D, one 64MiB tensor (pinned host memory needs an accelerator)" \
        in gaps and "the non_blocking hazards (the hazards need an accelerator" in gaps
    assert readme_tables(rs)[-1].startswith("ratio: baseline time / practice time")


def test_a_cpu_machine_table_says_its_figures_are_not_for_citation():
    rs = load(str(committed_results()))
    machine = rs.machines()[0]
    on = rs.filter(machine=machine)
    lines = machine_table(machine, {v: on.filter(torch=v) for v in on.torch_versions()})
    assert f"Not for citation: {CPU_ONLY}." in lines


def test_a_figure_one_release_lacks_reads_n_a_in_its_column_only():
    rs = load(str(committed_results()))
    machine = rs.machines()[0]
    newest = rs.filter(machine=machine).torch_versions()[-1]
    measured = rs.filter(machine=machine, torch=newest)
    lines = machine_table(machine, {"older": rs.filter(torch="no such release"),
                                    newest: measured})
    row = next(line for line in lines if line.startswith("| loss read once per epoch"))
    older, newer = (cell.strip() for cell in row.strip("|").split("|")[1:])
    assert older == "n/a" and newer.endswith("%") and "x ±" in newer


def test_a_runs_end_tables_leave_out_what_its_bench_did_not_measure():
    """``xferbench run --bench Loop`` ends with the loop's headline, not with a copy table or
    a hazards table of n/a it never measured; the whole suite gets all three."""
    from xferbench.analysis.headline import HAZARD_BENCHMARK, series_tables

    rs = load(str(committed_results())).filter(machine="cpu-2core-vm", torch="2.13.0+cu130")
    loop = "\n".join(series_tables(rs, frozenset({"bench_sync.Loop.track_step_s",
                                                  "bench_sync.Loop.track_syncs_per_step"})))
    assert "loss read once per epoch vs .item() every batch" in loop
    assert "non_blocking hazards" not in loop and "| direction |" not in loop
    assert "pinned vs pageable H2D" not in loop  # a copy headline: not measured by Loop
    everything = "\n".join(series_tables(rs))
    assert "non_blocking hazards" in everything and "pinned vs pageable H2D" in everything
    assert series_tables(rs, frozenset({"bench_creation.CreatedInForward.track_forward_s"})) == []
    assert "non_blocking hazards" in "\n".join(series_tables(rs, frozenset({HAZARD_BENCHMARK})))

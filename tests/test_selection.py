"""One selection for every command: what a series is (machine, torch, mode and, where one
machine name holds several, what measured it: CPU, cores, GPU, the suite's origin), the same
options and the same rules in list, cite, compare, claims, export, table and publish; two
runs of one series counted, two series never hidden behind one name; a comparison of
nothing is no pass. Fixtures are copies of the committed results, edited as runs on other
hosts would leave them."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import committed_results
from test_labels import add_series, edit, files_of, row_of, set_row

from xferbench.cli import main
from xferbench.errors import XferbenchError
from xferbench.results import load
from xferbench.results.series import Selection, SeriesKey, parse_host, pick

RESULTS = committed_results()
MACHINE = "cpu-2core-vm"
LOOP = "bench_sync.Loop.track_step_s"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def results(tmp_path: Path) -> Path:
    dest = tmp_path / "results"
    shutil.copytree(RESULTS, dest)
    return dest


def on_host(path: Path, cpu: str, cores: int) -> None:
    """The sidecar of results file ``path`` says another host measured it."""
    edit(path.with_suffix(".metadata"),
         lambda d: d["metadata"].update(cpu_model=cpu, cpu_count=cores, hostname=cpu.lower()))


def twin(path: Path, suffix: str) -> Path:
    """A second results file of ``path``'s series (another interpreter's environment name,
    as a second venv or the installed package gives), with its own sidecar."""
    target = path.with_name(path.name.replace("_python.json", f"-{suffix}_python.json"))
    shutil.copy(path, target)
    shutil.copy(path.with_suffix(".metadata"), target.with_suffix(".metadata"))
    return target


def from_suite(path: Path, suite: str) -> None:
    edit(path.with_suffix(".metadata"),
         lambda d: [r.update(suite=suite) for r in [d["run"], *d["runs"]]])


# -- what a series is --------------------------------------------------------------------------

def test_two_cpus_under_one_machine_name_are_two_trends_each_named(results, capsys):
    for torch in ("2.14.1+cu130", "2.15.0+cu132"):
        on_host(files_of(results)[torch], "Intel Xeon", 4)
    keys = {k for k in load(str(results)).series() if k.machine == MACHINE}
    hosts = {k.torch: k.host for k in keys}
    assert hosts["2.13.0+cu130"] == (("cpu", "AMD EPYC"), ("cores", "2"))
    assert hosts["2.14.1+cu130"] == (("cpu", "Intel Xeon"), ("cores", "4"))
    assert {k.trend for k in keys} == {"cpu-2core-vm [CPU AMD EPYC, 2 cores]",
                                       "cpu-2core-vm [CPU Intel Xeon, 4 cores]"}
    code, out, _ = run(capsys, "list", "--results", str(results), "--host", "cpu=Intel Xeon")
    assert code == 0 and "cpu-2core-vm [--host cpu=Intel Xeon,cores=4], torch 2.14.1" in out
    assert "torch 2.13.0+cu130" not in out.split("cite one:")[0].replace("rerun", "")
    code, out, _ = run(capsys, "table", "--machine", MACHINE, "--results", str(results))
    assert "#### cpu-2core-vm [CPU AMD EPYC, 2 cores]: 4 PyTorch releases" in out
    assert "#### cpu-2core-vm [CPU Intel Xeon, 4 cores]: 2 PyTorch releases" in out
    # the other machines, each measured on one host, read as they always did
    assert all(not k.host for k in load(str(results)).series() if k.machine != MACHINE)


def test_a_comparison_across_two_cpus_under_one_name_cautions_and_strict_refuses(results,
                                                                               capsys):
    on_host(files_of(results)["2.14.1+cu130"], "Intel Xeon", 4)
    code, out, _ = run(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE,
                       "--results", str(results))
    assert code in (0, 1)
    caution = next(line for line in out.splitlines() if line.startswith("CAUTION"))
    assert "the CPU differs (AMD EPYC vs Intel Xeon)" in caution
    assert "the core count differs (2 vs 4)" in caution and "the host differs" in caution
    code, out, err = run(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE,
                         "--results", str(results), "--strict")
    assert code == 2 and out == "" and "the CPU differs (AMD EPYC vs Intel Xeon)" in err


def test_one_release_on_two_hosts_under_one_name_is_refused_until_host_names_one(
        results, capsys):
    other = twin(files_of(results)["2.13.0+cu130"], "other")
    on_host(other, "Intel Xeon", 4)
    cite = ("cite", "Loop.track_step_s", "--params", "read=cpu,width=256", "--machine",
            MACHINE, "--torch", "2.13.0", "--results", str(results))
    code, out, err = run(capsys, *cite)
    assert code == 2 and err.count("\n") == 1
    assert "measured by 2 hosts under one machine name (CPU AMD EPYC, 2 cores; CPU Intel " \
           "Xeon, 4 cores): choose one with --host (cpu=AMD EPYC,cores=2 or cpu=Intel " \
           "Xeon,cores=4)" in err
    code, out, err = run(capsys, *cite, "--host", "cpu=Intel Xeon", "--format", "json")
    cited = json.loads(out)
    assert code == 0 and cited["host"] == "cpu=Intel Xeon,cores=4"
    assert "torch 2.13.0+cu130 on cpu-2core-vm [CPU AMD EPYC, 2 cores]" in cited["others"]
    assert "on cpu-2core-vm [CPU Intel Xeon, 4 cores] (no GPU" in cited["sentence"]
    code, _, err = run(capsys, "compare", "2.12.1", "2.13.0", "--machine", MACHINE,
                       "--results", str(results))
    assert code == 2 and "choose one with --host" in err
    code, out, _ = run(capsys, "compare", "2.12.1", "2.13.0", "--machine", MACHINE,
                       "--host", "cores=2", "--results", str(results))
    assert code in (0, 1) and "B: torch 2.13.0+cu130" in out
    code, _, err = run(capsys, "export", "--results", str(results), "--host", "gpu")
    assert code == 2 and "'gpu' is not key=value with a key of cpu, cores, gpu, suite" in err


def test_pick_never_chooses_between_hosts_and_names_every_other_series():
    amd, intel = (("cpu", "AMD"),), (("cpu", "Intel"),)
    keys = [SeriesKey("m", "2.13.0", (), amd), SeriesKey("m", "2.13.0", (), intel),
            SeriesKey("m", "2.13.0", (("quick", "yes"),), amd)]
    with pytest.raises(XferbenchError, match="measured by 2 hosts under one machine name"):
        pick(keys, where="torch 2.13.0 on m")
    one, others = pick(keys, where="torch 2.13.0 on m", host=parse_host("cpu=Intel"))
    assert one == keys[1] and set(others) == {keys[0], keys[2]}  # nothing left unnamed
    one, _ = pick(keys, (("quick", "yes"),), where="torch 2.13.0 on m")
    assert one == keys[2]  # one host measured it quick: nothing to choose between
    assert Selection(torch="2.13.0", host=parse_host("cpu=AMD")).holds(keys[2])
    assert not Selection(torch="2.13.0+cu130").holds(keys[0])


# -- two runs of one series --------------------------------------------------------------------

def test_two_runs_of_one_series_are_one_series_with_both_runs_counted(results, capsys):
    first = files_of(results)["2.13.0+cu130"]
    second = twin(first, "wheel")
    code, out, _ = run(capsys, "list", "--format", "json", "--results", str(results),
                       "--machine", MACHINE, "--torch", "2.13.0")
    rows = [s for e in json.loads(out) for s in e["series"] if s["measured"]]
    assert code == 0 and rows and all(s["runs"] == 2 and "host" not in s for s in rows)
    code, out, _ = run(capsys, "list", "--results", str(results), "--machine", MACHINE,
                       "--torch", "2.13.0")
    assert "(2 runs: the newest of each combination read)" in out
    code, out, _ = run(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
                       "--machine", MACHINE, "--torch", "2.13.0", "--results", str(results),
                       "--format", "json")
    others = json.loads(out)["others"]
    cited = json.loads(out)["results_file"]
    run_of = next(o for o in others if "another run" in o)
    assert code == 0 and (first.name in run_of) != (second.name in run_of)  # the other one
    assert Path(cited).name in (first.name, second.name) and Path(cited).name not in run_of


def test_the_clones_and_the_packages_run_of_one_release_are_never_one_hiding_the_other(
        results, capsys):
    clone = files_of(results)["2.13.0+cu130"]
    wheel = twin(clone, "wheel")
    from_suite(clone, "clone")
    from_suite(wheel, "package 0.1.0")
    code, out, _ = run(capsys, "list", "--results", str(results), "--torch", "2.13.0",
                       "--machine", MACHINE)
    assert code == 0 and "[--host suite=clone]" in out and "[--host suite=package]" in out
    cite = ("cite", "Loop.track_step_s", "--params", "read=cpu,width=256", "--machine",
            MACHINE, "--torch", "2.13.0", "--results", str(results))
    code, _, err = run(capsys, *cite)
    assert code == 2 and "(suite=clone or suite=package)" in err
    code, out, _ = run(capsys, *cite, "--host", "suite=package", "--format", "json")
    cited = json.loads(out)
    assert code == 0 and cited["results_file"].endswith(wheel.name)
    assert cited["others"] == ["torch 2.13.0+cu130 on cpu-2core-vm [the clone's suite]"]
    # the other releases of the machine, one suite each, keep their plain names
    assert {k.host for k in load(str(results)).series() if k.torch != "2.13.0+cu130"} == {()}


# -- a comparison of nothing -------------------------------------------------------------------

def as_machine(results: Path, source: str, name: str, keep: str) -> None:
    """Machine folder ``name``: ``source``'s results of torch ``keep`` alone, filed as that
    machine (a run of another machine)."""
    folder = results / name
    folder.mkdir()
    machine = json.loads((results / source / "machine.json").read_text())
    machine["machine"] = name
    (folder / "machine.json").write_text(json.dumps(machine))
    path = files_of(results, source)[keep]
    raw = json.loads(path.read_text())
    raw["params"]["machine"] = name
    (folder / path.name).write_text(json.dumps(raw))
    shutil.copy(path.with_suffix(".metadata"), folder / path.with_suffix(".metadata").name)


def test_a_comparison_no_machine_holds_both_sides_of_is_refused(results, capsys):
    as_machine(results, MACHINE, "other-box", "2.14.1+cu130")
    for machine in (MACHINE, f"{MACHINE}-rerun", f"{MACHINE}-intel"):
        for torch, path in files_of(results, machine).items():
            if torch.startswith("2.14.1"):
                path.unlink()
                path.with_suffix(".metadata").unlink()
    code, out, err = run(capsys, "compare", "2.13.0", "2.14.1", "--results", str(results))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no machine holds both torch 2.13.0+cu130 and torch 2.14.1+cu130: A is on " \
           "cpu-2core-vm, cpu-2core-vm-intel, cpu-2core-vm-rerun, B on other-box" in err


def test_a_comparison_where_no_benchmark_was_measured_on_both_sides_fails(results, capsys):
    def skipped(half: slice):
        def change(raw: dict) -> None:
            cols = row_of(raw, LOOP)
            for key in ("result", "samples", "stats_q_25", "stats_q_75", "stats_ci_99_a",
                        "stats_ci_99_b"):
                values = list(cols[key])
                values[half] = [math.nan if key == "result" else None] * len(values[half])
                cols[key] = values
            set_row(raw, LOOP, cols)
        return change

    edit(files_of(results)["2.13.0+cu130"], skipped(slice(0, 5)))  # A: the last five only
    edit(files_of(results)["2.14.1+cu130"], skipped(slice(5, 10)))  # B: the first five only
    code, out, err = run(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE,
                         "--bench", "Loop.track_step_s", "--results", str(results))
    assert code == 3 and out == "" and err.count("\n") == 1
    assert "no benchmark was measured on both sides (5 measured in torch 2.13.0+cu130 only, " \
           "5 in torch 2.14.1+cu130 only): nothing was compared" in err


# -- one release measured five ways ------------------------------------------------------------

@pytest.fixture
def five_ways(results: Path) -> Path:
    """cpu-2core-vm's 2.13.0 measured by default (committed), quick, on two threads, in the
    full sweep and in the smoke sweep: five series of one release."""
    full = files_of(results)["2.13.0+cu130"]
    stem = full.name[: -len("_python.json")]
    add_series(full, stem + "-quick_python", {"quick": "yes"}, quick=True, newer_by_ms=1)
    add_series(full, stem + "-threads2_python", {"threads": "2"}, newer_by_ms=2)
    for sweep, ms in (("full", 3), ("smoke", 4)):
        target = add_series(full, stem + f"-{sweep}_python", {"sweep": sweep}, newer_by_ms=ms)
        edit(target.with_suffix(".metadata"),
             lambda d, s=sweep: [r.update(sweep=s) for r in [d["run"], *d["runs"]]])
    return results


def test_claims_count_releases_not_series_and_read_each_from_its_default_run(five_ways,
                                                                           capsys):
    code, out, _ = run(capsys, "claims", "--results", str(five_ways), "--format", "markdown")
    assert code == 0 and "| claims | cpu-2core-vm, 6 releases |" in out
    code, out, _ = run(capsys, "claims", "--results", str(five_ways), "--claim",
                       "item-per-batch", "--machine", MACHINE, "--torch", "2.13.0")
    lines = [line.strip() for line in out.splitlines()
             if line.startswith("  cpu-2core-vm, torch 2.13.0+cu130")]
    assert [line.split(":")[0] for line in lines] == [  # five series, each named
        "cpu-2core-vm, torch 2.13.0+cu130", "cpu-2core-vm, torch 2.13.0+cu130 (quick)",
        "cpu-2core-vm, torch 2.13.0+cu130 (full sweep)",
        "cpu-2core-vm, torch 2.13.0+cu130 (smoke sweep)",
        "cpu-2core-vm, torch 2.13.0+cu130 (2 threads)"]
    code, out, _ = run(capsys, "cite", "--claim", "item-per-batch", "--machine", MACHINE,
                       "--torch", "2.13.0", "--results", str(five_ways), "--format", "json")
    cited = json.loads(out)
    assert code == 0 and cited["mode"] == "default" and cited["torch"] == "2.13.0+cu130"
    assert {o["mode"] for o in cited["others"] if o["torch"] == "2.13.0+cu130"
            and o["machine"] == MACHINE} == {"quick", "threads=2", "sweep=full", "sweep=smoke"}
    code, out, _ = run(capsys, "claims", "--results", str(five_ways), "--format", "json",
                       "--mode", "sweep=smoke")
    series = json.loads(out)["series"]
    assert code == 0 and [s["mode"] for s in series] == ["sweep=smoke"]


def test_export_picks_a_series_by_any_mode_and_names_the_default_grid_default(five_ways,
                                                                            capsys):
    code, out, _ = run(capsys, "export", "--results", str(five_ways), "--machine", MACHINE,
                       "--torch", "2.13.0", "--mode", "threads=2", "--bench", "Loop")
    rows = out.splitlines()[1:]
    assert code == 0 and rows and all(",2 threads," in row for row in rows)
    code, out, _ = run(capsys, "export", "--results", str(five_ways), "--machine", MACHINE,
                       "--torch", "2.13.0", "--mode", "default", "--bench", "Loop")
    header, *rows = out.splitlines()
    mode = header.split(",").index("mode")
    assert code == 0 and {row.split(",")[mode] for row in rows} == {"default"}
    code, out, _ = run(capsys, "export", "--results", str(five_ways), "--machine", MACHINE,
                       "--torch", "2.13.0", "--mode", "sweep=smoke", "--format", "bmf",
                       "--bench", "Loop.track_step_s")
    names = list(json.loads(out))
    assert code == 0 and names and all(n.endswith(
        " [smoke sweep; host clock; a CPU run: not for citation]") for n in names)

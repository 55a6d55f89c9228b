"""Every number says what it is: no quick, cut, foreign or broken figure read as a
real one. One test (or a few) per class, on copies of the committed results, each failing on
the code before the fix: series that differ in how they were measured (1), a label the
number contradicts (2), stock asv's torch (3, in test_stock_asv.py), a broken or partial
file (4), a suite that changed its parameters (5), a version asked for and "ambiguous" (6),
and a change no repeat confirms (7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import committed_results

from xferbench.analysis.prices import PriceBook
from xferbench.analysis.repeats import repeats_of
from xferbench.cli import main
from xferbench.commands.publish.sections import provenance_section
from xferbench.commands.publish.views import page_views
from xferbench.errors import XferbenchError
from xferbench.metadata import MachineMetadata
from xferbench.results import load, version_key
from xferbench.results.runrecords import RunRecord
from xferbench.results.series import CAPPED, QUICK, SMOKE, SeriesKey, parse_mode
from xferbench.results.sidecar import SCHEMA_VERSION, load_sidecar, record_run, upgrade

RESULTS = committed_results()
GOLDEN = Path(__file__).resolve().parent / "golden" / "results"
MACHINE = "cpu-2core-vm"
LOOP = "bench_sync.Loop.track_step_s"
FORWARD = "bench_creation.CreatedInForward.track_forward_s"
COPY = "bench_copies.Copy.track_completion_s"


# -- helpers: results folders as runs would leave them ------------------------------------------

def files_of(root: Path, machine: str = MACHINE) -> dict[str, Path]:
    """torch version -> its results file, on ``machine``."""
    out = {}
    for p in sorted((root / machine).glob("*.json")):
        if p.name != "machine.json":
            out[json.loads(p.read_text())["params"]["torch"]] = p
    return out


def scaled(raw: dict, factor: float) -> dict:
    """Every value of a raw results file ``factor`` times itself, quartiles and samples too."""
    raw = json.loads(json.dumps(raw))
    for name, row in raw["results"].items():
        cols = dict(zip(raw["result_columns"], row))
        for key in ("result", "stats_q_25", "stats_q_75", "stats_ci_99_a", "stats_ci_99_b"):
            if cols.get(key):
                cols[key] = [None if v is None else v * factor for v in cols[key]]
        if cols.get("samples"):
            cols["samples"] = [xs and [x * factor for x in xs] for xs in cols["samples"]]
        raw["results"][name] = [cols[c] for c in raw["result_columns"][: len(row)]]
    return raw


def add_series(source: Path, name: str, params: dict, *, factor: float = 1.0,
               newer_by_ms: int = 0, quick: bool | None = None) -> Path:
    """A series of another mode beside ``source``: its file ``name`` (as the wrapper's suffix
    names it), its params updated, its values scaled, its commit date moved, its sidecar's run
    saying quick where ``quick``."""
    raw = scaled(json.loads(source.read_text()), factor)
    raw["params"].update(params)
    raw["date"] += newer_by_ms
    target = source.with_name(name + ".json")
    target.write_text(json.dumps(raw))
    side = json.loads(source.with_suffix(".metadata").read_text())
    if quick is not None:
        for run in [side["run"], *side["runs"]]:
            run["quick"] = quick
    target.with_suffix(".metadata").write_text(json.dumps(side))
    return target


def edit(path: Path, change) -> None:
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))


def row_of(raw: dict, name: str) -> dict:
    return dict(zip(raw["result_columns"], raw["results"][name]))


def set_row(raw: dict, name: str, cols: dict) -> None:
    raw["results"][name] = [cols[c] for c in raw["result_columns"][: len(raw["results"][name])]]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *argv: str, words: tuple[str, ...] = ()) -> str:
    """The command's one sentence (exit 2), with ``words`` in it; before it, at most the
    warnings of files left out as they were read."""
    code, out, err = run(capsys, *argv)
    assert code == 2, out + err
    *warned, last = err.strip().splitlines()
    assert out == "" and last.startswith("xferbench: "), err
    assert all(line.startswith("xferbench: warning: ") for line in warned), err
    assert all(w in last for w in words), last
    return last


def read_around(capsys, results: Path, words: tuple[str, ...]) -> None:
    """A damaged file keeps out its own series only: ``list`` reads every other series,
    exit 0, with one warning line that names the file and why (``words``)."""
    code, out, err = run(capsys, "list", "--format", "json", "--results", str(results))
    warned = [line for line in err.splitlines() if line.startswith("xferbench: warning: ")]
    assert code == 0 and len(warned) == 1 and err.count("\n") == 1, err
    assert all(w in warned[0] for w in words) and "its series only" in warned[0], warned
    listed = {(s["machine"], s["torch"]) for e in json.loads(out) for s in e["series"]}
    assert len(listed) >= 17, listed  # the committed 18 but the damaged one


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file()}


@pytest.fixture
def results(tmp_path: Path) -> Path:
    dest = tmp_path / "results"
    shutil.copytree(RESULTS, dest)
    return dest


@pytest.fixture
def modes(results: Path) -> Path:
    """cpu-2core-vm measured 2.13.0 in full (committed), --quick, and --quick --threads 2
    (the newest, and 4.7 times slower): three series of one torch."""
    full = files_of(results)["2.13.0+cu130"]
    stem = full.name[: -len("_python.json")]
    add_series(full, stem + "-quick_python", {"quick": "yes"}, factor=1.1,
               newer_by_ms=1000, quick=True)
    add_series(full, stem + "-quick-threads2_python", {"quick": "yes", "threads": "2"},
               factor=4.7, newer_by_ms=2000, quick=True)
    return results


# -- 1: series that differ in how they were measured ----------------------------------------------

def test_compare_reads_the_default_series_never_the_newest_quick_one(modes, capsys):
    code, out, _ = run(capsys, "compare", "2.12.1", "2.13.0", "--results", str(modes),
                       "--machine", MACHINE)
    assert "B: torch 2.13.0+cu130\n" in out  # the full run's, not the quick two-thread one
    assert "not read: torch 2.13.0+cu130 on cpu-2core-vm (quick); torch 2.13.0+cu130 on " \
           "cpu-2core-vm (quick, 2 threads)" in out
    code_json, text, _ = run(capsys, "compare", "2.12.1", "2.13.0", "--results", str(modes),
                             "--machine", MACHINE, "--format", "json")
    data = json.loads(text)
    assert code_json == code and data["series"]["b"] == ["torch 2.13.0+cu130 on cpu-2core-vm"]
    assert len(data["not_read"]["b"]) == 2
    assert max(r["ratio"] or 0 for r in data["rows"]) < 3  # no 4.7x "regression"


def test_compare_of_a_mode_is_asked_for_and_named(modes, capsys):
    code, out, _ = run(capsys, "compare", "2.12.1", "2.13.0", "--results", str(modes),
                       "--machine", MACHINE, "--mode", "quick,threads=2", "--format", "json")
    # 2.12.1 has no such series: one sentence naming what it has
    assert code == 2
    code, out, err = run(capsys, "compare", "2.13.0", "2.14.1", "--results", str(modes),
                         "--machine", MACHINE, "--mode", "quick")
    assert code == 2 and "--mode quick" in err and "2.14.1" in err


def test_a_full_file_against_a_quick_one_is_a_confound_strict_refuses(modes, capsys):
    full = files_of(modes)["2.13.0+cu130"]
    quick = full.with_name(full.name[: -len("_python.json")] + "-quick_python.json")
    code, out, _ = run(capsys, "compare", str(full), str(quick), "--results", str(modes))
    assert "how it was measured differs (default vs quick)" in out
    before = tree(modes)
    refused(capsys, "compare", str(full), str(quick), "--results", str(modes), "--strict",
            words=("how it was measured differs (default vs quick)", "--strict"))
    assert tree(modes) == before


def test_threads_one_against_two_is_a_confound(results, capsys):
    full = files_of(results)["2.13.0+cu130"]
    stem = full.name[: -len("_python.json")]
    one = add_series(full, stem + "-threads1_python", {"threads": "1"})
    two = add_series(full, stem + "-threads2_python", {"threads": "2"}, factor=1.01)
    code, text, _ = run(capsys, "compare", str(one), str(two), "--format", "json",
                        "--results", str(results))
    assert "how it was measured differs (1 thread vs 2 threads)" in json.loads(text)["confounds"]


def test_list_counts_each_series_apart(modes, capsys):
    code, out, _ = run(capsys, "list", "--results", str(modes))
    block = out[out.index(FORWARD):].split("\n\n")[0]
    assert "measured 3 of 3: cpu-2core-vm, torch 2.13.0+cu130\n" in block + "\n"
    assert "measured 3 of 3: cpu-2core-vm, torch 2.13.0+cu130, quick\n" in block + "\n"
    assert "measured 3 of 3: cpu-2core-vm, torch 2.13.0+cu130, quick, 2 threads" in block
    assert "6 of 6" not in out
    code, text, _ = run(capsys, "list", "--results", str(modes), "--format", "json")
    entry = next(e for e in json.loads(text) if e["benchmark"] == FORWARD)
    mine = [s for s in entry["series"] if s["machine"] == MACHINE and s["torch"] == "2.13.0+cu130"]
    assert sorted((s["mode"], s["measured"], s["combinations"]) for s in mine) == [
        ("default", 3, 3), ("quick", 3, 3), ("quick,threads=2", 3, 3)]
    assert [s["not_for_citation"] for s in mine if s["mode"] == "quick"] == [[QUICK]]


@pytest.mark.slow
def test_the_page_shows_each_mode_as_a_series_of_its_own(modes):
    views = page_views(load(str(modes)), 0.05, 0.1)
    labels = [s.provenance.label for s in views.series if s.torch == "2.13.0+cu130"
              and s.machine == MACHINE]
    assert labels == ["torch 2.13.0+cu130 on cpu-2core-vm",
                      "torch 2.13.0+cu130 on cpu-2core-vm (quick)",
                      "torch 2.13.0+cu130 on cpu-2core-vm (quick, 2 threads)"]
    html = "\n".join(provenance_section(views.series, None))
    assert "quick, 2 threads" in html
    # the default trend's steps never take a quick point: 2.12.1 -> 2.13.0 is the full run's
    step = next(s for s in views.steps if s.machine == MACHINE
                and s.b.torch == "2.13.0+cu130")
    assert step.b.key.mode == () and step.a.torch == "2.12.1+cu130"
    trend_lanes = {t.machine for b in views.benchmarks for t in b.trends}
    assert {MACHINE, f"{MACHINE} (quick)", f"{MACHINE} (quick, 2 threads)"} <= trend_lanes
    paths = {t.path for b in views.benchmarks for t in b.trends}
    assert any("/cpu-2core-vm-quick-2-threads/" in p for p in paths)


def test_asvs_own_series_join_the_series_their_params_name(modes):
    """asv.html's columns: asv keeps each mode a graph series of its own (its params differ),
    and each is labelled as the page labels that series."""
    from xferbench.commands.publish.catalog import catalog
    from xferbench.commands.publish.site import series_of

    cat = catalog(load(str(modes)))
    base = json.loads(files_of(modes)["2.13.0+cu130"].read_text())["params"]
    labels = [series_of(cat, {**base, **extra, "branch": "main"}).label for extra in (
        {}, {"quick": "yes"}, {"quick": "yes", "threads": "2"})]
    assert labels == ["torch 2.13.0+cu130 on cpu-2core-vm",
                      "torch 2.13.0+cu130 on cpu-2core-vm (quick)",
                      "torch 2.13.0+cu130 on cpu-2core-vm (quick, 2 threads)"]


def test_a_mode_a_later_run_adds_is_a_series_of_its_own_not_for_citation(results, capsys):
    """Capped runs (``capped: yes`` or ``budget: 240``) and a key nobody knows yet:
    each its own series, never merged with the default, never cited without asking."""
    full = files_of(results)["2.13.0+cu130"]
    stem = full.name[: -len("_python.json")]
    add_series(full, stem + "-capped_python", {"capped": "yes"}, factor=2, newer_by_ms=10)
    add_series(full, stem + "-budget240_python", {"budget": "240"}, factor=3, newer_by_ms=20)
    add_series(full, stem + "-foo_python", {"foo": "bar"}, factor=4, newer_by_ms=30)
    rs = load(str(results))
    keys = [k for k in rs.series() if k.machine == MACHINE and k.torch == "2.13.0+cu130"]
    assert [k.mode for k in keys] == [(), (("budget", "240"),), (("capped", "yes"),),
                                      (("foo", "bar"),)]
    assert keys[1].reasons() == [CAPPED] and keys[2].reasons() == [CAPPED]
    assert "foo=bar" in keys[3].reasons()[0]
    params = "direction=h2d,host_memory=pageable,sync=blocking,layout=one,size=64MiB"
    code, text, _ = run(capsys, "cite", "Copy.track_completion_s", "--params", params,
                        "--torch", "2.13.0", "--machine", MACHINE, "--results", str(results),
                        "--format", "json")
    cited = json.loads(text)
    assert cited["mode"] == "default" and cited["not_for_citation"] == [
        "measured on a CPU, no GPU: every accelerator row is n/a and copies are host copies"]
    code, text, _ = run(capsys, "cite", "Copy.track_completion_s", "--params", params,
                        "--torch", "2.13.0", "--machine", MACHINE, "--results", str(results),
                        "--mode", "capped", "--format", "json")
    assert code == 0 and json.loads(text)["not_for_citation"][0] == CAPPED
    assert json.loads(text)["value"] == pytest.approx(2 * cited["value"])


def test_mode_option_text():
    assert parse_mode("default") == ()
    with pytest.raises(XferbenchError, match="'full' could mean the default grid or the full "
                                             "sweep: give default, or sweep=full"):
        parse_mode("full")  # a word that reads two ways is refused
    assert parse_mode("sweep=full") == (("sweep", "full"),)
    assert parse_mode("threads=2,quick") == (("quick", "yes"), ("threads", "2"))
    assert parse_mode("quick=no") == ()
    with pytest.raises(XferbenchError, match="not key=value"):
        parse_mode("threads=")
    assert SeriesKey("m", "2.13.0", (("sweep", "smoke"),)).reasons() == [SMOKE]
    assert SeriesKey("m", "2.13.0", (("sweep", "full"),)).reasons() == []


# -- 2: the label of a number and the number disagree ---------------------------------------------

def test_a_gpu_sidecar_beside_a_cpu_file_is_refused(results, capsys):
    path = files_of(results)["2.13.0+cu130"]
    side = path.with_suffix(".metadata")
    edit(side, lambda d: d["metadata"].update(device="cuda:0", gpu_name="NVIDIA H200"))
    before = tree(results)
    line = refused(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
                   "--torch", "2.13.0", "--machine", MACHINE, "--results", str(results),
                   words=(path.name, "says device cpu but its sidecar recorded device cuda:0"))
    assert "restore it from git" in line and tree(results) == before
    read_around(capsys, results, (path.name, "device cuda:0"))


def test_numbers_a_run_on_another_device_measured_are_refused(results, capsys):
    """A run on cuda:0 and one on the CPU of the same machine and torch filed into one file:
    its label (the newest run's device) would pass the older run's numbers off as its own."""
    path = files_of(results)["2.13.0+cu130"]
    edit(path.with_suffix(".metadata"),
         lambda d: [run.update(device="cuda:0") for run in [d["run"], *d["runs"]]])
    read_around(capsys, results, (path.name, "labelled device cpu", "on cuda:0",
                                  "two devices' runs"))
    refused(capsys, "compare", "2.12.1", "2.13.0", "--machine", MACHINE, "--results",
            str(results), words=(path.name, "two devices' runs"))


def test_a_file_moved_into_another_machine_folder_is_refused(results, capsys):
    path = files_of(results)["2.13.0+cu130"]
    moved = results / f"{MACHINE}-rerun" / ("aaaaaaaa" + path.name[8:])
    shutil.move(path, moved)
    shutil.move(path.with_suffix(".metadata"), moved.with_suffix(".metadata"))
    read_around(capsys, results, (moved.name, f"says machine {MACHINE} but is filed under "
                                               f"machine folder {MACHINE}-rerun"))


def test_a_cpu_run_on_a_gpu_machine_names_no_gpu(results, capsys):
    """The sidecar of a CPU run on a machine with an H200 names the H200: the citation and
    the price say "no GPU", the figure was not measured on it."""
    for path in files_of(results).values():
        edit(path.with_suffix(".metadata"),
             lambda d: d["metadata"].update(gpu_name="NVIDIA H200", driver="580.65"))
    code, text, _ = run(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
                        "--torch", "2.13.0", "--machine", MACHINE, "--results", str(results),
                        "--format", "json")
    cited = json.loads(text)
    assert code == 0 and cited["gpu"] is None and "H200" not in cited["sentence"]
    code, out, _ = run(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
                       "--torch", "2.13.0", "--machine", MACHINE, "--results", str(results))
    assert "| GPU | none (a CPU run) |" in out and "H200" not in out
    book = PriceBook.load(str(results))
    assert book.get("item_per_epoch") is None  # no GPU price from a CPU's figures
    assert "H200" not in book.get("item_per_epoch", allow_cpu=True).text()


def test_a_full_runs_value_is_not_called_quick_when_a_quick_series_exists(modes, capsys):
    code, text, _ = run(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
                        "--torch", "2.13.0", "--machine", MACHINE, "--results", str(modes),
                        "--format", "json")
    cited = json.loads(text)
    assert code == 0 and QUICK not in cited["not_for_citation"] and cited["mode"] == "default"
    assert "torch 2.13.0+cu130 on cpu-2core-vm (quick)" in cited["others"]


# -- 4: a broken or partial file ------------------------------------------------------------------

def test_a_file_cut_to_three_of_ten_values_is_damaged_not_failed(results, capsys):
    path = files_of(results)["2.14.1+cu130"]

    def cut(raw: dict) -> None:
        cols = row_of(raw, LOOP)
        cols["result"] = cols["result"][:3]
        set_row(raw, LOOP, cols)

    edit(path, cut)
    before = tree(results)
    refused(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE, "--results",
            str(results), words=(path.name, "3 values for the 10 parameter combinations",
                                 "bench_sync.Loop.track_step_s"))
    code, text, err = run(capsys, "compare", "2.13.0", "2.14.1", "--results", str(results),
                          "--format", "json")
    assert code in (0, 1) and "cut short" in err and path.name in err  # the others compared
    assert {r["mark"] for r in json.loads(text)["rows"] if r["machine"] == MACHINE} == {"missing"}
    assert tree(results) == before


def test_a_negative_time_is_damaged(results, capsys):
    path = files_of(results)["2.14.1+cu130"]

    def negative(raw: dict) -> None:
        cols = row_of(raw, LOOP)
        cols["result"] = [-v if v else v for v in cols["result"]]
        set_row(raw, LOOP, cols)

    edit(path, negative)
    refused(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
            "--torch", "2.14.1", "--machine", MACHINE, "--results", str(results),
            words=(path.name, "negative time"))
    refused(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE, "--results",
            str(results), words=("negative time",))
    read_around(capsys, results, (path.name, "negative time"))


def test_a_median_outside_its_own_quartiles_is_damaged(results, capsys):
    path = files_of(results)["2.14.1+cu130"]

    def outside(raw: dict) -> None:
        cols = row_of(raw, LOOP)
        cols["result"] = [v * 3 if v else v for v in cols["result"]]
        set_row(raw, LOOP, cols)

    edit(path, outside)
    read_around(capsys, results, (path.name, "median outside its own quartiles"))
    refused(capsys, "table", "--machine", MACHINE, "--torch", "2.14.1", "--results",
            str(results), words=(path.name, "median outside its own quartiles"))


def test_numbers_no_recorded_run_measured_are_refused(results, capsys):
    """A run that failed after asv saved (a full disk: the sidecar was not updated) leaves
    numbers in the results file that the sidecar describes as an earlier run's."""
    path = files_of(results)["2.14.1+cu130"]

    def later(raw: dict) -> None:
        cols = row_of(raw, LOOP)
        cols["started_at"] += 3 * 3600 * 1000  # three hours after that run ended
        set_row(raw, LOOP, cols)

    edit(path, later)
    refused(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
            "--torch", "2.14.1", "--machine", MACHINE, "--results", str(results),
            words=(path.name, "its sidecar does not describe", "bench_sync.Loop.track_step_s",
                   "a later run failed after asv saved them"))
    refused(capsys, "publish", "--machine", MACHINE, "--torch", "2.14.1", "--results",
            str(results), "--out", str(results.parent / "site"),
            words=("sidecar does not describe",))
    assert not (results.parent / "site").exists()
    read_around(capsys, results, (path.name, "sidecar does not describe"))


def test_a_clock_step_in_one_file_keeps_out_its_series_only(results, capsys):
    """A run whose system clock stepped back while it ran: asv's start times fall before
    the run's own start. Every other series is read; its own is refused, saying so."""
    path = files_of(results)["2.12.1+cu130"]

    def stepped(raw: dict) -> None:
        cols = row_of(raw, LOOP)
        cols["started_at"] -= 3600 * 1000  # an hour before that run began
        set_row(raw, LOOP, cols)

    edit(path, stepped)
    read_around(capsys, results, (path.name, "the system clock stepped during that run"))
    code, out, _ = run(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE,
                       "--results", str(results))
    assert code in (0, 1) and "rows tested" in out  # other machines' and releases' work
    refused(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256", "--torch",
            "2.12.1", "--machine", MACHINE, "--results", str(results),
            words=(path.name, "clock stepped", "left out"))


# -- 5: what the suite changed hides what was measured --------------------------------------------

def gain_a_parameter(root: Path) -> None:
    """The suite's Loop gains a parameter in the middle (``batch``): asv rewrites
    benchmarks.json so; the files measured before keep their two."""
    path = root / "benchmarks.json"
    data = json.loads(path.read_text())
    info = data[LOOP]
    info["param_names"] = [info["param_names"][0], "batch", info["param_names"][1]]
    info["params"] = [info["params"][0], ["32", "64"], info["params"][1]]
    path.write_text(json.dumps(data))


def test_old_files_keep_their_own_parameter_names(results, capsys):
    gain_a_parameter(results)
    code, out, _ = run(capsys, "list", "--results", str(results))
    block = out[out.index(LOOP):].split("\n\n")[0]
    assert "  batch: 32, 64" in block
    assert f"measured 10 of 10: {MACHINE}, torch 2.13.0+cu130 (its parameters then: read, " \
           "width)" in block
    code, text, _ = run(capsys, "cite", "Loop.track_step_s", "--params",
                        "read=item_every_batch,width=256", "--torch", "2.13.0", "--machine",
                        MACHINE, "--results", str(results), "--format", "json")
    assert code == 0 and json.loads(text)["params"] == {"read": "item_every_batch",
                                                         "width": "256"}


def test_the_sidecar_records_each_benchmarks_parameter_names(tmp_path):
    root = tmp_path / "results"
    (root / "box").mkdir(parents=True)
    shutil.copy(RESULTS / "benchmarks.json", root / "benchmarks.json")
    target = root / "box" / "abcdef12-env.json"
    run = RunRecord("c" * 40, "box", "cpu", "default", False, None, "2026-12-01T00:00:00Z")
    record_run(str(target), MachineMetadata(), run, [LOOP], {})
    data = json.loads(target.with_suffix(".metadata").read_text())
    assert data["schema_version"] == SCHEMA_VERSION == 4
    assert data["param_names"] == {LOOP: ["read", "width"]}
    gain_a_parameter(root)  # a later suite: the file's own names stay as they were
    assert load_sidecar(str(target)).param_names[LOOP] == ("read", "width")


def test_a_version_2_sidecar_upgrades_in_one_place():
    old = json.loads(next(RESULTS.glob("*/*.metadata")).read_text())
    assert old["schema_version"] == 2 and "param_names" not in old
    new = upgrade(old)
    assert new["schema_version"] == 4 and new["param_names"] == {} and new["diagnostics"] == {}


def test_a_machine_folder_without_machine_json_is_said_not_dropped(results, capsys):
    (results / "cpu-2core-vm-rerun" / "machine.json").unlink()
    for argv in (["list"], ["compare", "2.13.0", "2.14.1", "--machine", MACHINE],
                 ["publish", "--out", str(results.parent / "site")]):
        refused(capsys, *argv, "--results", str(results),
                words=("cpu-2core-vm-rerun", "6 results file(s) but no machine.json"))
    assert not (results.parent / "site").exists()


# -- 6: asked for one thing, given "ambiguous" ----------------------------------------------------

@pytest.fixture
def with_my_machine(results: Path) -> Path:
    """The committed results and the user's own first run (2.13.0+cpu, 2.14.1+cu130 on
    another machine: the golden folder's, renamed)."""
    for path in (GOLDEN / MACHINE).iterdir():
        target = results / "my-box" / path.name
        target.parent.mkdir(exist_ok=True)
        if path.suffix == ".json" and path.name != "machine.json":
            raw = json.loads(path.read_text())
            raw["params"]["machine"] = "my-box"
            target.write_text(json.dumps(raw))
        else:
            shutil.copy(path, target)
    return results


def test_the_readmes_reproduce_command_works_beside_my_own_run(with_my_machine, capsys):
    code, out, err = run(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE,
                         "--bench", "Copy", "--results", str(with_my_machine))
    assert code == 1 and "A: torch 2.13.0+cu130\nB: torch 2.14.1+cu130" in out, err
    code, text, _ = run(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE,
                        "--bench", "Copy", "--results", str(with_my_machine), "--format", "json")
    assert code == 1 and json.loads(text)["a"] == "torch 2.13.0+cu130"
    # without --machine, 2.13.0 is two builds: still one sentence naming them
    refused(capsys, "compare", "2.13.0", "2.14.1", "--results", str(with_my_machine),
            words=("ambiguous", "2.13.0+cpu", "2.13.0+cu130"))


def test_cite_with_machine_and_release_picks_that_machines_build(with_my_machine, capsys):
    code, text, _ = run(capsys, "cite", "Loop.track_step_s", "--params", "read=cpu,width=256",
                        "--machine", MACHINE, "--torch", "2.13.0", "--results",
                        str(with_my_machine), "--format", "json")
    assert code == 0 and json.loads(text)["torch"] == "2.13.0+cu130"


def test_nightlies_and_pre_releases_sort_before_their_release():
    versions = ["2.16.0", "2.16.0.dev20260101", "2.15.0+cu132", "2.16.0a0+git1a2b3c",
                "2.16.0rc1", "2.9.0", "unknown"]
    assert sorted(versions, key=version_key) == [
        "unknown", "2.9.0", "2.15.0+cu132", "2.16.0.dev20260101", "2.16.0a0+git1a2b3c",
        "2.16.0rc1", "2.16.0"]


# -- 7: a regression a second run would not confirm -----------------------------------------------

#: What scripts/confirm-regressions prints for the committed two sweeps (README): per step of
#: cpu-2core-vm, flagged worse in the first sweep, confirmed by the second.
SWEEPS = {"2.11.0+cu130": (21, 5), "2.12.1+cu130": (3, 3), "2.13.0+cu130": (8, 1),
          "2.14.1+cu130": (12, 8), "2.15.0+cu132": (7, 0)}


def test_the_rerun_is_recognised_as_a_repeat_and_another_host_is_not(results):
    rs = load(str(results))
    key = SeriesKey(MACHINE, "2.13.0+cu130")
    assert repeats_of(rs, key) == [SeriesKey(f"{MACHINE}-rerun", "2.13.0+cu130")]
    for side in (results / f"{MACHINE}-rerun").glob("*.metadata"):
        edit(side, lambda d: d["metadata"].update(hostname="another-vm"))
    assert repeats_of(load(str(results)), key) == []


@pytest.mark.slow
def test_the_pages_regressions_are_those_a_repeat_confirms():
    views = page_views(load(str(RESULTS)), 0.05, 0.1)
    steps = {s.b.torch: s for s in views.steps if s.machine == MACHINE}
    for torch, (flagged, confirmed) in SWEEPS.items():
        step = steps[torch]
        worse = step.marked("worse")
        assert len(worse) == flagged
        assert len(step.regressions) == confirmed  # nothing failed in B on the committed data
        suspected_worse = [r for r in step.suspected if r.row.mark == "worse"]
        assert len(suspected_worse) == flagged - confirmed
        assert step.repeats == (f"{MACHINE}-rerun",)


@pytest.mark.slow
def test_the_page_says_suspected(committed_site):
    page = (committed_site / "index.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="changes">'):page.index('<section id="benchmarks">')]
    assert ("torch 2.14.1+cu130 → torch 2.15.0+cu132 on cpu-2core-vm: 0 regressions, ") in section
    assert "<h4>Suspected: not confirmed by a repeat (" in section
    assert "suspected</span>" in section and "confirmed (cpu-2core-vm-rerun)" in section


def test_compare_marks_suspected_and_confirmed_counts_only_confirmed(capsys):
    args = ("compare", "2.14.1", "2.15.0", "--machine", MACHINE, "--results", str(RESULTS))
    code, out, _ = run(capsys, *args)
    assert code == 1 and "worse, suspected" in out and "worse, confirmed" not in out
    assert "REGRESSION: 7 significantly worse by more than 10% in B (0 confirmed by a repeat, " \
           "7 suspected)" in out
    code, out, _ = run(capsys, *args, "--confirmed")
    assert code == 0 and "no confirmed regression beyond 10%: 7 worse, each suspected" in out
    code, text, _ = run(capsys, *args, "--confirmed", "--format", "json")
    data = json.loads(text)
    assert code == 0 and (data["confirmed_worse"], data["suspected_worse"]) == (0, 7)
    assert not data["regression"]
    assert {r["confirmation"] for r in data["rows"] if r["mark"] == "worse"} == {"suspected"}
    code, text, _ = run(capsys, "compare", "2.13.0", "2.14.1", "--machine", MACHINE,
                        "--results", str(RESULTS), "--confirmed", "--format", "json")
    data = json.loads(text)
    assert code == 1 and (data["confirmed_worse"], data["suspected_worse"]) == (8, 4)
    confirmed = [r for r in data["rows"] if r["confirmation"] == "confirmed"]
    assert confirmed and all(r["confirmed_by"] == [f"{MACHINE}-rerun"] for r in confirmed)


def test_a_comparison_without_a_repeat_leaves_every_change_suspected(capsys):
    code, text, _ = run(capsys, "compare", "2.13.0", "2.14.1", "--results", str(GOLDEN),
                        "--format", "json")
    changes = [r for r in json.loads(text)["rows"] if r["mark"] in ("better", "worse")]
    assert changes and all(r["confirmation"] == "suspected" for r in changes)
    assert {r["suspected_why"] for r in changes} == {"no repeat of both series was measured"}


def test_sorted_series_of_the_committed_results_are_the_default_mode():
    assert all(k.mode == () for k in load(str(RESULTS)).series())
    assert [k.mode for k in load(str(GOLDEN)).series()] == [(("quick", "yes"),)] * 2

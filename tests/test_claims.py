"""The claims: the shipped table names only figures the suite declares and every claim the
issue lists; on the committed results (a CPU VM, six releases, two sweeps) every claim has a
verdict per series, recomputed from the numbers (host-side ones decided, accelerator ones not
measurable here with the run's reason); a planted result that reverses a claim turns its
verdict and is listed as a lost claim; bad input is one sentence and exit 2; the JSON is the
shipped schema's; docs/results.md's block is `xferbench claims --format markdown`'s."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from conftest import REPO_ROOT, all_committed_results, committed_results

from xferbench.analysis import claims as claims_mod
from xferbench.analysis.claims import (
    CANNOT_TELL,
    DECIDED,
    DOES_NOT_HOLD,
    HOLDS,
    NOT_MEASURABLE,
    NOT_MEASURED,
    evaluate,
)
from xferbench.analysis.claimtable import ClaimTable, check_figures, load_table, shipped_path
from xferbench.analysis.comparisons import Figure, comparison
from xferbench.analysis.stats import verdict
from xferbench.cli import main
from xferbench.devices import Capabilities
from xferbench.practices.behaviour import behaviour_skip_reason
from xferbench.practices.unsynced import CPU_REASON
from xferbench.results import load
from xferbench.results.discovery import describe_suite

RESULTS = committed_results()
ISSUE_CLAIMS = {  # the issue's list, each as the table names it
    "model-once", "create-on-device", "host-reads-wait", "item-per-batch", "async-call",
    "sync-before-timing", "pinned-faster", "non-blocking-many", "pin-then-copy-slower",
    "d2h-read-before-sync", "amp-faster", "compile-faster", "prefetch-starves-less",
    "tensor-to-new", "module-to-in-place", "mismatch-batch", "mismatch-forward",
    "mismatch-loss-weight"}
LOOP = "bench_sync.Loop.track_step_s"


@pytest.fixture(scope="module")
def report():
    return evaluate(load(str(RESULTS)), load_table(), repo=str(REPO_ROOT))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xferbench", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=False)


# -- the table ---------------------------------------------------------------------------------

@pytest.mark.parametrize("caps", [None, Capabilities("cuda:0", True, True, True,
                                                     stream_hold=True)])
def test_the_shipped_table_names_only_figures_the_suite_declares(caps):
    """Every figure, parameter and value is one the suite's own discovery declares (the full
    sweep's grid, on a CPU or a GPU probe), not merely one some results hold."""
    declared = describe_suite(str(REPO_ROOT), caps)
    assert declared and "bench_behaviour.Behaviour.track_holds" in declared
    table = load_table()
    check_figures(table, declared)
    assert {c.id for c in table.claims} >= ISSUE_CLAIMS
    for claim in table.claims:
        assert claim.sources and all(s.section and s.document for s in claim.sources)
        assert claim.text.endswith(".") and claim.figures


def test_the_table_is_shipped_in_the_package():
    assert shipped_path().endswith("xferbench/data/claims.toml")
    assert 'data/*.toml' in (REPO_ROOT / "pyproject.toml").read_text()


# -- verdicts on the committed results ---------------------------------------------------------

def test_every_claim_has_a_verdict_in_every_series_of_the_committed_results(report):
    rs = load(str(RESULTS))
    series = {(r.machine, r.torch) for r in rs}
    # two full sweeps of six releases, and the behaviour checks alone on each (an Intel host)
    assert len(series) == 18 and len(report.series) == 18
    assert len(report.rows) == len(load_table().claims)
    for claim, cells in report.rows:
        assert [(c.machine, c.torch) for c in cells] == [(p.machine, p.torch)
                                                        for p in report.series]
        for c in cells:
            assert c.verdict in (*DECIDED, NOT_MEASURABLE, NOT_MEASURED), (claim.id, c)
            if c.verdict not in DECIDED:
                assert c.reason, (claim.id, c.torch)  # never without its reason
            # a CPU VM's series: the caveat travels with every verdict
            assert c.not_for_citation and "measured on a CPU" in c.not_for_citation[0]


def test_the_host_side_claims_are_decided_and_the_accelerator_ones_say_why(report):
    by_id = {claim.id: cells for claim, cells in report.rows}
    swept = ("cpu-2core-vm", "cpu-2core-vm-rerun")  # the full sweeps
    for claim_id in ("item-per-batch",):
        assert all(c.verdict in DECIDED for c in by_id[claim_id] if c.machine in swept), claim_id
        assert {c.verdict for c in by_id[claim_id] if c.machine not in swept} == {NOT_MEASURED}
    # a practice that does nothing on a CPU decides nothing there (model.to('cpu') is the
    # module itself; a CPU copy is done when the call returns, non_blocking or not)
    for claim_id in ("model-once", "non-blocking-many", "create-on-device"):
        assert {c.verdict for c in by_id[claim_id] if c.machine in swept} == {NOT_MEASURABLE}
        assert all(c.reason.startswith("on a CPU") for c in by_id[claim_id]
                   if c.machine in swept), claim_id
    assert all(c.note.startswith("on a CPU there is no device to wait for")
               for c in by_id["item-per-batch"] if c.machine in swept)
    reasons = {  # the run's own reasons, or the practice's under the recorded probe
        "pinned-faster": "pinned host memory needs an accelerator",
        "async-call": "enqueue time needs an accelerator: on the CPU a copy returns when it "
                      "is done",
        "d2h-read-before-sync": "the hazards need an accelerator: on the CPU every copy is "
                                "synchronous",
        "sync-before-timing": CPU_REASON,
        "mismatch-loss-weight": behaviour_skip_reason(
            "mismatch_loss_weight", Capabilities("cpu", False, False, False)),
        "host-reads-wait": "the CPU has no host-device synchronisation to count"}
    for claim_id, reason in reasons.items():
        assert {(c.verdict, c.reason) for c in by_id[claim_id]} == {(NOT_MEASURABLE, reason)}
    # the claim's CPU scope: figures measured, but no copy on a CPU to save
    assert {c.verdict for c in by_id["create-on-device"] if c.machine in swept} == {
        NOT_MEASURABLE}
    # where its figures were never run (the Intel host ran the behaviour checks alone), the
    # CPU scope is not assumed: not measured, saying so
    assert {c.verdict for c in by_id["create-on-device"] if c.machine not in swept} == {
        NOT_MEASURED}
    assert by_id["create-on-device"][0].figures[0].practice is not None
    # the behaviour checks: run on the Intel host alone, where they hold on every release;
    # the sweeps predate them
    for claim_id in ("tensor-to-new", "module-to-in-place"):
        cells = by_id[claim_id]
        assert {c.verdict for c in cells if c.machine in swept} == {NOT_MEASURED}
        assert "bench_behaviour.Behaviour.track_holds" in cells[0].reason
        assert [c.verdict for c in cells if c.machine == "cpu-2core-vm-intel"] == ["holds"] * 6
    assert "full sweep" in by_id["compile-faster"][0].reason or \
        by_id["compile-faster"][0].verdict == NOT_MEASURABLE


def test_each_decided_verdict_is_the_test_of_its_figures(report):
    """Nothing typed by hand: a cell's ratio and word are stats.verdict's on its results."""
    rs = load(str(RESULTS))
    checked = 0
    for claim, cells in report.rows:
        for c in cells:
            for f in c.figures:
                if f.test is None or f.baseline is None or f.verdict == NOT_MEASURABLE:
                    continue
                again = verdict(f.baseline, f.practice, report.alpha, claim.rule.threshold)
                assert f.ratio == pytest.approx(f.baseline.value / f.practice.value)
                assert again.word == f.test.word
                held = again.word == claim.rule.expect
                assert (f.verdict == HOLDS) == held
                series = rs.filter(machine=c.machine, torch=c.torch)
                assert series.latest(f.practice.benchmark, **f.evidence.practice.param_dict) \
                    == f.practice
                checked += 1
    assert checked >= 12  # the host-side claim in twelve series


def _scale(results: Path, machine: str, torch: str, benchmark: str, params: dict,
           factor: float) -> None:
    """Multiply one combination's numbers (median, quartiles, CI, samples) in its asv file."""
    for path in (results / machine).glob("*.json"):
        if path.name == "machine.json" or f"torch{torch.replace('+', '-')}" not in path.name:
            continue
        data = json.loads(path.read_text())
        cols = data["result_columns"]
        row = data["results"][benchmark]
        info = json.loads((results / "benchmarks.json").read_text())[benchmark]
        combos = list(itertools.product(*row[cols.index("params")]))
        want = tuple(repr(params[name]) for name in info["param_names"])
        i = combos.index(want)
        for col in ("result", "stats_q_25", "stats_q_75", "stats_ci_99_a", "stats_ci_99_b"):
            if col in cols and row[cols.index(col)] and row[cols.index(col)][i] is not None:
                row[cols.index(col)][i] *= factor
        samples = row[cols.index("samples")]
        samples[i] = [x * factor for x in samples[i]]
        path.write_text(json.dumps(data))
        return
    raise AssertionError(f"no results file for torch {torch} on {machine}")


@pytest.mark.slow
def test_a_planted_result_that_reverses_a_claim_turns_its_verdict(tmp_path, report):
    machine, torch = "cpu-2core-vm", "2.10.0+cu128"
    cells = {c.torch: c for c in report.cells("item-per-batch") if c.machine == machine}
    assert cells[torch].verdict == HOLDS  # the committed numbers: per epoch 1.15x faster
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    # the practice (read once per epoch) made twice as slow: per batch is now the faster
    _scale(results, machine, torch, LOOP, {"read": "device_accumulate", "width": "256"}, 2.0)
    planted = evaluate(load(str(results)), load_table(), repo=str(REPO_ROOT))
    turned = {c.torch: c for c in planted.cells("item-per-batch") if c.machine == machine}
    assert turned[torch].verdict == DOES_NOT_HOLD
    assert turned[torch].reason == "the practice is slower"
    assert turned[torch].evidence.ratio == pytest.approx(cells[torch].evidence.ratio / 2)
    # and the next release, which held nothing, now gains what this one lost: listed
    changes = [(ch.before.torch, ch.before.verdict, ch.after.verdict)
               for ch in planted.changes if ch.claim.id == "item-per-batch"
               and ch.machine == machine]
    assert (torch, DOES_NOT_HOLD, cells["2.11.0+cu130"].verdict) in changes
    # a reversal the other way: 2.14.1 did not hold; its per-batch reads made slow, it holds
    assert cells["2.14.1+cu130"].verdict == DOES_NOT_HOLD
    _scale(results, machine, "2.14.1+cu130", LOOP,
           {"read": "item_every_batch", "width": "256"}, 3.0)
    again = {c.torch: c for c in evaluate(load(str(results)), load_table(),
                                          repo=str(REPO_ROOT)).cells("item-per-batch")
             if c.machine == machine}
    assert again["2.14.1+cu130"].verdict == HOLDS
    out = _cli("claims", "--results", str(results), "--claim", "item-per-batch")
    assert out.returncode == 0
    assert f"  {machine}, torch {torch}: does not hold: " in out.stdout
    assert "LOST item-per-batch on cpu-2core-vm: holds with torch 2.15.0" not in out.stdout


def test_a_ratio_the_interval_shows_too_small_does_not_hold_and_a_wide_one_cannot_tell():
    from xferbench.analysis.claimtable import ClaimRule

    same = verdict(_result([1.0, 1.01, 0.99, 1.0, 1.02, 0.98] * 5),
                   _result([1.0, 1.01, 0.99, 1.0, 1.02, 0.98] * 5), 0.05, 0.10)
    assert claims_mod._no_effect(same, "faster", 0.10)  # within 10% either way, shown
    wide = verdict(_result([1.0, 3.0]), _result([0.5, 2.0]), 0.05, 0.10)
    assert not claims_mod._no_effect(wide, "faster", 0.10)
    assert ClaimRule("ratio", expect="slower", threshold=0.1).describe().startswith(
        "the practice is slower than its baseline by more than 10%")


def _result(samples: list[float], **changes):
    from xferbench.results import Result

    xs = sorted(samples)
    base = dict(benchmark="b.C.track_s", params=(("x", "1"),), value=xs[len(xs) // 2],
                unit="seconds", machine="m", commit="c" * 40, date_ms=1, torch="2.0",
                cuda="none", python="3.11", env_name="e", path="/r.json",
                samples=tuple(samples), q25=xs[len(xs) // 4], q75=xs[3 * len(xs) // 4])
    return Result(**{**base, **changes})


def test_an_emulated_device_decides_no_claim_about_time():
    from xferbench.metadata import MachineMetadata
    from xferbench.results import ResultSet
    from xferbench.results.sidecar import Sidecar

    emu = Capabilities("emu:0", True, True, True, reason="emu:0 is emulated on the host",
                       emulated=True)
    params = {"read": "device_accumulate", "width": "256"}
    rows = [_result([1.0, 1.1, 0.9, 1.0] * 3, benchmark=LOOP, params=tuple(params.items())),
            _result([3.0, 3.1, 2.9, 3.0] * 3, benchmark=LOOP,
                    params=(("read", "item_every_batch"), ("width", "256")))]
    info = {LOOP: {"param_names": ["read", "width"], "unit": "seconds",
                   "params": [["'device_accumulate'", "'item_every_batch'"], ["'256'"]]}}
    side = Sidecar(MachineMetadata(device="emu:0", capabilities=emu, emulated=True))
    rs = ResultSet(rows, info, "/r", {"/r.json": side})
    table = load_table()
    one = ClaimTable(table.path, (table.get("item-per-batch"),))
    (cell,) = evaluate(rs, one).cells("item-per-batch")
    assert cell.verdict == NOT_MEASURABLE
    assert cell.reason == "a claim about time: emu:0 is emulated on the host"
    # on a real device the same numbers decide it
    real = Sidecar(MachineMetadata(device="cuda:0", capabilities=Capabilities(
        "cuda:0", True, True, True)))
    (cell,) = evaluate(ResultSet(rows, info, "/r", {"/r.json": real}), one).cells(
        "item-per-batch")
    assert cell.verdict == HOLDS and cell.evidence.ratio == pytest.approx(3.0)


# -- bad input ---------------------------------------------------------------------------------

def _figure_toml(f: Figure) -> str:
    params = ", ".join(f'{k} = "{v}"' for k, v in f.params)
    return f'{{ name = "{f.name}", benchmark = "{f.benchmark}", params = {{ {params} }} }}'


def _written_out(text: str) -> str:
    """The shipped table as a user's own table may give it: each comparison written out as
    its practice and its baseline (the form a table of version 1 has)."""
    def figures(m: re.Match) -> str:
        c = comparison(m.group(1))
        practice, baseline = (c.baseline, c.practice) if m.group(2) else (c.practice, c.baseline)
        return f"practice = {_figure_toml(practice)}\nbaseline = {_figure_toml(baseline)}"

    return re.sub(r'comparison = "(\w+)"(\nswap = true)?', figures, text)


def test_a_table_that_writes_out_its_figures_reads_as_the_one_that_names_comparisons(tmp_path):
    path = tmp_path / "claims.toml"
    path.write_text(_written_out(Path(shipped_path()).read_text()).replace(
        "version = 2", "version = 1"))
    assert load_table(str(path)).claims == load_table().claims


def _table_with(tmp_path: Path, old: str, new: str) -> str:
    text = _written_out(Path(shipped_path()).read_text())
    assert old in text, old
    path = tmp_path / "claims.toml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


@pytest.mark.parametrize("old, new, says", [
    ('benchmark = "bench_pipeline.Pipeline.track_step_s"',
     'benchmark = "bench_pipeline.Pipeline.track_stp_s"',
     "names bench_pipeline.Pipeline.track_stp_s, which the suite does not have"),
    ('factory = "zeros", variant = "on_device"', 'factory = "zeroes", variant = "on_device"',
     "factory=zeroes is not a value of bench_creation.Creation.track_ready_s"),
    ('mode = "device_arg", seq = "512"', 'mode = "device_arg", length = "512"',
     "bench_creation.CreatedInForward.track_forward_s takes the parameters mode, seq"),
    ('rule = { kind = "ratio", expect = "faster", threshold = 0.05 }',
     'rule = { kind = "median", expect = "faster", threshold = 0.05 }',
     "rule kind 'median' cannot be evaluated"),
    ('rule = { kind = "ratio", expect = "faster", threshold = 0.05 }',
     'rule = { kind = "ratio", expect = "quicker", threshold = 0.05 }',
     "a ratio rule cannot be evaluated with expect 'quicker'"),
    ('rule = { kind = "ratio", expect = "faster", threshold = 0.05 }',
     'rule = { kind = "ratio", expect = "faster", threshold = 5 }',
     "the threshold 5 is not a change from 0"),
    ('rule = { kind = "ratio", expect = "lower", threshold = 0.10 }',
     'rule = { kind = "ratio", expect = "faster", threshold = 0.10 }',
     "a figure in fraction is lower or higher, never faster"),
    ('baseline = { name = "model.to(device) every step", benchmark = '
     '"bench_pipeline.Pipeline.track_step_model_to_s"',
     'baseline = { name = "model.to(device) every step", benchmark = '
     '"bench_pipeline.Pipeline.track_starvation_share"',
     "its rule cannot be evaluated: it compares fraction with seconds"),
    ('rule = { kind = "value", op = "at_least", bound = 1 }',
     'rule = { kind = "value", op = "most", bound = 1 }',
     "a value rule cannot be evaluated with op 'most'"),
    ('id = "model-once"', 'id = "Model Once"', "needs an id of lower-case words"),
    ("version = 2", "version = 3", "has version 3: this xferbench reads versions 1 and 2"),
    ('id = "create-on-device"', 'id = "model-once"', "names claim 'model-once' twice"),
])
def test_a_bad_table_is_one_sentence_and_exit_2(tmp_path, capsys, old, new, says):
    table = _table_with(tmp_path, old, new)
    assert main(["claims", "--results", str(RESULTS), "--table", table]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("xferbench: claims table ")
    assert says in err, err


@pytest.mark.parametrize("new, says", [
    ('comparison = "pinned_vs_pageable_typo"',
     "'pinned_vs_pageable_typo' is not a comparison xferbench declares: it has "),
    ('comparison = "pinned_vs_pageable"\nswap = "yes"', "swap must be true or false"),
    ('comparison = "pinned_vs_pageable"\npractice = { name = "x", benchmark = "y" }',
     "names a comparison or gives a practice and a baseline, not both"),
])
def test_a_bad_comparison_entry_is_one_sentence_and_exit_2(tmp_path, capsys, new, says):
    path = tmp_path / "claims.toml"
    path.write_text(Path(shipped_path()).read_text().replace(
        'comparison = "pinned_vs_pageable"', new, 1))
    assert main(["claims", "--results", str(RESULTS), "--table", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("xferbench: claims table ")
    assert "claim 'pinned-faster': " in err and says in err, err


def test_an_unknown_claim_and_a_broken_table_are_one_sentence_and_exit_2(tmp_path, capsys):
    for argv in (["claims", "--claim", "pin-everything"],
                 ["cite", "--claim", "pin-everything"]):
        assert main([*argv, "--results", str(RESULTS)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("xferbench: claim 'pin-everything' is not in xferbench's claims "
                              "table: it holds model-once, ") and err.count("\n") == 1
    bad = tmp_path / "bad.toml"
    bad.write_text("[[claims]\n")
    assert main(["claims", "--results", str(RESULTS), "--table", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"xferbench: claims table {bad} is not TOML")
    assert main(["claims", "--results", str(RESULTS), "--table", str(tmp_path / "no")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["cite", "--claim", "model-once", "--machine", "x", "--results",
                 str(RESULTS)]) == 2
    assert capsys.readouterr().err.endswith(
        ": it holds cpu-2core-vm, cpu-2core-vm-intel, cpu-2core-vm-rerun\n")


# -- where people read it ----------------------------------------------------------------------

def test_the_json_is_the_shipped_schemas():
    import jsonschema  # a test extra

    schema = json.loads(resources.files("xferbench").joinpath(
        "data", "claims.schema.json").read_text())
    out = _cli("claims", "--results", str(RESULTS), "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    jsonschema.validate(data, schema)
    assert len(data["claims"]) == len(load_table().claims)
    assert all(len(c["verdicts"]) == 18 for c in data["claims"])
    broken = json.loads(out.stdout)
    broken["claims"][0]["verdicts"][0]["verdict"] = "probably"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_the_results_page_claims_block_is_that_of_the_committed_results():
    page = (REPO_ROOT / "docs" / "results.md").read_text()
    begin, end = "<!-- claims:begin -->\n", "\n<!-- claims:end -->"
    quoted = page[page.index(begin) + len(begin): page.index(end)]
    out = _cli("claims", "--results", str(all_committed_results()), "--format", "markdown")
    assert out.returncode == 0, out.stderr
    assert quoted == out.stdout.rstrip(), (
        "docs/results.md's claims differ from results/: paste the output of "
        "'xferbench claims --format markdown' between the claims markers")


def test_cite_claim_quotes_the_verdict_with_its_provenance_and_caveats():
    out = _cli("cite", "--claim", "item-per-batch", "--results", str(RESULTS),
               "--torch", "2.10.0", "--machine", "cpu-2core-vm")
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("Not for citation: measured on a CPU, no GPU")
    assert ('The claim "A few host reads per epoch are cheap; reading the loss with .item() '
            'every batch slows a training loop down."') in first
    assert "holds on cpu-2core-vm (CPU " in first and "with PyTorch 2.10.0+cu128: " in first
    assert "1.15x (95%: 1.13x to 1.24x), Mann-Whitney U p = " in first
    assert "on a CPU there is no device to wait for" in first
    assert "xferbench suite commit d61e069d" in first
    # each figure's own citation, as `xferbench cite` prints it, then the other series
    assert out.stdout.count("measured a median of") == 2
    assert "In the other series: torch 2.11.0+cu130 on cpu-2core-vm: cannot tell" in out.stdout
    data = json.loads(_cli("cite", "--claim", "pinned-faster", "--results", str(RESULTS),
                           "--format", "json").stdout)
    assert data["verdict"] == NOT_MEASURABLE
    assert data["reason"] == "pinned host memory needs an accelerator"
    assert data["sentence"].startswith("Not for citation: measured on a CPU")
    assert len(data["others"]) == 17 and data["claim"]["id"] == "pinned-faster"


def test_cite_claim_refuses_a_benchmark_beside_it(capsys):
    assert main(["cite", "Loop.track_step_s", "--claim", "item-per-batch",
                 "--results", str(RESULTS)]) == 2
    assert "--claim cites a claim's verdict: give it without BENCHMARK" in \
        capsys.readouterr().err
    assert main(["cite", "--results", str(RESULTS)]) == 2
    assert "give a BENCHMARK to cite" in capsys.readouterr().err


def test_a_verdict_cannot_tell_where_the_samples_cannot(report):
    # the committed first sweep's 2.11.0: per epoch 1.08x, its interval spans 1
    cell = next(c for c in report.cells("item-per-batch")
                if (c.machine, c.torch) == ("cpu-2core-vm", "2.11.0+cu130"))
    assert cell.verdict == CANNOT_TELL
    lo, hi = cell.evidence.interval
    assert lo < 1 < hi

"""compare: the Mann-Whitney U test against known values, and the command end to end on the
committed two-version results: every common benchmark gets a ratio, a 30% slowdown is a
regression (exit 1), the data against itself exits 0, bad input exits 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import committed_results, series_options

from xferbench import XferbenchError
from xferbench.analysis.comparison import (
    BETTER,
    MISSING,
    WORSE,
    compare_results,
)
from xferbench.analysis.stats import (
    AMBIGUOUS,
    SAME,
    higher_is_better,
    mann_whitney_u,
    verdict,
)
from xferbench.cli import main
from xferbench.commands.compare import compare
from xferbench.results import Result, load

RESULTS = committed_results()


def result_files(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("*/*.json") if p.name != "machine.json")


def measured(raw: dict) -> list[tuple[str, int]]:
    """(benchmark, combination index) of every measured value in a raw asv results file."""
    out = []
    for name, row in raw["results"].items():
        cols = dict(zip(raw["result_columns"], row))
        out += [(name, i) for i, x in enumerate(cols.get("result") or [])
                if x is not None and not math.isnan(x)]
    return out


def scale(raw: dict, name: str, i: int, factor: float) -> None:
    """Make one value ``factor`` times its recorded self: median, quartiles, CI and samples."""
    columns = raw["result_columns"]
    row = raw["results"][name]
    cols = dict(zip(columns, row))
    for key in ("result", "stats_q_25", "stats_q_75", "stats_ci_99_a", "stats_ci_99_b"):
        if cols.get(key) and cols[key][i] is not None:
            cols[key][i] *= factor
    if cols.get("samples") and cols["samples"][i]:
        cols["samples"][i] = [x * factor for x in cols["samples"][i]]
    raw["results"][name] = [cols[c] for c in columns[: len(row)]]


def newest_file_of(root: Path, version: str, machine: str = "cpu-2core-vm") -> Path:
    """The newest results file of ``version`` on ``machine`` (a full sweep's: the Intel
    host's files hold the behaviour checks alone, no samples)."""
    files = [p for p in result_files(root)
             if json.loads(p.read_text())["params"]["torch"].split("+")[0] == version
             and p.parent.name == machine]
    return max(files, key=lambda p: json.loads(p.read_text())["date"])


# -- the test itself -------------------------------------------------------------------------

@pytest.mark.parametrize(("x", "y", "u", "p"), [
    # reference values: scipy.stats.mannwhitneyu(x, y, method="exact") for small samples;
    # with ties, scipy.stats.permutation_test over every split; both large, "asymptotic"
    ([1, 2, 3], [4, 5, 6], 0.0, 0.1),
    ([1, 2, 2, 3, 3, 3, 4], [3, 4, 4, 5, 5, 6, 7, 7], 3.5, 0.00404040404040404),
    ([19, 22, 16, 29, 24], [20, 11, 17, 12], 17.0, 0.1111111111111111),
    ([0.5 * k for k in range(25)], [0.5 * k + 3.2 for k in range(30)], 171.0,
     0.0005821919179632507),
])
def test_mann_whitney_matches_scipy(x, y, u, p):
    got_u, got_p = mann_whitney_u(x, y)
    assert got_u == u
    assert got_p == pytest.approx(p, rel=1e-9)


def test_mann_whitney_of_identical_samples_is_not_significant():
    assert mann_whitney_u([1.1, 2.2, 3.3], [1.1, 2.2, 3.3]) == (4.5, 1.0)
    assert mann_whitney_u([5.0] * 4, [5.0] * 6)[1] == 1.0  # every value tied


def test_mann_whitney_is_symmetric_in_p():
    x, y = [0.1 * k for k in range(30)], [0.1 * k + 0.7 for k in range(25)]
    assert mann_whitney_u(x, y)[1] == pytest.approx(mann_whitney_u(y, x)[1])


def test_rates_are_higher_is_better_and_seconds_lower():
    assert higher_is_better("GB/s") and higher_is_better("steps/s")
    assert not higher_is_better("seconds") and not higher_is_better("fraction")


def _r(value: float, unit: str, samples: tuple[float, ...] | None,
       ci: tuple[float, float] | None = None, torch: str = "a") -> Result:
    return Result(benchmark="bench_x.X.track", params=(("n", 1),), value=value, unit=unit,
                  machine="m", commit="c", date_ms=0, torch=torch, cuda="none", python="3",
                  env_name="e", path="p", samples=samples, ci_99=ci)


def test_lower_rate_is_worse_and_lower_time_better():
    slow = tuple(10.0 + 0.01 * k for k in range(20))
    fast = tuple(5.0 + 0.01 * k for k in range(20))
    rows, _ = compare_results([_r(10.0, "GB/s", slow)], [_r(5.0, "GB/s", fast)])
    assert rows[0].mark == WORSE and rows[0].worse_by == pytest.approx(2.0)
    rows, _ = compare_results([_r(10.0, "seconds", slow)], [_r(5.0, "seconds", fast)])
    assert rows[0].mark == BETTER and rows[0].ratio == pytest.approx(0.5)


def test_without_samples_disjoint_confidence_intervals_decide():
    a = _r(1.0, "seconds", None, (0.95, 1.05))
    assert compare_results([a], [_r(1.3, "seconds", None, (1.25, 1.35))])[0][0].mark == WORSE
    assert compare_results([a], [_r(1.3, "seconds", None, (1.0, 1.6))])[0][0].mark == (
        AMBIGUOUS)
    assert compare_results([a], [_r(1.0, "seconds", None, (0.97, 1.03))])[0][0].mark == SAME


@pytest.mark.parametrize("unit,a,b,mark", [
    ("syncs", 0.0, 1.0, WORSE), ("syncs", 2.0, 1.0, BETTER), ("syncs", 1.0, 1.0, SAME),
    ("allocations", 1.0, 3.0, WORSE), ("bytes", 4096.0, 4096.0, SAME),
    ("bytes", 4096.0, 4200.0, SAME),
    ("holds", 1.0, 0.0, WORSE), ("holds", 0.0, 1.0, BETTER)])
def test_a_count_or_a_behaviour_that_changes_is_a_change(unit, a, b, mark):
    """Counted once, not sampled (syncs per step, a behaviour check): no noise to test
    against, so a difference beyond the threshold is a change, and within it the same."""
    rows, _ = compare_results([_r(a, unit, None)], [_r(b, unit, None)])
    assert rows[0].mark == mark and rows[0].test == "exact"
    assert higher_is_better("holds") and not higher_is_better("syncs")
    assert higher_is_better("peer access (1 yes, 0 no)")  # access lost is worse
    v = verdict(_r(a, unit, None), _r(b, unit, None))
    assert v.significant == (a != b) and v.test == "exact"
    if unit == "holds":
        assert v.word == ("no longer holds" if b < a else "now holds")


def test_a_fraction_without_samples_is_ambiguous():
    rows, _ = compare_results([_r(0.2, "fraction", None)], [_r(0.9, "fraction", None)])
    assert rows[0].mark == AMBIGUOUS and rows[0].test == "none"


def test_significant_change_whose_interval_is_inside_the_threshold_is_the_same():
    a = tuple(1.0 + 0.001 * k for k in range(50))
    b = tuple(x * 1.05 for x in a)
    rows, _ = compare_results([_r(1.025, "seconds", a)], [_r(1.076, "seconds", b)])
    assert rows[0].mark == SAME and rows[0].p_value < 0.05
    lo, hi = rows[0].verdict.interval
    assert 1 < lo and hi < 1.1


def test_a_change_the_interval_cannot_place_is_ambiguous():
    a = (1.0, 1.3, 0.8, 1.1)
    b = (1.05, 1.25, 0.9, 1.2)
    rows, _ = compare_results([_r(1.05, "seconds", a)], [_r(1.12, "seconds", b)])
    assert rows[0].mark == AMBIGUOUS and rows[0].p_value > 0.05


# -- end to end on the committed results -----------------------------------------------------

def a_version() -> str:
    return load(str(RESULTS)).torch_versions()[0].split("+")[0]


def two_versions() -> tuple[str, str]:
    versions = load(str(RESULTS)).torch_versions()
    assert len(versions) >= 2, f"{RESULTS} should hold two PyTorch versions: {versions}"
    return versions[0].split("+")[0], versions[-1].split("+")[0]


def test_versions_compare_every_common_benchmark_with_a_ratio():
    a, b = two_versions()
    c = compare(a, b, results=str(RESULTS))
    rs = load(str(RESULTS)).newest()
    measured_a = {(r.machine, r.benchmark, r.params) for r in rs.filter(torch=a) if r.ok}
    measured_b = {(r.machine, r.benchmark, r.params) for r in rs.filter(torch=b) if r.ok}
    common = measured_a & measured_b
    assert common, "the two versions share no measured benchmark"
    with_ratio = {(r.machine, r.benchmark, r.params) for r in c.rows if r.ratio is not None}
    assert with_ratio == common
    for r in c.rows:
        if r.ratio is not None:
            if r.a.value:
                assert r.ratio == pytest.approx(r.b.value / r.a.value)
            else:  # 0 bytes on both sides, say
                assert r.ratio == (1.0 if r.b.value == 0 else math.inf)
            assert r.mark in (WORSE, BETTER, SAME, AMBIGUOUS)
        else:
            assert r.mark == MISSING


def test_compare_command_prints_a_table(run_python):
    a, b = two_versions()
    proc = run_python("-m", "xferbench", "compare", a, b, "--results", str(RESULTS))
    assert proc.returncode in (0, 1), proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"A: torch {a}") and lines[1].startswith(f"B: torch {b}")
    assert any(line.startswith("benchmark") and "B/A" in line for line in lines)
    assert " compared: " in proc.stdout
    assert ("REGRESSION" in proc.stdout) == (proc.returncode == 1)


def test_thirty_percent_slower_copy_is_a_regression(results_copy: Path, capsys):
    original = newest_file_of(results_copy, a_version())
    raw = json.loads(original.read_text())
    def n_samples(name: str, i: int) -> int:
        samples = dict(zip(raw["result_columns"], raw["results"][name])).get("samples")
        return len(samples[i] or []) if samples else 0

    # a value with samples to test (asv --quick records one sample of its own timings)
    name, i = next(((n, i) for n, i in measured(raw) if n_samples(n, i) >= 5), (None, 0))
    assert name, f"{original} records no samples: make it with xferbench run (--record-samples)"
    scale(raw, name, i, 1.3)
    slower = original.with_name("slower-" + original.name)
    slower.write_text(json.dumps(raw))

    code = main(["compare", str(original), str(slower), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["regression"]
    worse = [r for r in report["rows"] if r["mark"] == WORSE]
    assert len(worse) == 1 and worse[0]["benchmark"] == name
    assert worse[0]["ratio"] == pytest.approx(1.3)
    assert worse[0]["p_value"] < 0.05
    assert worse[0]["q_value"] < 0.05 and worse[0]["interval"][0] > 1
    assert {r["mark"] for r in report["rows"] if r["mark"] != WORSE} <= {SAME, AMBIGUOUS}

    # the same slowdown under a 40% threshold is no regression
    assert main(["compare", str(original), str(slower), "--threshold", "40%"]) == 0
    assert "compared: 0 worse, " in capsys.readouterr().out


def test_data_compared_with_itself_is_refused_in_one_sentence(capsys):
    a = a_version()
    assert main(["compare", a, a, "--results", str(RESULTS)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "are the same results" in err[0] and "nothing to compare" in err[0]
    path = str(result_files(RESULTS)[0])
    assert main(["compare", path, path]) == 2


def test_a_copy_of_the_data_compares_equal(results_copy: Path, capsys):
    victim = result_files(results_copy)[0]
    twin = victim.with_name("twin-" + victim.name)
    twin.write_text(victim.read_text())
    assert main(["compare", str(victim), str(twin)]) == 0
    assert "0 worse, 0 failed in B, 0 better, 0 clock" in capsys.readouterr().out


@pytest.mark.parametrize("spec", ["9.9.9", "nonsense", "deadbeef"])
def test_unknown_version_is_one_sentence_exit_2(spec, capsys):
    assert main(["compare", spec, a_version(), "--results", str(RESULTS)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and f"'{spec}'" in err and "versions" in err


def test_unknown_benchmark_is_one_sentence_exit_2(capsys):
    a = a_version()
    assert main(["compare", a, a, "--results", str(RESULTS), "--bench", "NoSuchBench"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "NoSuchBench" in err


def test_empty_results_folder_exit_2(tmp_path: Path, capsys):
    assert main(["compare", "2.13.0", "2.14.1", "--results", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "no results" in err


def test_a_truncated_results_file_fails_the_comparison_that_needs_it(results_copy: Path,
                                                                    capsys):
    victim = result_files(results_copy)[0]
    machine, torch = series_options(victim)[1::2]
    victim.write_text(victim.read_text()[:200])
    other = next(v for v in load(str(RESULTS)).torch_versions() if v != torch)
    assert main(["compare", other, torch, "--machine", machine, "--results",
                 str(results_copy)]) == 2
    out, err = capsys.readouterr()
    *warned, last = err.strip().splitlines()
    assert out == "" and "truncated" in last and victim.name in last
    assert len(warned) == 1 and warned[0].startswith("xferbench: warning: ")


def test_bad_threshold_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["compare", "a", "b", "--threshold", "150%"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_two_versions_at_one_commit_need_torch(results_copy: Path):
    victim = next(p for p in result_files(results_copy) if "2.13" in p.name)
    raw = json.loads(victim.read_text())
    commit = raw["commit_hash"][:8]
    raw["commit_hash"] = "f" * 40  # the same run, filed under another suite commit
    victim.with_name("ffffffff" + victim.name[8:]).write_text(json.dumps(raw))
    with pytest.raises(XferbenchError, match="add --torch"):
        compare(commit, "ffffffff", results=str(results_copy))
    c = compare(commit, "ffffffff", results=str(results_copy), torch="2.13.0")
    assert c.exit_status == 0 and c.a.label == f"commit {commit}"



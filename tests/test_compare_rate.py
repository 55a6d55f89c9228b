"""compare across many rows: two copies of one series with noise added (no real change) flag
at most the false discovery rate's share of rows; a 30% slowdown planted in ten rows flags
those ten; deciding on p instead says so."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from test_compare import measured, newest_file_of

from xferbench.analysis.comparison import BETTER, WORSE, compare_results
from xferbench.cli import main
from xferbench.results import Result, load_file

RATE = 0.05
NOISE = 0.15  # the spread of the noise added to each sample (log scale)


def _samples(raw: dict, name: str, i: int) -> list[float]:
    samples = dict(zip(raw["result_columns"], raw["results"][name])).get("samples")
    return list(samples[i] or []) if samples else []


def _set(raw: dict, name: str, i: int, samples: list[float]) -> None:
    """Give one combination new samples, its median, quartiles and interval theirs."""
    columns = raw["result_columns"]
    cols = dict(zip(columns, raw["results"][name]))
    xs = sorted(samples)
    at = {"result": xs[len(xs) // 2], "stats_q_25": xs[len(xs) // 4],
          "stats_q_75": xs[(3 * len(xs)) // 4], "stats_ci_99_a": xs[0], "stats_ci_99_b": xs[-1]}
    for key, value in at.items():
        if cols.get(key):
            cols[key][i] = value
    cols["samples"][i] = samples
    raw["results"][name] = [cols[c] for c in columns[: len(raw["results"][name])]]


def noisy_pair(root: Path, seed: int, slower: dict[tuple[str, int], float]) -> tuple[Path, Path]:
    """Two results files, each the committed series with its own noise on every sample;
    B's combinations in ``slower`` are that many times slower."""
    original = newest_file_of(root, "2.13.0")
    raw = json.loads(original.read_text())
    rng = random.Random(seed)
    paths = []
    for side in ("a", "b"):
        copy = json.loads(json.dumps(raw))
        for name, i in measured(raw):
            base = _samples(raw, name, i)
            if len(base) >= 2:
                factor = slower.get((name, i), 1.0) if side == "b" else 1.0
                _set(copy, name, i, [x * factor * math.exp(rng.gauss(0, NOISE)) for x in base])
        path = original.with_name(f"{side}-{original.name}")
        path.write_text(json.dumps(copy))
        paths.append(path)
    return paths[0], paths[1]


def _flags(capsys, a: Path, b: Path, *extra: str) -> tuple[int, dict]:
    code = main(["compare", str(a), str(b), "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("seed", range(3))
def test_copies_of_one_series_flag_at_most_the_rates_share_of_rows(results_copy, capsys,
                                                                    seed):
    a, b = noisy_pair(results_copy, seed, {})
    _, report = _flags(capsys, a, b)
    changes = [r for r in report["rows"] if r["mark"] in (WORSE, BETTER)]
    assert report["decide_on"] == "q" and report["tested"] >= 50
    assert len(changes) <= RATE * report["tested"]
    _, on_p = _flags(capsys, a, b, "--decide-on", "p")
    assert on_p["decide_on"] == "p" and on_p["significant"] >= report["significant"]


def _result(samples: list[float], key: int) -> Result:
    xs = sorted(samples)
    return Result("bench_x.X.track_s", (("n", key),), xs[len(xs) // 2], "seconds", "m",
                  "c" * 40, 0, "2.13.0", "none", "3.11", "env", "/x.json", samples=tuple(xs))


def test_on_many_unchanged_rows_the_rate_holds_back_what_p_alone_would_flag():
    rng = random.Random(5)
    base = [[rng.lognormvariate(0, 0.05) for _ in range(8)] for _ in range(400)]
    a, b = ([_result([x * math.exp(rng.gauss(0, NOISE)) for x in s], k)
             for k, s in enumerate(base)] for _ in range(2))
    on_q, _ = compare_results(a, b)
    on_p, _ = compare_results(a, b, decide_on="p")
    flagged = [len([r for r in rows if r.mark in (WORSE, BETTER)]) for rows in (on_q, on_p)]
    assert flagged[0] <= RATE * len(base)
    assert flagged[1] >= flagged[0] + 5  # about one in twenty on p alone: what q prevents


def planted_rows(path: Path, count: int) -> dict[tuple[str, int], tuple]:
    """(benchmark, combination index) -> its parameters, for the ``count`` combinations with
    the most samples: a change there is one the test can see (three samples cannot)."""
    index: dict[str, int] = {}
    found = []
    for r in load_file(str(path)):  # each benchmark's combinations in the file's order
        i = index[r.benchmark] = index.get(r.benchmark, -1) + 1
        found.append((len(r.samples or ()), (r.benchmark, i), r.params))
    found.sort(key=lambda f: -f[0])
    assert found[count - 1][0] >= 8
    return {key: params for _, key, params in found[:count]}


def test_a_thirty_percent_slowdown_in_ten_rows_flags_those_ten(results_copy, capsys):
    planted = planted_rows(newest_file_of(results_copy, "2.13.0"), 10)
    a, b = noisy_pair(results_copy, 52, dict.fromkeys(planted, 1.3))
    code, report = _flags(capsys, a, b)
    worse = {(r["benchmark"], tuple(r["params"].items())) for r in report["rows"]
             if r["mark"] == WORSE}
    assert code == 1
    assert worse == {(name, params) for (name, _), params in planted.items()}
    assert not [r for r in report["rows"] if r["mark"] == BETTER]

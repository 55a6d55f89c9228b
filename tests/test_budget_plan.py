"""The gpu-check run on the emulated device (tests/gpu_check_runs.py) against the plan it is
given, in a second: the plan grows with the suite, and the run's grid budget is set there."""

from __future__ import annotations

import json
import os
import re
import runpy
from pathlib import Path

import pytest
from gpu_check_runs import CHECK_ENV, MIN_SPARE, emu_plan_env

REPO = Path(__file__).resolve().parents[1]


def test_the_gpu_check_grid_holds_the_planned_headline_parts_with_room_to_spare():
    """The headline parts planned for emu's smoke sweep (as scripts/budget-plan plans them)
    fit the gpu-check run's grid budget with MIN_SPARE to spare: a class added to the suite,
    or a cost raised in costs.json, fails here by name, not as a gpu-check run that cut a
    class on a loaded machine."""
    from xferbench.commands.run.budget import REPORT_S, class_plan
    from xferbench.commands.run.suite import describe_suite

    plans = {c.name: class_plan(c) for c in describe_suite(str(REPO), emu_plan_env())
             if c.measured}
    assert set(plans) >= {"Copy", "Creation", "Loop", "Pipeline"}
    need = sum(p.headline_s for p in plans.values()) + REPORT_S
    grid = int(CHECK_ENV["XFERBENCH_GPU_CHECK_GRID"])
    per_class = ", ".join(f"{k} {p.headline_s:.0f} s" for k, p in plans.items())
    assert need * (1 + MIN_SPARE) <= grid, (
        f"the headline parts plan {need:.0f} s ({per_class}): the gpu-check run's grid of "
        f"{grid} s needs at least {need * (1 + MIN_SPARE):.0f} s")


#: The share beyond the CUDA plan's headline parts that scripts/gpu-check's grid budget must
#: hold: a GPU machine's classes start more slowly than planned on a loaded host too.
CUDA_MIN_SPARE = 0.15


def _check_default(name: str) -> int:
    """scripts/gpu-check's default for one of its settings ("BUDGET"), read from the script."""
    text = (REPO / "scripts" / "gpu-check").read_text()
    return int(re.search(rf"^{name}=\$\{{XFERBENCH_GPU_CHECK_{name}:-(\d+)\}}$", text,
                         re.M).group(1))


def test_the_cuda_plan_holds_every_headline_part_within_the_check_grid_with_15pc_to_spare():
    """What scripts/budget-plan prints for one CUDA device and the default sweep: the headline
    parts of every class fit the grid budget gpu-check gives by default, with CUDA_MIN_SPARE
    to spare. A class or a headline combination added, or a cost raised, fails here."""
    from xferbench.commands.run.budget import REPORT_S, class_plan
    from xferbench.commands.run.suite import describe_suite

    plan = runpy.run_path(str(REPO / "scripts" / "budget-plan"))
    env = {**os.environ, "XFERBENCH_SWEEP": "default", "XFERBENCH_QUICK": "0",
           "XFERBENCH_PROBE": json.dumps({"device": "cuda:0",
                                          "capabilities": plan["PROBES"]["cuda"]})}
    plans = {c.name: class_plan(c) for c in describe_suite(str(REPO), env) if c.measured}
    assert set(plans) >= {"Copy", "Creation", "Loop", "Pipeline"}
    budget = _check_default("BUDGET")
    grid = plan["grid_budget"](budget, budget // 4)
    need = sum(p.headline_s for p in plans.values()) + REPORT_S
    per_class = ", ".join(f"{k} {p.headline_s:.0f} s" for k, p in plans.items())
    assert need * (1 + CUDA_MIN_SPARE) <= grid, (
        f"the CUDA plan's headline parts need {need:.0f} s ({per_class}): gpu-check's grid "
        f"of {grid} s needs at least {need * (1 + CUDA_MIN_SPARE):.0f} s")


@pytest.fixture
def cuda_suite(monkeypatch, fresh_suite):
    """The suite's modules imported as a CUDA device's class processes import them (the
    probe scripts/budget-plan plans CUDA with), default sweep."""
    caps = runpy.run_path(str(REPO / "scripts" / "budget-plan"))["PROBES"]["cuda"]
    monkeypatch.setenv("XFERBENCH_PROBE", json.dumps({"device": "cuda:0", "capabilities": caps}))
    monkeypatch.setenv("XFERBENCH_SWEEP", "default")
    monkeypatch.setenv("XFERBENCH_QUICK", "0")
    return fresh_suite


def _read_by_claims_and_headlines() -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """(benchmark, params) of every figure the claims table, the headlines and the copy table
    read."""
    from xferbench.analysis.claimtable import load_table
    from xferbench.analysis.headline import HEADLINES
    from xferbench.analysis.sitemap import BANDWIDTH_BENCHMARKS
    from xferbench.practices import HEADLINE_NBYTES
    from xferbench.practices.copies import COPY_HOST_MEMORY, DIRECTIONS, SYNCS
    from xferbench.units import size_label

    def key(benchmark, params):
        return benchmark, tuple(sorted((k, str(v)) for k, v in params.items()))

    read = {key(f.benchmark, f.param_dict) for c in load_table().claims for f in c.figures}
    for h in HEADLINES:
        for params in (h.practice, h.baseline):
            read |= {key(b, params) for b in (h.benchmark, h.counts) if b}
    read |= {key(b, {"direction": d, "host_memory": m, "sync": s, "layout": "one",
                     "size": size_label(HEADLINE_NBYTES)})
             for b in BANDWIDTH_BENCHMARKS.values() for d in (*DIRECTIONS, "d2d")
             for m in COPY_HOST_MEMORY for s in SYNCS}
    return read


def test_each_class_measures_first_exactly_what_the_claims_and_headlines_read(cuda_suite):
    """The combinations a budgeted run measures first (each class's ``first``) are those the
    claims table, the headlines and the copy table read, for every class they read; a class
    none reads still measures some first. Hazards' busy 1 MiB figure, which a claim reads,
    comes before its idle 64 MiB races."""
    wanted: dict[str, set[tuple[str, ...]]] = {}
    for benchmark, params in _read_by_claims_and_headlines():
        module, name, method = benchmark.split(".")
        cls = getattr(cuda_suite(module), name)
        combo = tuple(dict(params)[p] for p in cls.param_names)
        if combo in {tuple(map(str, c)) for c in cls.combinations()} and \
                cls.reasons(combo)[method] is None:  # measured on this device and sweep
            wanted.setdefault(name, set()).add(combo)
    for module in ("bench_copies", "bench_creation", "bench_sync", "bench_pipeline",
                   "bench_hazards", "bench_contention", "bench_timer", "bench_behaviour",
                   "bench_queued", "bench_d2d", "bench_pin_threads"):
        for cls in vars(cuda_suite(module)).values():
            if not (isinstance(cls, type) and cls.__module__.endswith(module)
                    and cls.combinations()):
                continue
            first = {tuple(map(str, c)) for c in cls.combinations() if cls.headline(c)}
            assert first == wanted.get(cls.__name__, first) and first, cls.__name__
    assert wanted["Hazards"] == {("d2h_read_before_sync", "busy", "1MiB")}


def test_a_combination_is_planned_by_its_own_clocks_bytes_and_spec(cuda_suite, monkeypatch):
    """What a combination costs grows with its bytes (Copy at 256 MiB, the large model,
    Hazards' 100 trials at 64 MiB), counts the clocks it is read on, and samples at the spec
    its class runs (UnsyncedTimer at BENCH_SPEC, Behaviour with no sampling at all)."""
    budget = cuda_suite("_budget")
    monkeypatch.setattr(budget, "COSTS", {})
    monkeypatch.setattr(budget, "DEFAULT_COMBINATION_S", 0.0)  # the plan's own arithmetic
    copy = cuda_suite("bench_copies").Copy
    pinned = ("h2d", "pinned", "non_blocking", "one")
    assert copy.measurements_of((*pinned, "64MiB")) == 2  # device time and the host clocks
    assert copy.measurements_of(("h2d", "pinned", "blocking", "one", "64MiB")) == 1
    assert copy.combination_s((*pinned, "256MiB")) - copy.combination_s((*pinned, "4KiB")) > 2
    pipeline = cuda_suite("bench_pipeline").Pipeline
    plain = ("pageable", "0", "blocking", "amp", "eager")
    assert pipeline.combination_s(("large", *plain)) - pipeline.combination_s(("small", *plain)) \
        > 2
    hazards = cuda_suite("bench_hazards").Hazards
    assert hazards.combination_s(("d2h_read_before_sync", "idle", "64MiB")) > 3 > \
        hazards.combination_s(("d2h_read_before_sync", "busy", "1MiB"))
    from xferbench.practices import BENCH_SPEC

    timer = cuda_suite("bench_timer").UnsyncedTimer
    assert timer.combination_s(("4096",)) == pytest.approx(
        BENCH_SPEC.warmup_s + BENCH_SPEC.max_time_s + budget.DATA_S)
    assert cuda_suite("bench_behaviour").Behaviour.combination_s(("tensor_to_new",)) == \
        pytest.approx(budget.DATA_S)

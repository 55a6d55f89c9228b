"""The gpu-check run on the emulated device (tests/gpu_check_runs.py) against the plan it is
given, in a second: the plan grows with the suite, and the run's grid budget is set there."""

from __future__ import annotations

from pathlib import Path

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

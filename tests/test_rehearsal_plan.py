"""The gpu-check rehearsal's lease (tests/rehearsals.py) against the plan it rehearses, in a
second: the plan grows with the suite, the rehearsal's budget is typed there."""

from __future__ import annotations

from pathlib import Path

from rehearsals import LEASE, MIN_SPARE, emu_plan_env

REPO = Path(__file__).resolve().parents[1]


def test_the_rehearsal_grid_holds_the_planned_lease_parts_with_room_to_spare():
    """The lease parts planned for emu's smoke sweep (as scripts/lease-plan plans them) fit
    the rehearsal's grid budget with MIN_SPARE to spare: a class added to the suite, or a
    cost raised in costs.json, fails here by name, not as a rehearsal that cut a class on a
    loaded machine. (The comment there once said 181 s planned, a quarter to spare, when the
    plan had grown to 202 s, 204 s with the report's: 13%.)"""
    from xferbench.commands.run.budget import REPORT_S, class_plan
    from xferbench.commands.run.suite import describe_suite

    plans = {c.name: class_plan(c) for c in describe_suite(str(REPO), emu_plan_env())
             if c.measured}
    assert set(plans) >= {"Copy", "Creation", "Loop", "Pipeline"}
    need = sum(p.lease_s for p in plans.values()) + REPORT_S
    grid = int(LEASE["XFERBENCH_GPU_CHECK_GRID"])
    per_class = ", ".join(f"{k} {p.lease_s:.0f} s" for k, p in plans.items())
    assert need * (1 + MIN_SPARE) <= grid, (
        f"the lease parts plan {need:.0f} s ({per_class}): the rehearsal's grid of {grid} s "
        f"needs at least {need * (1 + MIN_SPARE):.0f} s")

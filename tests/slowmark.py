"""The ``slow`` mark kept honest, and the slow files scheduled first.

A test is ``slow`` where it takes SLOW_S or more (setup and call) on the 2-core machine CI
runs on: it is marked by hand, or it uses a fixture marked ``slow_fixture`` (an asv run, a
publish, a browser's site: the cost of a shared fixture falls on whichever of its tests runs
first, so every one of them is marked). The run's summary names each test that took SLOW_S
or more without the mark, so that ``-m "not slow"`` stays the quick loop it says it is.
tests/conftest.py calls ``mark_slow_and_order`` and ``report_unmarked_slow`` from its hooks.
"""

from __future__ import annotations

import pytest

#: A test that takes this long, setup and call, on the 2-core machine CI runs on, is slow.
SLOW_S = 5.0


def slow_fixture(func):
    """Under ``@pytest.fixture``: a fixture whose setup takes SLOW_S or more; every test
    that uses it is marked ``slow``."""
    func.xferbench_slow = True
    return func


def uses_a_slow_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(
        defs and getattr(defs[-1].func, "xferbench_slow", False)
        for defs in info.name2fixturedefs.values())


def mark_slow_and_order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the users of a slow fixture ``slow`` (call it before ``-m`` reads the marks:
    ``tryfirst``); in an xdist worker, put the files that hold a slow test first, in file
    order, the rest after (scripts/test keeps the order: ``--no-loadscope-reorder``): a long
    file started last leaves the other core idle at the end."""
    for item in items:
        if uses_a_slow_fixture(item):
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):
        slow_files = {item.path for item in items if item.get_closest_marker("slow")}
        items.sort(key=lambda item: item.path not in slow_files)  # stable


def report_unmarked_slow(terminalreporter: pytest.TerminalReporter) -> list[str]:
    """One line for each test that took SLOW_S or more without the ``slow`` mark (a noisy
    host may push one over: mark it where it is slow on a quiet one); the lines written."""
    took: dict[str, float] = {}
    for kind in ("passed", "failed", "error"):
        for r in terminalreporter.stats.get(kind, []):
            if getattr(r, "when", None) in ("setup", "call") and \
                    "slow" not in getattr(r, "keywords", {}):
                took[r.nodeid] = took.get(r.nodeid, 0.0) + r.duration
    lines = [f"took {seconds:.1f} s without the slow mark (tests/slowmark.py SLOW_S = "
             f"{SLOW_S:g}): {nodeid}"
             for seconds, nodeid in sorted(((s, n) for n, s in took.items() if s >= SLOW_S),
                                           reverse=True)]
    for line in lines:
        terminalreporter.write_line(line)
    return lines

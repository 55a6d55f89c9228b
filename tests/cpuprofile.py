"""CPU seconds per test, with the processes it started: where a machine's time goes when the
run keeps every core busy and wall times say more about the neighbours than the test.

    PYTHONPATH=tests .venv/bin/python -m pytest -p cpuprofile -n 2 --dist loadfile -q
    .venv/bin/python tests/cpuprofile.py [--tests]      # the files (or tests) by CPU seconds

Each test's CPU is this process's (its own work, its threads) and that of the child processes
it waited for (getrusage's RUSAGE_CHILDREN), setup and teardown included, so a module's shared
fixture counts in its first test. Each process (xdist worker) writes its rows to
``$XFERBENCH_CPU_PROFILE`` (default: a folder in the temporary directory), emptied when the
run starts."""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import pytest

FOLDER = Path(os.environ.get("XFERBENCH_CPU_PROFILE")
              or Path(tempfile.gettempdir()) / "xferbench-cpu-profile")
_rows: list[tuple[str, float, float, float]] = []


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def pytest_configure(config):
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the run's first process: a fresh profile
        for old in FOLDER.glob("rows-*.json"):
            old.unlink()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, kids = _cpu()
    started = time.perf_counter()
    yield
    own2, kids2 = _cpu()
    _rows.append((item.nodeid, own2 - own, kids2 - kids, time.perf_counter() - started))


def pytest_sessionfinish(session):
    if not _rows:
        return
    FOLDER.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (FOLDER / f"rows-{worker}-{os.getpid()}.json").write_text(json.dumps(_rows))


def main(argv: list[str]) -> int:
    rows = [r for f in sorted(FOLDER.glob("rows-*.json")) for r in json.loads(f.read_text())]
    if not rows:
        print(f"no rows in {FOLDER}: run pytest with -p cpuprofile first", file=sys.stderr)
        return 2
    groups: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for nodeid, own, kids, wall in rows:
        g = groups[nodeid if "--tests" in argv else nodeid.split("::")[0]]
        g[0], g[1], g[2], g[3] = g[0] + own, g[1] + kids, g[2] + wall, g[3] + 1
    own = sum(r[1] for r in rows)
    kids = sum(r[2] for r in rows)
    print(f"{len(rows)} tests: {own + kids:.0f} CPU-s ({own:.0f} in pytest's processes, "
          f"{kids:.0f} in the processes they started), {sum(r[3] for r in rows):.0f} s of wall")
    print("| CPU s | of it children | wall s | tests | where |")
    print("| ---: | ---: | ---: | ---: | --- |")
    for name, (o, k, w, n) in sorted(groups.items(), key=lambda x: -(x[1][0] + x[1][1]))[:30]:
        print(f"| {o + k:.1f} | {k:.1f} | {w:.1f} | {n} | {name} |")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:  # piped into head: what was read is enough
        sys.stderr.close()
        sys.exit(0)

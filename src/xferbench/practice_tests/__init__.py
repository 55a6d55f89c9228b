"""The practices as a quick pytest-benchmark suite: ``pytest --pyargs xferbench.practice_tests``.

One small combination per question, each timed with the ``xfer_benchmark`` fixture on
``--xfer-device`` and grouped so that pytest-benchmark's table sets the two answers side by
side. The workloads are the practices' own (``xferbench.practices``), verified before and after
timing; what the device cannot run is skipped with the practice's own reason.
"""

from __future__ import annotations

from typing import Any

from ..units import MiB

#: Bytes per copy and per created tensor: small enough for a quick run on a CPU, large enough
#: that an accelerator's copy is bandwidth-bound rather than launch-bound.
QUICK_NBYTES = 16 * MiB


def time_workload(xfer_benchmark: Any, work: Any, *, nbytes: int | None = None,
                  clock: str | None = None) -> None:
    """Time ``work.run`` with ``xfer_benchmark``; ``work.verify()`` before and after."""
    work.run()
    work.verify()  # a wrong first result fails before any number exists
    xfer_benchmark.nbytes = nbytes
    xfer_benchmark.clock = clock
    xfer_benchmark(work.run)
    work.verify()

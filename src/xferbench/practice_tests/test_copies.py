"""Host-to-device copies: pinned vs pageable host memory, non_blocking vs blocking."""

from __future__ import annotations

import pytest

from xferbench.device_memory import DoesNotFit
from xferbench.devices import capabilities
from xferbench.practices.copies import CopyCase, build_copy, copy_skip_reason

from . import QUICK_NBYTES, time_workload


def _time_copy(xfer_benchmark, case: CopyCase) -> None:
    dev = str(xfer_benchmark.device)
    reason = copy_skip_reason(case, capabilities(dev))
    if reason:
        pytest.skip(reason)
    try:
        work = build_copy(case, dev)
    except DoesNotFit as exc:
        pytest.skip(str(exc))
    time_workload(xfer_benchmark, work, nbytes=case.nbytes)


@pytest.mark.benchmark(group="pinned vs pageable: one 16MiB tensor, h2d, {clock}")
@pytest.mark.parametrize("host_memory", ["pageable", "pinned"])
def test_pinned_vs_pageable(xfer_benchmark, host_memory):
    _time_copy(xfer_benchmark, CopyCase("h2d", host_memory, "blocking", "one", QUICK_NBYTES))


@pytest.mark.benchmark(
    group="non_blocking vs blocking: 1,000 pinned tensors, 16MiB in all, h2d, {clock}")
@pytest.mark.parametrize("sync", ["blocking", "non_blocking"])
def test_non_blocking_vs_blocking(xfer_benchmark, sync):
    _time_copy(xfer_benchmark, CopyCase("h2d", "pinned", sync, "many", QUICK_NBYTES))

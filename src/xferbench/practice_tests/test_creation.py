"""torch.zeros(n, device=dev) vs torch.zeros(n).to(dev): time until the tensor is ready."""

from __future__ import annotations

import pytest

from xferbench.device_memory import DoesNotFit
from xferbench.devices import capabilities
from xferbench.practices.creation import (
    READY_CLOCK,
    CreationCase,
    build_creation,
    creation_skip_reason,
)

from . import QUICK_NBYTES, time_workload


@pytest.mark.benchmark(
    group="created on the device vs on the host then copied: torch.zeros, 16MiB, until ready")
@pytest.mark.parametrize("variant", ["on_device", "to"])
def test_on_device_vs_copied(xfer_benchmark, variant):
    case = CreationCase("zeros", variant, QUICK_NBYTES)
    dev = str(xfer_benchmark.device)
    reason = creation_skip_reason(case, capabilities(dev))
    if reason:
        pytest.skip(reason)
    try:
        work = build_creation(case, dev)
    except DoesNotFit as exc:
        pytest.skip(str(exc))
    time_workload(xfer_benchmark, work, nbytes=case.nbytes, clock=READY_CLOCK)

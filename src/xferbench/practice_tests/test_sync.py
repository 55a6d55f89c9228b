"""A training epoch whose loss is read with .item() every batch vs once per epoch."""

from __future__ import annotations

import pytest

from xferbench.devices import capabilities
from xferbench.practices.sync import (
    LOOP_CLOCK,
    PER_BATCH,
    PER_EPOCH,
    LoopCase,
    build_loop,
    loop_skip_reason,
)

from . import time_workload


@pytest.mark.benchmark(
    group=".item() every batch vs once per epoch: one epoch of an MLP, 20 steps")
@pytest.mark.parametrize("read", [PER_BATCH, PER_EPOCH])
def test_item_per_batch_vs_per_epoch(xfer_benchmark, read):
    case = LoopCase(read)
    dev = str(xfer_benchmark.device)
    reason = loop_skip_reason(case, capabilities(dev))
    if reason:
        pytest.skip(reason)
    xfer_benchmark.extra_info["steps"] = case.steps  # a sample is one epoch of this many
    time_workload(xfer_benchmark, build_loop(case, dev), clock=LOOP_CLOCK)

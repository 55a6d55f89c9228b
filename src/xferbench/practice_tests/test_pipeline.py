"""A whole DataLoader pipeline: pinned + prefetch vs pageable + blocking, the small model."""

from __future__ import annotations

import pytest

from xferbench.devices import capabilities
from xferbench.practices.pipeline import (
    INPUT_BOUND,
    PIPELINE_CLOCK,
    PipelineCase,
    build_pipeline,
    pipeline_skip_reason,
)

from . import time_workload


@pytest.mark.benchmark(group="DataLoader pipeline, 2 workers, small model: pinned + prefetch "
                             "vs pageable + blocking, 8 steps of 32 samples")
@pytest.mark.parametrize("host_memory,move", [("pageable", "blocking"), ("pinned", "prefetch")])
def test_pinned_prefetch_vs_pageable_blocking(xfer_benchmark, host_memory, move):
    case = PipelineCase(INPUT_BOUND, host_memory, 2, move)
    dev = str(xfer_benchmark.device)
    reason = pipeline_skip_reason(case, capabilities(dev))
    if reason:
        pytest.skip(reason)
    work = build_pipeline(case, dev)
    try:
        xfer_benchmark.extra_info.update(steps=case.steps, batch=case.batch)  # per sample
        time_workload(xfer_benchmark, work, clock=PIPELINE_CLOCK)
    finally:
        work.close()  # the loader's worker processes end here

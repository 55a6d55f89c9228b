"""Hidden synchronisation: a training loop reading its loss every batch vs once per epoch."""

from asv_runner.benchmarks.mark import skip_benchmark_if

from xferbench.practices.sync import (
    BENCH_BUDGET,
    LoopCase,
    loop_widths,
    run_loop,
    sync_count_skip_reason,
    syncs_per_step,
)
from xferbench.practices.sync_reads import READS

from ._asv import CAPS, DEVICE, asv_samples

WIDTHS = [str(w) for w in loop_widths()]


class Loop:
    """Seconds per training step (epoch time on the host clock, one synchronise at its end,
    divided by the steps per epoch); steps per second is its inverse."""

    params = (list(READS), WIDTHS)
    param_names = ["read", "width"]
    unit = "seconds"
    processes = 1
    timeout = 180

    def track_step_s(self, read, width):
        result = run_loop(LoopCase(read, width=int(width)), DEVICE, BENCH_BUDGET)
        return asv_samples(result.step_samples, result.measurement.calls_per_sample)


class LoopSyncs:
    """Host-device synchronisations per training step, counted by torch's sync debug mode."""

    params = (list(READS), WIDTHS)
    param_names = ["read", "width"]
    unit = "syncs"
    processes = 1
    timeout = 120

    @skip_benchmark_if(sync_count_skip_reason(CAPS) is not None)
    def track_syncs_per_step(self, read, width):
        return syncs_per_step(LoopCase(read, width=int(width)), DEVICE)

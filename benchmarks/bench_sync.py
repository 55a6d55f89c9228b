"""Hidden synchronisation: a training loop reading its loss every batch vs once per epoch."""

from xferbench.practices import BENCH_SPEC
from xferbench.practices.sync import (
    LoopCase,
    loop_skip_reason,
    loop_widths,
    read_count_skip_reason,
    run_loop,
    syncs_per_step,
)
from xferbench.practices.sync_reads import READS

from ._asv import CAPS, DEVICE, Grid, asv_samples, grid_timeout, skip_when, spec

WIDTHS = [str(w) for w in loop_widths()]


def _runs(read, width):
    return loop_skip_reason(LoopCase(read, width=int(width)), CAPS)


def _count_reason(read, width):
    return _runs(read, width) or read_count_skip_reason(read, CAPS)


class Loop(Grid):
    """Seconds per training step (epoch time on the host clock, one synchronise at its end,
    divided by the steps per epoch; steps per second is its inverse), and the host-device
    synchronisations per step, counted by torch's sync debug mode. ``read=lagged`` is the fix
    for the per-batch read: the loss copied non_blocking into pinned memory behind an event,
    read one step later."""

    params = (list(READS), WIDTHS)
    param_names = ["read", "width"]
    unit = "seconds"
    base_spec = BENCH_SPEC
    # the item-per-epoch headline's pair, the hidden-sync and the lagged-read claims' reads
    first = tuple({"read": read, "width": "256"} for read in (
        "device_accumulate", "item_every_batch", "cpu", "tolist", "print", "lagged"))

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _runs, BENCH_SPEC.max_time_s + 1)

    def measure(self, read, width):
        case = LoopCase(read, width=int(width))
        result = run_loop(case, DEVICE, spec(BENCH_SPEC))
        values = {"track_step_s": asv_samples(result.step_samples,
                                              result.measurement.calls_per_sample_of())}
        if not _count_reason(read, width):
            values["track_syncs_per_step"] = syncs_per_step(case, DEVICE)
        return values

    @skip_when(params, _runs)
    def track_step_s(self, cache, read, width):
        return self.values["track_step_s"]

    @skip_when(params, _count_reason)
    def track_syncs_per_step(self, cache, read, width):
        return self.values["track_syncs_per_step"]

    track_syncs_per_step.unit = "syncs"

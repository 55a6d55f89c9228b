"""Timing device work: what an unsynchronised host timer reports against the real time (the
same timer read after a synchronise), from the same calls of a chain of matmuls."""

from xferbench.practices import BENCH_SPEC
from xferbench.practices.unsynced import (
    SYNCED_CLOCK,
    UNSYNCED_CLOCK,
    run_unsynced,
    timer_sizes,
    timer_skip_reason,
)

from ._asv import CAPS, DEVICE, Grid, grid_timeout, measured, skip_when, spec

SIZES = [str(n) for n in timer_sizes()]


def _reason(n):
    return timer_skip_reason(int(n), CAPS)


class UnsyncedTimer(Grid):
    """Seconds per call of 8 matmuls of n x n, each call from an idle device, read on the
    host clock twice: track_unsynced_s as the call returns (what time.perf_counter() around
    the call reports with no synchronise before it), track_synced_s after a synchronise (the
    real time). Their ratio is the factor by which the unsynchronised timer under-reports;
    skipped on the CPU, where it is 1 by construction."""

    params = (SIZES,)
    param_names = ["n"]
    unit = "seconds"
    base_spec = BENCH_SPEC  # what measure() runs it at
    first = ({"n": "4096"},)  # the unsynchronised-timer claim's

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _reason, BENCH_SPEC.max_time_s + 5)

    def measure(self, n):
        m = run_unsynced(int(n), DEVICE, spec(BENCH_SPEC))
        return {"track_unsynced_s": measured(m, UNSYNCED_CLOCK),
                "track_synced_s": measured(m, SYNCED_CLOCK)}

    @skip_when(params, _reason)
    def track_unsynced_s(self, cache, n):
        return self.values["track_unsynced_s"]

    @skip_when(params, _reason)
    def track_synced_s(self, cache, n):
        return self.values["track_synced_s"]

"""The non_blocking hazards: how often the unsafe pattern sees wrong data, per size."""

from xferbench.practices.hazards import (
    HAZARDS,
    TRIALS,
    hazard_sizes,
    hazard_skip_reason,
    run_hazard,
)
from xferbench.units import parse_size, size_label

from ._asv import CAPS, DEVICE, Grid, grid_timeout, skip_when

SIZES = [size_label(n) for n in hazard_sizes()]


def _reason(kind, size):
    return hazard_skip_reason(kind, CAPS)


class Hazards(Grid):
    """The fraction of trials (100 per size, each from an idle device) in which the unsafe
    pattern observed wrong data, checked against the value it should have seen: a
    non_blocking device-to-host copy read before synchronising, a pinned source overwritten
    right after its non_blocking copy was queued, and a non_blocking copy from pageable memory
    that returned before it was complete."""

    params = (list(HAZARDS), SIZES)
    param_names = ["hazard", "size"]
    unit = "fraction"

    def setup_cache(self):
        return self.measure_grid()

    # 100 trials of at most a few 64 MiB fills, copies and checks each
    setup_cache.timeout = grid_timeout(params, _reason, 10)

    def measure(self, kind, size):
        return {"track_wrong_fraction": run_hazard(kind, parse_size(size), DEVICE,
                                                   TRIALS).fraction}

    @skip_when(params, _reason)
    def track_wrong_fraction(self, cache, kind, size):
        return self.values["track_wrong_fraction"]

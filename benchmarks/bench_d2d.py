"""d2d from memory beside the L2-resident figure: a small device-to-device copy with the same
buffers every call, and rotated through buffers several times the L2."""

from xferbench.practices.d2d_memory import (
    PLACEMENTS,
    D2DCase,
    d2d_sizes,
    d2d_skip_reason,
    run_d2d,
)
from xferbench.units import parse_size, size_label

from ._asv import (
    CAPS,
    DEFAULT_SPEC,
    DEVICE,
    TEXTS,
    Grid,
    device_time,
    grid_timeout,
    skip_when,
    spec,
)

SIZES = [size_label(n) for n in d2d_sizes()]


def _reason(placement, size):
    return d2d_skip_reason(D2DCase(placement, parse_size(size)), CAPS)


class D2DFromMemory(Grid):
    """Seconds per device-to-device copy, on device time (calls back to back behind a stream
    hold), bytes counted once: ``l2_resident`` copies the same buffers every call (they fit
    the L2: the cache's figure); ``rotated`` walks through buffers that together exceed the
    L2 four times (each call from memory). What the rotation walked goes to the sidecar."""

    params = (list(PLACEMENTS), SIZES)
    param_names = ["placement", "size"]
    unit = "seconds"

    first = ({"size": SIZES[-1]},)  # no claim reads it: both placements at the largest size

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _reason, DEFAULT_SPEC.max_time_s)

    def measure(self, placement, size):
        m = run_d2d(D2DCase(placement, parse_size(size)), DEVICE, spec())
        walked = (f"{m.extra['slots']} source/destination pairs, "
                  f"{size_label(m.extra['footprint_bytes'])} in all; L2 "
                  f"{size_label(m.extra['l2_bytes']) if m.extra['l2_bytes'] else 'not known'}")
        return {"track_device_s": device_time(m), TEXTS: {"track_device_s": walked}}

    @skip_when(params, _reason)
    def track_device_s(self, cache, *params):
        return self.values["track_device_s"]

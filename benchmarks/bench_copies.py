"""Host<->device copies: pageable vs pinned vs pin-then-copy, blocking vs non_blocking."""

from xferbench.practices import headline_nbytes, sizes
from xferbench.practices.copies import (
    DIRECTIONS,
    HOST_MEMORY,
    LAYOUTS,
    SYNCS,
    CopyCase,
    copy_skip_reason,
    overlap_matmul_n,
    overlap_skip_reason,
    pin_skip_reason,
    run_copy,
    run_overlap,
    run_pin_memory,
)
from xferbench.units import parse_size, size_label

from ._asv import CAPS, DEFAULT_SPEC, DEVICE, Grid, grid_timeout, measured, skip_when, spec

SIZES = [size_label(n) for n in sizes()]
HEADLINE = [size_label(headline_nbytes())]


def _copy_reason(direction, host_memory, sync, layout, size):
    return copy_skip_reason(CopyCase(direction, host_memory, sync, layout, parse_size(size)),
                            CAPS)


def _host_reason(direction, host_memory, sync, layout, size):
    if direction == "d2d" or size != HEADLINE[0]:
        return (f"host clocks are measured at the headline size ({HEADLINE[0]}), h2d and d2h; "
                "this combination has its device time only")
    return _copy_reason(direction, host_memory, sync, layout, size)


def _enqueue_reason(direction, host_memory, sync, layout, size):
    if DEVICE == "cpu":
        return "enqueue time needs an accelerator: on the CPU a copy returns when it is done"
    return _host_reason(direction, host_memory, sync, layout, size)


class Copy(Grid):
    """Copy bandwidth over the whole grid: seconds per copy from device events (the host
    clock on a CPU; pin_then_copy on the completion clock, pinning included). At the headline
    size, also what the host sees, each call from an idle device: until the copy is complete
    (synchronised; what a user waits for) and how long the call holds the Python thread (what
    non_blocking gives back)."""

    params = ([*DIRECTIONS, "d2d"], list(HOST_MEMORY), list(SYNCS), list(LAYOUTS), SIZES)
    param_names = ["direction", "host_memory", "sync", "layout", "size"]
    unit = "seconds"

    def setup_cache(self):
        return self.measure_grid()

    # a device measurement per combination and a host one at the headline size
    setup_cache.timeout = grid_timeout(params, _copy_reason, 2 * DEFAULT_SPEC.max_time_s)

    def measure(self, direction, host_memory, sync, layout, size):
        case = CopyCase(direction, host_memory, sync, layout, parse_size(size))
        values = {"track_device_s": measured(run_copy(case, DEVICE, spec()))}
        if not _host_reason(direction, host_memory, sync, layout, size):
            host = run_copy(case, DEVICE, spec(), clock="completion_s")
            values["track_completion_s"] = measured(host, "completion_s")
            if host.enqueue_s:
                values["track_enqueue_s"] = measured(host, "enqueue_s")
        return values

    @skip_when(params, _copy_reason)
    def track_device_s(self, cache, *params):
        return self.values["track_device_s"]

    @skip_when(params, _host_reason)
    def track_completion_s(self, cache, *params):
        return self.values["track_completion_s"]

    @skip_when(params, _enqueue_reason)
    def track_enqueue_s(self, cache, *params):
        return self.values["track_enqueue_s"]


def _pin_reason(size):
    return pin_skip_reason(CAPS)


class PinMemory(Grid):
    """x.pin_memory() alone: the cost pin_then_copy pays on every call (host clock)."""

    params = (SIZES,)
    param_names = ["size"]
    unit = "seconds"

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _pin_reason, DEFAULT_SPEC.max_time_s)

    def measure(self, size):
        return {"track_host_s": measured(run_pin_memory(parse_size(size), DEVICE, spec()))}

    @skip_when(params, _pin_reason)
    def track_host_s(self, cache, size):
        return self.values["track_host_s"]


def _overlap_reason(host_memory, size):
    return overlap_skip_reason(host_memory, CAPS)


class Overlap(Grid):
    """A side-stream H2D copy under matmuls of about its length: 1 - overlap fraction
    (0 = the copy fully hidden, 1 = serialised), so that lower is better as asv assumes."""

    params = (["pageable", "pinned"], HEADLINE)
    param_names = ["host_memory", "size"]
    unit = "fraction"

    def setup_cache(self):
        return self.measure_grid()

    # four measurements and up to three resizings of the matmul chain per combination
    setup_cache.timeout = grid_timeout(params, _overlap_reason, 7 * DEFAULT_SPEC.max_time_s)

    def measure(self, host_memory, size):
        result = run_overlap(host_memory, parse_size(size), DEVICE, spec(),
                             matmul_n=overlap_matmul_n())
        return {"track_serialised_fraction": 1.0 - result.overlap}

    @skip_when(params, _overlap_reason)
    def track_serialised_fraction(self, cache, host_memory, size):
        return self.values["track_serialised_fraction"]

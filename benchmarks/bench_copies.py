"""Host<->device copies: pageable vs pinned, blocking vs non_blocking, one tensor vs 1,000, each
on its clock; pinning cold and warm; a copy overlapped with compute in both orders."""

from xferbench.practices import headline_nbytes, sizes
from xferbench.practices.copies import (
    COPY_HOST_MEMORY,
    DIRECTIONS,
    LAYOUTS,
    SYNCS,
    CopyCase,
    completion_clock_reason,
    copy_skip_reason,
    device_clock_reason,
    run_copy,
)
from xferbench.practices.overlap import ORDERS, overlap_matmul_n, overlap_skip_reason, run_overlap
from xferbench.practices.pinning import (
    CACHE_STATES,
    pin_skip_reason,
    run_pin_memory,
    run_pin_then_copy,
)
from xferbench.units import parse_size, size_label

from ._asv import (
    CAPS,
    DEFAULT_SPEC,
    DEVICE,
    Grid,
    device_time,
    grid_timeout,
    measured,
    skip_when,
    spec,
)

SIZES = [size_label(n) for n in sizes()]
HEADLINE = [size_label(headline_nbytes())]


def _case(direction, host_memory, sync, layout, size):
    return CopyCase(direction, host_memory, sync, layout, parse_size(size))


def _device_reason(*combo):
    return device_clock_reason(_case(*combo), CAPS)


def _completion_reason(*combo):
    return completion_clock_reason(_case(*combo), CAPS)


def _enqueue_reason(direction, host_memory, sync, layout, size):
    if DEVICE == "cpu":
        return "enqueue time needs an accelerator: on the CPU a copy returns when it is done"
    if size != HEADLINE[0]:
        return (f"enqueue time is measured at the headline size ({HEADLINE[0]}): what "
                "non_blocking gives back to the host there")
    return _completion_reason(direction, host_memory, sync, layout, size)


class Copy(Grid):
    """Seconds per copy, each read on one clock. track_device_s: device time from events, the
    calls queued back to back behind a stream hold: the transfer alone, for pinned
    non_blocking copies and d2d (other copies involve the host while they run).
    track_completion_s: host clock from the call until the copy is done, each call from an
    idle device (what a user waits for), every host<->device copy at every size.
    track_enqueue_s: how long the call holds the Python thread (what non_blocking gives
    back), at the headline size."""

    params = ([*DIRECTIONS, "d2d"], list(COPY_HOST_MEMORY), list(SYNCS), list(LAYOUTS), SIZES)
    param_names = ["direction", "host_memory", "sync", "layout", "size"]
    unit = "seconds"
    measurements = 2  # device time and the host clocks, where both apply
    # the copy table's rows (one tensor at the headline size), and 1,000 tensors h2d: the
    # non_blocking headline's and claims' pairs
    first = ({"layout": "one", "size": HEADLINE[0]},
             {"direction": "h2d", "layout": "many", "size": HEADLINE[0]})

    @classmethod
    def measurements_of(cls, combo):
        """Device time, the host clocks, or both: the clocks ``combo`` is read on."""
        return (not _device_reason(*combo)) + (not _completion_reason(*combo))

    @classmethod
    def data_s(cls, combo):
        """Each measurement builds its own buffers (run_copy)."""
        return super().data_s(combo) * max(1, cls.measurements_of(combo))

    def setup_cache(self):
        return self.measure_grid()

    # at most a device and a host measurement per combination
    setup_cache.timeout = grid_timeout(params, _completion_reason, 2 * DEFAULT_SPEC.max_time_s)

    def measure(self, *combo):
        case = _case(*combo)
        values = {}
        if not _device_reason(*combo):
            values["track_device_s"] = device_time(run_copy(case, DEVICE, spec(),
                                                            clock="device_s"))
        if not _completion_reason(*combo):
            host = run_copy(case, DEVICE, spec(), clock="completion_s")
            values["track_completion_s"] = measured(host, "completion_s")
            if not _enqueue_reason(*combo):
                values["track_enqueue_s"] = measured(host, "enqueue_s")
        return values

    @skip_when(params, _device_reason)
    def track_device_s(self, cache, *params):
        return self.values["track_device_s"]

    @skip_when(params, _completion_reason)
    def track_completion_s(self, cache, *params):
        return self.values["track_completion_s"]

    @skip_when(params, _enqueue_reason)
    def track_enqueue_s(self, cache, *params):
        return self.values["track_enqueue_s"]


def _pin_reason(cache, size):
    return pin_skip_reason(CAPS)


def _allocations(m):
    """Pinned allocations per call, or NaN (asv's n/a) where the backend keeps no count."""
    count = m.extra.get("host_allocs_per_call")
    return float("nan") if count is None else count


class PinMemory(Grid):
    """x.pin_memory() alone, host clock: warm (the caching host allocator hands back a cached
    pinned block: a memcpy) and cold (the cache emptied before every call, outside the timed
    region: page-locking paid), with the pinned allocations per call that show which ran."""

    params = (list(CACHE_STATES), SIZES)
    param_names = ["cache", "size"]
    unit = "seconds"
    first = ({"size": HEADLINE[0]},)  # no claim reads it: warm against cold, at the headline size

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _pin_reason, 2 * DEFAULT_SPEC.max_time_s)

    def measure(self, cache, size):
        m = run_pin_memory(parse_size(size), DEVICE, spec(), cache=cache)
        return {"track_host_s": measured(m), "track_allocs_per_call": _allocations(m)}

    @skip_when(params, _pin_reason)
    def track_host_s(self, cache, *params):
        return self.values["track_host_s"]

    @skip_when(params, _pin_reason)
    def track_allocs_per_call(self, cache, *params):
        return self.values["track_allocs_per_call"]

    track_allocs_per_call.unit = "allocations"


def _ptc_reason(cache, layout, size):
    return copy_skip_reason(
        CopyCase("h2d", "pin_then_copy", "non_blocking", layout, parse_size(size)), CAPS)


class PinThenCopy(Grid):
    """t.pin_memory().to(dev, non_blocking=True) every call, on the completion clock (pinning
    is host work, the copy device work): warm and cold as PinMemory, one tensor and 1,000."""

    params = (list(CACHE_STATES), list(LAYOUTS), SIZES)
    param_names = ["cache", "layout", "size"]
    unit = "seconds"
    first = ({"cache": "warm", "layout": "one", "size": HEADLINE[0]},)  # pinned-vs-pin-then-copy

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _ptc_reason, 2 * DEFAULT_SPEC.max_time_s)

    def measure(self, cache, layout, size):
        m = run_pin_then_copy(layout, parse_size(size), DEVICE, spec(), cache=cache)
        return {"track_completion_s": measured(m, "completion_s"),
                "track_allocs_per_call": _allocations(m)}

    @skip_when(params, _ptc_reason)
    def track_completion_s(self, cache, *params):
        return self.values["track_completion_s"]

    @skip_when(params, _ptc_reason)
    def track_allocs_per_call(self, cache, *params):
        return self.values["track_allocs_per_call"]

    track_allocs_per_call.unit = "allocations"


def _overlap_reason(host_memory, order, size):
    return overlap_skip_reason(host_memory, CAPS, order)


class Overlap(Grid):
    """A side-stream H2D copy beside matmuls of about its length, queued copy first or
    compute first, on the completion clock: 1 - overlap fraction (0 = the copy fully hidden,
    1 = serialised), so that lower is better as asv assumes."""

    params = (["pageable", "pinned"], list(ORDERS), HEADLINE)
    param_names = ["host_memory", "order", "size"]
    unit = "fraction"
    measurements = 6  # copy, one matmul, the chain (up to 3 sizings), both
    # no claim reads it: the copy that can overlap, queued before its compute
    first = ({"host_memory": "pinned", "order": ORDERS[0]},)

    def setup_cache(self):
        return self.measure_grid()

    # four measurements and up to three resizings of the matmul chain per combination
    setup_cache.timeout = grid_timeout(params, _overlap_reason, 7 * DEFAULT_SPEC.max_time_s)

    def measure(self, host_memory, order, size):
        result = run_overlap(host_memory, parse_size(size), DEVICE, spec(),
                             matmul_n=overlap_matmul_n(), order=order)
        return {"track_serialised_fraction": 1.0 - result.overlap}

    @skip_when(params, _overlap_reason)
    def track_serialised_fraction(self, cache, *params):
        return self.values["track_serialised_fraction"]

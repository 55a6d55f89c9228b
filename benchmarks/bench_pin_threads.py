"""Pinning under concurrency: pin_memory() from 1 to 8 threads at once, with and without a
reserved pinned segment, and the host memory a pinned byte costs."""

from xferbench.practices.pin_threads import (
    QUICK_ROUNDS,
    RESERVES,
    ROUNDS,
    THREADS,
    NotInRelease,
    PinThreadsCase,
    pin_sizes,
    pin_threads_skip_reason,
    run_pin_threads,
)
from xferbench.units import parse_size, size_label

from ._asv import (
    CAPS,
    DEVICE,
    QUICK,
    Grid,
    NoFigure,
    asv_samples,
    grid_timeout,
    skip_when,
)

SIZES = [size_label(n) for n in pin_sizes()]


def _case(threads, reserve, size):
    return PinThreadsCase(int(threads), reserve, parse_size(size))


def _reason(*combo):
    return pin_threads_skip_reason(_case(*combo), CAPS)


def _spread_reason(threads, reserve, size):
    if threads == "1":
        return "one call a round has no spread"
    return _reason(threads, reserve, size)


def _bytes(value):
    """The allocator's pinned bytes per byte asked for, or NaN (asv's n/a) without a count."""
    return float("nan") if value is None else value


class PinThreads(Grid):
    """track_call_s: seconds of each pin_memory() call, ``threads`` of them released at once,
    each a fresh pinned block (the cache emptied before each round, outside the timed region):
    they rise with the threads where the calls take turns on the driver's lock.
    track_spread: per round, the slowest call over the fastest (1: no waiting; about the
    threads: one call after another). track_host_bytes_per_byte: the pinned bytes the
    allocator holds for one pin, per byte asked for (a block is a power of two)."""

    params = ([str(n) for n in THREADS], list(RESERVES), SIZES)
    param_names = ["threads", "reserve", "size"]
    unit = "seconds"
    measurements = 0  # a count of rounds, not a sampling budget: all of it is work

    # no claim reads it: the most threads, as users pin, at the batch size
    first = ({"threads": str(THREADS[-1]), "reserve": "none", "size": SIZES[0]},)

    def setup_cache(self):
        return self.measure_grid()

    # ten rounds of a few fresh blocks; the reserved case starts a process of its own
    setup_cache.timeout = grid_timeout(params, _reason, 30)

    def measure(self, threads, reserve, size):
        try:
            r = run_pin_threads(_case(threads, reserve, size), DEVICE,
                                QUICK_ROUNDS if QUICK else ROUNDS)
        except NotInRelease as exc:
            raise NoFigure(str(exc)) from exc
        values = {"track_call_s": asv_samples(r.call_s, what=r.label),
                  "track_host_bytes_per_byte": _bytes(r.host_bytes_per_byte)}
        if not _spread_reason(threads, reserve, size):
            values["track_spread"] = asv_samples(r.spread, what=r.label)
        return values

    @skip_when(params, _reason)
    def track_call_s(self, cache, *params):
        return self.values["track_call_s"]

    @skip_when(params, _spread_reason)
    def track_spread(self, cache, *params):
        return self.values["track_spread"]

    track_spread.unit = "ratio"

    @skip_when(params, _reason)
    def track_host_bytes_per_byte(self, cache, *params):
        return self.values["track_host_bytes_per_byte"]

    track_host_bytes_per_byte.unit = "bytes/byte"

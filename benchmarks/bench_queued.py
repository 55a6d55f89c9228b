"""Copies behind queued work: how long a copy holds the host, and when it is done, from an
idle stream and behind 1 to 50 ms of queued work; pageable, pinned and a strided pinned view."""

from xferbench.practices import BENCH_SPEC
from xferbench.practices.copies import DIRECTIONS, SYNCS
from xferbench.practices.queued import (
    QUEUED_HOST_MEMORY,
    QUEUED_NBYTES,
    QueuedCopyCase,
    queued_ms,
    queued_skip_reason,
    run_queued_copy,
)
from xferbench.units import parse_size, size_label

from ._asv import CAPS, DEVICE, TEXTS, Grid, grid_timeout, measured, skip_when, spec

QUEUED = [str(ms) for ms in queued_ms()]
SIZES = [size_label(QUEUED_NBYTES)]


def _case(direction, host_memory, sync, queued, size):
    return QueuedCopyCase(direction, host_memory, sync, int(queued), parse_size(size))


def _reason(*combo):
    return queued_skip_reason(_case(*combo), CAPS)


class QueuedCopy(Grid):
    """Seconds per copy issued behind ``queued`` ms of work already on the stream (a
    calibrated spin; 0: an idle stream). track_enqueue_s: how long the call held the host
    (a pageable or strided copy waits for the queue; a pinned non_blocking one returns at
    once). track_completion_s: from the call until the copy is done, the queue included."""

    params = (list(DIRECTIONS), list(QUEUED_HOST_MEMORY), list(SYNCS), QUEUED, SIZES)
    param_names = ["direction", "host_memory", "sync", "queued", "size"]
    unit = "seconds"
    base_spec = BENCH_SPEC

    # what the claims read: h2d non_blocking behind the largest queue, and from pageable and
    # strided pinned memory on an idle stream too (the hold's baseline)
    first = tuple({"direction": "h2d", "host_memory": memory, "sync": "non_blocking",
                   "queued": queued}
                  for memory, queued in (("pageable", QUEUED[0]), ("pageable", QUEUED[-1]),
                                         ("pinned_strided", QUEUED[0]),
                                         ("pinned_strided", QUEUED[-1]),
                                         ("pinned", QUEUED[-1])))

    def setup_cache(self):
        return self.measure_grid()

    # each call waits for its queue: up to 50 ms a call, a few calls past the budget
    setup_cache.timeout = grid_timeout(params, _reason, BENCH_SPEC.max_time_s + 1)

    def measure(self, *combo):
        m = run_queued_copy(_case(*combo), DEVICE, spec(BENCH_SPEC))
        values = {"track_enqueue_s": measured(m, "enqueue_s"),
                  "track_completion_s": measured(m, "completion_s")}
        if m.extra.get("queued_s"):  # what the queue came to on this device, kept as text
            held = f"the queued work held the stream {m.extra['queued_s'] * 1e3:.3g} ms"
            values[TEXTS] = {"track_enqueue_s": held, "track_completion_s": held}
        return values

    @skip_when(params, _reason)
    def track_enqueue_s(self, cache, *params):
        return self.values["track_enqueue_s"]

    @skip_when(params, _reason)
    def track_completion_s(self, cache, *params):
        return self.values["track_completion_s"]

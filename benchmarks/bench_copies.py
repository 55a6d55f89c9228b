"""Host<->device copies: pageable vs pinned vs pin-then-copy, blocking vs non_blocking."""

from asv_runner.benchmarks.mark import skip_benchmark_if, skip_for_params

from xferbench.devices import synchronize
from xferbench.practices import HEADLINE_NBYTES, sizes
from xferbench.practices.copies import (
    DIRECTIONS,
    HOST_MEMORY,
    LAYOUTS,
    SYNCS,
    CopyCase,
    build_copy,
    copy_skip_reason,
    overlap_skip_reason,
    pin_skip_reason,
    run_copy,
    run_overlap,
    run_pin_memory,
)
from xferbench.units import parse_size, size_label

from ._asv import CAPS, DEVICE, asv_samples, skip_if_too_big, skipped

SIZES = [size_label(n) for n in sizes()]


def _copy_reason(direction, host_memory, sync, layout, size=None):
    return copy_skip_reason(
        CopyCase(direction, host_memory, sync, layout, parse_size(size or "64MiB")), CAPS
    )


class Copy:
    """Copy bandwidth over the whole grid; device-event seconds per copy (host clock on a CPU)."""

    params = ([*DIRECTIONS, "d2d"], list(HOST_MEMORY), list(SYNCS), list(LAYOUTS), SIZES)
    param_names = ["direction", "host_memory", "sync", "layout", "size"]
    unit = "seconds"
    processes = 1
    timeout = 180

    def setup(self, direction, host_memory, sync, layout, size):
        self.case = CopyCase(direction, host_memory, sync, layout, parse_size(size))

    @skip_for_params(skipped(params, _copy_reason))
    def track_device_s(self, direction, host_memory, sync, layout, size):
        m = skip_if_too_big(lambda: run_copy(self.case, DEVICE))
        return asv_samples(m.samples(), m.calls_per_sample)


class CopyHost:
    """What the host sees at the headline size: completion (synchronise inside the timed call)
    and how long the copy holds the Python thread."""

    params = (list(DIRECTIONS), list(HOST_MEMORY), list(SYNCS), list(LAYOUTS),
              [size_label(HEADLINE_NBYTES)])
    param_names = ["direction", "host_memory", "sync", "layout", "size"]
    unit = "seconds"
    processes = 1
    timeout = 180
    # asv's own timing loop: a few repeats within a second or two per combination.
    repeat = (3, 10, 1.0)
    warmup_time = 0.1

    def setup(self, direction, host_memory, sync, layout, size):
        case = CopyCase(direction, host_memory, sync, layout, parse_size(size))
        # build (allocate, pin, fill) here: first-touch and pinning are not timed
        self.work = skip_if_too_big(lambda: build_copy(case, DEVICE))
        self.work.run()
        self.work.verify()

    def teardown(self, *params):
        self.work.verify()

    @skip_for_params(skipped(params, _copy_reason))
    def time_copy(self, *params):
        self.work.run()
        synchronize(self.work.device)

    @skip_for_params(skipped(params, _copy_reason))
    @skip_benchmark_if(DEVICE == "cpu")
    def track_enqueue_s(self, *params):
        from xferbench.timing import measure

        m = measure(self.work.run, device=self.work.device, nbytes=self.work.case.nbytes,
                    clock="enqueue_s")
        self.work.verify()
        return asv_samples(m.enqueue_s)


class PinMemory:
    """x.pin_memory() alone: the cost pin_then_copy pays on every call (host clock)."""

    params = (SIZES,)
    param_names = ["size"]
    unit = "seconds"
    processes = 1
    timeout = 120

    @skip_benchmark_if(pin_skip_reason(CAPS) is not None)
    def track_host_s(self, size):
        m = skip_if_too_big(lambda: run_pin_memory(parse_size(size), DEVICE))
        return asv_samples(m.samples(), m.calls_per_sample)


class Overlap:
    """A side-stream H2D copy under matmuls of about its length: 1 - overlap fraction
    (0 = the copy fully hidden, 1 = serialised), so that lower is better as asv assumes."""

    params = (["pageable", "pinned"], [size_label(HEADLINE_NBYTES)])
    param_names = ["host_memory", "size"]
    unit = "fraction"
    processes = 1
    timeout = 180

    @skip_benchmark_if(overlap_skip_reason("pinned", CAPS) is not None)
    def track_serialised_fraction(self, host_memory, size):
        result = skip_if_too_big(lambda: run_overlap(host_memory, parse_size(size), DEVICE))
        return 1.0 - result.overlap

"""Tensor creation: device=dev vs .to(dev) vs .to(dev, non_blocking), and masks in forward."""

from xferbench.practices import BENCH_SPEC, headline_nbytes
from xferbench.practices.creation import (
    FACTORIES,
    MEMORY_FACTORIES,
    MEMORY_VARIANTS,
    READY_CLOCK,
    VARIANTS,
    CreationCase,
    creation_sizes,
    creation_skip_reason,
    run_creation,
)
from xferbench.practices.forward import FORWARD_MODES, ForwardCase, forward_seqs, run_forward
from xferbench.practices.memory import (
    device_peak_bytes,
    device_peak_skip_reason,
    host_peak_bytes,
    host_peak_skip_reason,
)
from xferbench.units import parse_size, size_label

from ._asv import CAPS, DEVICE, Grid, grid_timeout, measured, skip_when, spec

SIZES = [size_label(n) for n in creation_sizes()]
HEADLINE = size_label(headline_nbytes())  # memory is measured at this size alone


def _case(factory, variant, size):
    return CreationCase(factory, variant, parse_size(size))


def _creation_reason(factory, variant, size):
    return creation_skip_reason(_case(factory, variant, size), CAPS)


def _memory_case(factory, variant, size):
    if (factory not in MEMORY_FACTORIES or variant not in MEMORY_VARIANTS
            or size != HEADLINE):
        return (f"memory is measured for {', '.join(MEMORY_FACTORIES)} x "
                f"{', '.join(MEMORY_VARIANTS)} at {HEADLINE}")
    return _creation_reason(factory, variant, size)


def _host_peak_reason(factory, variant, size):
    return _memory_case(factory, variant, size) or host_peak_skip_reason()


def _device_peak_reason(factory, variant, size):
    return _memory_case(factory, variant, size) or device_peak_skip_reason(CAPS)


class Creation(Grid):
    """Seconds until the created tensor is ready on the device (host clock, synchronised);
    and for three factories at the headline size, the memory one creation adds: resident host
    peak (the host temporary of .to(dev)) and device bytes allocated (allocator counters)."""

    params = (list(FACTORIES), list(VARIANTS), SIZES)
    param_names = ["factory", "variant", "size"]
    # the create-on-device headline's and claim's pair
    first = ({"factory": "zeros", "variant": "on_device", "size": HEADLINE},
             {"factory": "zeros", "variant": "to", "size": HEADLINE})
    unit = "seconds"
    base_spec = BENCH_SPEC

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _creation_reason, BENCH_SPEC.max_time_s + 1)

    def measure(self, factory, variant, size):
        case = _case(factory, variant, size)
        m = run_creation(case, DEVICE, spec(BENCH_SPEC))
        values = {"track_ready_s": measured(m, READY_CLOCK)}
        if not _host_peak_reason(factory, variant, size):
            values["track_host_peak_bytes"] = host_peak_bytes(case, DEVICE)
        if not _device_peak_reason(factory, variant, size):
            values["track_device_peak_bytes"] = device_peak_bytes(case, DEVICE)
        return values

    @skip_when(params, _creation_reason)
    def track_ready_s(self, cache, factory, variant, size):
        return self.values["track_ready_s"]

    @skip_when(params, _host_peak_reason)
    def track_host_peak_bytes(self, cache, factory, variant, size):
        return self.values["track_host_peak_bytes"]

    track_host_peak_bytes.unit = "bytes"

    @skip_when(params, _device_peak_reason)
    def track_device_peak_bytes(self, cache, factory, variant, size):
        return self.values["track_device_peak_bytes"]

    track_device_peak_bytes.unit = "bytes"


def _runs(*combo):
    return None  # every combination runs, on every device


class CreatedInForward(Grid):
    """One forward of a causal attention whose mask and positions are built on the host and
    moved, built with device=x.device, or registered buffers (host clock, synchronised)."""

    params = (list(FORWARD_MODES), [str(t) for t in forward_seqs()])
    param_names = ["mode", "seq"]
    unit = "seconds"
    base_spec = BENCH_SPEC
    # the forward-device-arg claim's pair
    first = ({"mode": "device_arg", "seq": "512"}, {"mode": "host_then_move", "seq": "512"})

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _runs, BENCH_SPEC.max_time_s)

    def measure(self, mode, seq):
        m = run_forward(ForwardCase(mode, int(seq)), DEVICE, spec(BENCH_SPEC))
        return {"track_forward_s": measured(m, READY_CLOCK)}

    def track_forward_s(self, cache, mode, seq):
        return self.values["track_forward_s"]

"""Tensor creation: device=dev vs .to(dev) vs .to(dev, non_blocking), and masks in forward."""

from asv_runner.benchmarks.mark import skip_benchmark_if, skip_for_params

from xferbench.practices import HEADLINE_NBYTES
from xferbench.practices.creation import (
    BENCH_BUDGET,
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

from ._asv import CAPS, DEVICE, asv_samples, skip_if_too_big, skipped

SIZES = [size_label(n) for n in creation_sizes()]


def _case(factory, variant, size):
    return CreationCase(factory, variant, parse_size(size))


def _creation_reason(factory, variant, size):
    return creation_skip_reason(_case(factory, variant, size), CAPS)


class Creation:
    """Seconds until the created tensor is ready on the device (host clock, synchronised)."""

    params = (list(FACTORIES), list(VARIANTS), SIZES)
    param_names = ["factory", "variant", "size"]
    unit = "seconds"
    processes = 1
    timeout = 180

    @skip_for_params(skipped(params, _creation_reason))
    def track_ready_s(self, factory, variant, size):
        case = _case(factory, variant, size)
        m = skip_if_too_big(lambda: run_creation(case, DEVICE, BENCH_BUDGET))
        return asv_samples(m.samples(READY_CLOCK), m.calls_per_sample)


class CreationMemory:
    """Memory one creation adds at the headline size: resident host peak (the host temporary
    of .to(dev)) and device bytes allocated (allocator counters), in bytes."""

    params = (list(MEMORY_FACTORIES), list(MEMORY_VARIANTS), [size_label(HEADLINE_NBYTES)])
    param_names = ["factory", "variant", "size"]
    unit = "bytes"
    processes = 1
    timeout = 120

    @skip_for_params(skipped(params, _creation_reason))
    @skip_benchmark_if(host_peak_skip_reason() is not None)
    def track_host_peak_bytes(self, factory, variant, size):
        return skip_if_too_big(lambda: host_peak_bytes(_case(factory, variant, size), DEVICE))

    @skip_for_params(skipped(params, _creation_reason))
    @skip_benchmark_if(device_peak_skip_reason(CAPS) is not None)
    def track_device_peak_bytes(self, factory, variant, size):
        return skip_if_too_big(lambda: device_peak_bytes(_case(factory, variant, size), DEVICE))


class CreatedInForward:
    """One forward of a causal attention whose mask and positions are built on the host and
    moved, built with device=x.device, or registered buffers (host clock, synchronised)."""

    params = (list(FORWARD_MODES), [str(t) for t in forward_seqs()])
    param_names = ["mode", "seq"]
    unit = "seconds"
    processes = 1
    timeout = 120

    def track_forward_s(self, mode, seq):
        m = run_forward(ForwardCase(mode, int(seq)), DEVICE, BENCH_BUDGET)
        return asv_samples(m.samples(READY_CLOCK), m.calls_per_sample)

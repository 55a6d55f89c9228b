"""The non_blocking hazards: how often the unsafe pattern sees wrong data, per size, on a busy
stream (deterministic) and an idle one (a race); and the device-to-host read eager and under
torch.compile, per release."""

from xferbench.practices.compiled_hazard import (
    COMPILE_S,
    COMPILED_NBYTES,
    COMPILED_READS,
    MODES,
    compiled_hazard_skip_reason,
    run_compiled_hazard,
)
from xferbench.practices.hazards import (
    HAZARDS,
    STREAMS,
    TRIALS,
    busy_s,
    hazard_sizes,
    hazard_skip_reason,
    run_hazard,
)
from xferbench.units import parse_size, size_label

from . import _budget
from ._asv import BUDGET, CAPS, DEVICE, Grid, NoFigure, grid_timeout, skip_when

SIZES = [size_label(n) for n in hazard_sizes()]


def _reason(kind, stream, size):
    return hazard_skip_reason(kind, CAPS, stream, parse_size(size))


class Hazards(Grid):
    """The fraction of trials (100 per size) in which the pattern observed wrong data, checked
    against the value it should have seen: a non_blocking device-to-host copy read before
    synchronising, a pinned source overwritten right after its non_blocking copy was queued
    (both unsafe), and a pageable source overwritten so (safe: staged before the call
    returns). On a busy stream (a spin queued first) an unsafe pattern fails every time; on
    an idle one it is a race, and 0% there means not seen, never safe."""

    params = (list(HAZARDS), list(STREAMS), SIZES)
    param_names = ["hazard", "stream", "size"]
    unit = "fraction"
    measurements = 0  # its trials are a count, not a sampling budget: all of it is work
    first = ({"hazard": "d2h_read_before_sync", "stream": "busy", "size": "1MiB"},)  # a claim's

    @classmethod
    def data_s(cls, combo):
        """Each trial fills, copies and checks its buffers (about four warm passes)."""
        return _budget.data_s(parse_size(combo[2]), passes=4 * TRIALS,
                              rate=_budget.WARM_BYTES_PER_S)

    def setup_cache(self):
        return self.measure_grid()

    # 100 trials of at most a few 64 MiB fills, copies and checks (or a 3 ms spin) each
    setup_cache.timeout = grid_timeout(params, _reason, 10 + TRIALS * busy_s(2**20))

    def measure(self, kind, stream, size):
        result = run_hazard(kind, parse_size(size), DEVICE, TRIALS, stream=stream,
                            deadline=BUDGET.combination_deadline)
        if result.trials < TRIALS:  # the run's deadline came first
            BUDGET.stopped_early(result.trials, TRIALS, "trials")
        if result.no_figure:  # right trials that may be the host's doing, not the pattern's
            raise NoFigure(result.no_figure)
        return {"track_wrong_fraction": result.fraction}

    @skip_when(params, _reason)
    def track_wrong_fraction(self, cache, *params):
        return self.values["track_wrong_fraction"]


def _compiled_reason(read, mode, size):
    return compiled_hazard_skip_reason(read, mode, CAPS)


class CompiledHazard(Grid):
    """The fraction of 100 busy-stream trials in which the host read wrong data from a
    non_blocking device-to-host copy, the function run eager or compiled (torch.compile's
    default backend, per release): read at once (no_sync: unsafe in eager code) or after an
    event recorded behind the copy completed (event_sync: safe in eager code; a compiler
    that drops the wait makes it wrong)."""

    params = (list(COMPILED_READS), list(MODES), [size_label(COMPILED_NBYTES)])
    param_names = ["read", "mode", "size"]
    unit = "fraction"
    measurements = 0  # a count of trials, not a sampling budget: all of it is work

    @classmethod
    def combination_s(cls, combo):
        """Each combination may compile the function (dynamo, inductor, a C++ or GPU kernel
        build): planned as if each did."""
        return super().combination_s(combo) + COMPILE_S

    # no claim reads it: the safe eager pattern, compiled, the row that catches a dropped wait
    first = ({"read": "event_sync", "mode": "compiled"},)

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _compiled_reason,
                                       10 + COMPILE_S + TRIALS * busy_s(COMPILED_NBYTES))

    def measure(self, read, mode, size):
        result = run_compiled_hazard(read, mode, DEVICE, TRIALS,
                                     deadline=BUDGET.combination_deadline)
        if result.trials < TRIALS:  # the run's deadline came first
            BUDGET.stopped_early(result.trials, TRIALS, "trials")
        if result.no_figure:
            raise NoFigure(result.no_figure)
        return {"track_wrong_fraction": result.fraction}

    @skip_when(params, _compiled_reason)
    def track_wrong_fraction(self, cache, *params):
        return self.values["track_wrong_fraction"]

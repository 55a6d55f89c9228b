"""The whole input pipeline: DataLoader pin_memory x workers x how the batch moves, per model
size and precision; and model.to(device) once vs every step."""

from xferbench.practices import BENCH_SPEC
from xferbench.practices.pipeline import (
    HOST_MEMORY,
    INPUT_BOUND,
    MODEL_SIZES,
    MOVES,
    WORKERS,
    PipelineCase,
    compiles,
    pipeline_skip_reason,
    precisions,
    run_pipeline,
    starvation_skip_reason,
)

from . import _budget
from ._asv import CAPS, DEVICE, Grid, asv_samples, grid_timeout, skip_when, spec

#: Where model.to(device) every step is compared with the model moved once: the plain loop.
MODEL_TO = {"host_memory": "pageable", "workers": "0", "move": "blocking", "compile": "eager"}


def _case(size, host_memory, workers, move, precision, compile):
    return PipelineCase(size, host_memory, int(workers), move, precision, compile)


def _reason(*combo):
    return pipeline_skip_reason(_case(*combo), CAPS)


def _starvation_reason(*combo):
    return starvation_skip_reason(_case(*combo), CAPS)


def _compile_reason(*combo):
    if combo[-1] != "compiled":
        return "eager: nothing is compiled"
    return _reason(*combo)


def _model_to_reason(size, host_memory, workers, move, precision, compile):
    given = {"host_memory": host_memory, "workers": workers, "move": move, "compile": compile}
    if given != MODEL_TO:
        return ("model.to(device) every step is measured in the plain loop only ("
                + ", ".join(f"{k}={v}" for k, v in MODEL_TO.items()) + ")")
    return _reason(size, host_memory, workers, move, precision, compile)


class Pipeline(Grid):
    """Seconds per training step fed by a DataLoader (host clock, one synchronise per call of
    8 steps; samples/s = 32 / seconds), the input-starvation share (the part of each step in
    which the device waited for its batch; stamps on the compute stream), the first compiled
    step on its own, and seconds per step with model.to(device) called every step."""

    params = (list(MODEL_SIZES), list(HOST_MEMORY), [str(w) for w in WORKERS], list(MOVES),
              list(precisions()), list(compiles()))
    param_names = ["size", "host_memory", "workers", "move", "precision", "compile"]
    unit = "seconds"
    measurements = 2  # the step, and the step with model.to
    base_spec = BENCH_SPEC
    # the pinned-prefetch headline's and starvation claim's pair, the model-once claim's plain
    # loop and the large model's (autocast and compile claims: their eager, amp baseline)
    first = ({"size": INPUT_BOUND, "host_memory": "pinned", "workers": "2", "move": "prefetch",
              "precision": "amp", "compile": "eager"},
             {"size": INPUT_BOUND, "host_memory": "pageable", "workers": "2", "move": "blocking",
              "precision": "amp", "compile": "eager"},
             *({"size": size, "host_memory": "pageable", "workers": "0", "move": "blocking",
                "compile": "eager"} for size in MODEL_SIZES))

    @classmethod
    def measurements_of(cls, combo):
        """The steps, and the starvation and model.to calls where ``combo`` has them."""
        return 1 + (not _starvation_reason(*combo)) + (not _model_to_reason(*combo))

    @classmethod
    def data_s(cls, combo):
        """Its model's weights (its size parameter is the model's, not bytes): initialised at
        random on the host, about three passes, then moved once."""
        return _budget.data_s(4 * MODEL_SIZES[combo[0]].parameters, passes=4)

    def setup_cache(self):
        return self.measure_grid()

    # timed calls, the starvation calls, and the model.to calls where they are measured
    setup_cache.timeout = grid_timeout(params, _reason, 3 * BENCH_SPEC.max_time_s + 5)

    def measure(self, *combo):
        case = _case(*combo)
        result = run_pipeline(case, DEVICE, spec(BENCH_SPEC),
                              model_to=not _model_to_reason(*combo),
                              starvation=not _starvation_reason(*combo))
        n = result.measurement.calls_per_sample_of()
        values = {"track_step_s": asv_samples(result.step_samples(), n)}
        if result.starvation:
            values["track_starvation_share"] = asv_samples(result.starvation)
        if result.compile_s is not None:
            values["track_compile_s"] = result.compile_s
        if result.model_to is not None:
            values["track_step_model_to_s"] = asv_samples(
                result.step_samples(result.model_to), result.model_to.calls_per_sample_of())
        return values

    @skip_when(params, _reason)
    def track_step_s(self, cache, *combo):
        return self.values["track_step_s"]

    @skip_when(params, _starvation_reason)
    def track_starvation_share(self, cache, *combo):
        return self.values["track_starvation_share"]

    track_starvation_share.unit = "fraction"

    @skip_when(params, _compile_reason)
    def track_compile_s(self, cache, *combo):
        return self.values["track_compile_s"]

    @skip_when(params, _model_to_reason)
    def track_step_model_to_s(self, cache, *combo):
        return self.values["track_step_model_to_s"]

"""What PyTorch does, per release: tensor.to() returns a new tensor, module.to() moves in
place, and the three usual causes of a device mismatch raise "Expected all tensors to be on
the same device"; each check 1 (holds) or 0, with what the release did in its own words."""

from xferbench.practices.behaviour import CHECKS, behaviour_skip_reason, run_behaviour

from ._asv import CAPS, DEVICE, TEXTS, Grid, grid_timeout, skip_when


def _reason(check):
    return behaviour_skip_reason(check, CAPS)


class Behaviour(Grid):
    """track_holds: 1 where the behaviour the devices guide states held on this release and
    device, 0 where it did not (never timed); what the check saw (an error's first line, as
    the release words it) goes into the run's sidecar as the combination's observation."""

    params = (list(CHECKS),)
    param_names = ["check"]
    unit = "holds"
    measurements = 0  # a check, not a sampling budget: all of it is work
    first = ({},)  # a claim reads each check

    def setup_cache(self):
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _reason, 5)

    def measure(self, check):
        result = run_behaviour(check, DEVICE)
        return {"track_holds": result.value, TEXTS: {"track_holds": result.observed}}

    @skip_when(params, _reason)
    def track_holds(self, cache, check):
        return self.values["track_holds"]

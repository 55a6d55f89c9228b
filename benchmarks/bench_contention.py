"""The host link under contention: pinned non_blocking copies on every chosen device at once
(host-to-all, all-to-host) and one device both ways at once (bidirectional), each stream copy
timed together and alone, so that the loss to contention is a ratio."""

import os

from xferbench.practices import headline_nbytes
from xferbench.practices.contention import (
    MODES,
    STREAM_PARAM,
    ContentionCase,
    contention_skip_reason,
    run_contention,
)
from xferbench.units import parse_size, size_label

from ._asv import CAPS, DEFAULT_SPEC, DEVICE, Grid, asv_samples, grid_timeout, skip_when, spec

TYPE, _, INDEX = DEVICE.partition(":")
HERE = int(INDEX or 0)
#: The devices the run chose (`xferbench run --devices` sets XFERBENCH_DEVICES), else this one.
CHOSEN = tuple(int(i) for i in os.environ.get("XFERBENCH_DEVICES", "").split(",")
               if i.strip().isdigit()) or (HERE,)
SIZES = [size_label(headline_nbytes())]
#: The stream copies: a device's copy (host-to-all, all-to-host) or a direction
#: (bidirectional).
STREAMS = [*(str(i) for i in CHOSEN), "h2d", "d2h"]


def _case(mode, size):
    return ContentionCase(mode, parse_size(size), (HERE,) if mode == "bidirectional" else CHOSEN)


def _reason(mode, stream, size):
    why = contention_skip_reason(_case(mode, size), CAPS)
    if why:
        return why
    if mode == "bidirectional":
        return None if stream in ("h2d", "d2h") else "bidirectional's copies are h2d and d2h"
    if stream in ("h2d", "d2h"):
        return f"{mode}'s copies are the devices'"
    if HERE != CHOSEN[0]:
        return (f"every chosen device copies at once: measured once per run, in the series "
                f"of {TYPE}:{CHOSEN[0]}")
    return None


class Contention(Grid):
    """Seconds per pinned non_blocking stream copy, device time on its own stream:
    track_together_s with every copy of the mode at once (each stream held until all are
    queued), track_alone_s the same copy with the others idle."""

    params = (list(MODES), STREAMS, SIZES)
    param_names = ["mode", STREAM_PARAM, "size"]
    unit = "seconds"
    measurements = 2  # together and alone
    first = ({},)  # no claim reads it; a mode's stream copies are measured together

    @classmethod
    def measurements_of(cls, combo):
        """Together and alone, once per mode: its first stream copy measures them all."""
        first = next(c for c in cls.combinations() if c[0] == combo[0])
        return cls.measurements if tuple(combo) == tuple(first) else 0

    @classmethod
    def data_s(cls, combo):
        return super().data_s(combo) if cls.measurements_of(combo) else 0.0

    def setup_cache(self):
        self.done = {}
        return self.measure_grid()

    setup_cache.timeout = grid_timeout(params, _reason, 2 * DEFAULT_SPEC.max_time_s)

    def measure(self, mode, stream, size):
        done = self.__dict__.setdefault("done", {})
        if mode not in done:  # every stream copy of a mode is measured at once
            done[mode] = run_contention(_case(mode, size), TYPE, spec())
        result = done[mode]
        i = result.streams.index(stream)
        return {"track_alone_s": asv_samples(result.alone_s[i]),
                "track_together_s": asv_samples(result.together_s[i])}

    @skip_when(params, _reason)
    def track_alone_s(self, cache, *params):
        return self.values["track_alone_s"]

    @skip_when(params, _reason)
    def track_together_s(self, cache, *params):
        return self.values["track_together_s"]

"""Boolean environment variables, read one way everywhere (XFERBENCH_QUICK, XFERBENCH_EMU...),
and the variables a run hands its benchmark processes."""

from __future__ import annotations

import os
from collections.abc import Mapping

from .errors import XferbenchError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def parse_flag(name: str, value: str) -> bool:
    """``value`` of variable ``name`` as a boolean: 1/true/yes/on or 0/false/no/off/empty (any
    case); anything else raises XferbenchError saying what would be accepted."""
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise XferbenchError(
        f"{name}={value!r} is not a yes or no: use 1, true, yes or on, or 0, false, no or off")


def env_flag(name: str) -> bool:
    """The boolean environment variable ``name`` (unset: False); see parse_flag."""
    return parse_flag(name, os.environ.get(name, ""))


#: The variables ``xferbench run`` hands the processes it starts (asv's, and the suite's
#: discovery): each is set or cleared by the run for every process, whatever the user's
#: shell holds, so that none left there steers a run (a deadline cutting it, a progress
#: file of another run). XFERBENCH_SWEEP and XFERBENCH_QUICK are also read from the shell,
#: once, as the run's own options, which the run records.
RUN_VARS = ("XFERBENCH_DEVICE", "XFERBENCH_DEVICES", "XFERBENCH_PROBE", "XFERBENCH_SWEEP",
            "XFERBENCH_QUICK", "XFERBENCH_CAP", "XFERBENCH_PROGRESS", "XFERBENCH_DEADLINE",
            "XFERBENCH_LAUNCH_QUEUE_DEPTH")


def without_run_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less every variable of ``RUN_VARS``: what a run's processes start from."""
    return {k: v for k, v in environ.items() if k not in RUN_VARS}

"""Where the published site puts each figure: one naming scheme, written by ``publish`` and
quoted by ``cite``."""

from __future__ import annotations

from typing import Any

from ..results.machines import slug

#: The size sweeps drawn as bandwidth against size (newest release per machine), one set of
#: figures per clock: what a user waits for (every copy) and device time (the copies that
#: have one: pinned non_blocking and d2d). Each figure and table row names its clock.
BANDWIDTH_BENCHMARKS = {
    "completion": "bench_copies.Copy.track_completion_s",
    "device": "bench_copies.Copy.track_device_s",
}
#: How each clock is named beside a figure.
CLOCK_NAMES = {
    "completion": "completion clock (host, from the call until the copy is done)",
    "device": "device time (events, calls back to back behind a stream hold)",
    "host": "the host clock of a CPU (a host-to-host copy)",
}


def clock_of(benchmark: str, device: str | None = None) -> str:
    """The clock a copy benchmark reads ("completion" or "device"), from its name; "host" for
    any on a CPU (``device``), where the copy is a host copy timed on the host's clock."""
    if str(device or "").startswith("cpu"):
        return "host"
    for clock, name in BANDWIDTH_BENCHMARKS.items():
        if benchmark == name:
            return clock
    return "device" if benchmark.endswith("_device_s") else "completion"


def figure_path(benchmark: str, params: dict[str, Any], machine: str) -> str:
    """The site-relative path of the figure that shows ``benchmark`` at ``params`` on
    ``machine`` (a series' ``trend``: the machine, with its mode where not the default): its
    value against the PyTorch release, one small chart per combination."""
    combo = "-".join(slug(str(v)) for v in params.values()) or "all"
    return f"figures/trend/{slug(machine)}/{slug(benchmark)}/{combo}.svg"


def bandwidth_figure_path(machine: str, direction: str, layout: str,
                          clock: str = "completion") -> str:
    """Bandwidth against size of one direction, layout and clock on ``machine``."""
    return (f"figures/bandwidth-{slug(machine)}-{slug(direction)}-{slug(layout)}-"
            f"{slug(clock)}.svg")


def headline_figure_path(key: str, narrow: bool = False) -> str:
    """A headline's figure: drawn for a wide screen, and ``narrow`` for a phone."""
    return f"figures/headline-{slug(key)}{'-narrow' if narrow else ''}.svg"

"""Where the published site puts each figure: one naming scheme, written by ``publish`` and
quoted by ``cite``."""

from __future__ import annotations

from typing import Any

from .asvrepo import slug

#: The size sweep drawn as bandwidth against size; other benchmarks get one figure each.
BANDWIDTH_BENCHMARK = "bench_copies.Copy.track_device_s"


def figure_path(benchmark: str, params: dict[str, Any], machine: str) -> str:
    """The site-relative path of the figure that shows ``benchmark`` at ``params`` on
    ``machine``."""
    if benchmark == BANDWIDTH_BENCHMARK and "direction" in params and "layout" in params:
        return (f"figures/bandwidth-{slug(machine)}-{slug(params['direction'])}-"
                f"{slug(params['layout'])}.svg")
    return f"figures/{slug(benchmark)}-{slug(machine)}.svg"


def headline_figure_path(key: str) -> str:
    return f"figures/headline-{slug(key)}.svg"

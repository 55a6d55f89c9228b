"""Where the published site puts each figure: one naming scheme, written by ``publish`` and
quoted by ``cite``."""

from __future__ import annotations

from typing import Any

from .asvrepo import slug

#: The size sweep drawn as bandwidth against size (newest release per machine).
BANDWIDTH_BENCHMARK = "bench_copies.Copy.track_device_s"


def figure_path(benchmark: str, params: dict[str, Any], machine: str) -> str:
    """The site-relative path of the figure that shows ``benchmark`` at ``params`` on
    ``machine``: its value against the PyTorch release, one small chart per combination."""
    combo = "-".join(slug(str(v)) for v in params.values()) or "all"
    return f"figures/trend/{slug(machine)}/{slug(benchmark)}/{combo}.svg"


def bandwidth_figure_path(machine: str, direction: str, layout: str) -> str:
    """Bandwidth against size of one direction and layout on ``machine``."""
    return f"figures/bandwidth-{slug(machine)}-{slug(direction)}-{slug(layout)}.svg"


def headline_figure_path(key: str) -> str:
    return f"figures/headline-{slug(key)}.svg"

"""``Result``: one benchmark at one parameter combination, from one results file, with the
series it belongs to (machine, torch, how it was measured and, where its folder holds several,
what measured it: ``series.SeriesKey``)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from ..errors import XferbenchError
from ..units import gbps, parse_size
from .runrecords import Diagnostics
from .series import Host, Mode, SeriesKey, labels


@dataclass(frozen=True)
class Result:
    """One benchmark at one parameter combination, from one results file."""

    benchmark: str  # e.g. "bench_copies.Copy.track_device_s"
    params: tuple[tuple[str, Any], ...]  # (name, value) in the file's own order
    value: float | None  # None: failed; NaN: skipped
    unit: str
    machine: str
    commit: str
    date_ms: int
    torch: str
    cuda: str
    python: str
    env_name: str
    path: str
    samples: tuple[float, ...] | None = None
    q25: float | None = None
    q75: float | None = None
    ci_99: tuple[float, float] | None = None
    number: int | None = None
    repeat: int | None = None
    started_ms: int | None = None  # when asv started this benchmark (ms since the epoch)
    #: how it was measured, where not the default way (series.mode_of): (("quick", "yes"),)
    mode: Mode = ()
    device: str = "unknown"  # the device that measured it ("cpu", "cuda:0"), as labelled
    #: why this combination was sampled under a budget cap (``--budget --cap``; its
    #: sidecar's "capped"), None where it was not: never a default figure, not for citing
    capped: str | None = None
    #: the SM clock (MHz) each sample ran at, one per sample in the samples' order (a held
    #: batch's reading for each of its samples); None where not recorded
    sm_mhz: tuple[float, ...] | None = None
    #: what measured it, where its machine folder holds runs of several hosts or suites
    #: (``series.HOSTS``; set when the folder is loaded)
    host: Host = ()
    #: how its figure was read (its sidecar's "diagnostics"), None where not recorded
    diagnostics: Diagnostics | None = None

    @property
    def not_citable(self) -> str | None:
        """Why this number is no ordinary figure (every event batch discarded), or None."""
        return self.diagnostics.not_citable if self.diagnostics else None

    @functools.cached_property
    def series(self) -> SeriesKey:
        """Its series (read once: a page asks it of each result millions of times)."""
        return SeriesKey(self.machine, self.torch, self.mode, self.host)

    @property
    def quick(self) -> bool:
        """Measured with quick (shortened) budgets: a smoke run, not for citing."""
        return any(k == "quick" for k, _ in self.mode)

    @property
    def how(self) -> str:
        """How it was measured, as a series' label says it ("" for the default way)."""
        return labels(self.mode)

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def ok(self) -> bool:
        return self.value is not None and math.isfinite(self.value)

    @property
    def finite_value(self) -> float | None:
        """The value where it is a finite number (``ok``), else None."""
        return self.value if self.value is not None and math.isfinite(self.value) else None

    @property
    def spread(self) -> float | None:
        """IQR / median, or None without quartiles."""
        if not self.ok or self.q25 is None or self.q75 is None or not self.value:
            return None
        return (self.q75 - self.q25) / self.value

    @property
    def nbytes(self) -> int | None:
        """The bytes the ``size`` parameter names, or None where there is none."""
        return nbytes_of(self.param_dict)

    @property
    def gbps(self) -> float | None:
        """Bytes per second / 1e9, where the size parameter says how many bytes moved."""
        n = self.nbytes
        if n is None or not self.ok or self.unit != "seconds" or not self.value:
            return None
        return gbps(n, self.value)

    @property
    def key(self) -> tuple[str, tuple[tuple[str, Any], ...]]:
        return (self.benchmark, self.params)

    def label(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.benchmark}({args})" if args else self.benchmark


def nbytes_of(params: dict[str, Any]) -> int | None:
    """The bytes of a ``size`` parameter ("64MiB"), or None where there is none or it is not
    a size."""
    if "size" not in params:
        return None
    try:
        return parse_size(str(params["size"]))
    except XferbenchError:
        return None

"""The Measurement: raw per-call samples of each clock, the spec they were taken under, and the
statistics derived from them (computed once, on first use)."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import XferbenchError
from .spec import CLOCKS, MeasureSpec
from .units import format_seconds, gbps

# Schema of Measurement.to_dict(). Changelog:
#   1: first version (device_s, completion_s, enqueue_s, calls_per_sample, warmup_s, stop,
#      clock: the clock the figure is read from, null for the default).
#   2: label, nbytes and clock move into "spec" (MeasureSpec.to_dict(): the budgets and stop
#      rule the samples were taken under); the stop rule is IQR/median ("target_iqr"), and
#      version 1's target_cv (a CV rule) is dropped. Version 1 is upgraded on load
#      (_upgrade), the only place that knows it.
SCHEMA_VERSION = 2

#: Noise thresholds, as torch.utils.benchmark: IQR/median above these taints a result.
#: Above these rates (decimal GB/s) no memory of 2026 moves bytes: a host's (12-channel DDR5
#: is about 600) and a device's (HBM3e is about 8,000, an L2 cache a few times that).
PLAUSIBLE_HOST_GBPS = 1_000.0
PLAUSIBLE_DEVICE_GBPS = 50_000.0


def plausible_gbps(device: str) -> float:
    """The fastest rate a copy on ``device`` ("cpu", "cuda:0"...) could really have."""
    return PLAUSIBLE_HOST_GBPS if str(device).startswith("cpu") else PLAUSIBLE_DEVICE_GBPS


IQR_WARN = 0.10
#: The event batches a device-time figure counts (timing.measure, ``extra[kind +
#: "_batches"]``): held behind a stream hold, redone after the hold ended early, shrunk,
#: held longer, run without a hold, and discarded (taken on a slowed device).
BATCH_KINDS = ("held", "redone", "shrunk", "lengthened", "unheld", "discarded")

__all__ = ["BATCH_KINDS", "CLOCKS", "IQR_WARN", "SCHEMA_VERSION", "FrozenDict", "Measurement",
           "Stats", "quantile"]


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default) of already sorted values."""
    n = len(sorted_values)
    if n == 0:
        return math.nan
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


@dataclass(frozen=True)
class Stats:
    """Summary of one clock's samples, all in seconds per call (cv is a fraction)."""

    n: int
    median: float
    p20: float
    p80: float
    q25: float
    q75: float
    min: float
    mean: float
    cv: float

    @property
    def iqr(self) -> float:
        return self.q75 - self.q25

    @property
    def iqr_rel(self) -> float:
        return self.iqr / self.median if self.median > 0 else math.nan

    @classmethod
    def of(cls, samples: Sequence[float]) -> Stats:
        if not samples:
            raise ValueError("no samples")
        xs = sorted(samples)
        n = len(xs)
        mean = sum(xs) / n
        var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
        cv = math.sqrt(var) / mean if mean > 0 else math.nan
        return cls(
            n=n,
            median=quantile(xs, 0.5),
            p20=quantile(xs, 0.2),
            p80=quantile(xs, 0.8),
            q25=quantile(xs, 0.25),
            q75=quantile(xs, 0.75),
            min=xs[0],
            mean=mean,
            cv=cv,
        )


class FrozenDict(dict[str, Any]):
    """A dict that refuses changes, so that a frozen record's mapping stays as it was made
    (it still pickles and serialises as a dict)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a Measurement's extra is read-only: build a new Measurement")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))


@dataclass(frozen=True)
class Measurement:
    """Raw samples of one measured call, per clock, in seconds per call, and the ``spec`` they
    were taken under (label, bytes, clock, budgets, stop rule).

    ``device_s``: timing events around each call (accelerators only).
    ``completion_s``: host clock from the call to the end of its device work (synchronised).
    ``enqueue_s``: host clock for how long the call held the Python thread (accelerators only).
    On the CPU only ``completion_s`` exists; each sample there averages ``calls_per_sample``
    calls (a device-time sample of short calls averages a batch: ``calls_per_sample_of``).
    ``warmup_s`` and ``total_s`` are the seconds warm-up and sampling really took.
    Statistics are derived from the samples on first use and kept, never stored.
    """

    device: str
    completion_s: tuple[float, ...]
    device_s: tuple[float, ...] = ()
    enqueue_s: tuple[float, ...] = ()
    spec: MeasureSpec = field(default_factory=MeasureSpec)
    calls_per_sample: int = 1
    warmup_s: float = 0.0
    total_s: float = 0.0
    stop: str = "target_iqr"  # "target_iqr" | "max_time_s"
    extra: Mapping[str, Any] = field(default_factory=FrozenDict, compare=False)

    def __post_init__(self) -> None:
        for name in CLOCKS:
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        if not isinstance(self.extra, FrozenDict):
            object.__setattr__(self, "extra", FrozenDict(self.extra))

    # -- the spec's identity -----------------------------------------------------------
    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def nbytes(self) -> int | None:
        return self.spec.nbytes

    @property
    def clock(self) -> str | None:
        return self.spec.clock

    @property
    def target_iqr(self) -> float:
        return self.spec.target_iqr

    # -- derived -------------------------------------------------------------------------
    def calls_per_sample_of(self, clock: str | None = None) -> int:
        """How many calls each sample of ``clock`` (the primary clock by default) averages:
        a device-time sample of a batch of short calls spans the whole batch (at least the
        count given, where batches shrank); every other sample ``calls_per_sample``."""
        if (clock or self.primary_clock) == "device_s":
            return int(self.extra.get("device_calls_per_sample") or self.calls_per_sample)
        return self.calls_per_sample

    @property
    def primary_clock(self) -> str:
        """The clock that GB/s, the statistics and the warnings use: the spec's ``clock`` when
        given, else device time where it exists."""
        if self.clock:
            return self.clock
        return "device_s" if self.device_s else "completion_s"

    def samples(self, clock: str | None = None) -> tuple[float, ...]:
        clock = clock or self.primary_clock
        if clock not in CLOCKS:
            raise ValueError(f"unknown clock {clock!r}: use one of {', '.join(CLOCKS)}")
        return getattr(self, clock)

    @functools.cached_property
    def _stats(self) -> dict[str, Stats]:
        return {}

    def stats(self, clock: str | None = None) -> Stats:
        """The statistics of one clock's samples (the primary clock by default), computed once."""
        clock = clock or self.primary_clock
        cached = self._stats.get(clock)
        if cached is None:
            cached = self._stats[clock] = Stats.of(self.samples(clock))
        return cached

    @property
    def median(self) -> float:
        return self.stats().median

    @property
    def iqr(self) -> float:
        return self.stats().iqr

    @property
    def p20(self) -> float:
        return self.stats().p20

    @property
    def p80(self) -> float:
        return self.stats().p80

    @property
    def min(self) -> float:
        return self.stats().min

    @property
    def cv(self) -> float:
        return self.stats().cv

    @property
    def gbps(self) -> float | None:
        """Decimal GB/s (10^9 bytes/s) over the median of the primary clock, or None."""
        if self.nbytes is None:
            return None
        return gbps(self.nbytes, self.median)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What taints this measurement, in words; empty when it is clean."""
        out = []
        st = self.stats()
        if st.n < 5:
            out.append(f"only {st.n} samples")
        if st.iqr_rel > IQR_WARN:
            out.append(f"IQR is {st.iqr_rel:.0%} of the median")
        out.extend(self._clock_warnings())
        if self.stop == "max_time_s" and not (st.iqr_rel <= self.target_iqr):
            out.append(f"stopped at max_time_s with IQR {st.iqr_rel:.1%} of the median "
                       f"(target {self.target_iqr:.1%})")
        rate, ceiling = self.gbps, plausible_gbps(self.device)
        if rate is not None and rate > ceiling:
            where = "host" if self.device.startswith("cpu") else "device"
            out.append(f"{rate:,.0f} GB/s is beyond any {where} memory (over {ceiling:,.0f} "
                       "GB/s): the call most likely copied "
                       "nothing (a .to() of a tensor already there returns it; give copy=True "
                       "or copy into a tensor of your own)")
        return tuple(out)

    def _clock_warnings(self) -> list[str]:
        """What the event batches say about the figure's device time (see timing.measure)."""
        extra, out = self.extra, []
        if extra.get("device_clock_unavailable"):
            out.append(f"no device time: {extra['device_clock_unavailable']}")
        if self.primary_clock != "device_s":
            return out
        if extra.get("device_clock") == "host-inclusive":
            out.append("device time includes the host: the call waits for the device itself "
                       "(a blocking copy), so its calls could not be queued back to back")
        elif extra.get("device_clock") == "unheld" and extra.get("unheld_batches"):
            out.append(f"{extra['unheld_batches']} event batches ran without a stream hold: "
                       "launch gaps may be counted as device time")
        if extra.get("discarded_batches"):
            kept = "none kept: every sample is from" if extra.get("all_discarded") else \
                "discarded, taken on"
            out.append(f"{extra['discarded_batches']} event batches {kept} a slowed device "
                       f"({'; '.join(extra.get('slowed', []))})")
        return out

    def diagnostics(self, clock: str | None = None) -> dict[str, Any]:
        """How ``clock``'s figure (the primary clock's by default) was read, for the record:
        the clock; for device time the event batches' kind, their counts, whether every one
        was discarded and the SM clock per sample (where read for each); the warnings where
        ``clock`` is the figure's own."""
        clock = clock or self.primary_clock
        extra = self.extra
        out: dict[str, Any] = {"clock": clock}
        if clock == "device_s" and extra.get("device_clock"):
            out.update(device_clock=extra["device_clock"],
                       all_discarded=bool(extra.get("all_discarded")),
                       batches={k: int(extra[f"{k}_batches"]) for k in BATCH_KINDS
                                if extra.get(f"{k}_batches")})
            if len(extra.get("sm_mhz") or ()) == len(self.device_s):
                out["sm_mhz"] = [float(x) for x in extra["sm_mhz"]]
        if clock == self.primary_clock and self.samples(clock):
            out["warnings"] = list(self.warnings)
        return out

    # -- persistence ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "spec": self.spec.to_dict(),
            "device": self.device,
            "calls_per_sample": self.calls_per_sample,
            "warmup_s": self.warmup_s,
            "total_s": self.total_s,
            "stop": self.stop,
            "device_s": list(self.device_s),
            "completion_s": list(self.completion_s),
            "enqueue_s": list(self.enqueue_s),
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        data = _upgrade(data)
        try:
            return cls(
                device=str(data["device"]),
                completion_s=tuple(float(x) for x in data["completion_s"]),
                device_s=tuple(float(x) for x in data.get("device_s", ())),
                enqueue_s=tuple(float(x) for x in data.get("enqueue_s", ())),
                spec=MeasureSpec.from_dict(dict(data["spec"])),
                calls_per_sample=int(data.get("calls_per_sample", 1)),
                warmup_s=float(data.get("warmup_s", 0.0)),
                total_s=float(data.get("total_s", 0.0)),
                stop=str(data.get("stop", "target_iqr")),
                extra=dict(data.get("extra", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise XferbenchError(f"measurement record is malformed: {exc}") from None

    def summary(self) -> str:
        """One line: median, spread and GB/s of the primary clock, then any warnings."""
        st = self.stats()
        text = f"{self.label or 'call'} on {self.device}: median {format_seconds(st.median)}"
        text += f" (IQR {format_seconds(st.iqr)}, n={st.n})"
        if self.gbps is not None:
            text += f", {self.gbps:.2f} GB/s"
        for w in self.warnings:
            text += f"\n  WARNING: {w}"
        return text


def _upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A measurement record of any version this xferbench reads, as the current version."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version == 1:
        data = dict(data)
        spec: dict[str, Any] = {}
        for key in ("label", "nbytes", "clock"):
            if key in data:
                spec[key] = data.pop(key)
        data.pop("target_cv", None)
        spec["label"] = str(spec.get("label") or "")
        spec["clock"] = spec.get("clock") or None
        data["spec"] = spec
        data["schema_version"] = version = 2
    if version != SCHEMA_VERSION:
        raise XferbenchError(
            f"measurement schema_version {version!r} is not supported: "
            f"this xferbench reads versions 1 to {SCHEMA_VERSION}"
        )
    return data

"""A claim's figure in one series: its newest measured result, or why there is none, from
the series' own records first (the reason its run recorded for the combination), then the
suite's discovery under the series' recorded capability probe (a benchmark newer than the
results, or a class the run did not run), then the grids the sweeps declare (a combination
the series' sweep does not measure), and what a behaviour check saw (the sidecar's
observations). ``claims.py`` turns these into verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..devices import Capabilities
from ..results import Result, ResultSet
from ..results.discovery import Declared, declared_in_results, describe_suite
from ..results.runrecords import FAILED
from ..results.series import SeriesKey
from .claimtable import NOT_MEASURABLE, NOT_MEASURED, ClaimFigure
from .headline import recorded_capabilities
from .provenance import Provenance

#: The sweeps, in the order a combination missing from a series' grid is looked for.
SWEEPS = ("default", "full", "smoke")
#: How to run a sweep that measures a combination.
RUN_SWEEP = {"default": "xferbench run", "full": "xferbench run --sweep full",
             "smoke": "xferbench run --sweep smoke"}


@dataclass(frozen=True)
class ClaimSeries:
    """One series as the claims read it: its results, recorded probe and sweep."""

    provenance: Provenance
    results: ResultSet
    caps: Capabilities | None
    sweep: str | None


def _key(params: Any) -> tuple[tuple[str, str], ...]:
    items = params.items() if isinstance(params, dict) else params
    return tuple(sorted((str(k), str(v)) for k, v in items))


class Finder:
    """Looks figures up in the series of one results folder (read once per folder)."""

    def __init__(self, rs: ResultSet, repo: str | None) -> None:
        self.rs, self.repo = rs, repo
        self.declared = declared_in_results(rs)
        self._series: dict[SeriesKey, ClaimSeries] = {}

    def series(self, p: Provenance) -> ClaimSeries:
        key = p.key
        if key not in self._series:
            s = self.rs.filter(series=key)
            runs = [side.run for r in s if (side := s.sidecars.get(r.path)) and side.run]
            newest = max(runs, key=lambda run: str(run.started_at), default=None)
            self._series[key] = ClaimSeries(p, s, recorded_capabilities(s),
                                       newest.sweep if newest else None)
        return self._series[key]

    def discovered(self, caps: Capabilities | None,
                   sweep: str = "full") -> Mapping[str, Declared]:
        return (describe_suite(self.repo, caps, sweep) or {}) if self.repo else {}

    def find(self, figure: ClaimFigure, s: ClaimSeries) -> tuple[Result | None, str, str]:
        """The series' newest measured result of ``figure``, or (None, verdict, why)."""
        r = s.results.latest(figure.benchmark, **figure.param_dict)
        if r is not None:
            return r, "", ""
        recorded = _recorded(s.results, figure)
        if recorded:
            return (None, *recorded)
        skipped = self._skip_reason(figure, s.caps)
        if skipped:
            return None, NOT_MEASURABLE, skipped
        if figure.benchmark not in self.declared:
            return None, NOT_MEASURED, (f"these results hold no {figure.benchmark}: the suite "
                                        "gained it after they were measured (xferbench run "
                                        "measures it)")
        if not s.results.find(figure.benchmark):
            return None, NOT_MEASURED, (f"no run of this series measured {figure.benchmark} "
                                        "(xferbench run measures it)")
        return None, NOT_MEASURED, self._not_in_grid(figure, s.sweep)

    def _skip_reason(self, figure: ClaimFigure, caps: Capabilities | None) -> str | None:
        """Why the suite's discovery skips ``figure`` on the series' device, if it does."""
        d = self.discovered(caps).get(figure.benchmark)
        if d is None:
            return None
        given = figure.param_dict
        return d.skips.get(tuple(given.get(k, "") for k in d.param_names))

    def _not_in_grid(self, figure: ClaimFigure, sweep: str | None) -> str:
        ran = f"the {sweep} sweep" if sweep else "the grid these results ran"
        for other in SWEEPS:
            d = self.discovered(None, other).get(figure.benchmark)
            if other != sweep and d is not None and all(
                    k in d.param_names and v in d.values_of(k) for k, v in figure.params):
                return (f"{ran} does not measure {_combo(figure)}: the {other} sweep does "
                        f"({RUN_SWEEP[other]})")
        return f"{ran} does not measure {_combo(figure)}"

    def observed(self, r: Result) -> str:
        """What the run that measured ``r`` recorded it saw (a behaviour check's words)."""
        side = self.rs.sidecars.get(r.path)
        want = _key(r.params)
        for o in (side.observations.get(r.benchmark, ()) if side else ()):
            if _key(o.params) == want:
                return o.text
        return ""


def _combo(figure: ClaimFigure) -> str:
    return ", ".join(f"{k}={v}" for k, v in figure.params)


def _recorded(s: ResultSet, figure: ClaimFigure) -> tuple[str, str] | None:
    """(verdict, why) from the reason the series' newest run of the combination recorded
    (skipped: not measurable here; failed or cut by a budget: not measured); None where no
    run of the series holds the combination."""
    want = _key(figure.params)
    found = s.find(figure.benchmark, **figure.param_dict)
    for r in sorted(found, key=lambda r: (r.date_ms, r.started_ms or 0), reverse=True):
        side = s.sidecars.get(r.path)
        for o in (side.outcomes.get(figure.benchmark, ()) if side else ()):
            if _key(o.params) == want:
                if o.status == FAILED:
                    return NOT_MEASURED, f"it failed: {o.reason}"
                if o.reason.startswith("cut:"):
                    return NOT_MEASURED, o.reason
                return NOT_MEASURABLE, o.reason
        why = "failed" if r.value is None else "skipped"
        return NOT_MEASURED, f"{why} in this series' newest run, its reason not recorded"
    return None

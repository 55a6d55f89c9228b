"""What a run found, as ``compare`` reports a comparison: one ``RunReport`` built from the plan
and what the calls did, rendered as text (the copy table, the headlines, the hazards and the
next commands) or as a JSON summary, with the exit status it earns."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

from ...analysis.headline import headlines, series_tables
from ...errors import ExitCode
from ...results import ResultSet, load
from ...results.runrecords import FAILED, Outcome
from ...results.sidecar import metadata_path
from .budget import REPORT_S, class_plan
from .plan import RunPlan
from .suite import SuiteClass
from .transaction import Done

#: Failed combinations named one by one on stderr; the rest are counted.
FAILURES_SHOWN = 10
#: What a run spends before its first class (its probe, the suite's description, the
#: device's metadata read under load), planned for a second run's budget.
RUN_START_S = 10.0
#: How the report says what a second run would take: scripts/gpu-check reads this line.
SECOND_RUN = "a second run of what --budget cut: xferbench run"


@dataclass(frozen=True)
class RunReport:
    plan: RunPlan
    results_file: str
    results: ResultSet | None  # the results file's, None where asv saved none
    seconds: float
    asv_exit: tuple[int, ...]
    failures: tuple[Outcome, ...]  # combinations that failed while measuring
    interrupted: bool = False
    cut_classes: tuple[str, ...] = ()  # classes --budget left out, each recorded as skipped
    log: str = ""  # asv's own output
    #: the classes --budget left out or cut short: what a second run would measure
    second: tuple[SuiteClass, ...] = ()

    def second_run(self) -> tuple[str, int] | None:
        """(the --bench regex, the --budget) of a second run that measures what this run's
        budget cut, whole: those classes' plans, the run's own start and its report; None
        where nothing was cut."""
        if not self.second:
            return None
        regex = "^(" + "|".join(re.escape(c.full_name) for c in self.second) + r")\."
        seconds = sum(class_plan(c).total_s for c in self.second) + RUN_START_S + REPORT_S
        return regex, math.ceil(seconds)

    def _rs(self) -> ResultSet:
        return self.results if self.results is not None else ResultSet([], {}, "")

    @property
    def measured(self) -> int:
        return sum(1 for r in self.results or () if r.ok)

    @property
    def skipped(self) -> int:
        return sum(1 for r in self.results or () if r.value is not None and not r.ok)

    @property
    def failed(self) -> int:
        return len(self.failures) + sum(1 for r in self.results or () if r.value is None)

    @property
    def exit_code(self) -> ExitCode:
        if self.interrupted:
            return ExitCode.INTERRUPTED
        if self.results is None or self.measured == 0 or self.failed:
            return ExitCode.FAILED
        return ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        """The JSON summary (``--format json``)."""
        plan = self.plan
        return {
            "results": self.results_file, "metadata": metadata_path(self.results_file),
            "machine": plan.machine, "torch": plan.torch_version, "commit": plan.commit,
            "quick": plan.options.quick, "seconds": round(self.seconds, 1),
            "measured": self.measured, "skipped": self.skipped, "failed": self.failed,
            "asv_exit": list(self.asv_exit), "budget_s": plan.options.budget,
            "capped": plan.options.cap,
            "cut_classes": list(self.cut_classes),
            "second_run": dict(zip(("bench", "budget_s"), self.second_run() or ())) or None,
            "headlines": {v.headline.key: v.ratio for v in headlines(self._rs())},
        }

    def text(self) -> list[str]:
        """The text summary (``--format text``), for stdout."""
        rs, plan = self._rs(), self.plan
        lines = ["", f"results: {os.path.relpath(self.results_file)} ({self.seconds:.0f} s; "
                     f"{self.measured} values measured, {self.skipped} skipped, "
                     f"{self.failed} failed: a combination gives a value per figure of its "
                     "class)"]
        if self.cut_classes:
            lines.append(f"cut by --budget {plan.options.budget:g} s, not started: "
                         f"{'; '.join(self.cut_classes)} (each combination is in the sidecar "
                         "as skipped, with the reason)")
        second = self.second_run()
        if second:
            lines.append(f"{SECOND_RUN} --bench '{second[0]}' --budget {second[1]}")
        if plan.options.sweep == "smoke":
            lines.append("smoke sweep: every branch ran at one size; it quotes no headline")
        else:
            tables = series_tables(rs, plan.ran)
            lines += ["", *(tables or [f"(no copy, headline or hazard figure is among "
                                       f"--bench {plan.options.bench})"])]
        if plan.meta.emulated:
            lines.append("the device is emulated: these times are host threads', not measurements")
        results = "" if plan.options.results_dir == os.path.abspath("results") else \
            f" --results {os.path.relpath(plan.options.results_dir)}"
        return lines + [
            "", f"next: xferbench publish{results}   (the dashboard, into site/)",
            f"      xferbench compare OTHER_TORCH {plan.torch_version}{results}   (regressions)",
            f"      xferbench list{results}   (what can be cited; then xferbench cite ...)"]

    def problems(self) -> list[str]:
        """What went wrong, one sentence a line, for stderr."""
        if self.interrupted:
            return ["", "xferbench run: interrupted; results saved so far are kept"]
        if self.results is None:
            return [f"xferbench run: asv saved no results (its output: {self.log})"]
        if self.measured == 0:
            return [f"xferbench run: nothing was measured (asv's output: {self.log})"]
        if not self.failed:
            return []
        return [f"xferbench run: failed: {o.to_dict()['params']}: {o.reason}"
                for o in self.failures[:FAILURES_SHOWN]] + [
            f"xferbench run: {self.failed} combinations failed (asv's output: {self.log})"]


def report(plan: RunPlan, done: Done) -> RunReport:
    failures = tuple(o for rows in done.progress.outcomes.values() for o in rows
                     if o.status == FAILED)
    results = None
    if os.path.exists(done.results_file) and not done.interrupted:
        results = load(plan.options.results_dir).filter(path=done.results_file)
    return RunReport(plan, done.results_file, results, done.seconds, done.codes, failures,
                     done.interrupted, done.cut_classes, done.log, cut_by_budget(plan, done))


def cut_by_budget(plan: RunPlan, done: Done) -> tuple[SuiteClass, ...]:
    """The classes the run's budget left out or cut short, in run order."""
    short = {name for name, rows in done.progress.outcomes.items()
             if any(o.reason.startswith("cut:") for o in rows)}
    return tuple(c for g in plan.groups for c in g.classes if c.measured and (
        g.measured_names in done.cut_classes or c.full_name in short))

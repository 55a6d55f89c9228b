"""The suite as ``xferbench run`` sees it: its benchmark classes in order, how many
combinations each measures on this device, and why each skipped one is skipped."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

from ...analysis.headline import HAZARD_BENCHMARK, HEADLINES
from ...analysis.sitemap import BANDWIDTH_BENCHMARKS
from ...errors import XferbenchError
from ...results.runrecords import SKIPPED, Outcome


def _class_of(benchmark: str) -> str:
    return benchmark.split(".")[1]  # "bench_copies.Copy.track_completion_s": "Copy"


#: The classes behind the headlines (``analysis/headline.py``), in the headlines' order: a
#: budget that cannot hold their headline combinations is refused before anything runs.
HEADLINE_CLASSES = tuple(dict.fromkeys(
    _class_of(b) for h in HEADLINES
    for b in (h.comparison.practice.benchmark, h.comparison.baseline.benchmark, h.counts) if b))
#: The order the classes run in: a run cut short (an interrupt, the end of --budget) keeps the
#: classes it finished, so the classes whose figures the run prints at its end come first
#: (the headlines', then the copy table's and the hazards'). Every other class runs after
#: them, in file order.
PRIORITY = tuple(dict.fromkeys((*HEADLINE_CLASSES, *map(_class_of, (
    *BANDWIDTH_BENCHMARKS.values(), HAZARD_BENCHMARK)))))


@dataclass(frozen=True)
class SuiteClass:
    """One benchmark class: what asv calls ``<file>.<class>.<method>``."""

    file: str
    name: str
    methods: tuple[str, ...]
    param_names: tuple[str, ...]
    measured: int  # combinations measured on this device
    combinations: int  # combinations declared
    skips: dict[str, list[list[str]]] = field(default_factory=dict, compare=False)
    select: dict[str, list[list[str]]] = field(default_factory=dict, compare=False)
    estimate_s: float = 0.0  # its grid's planned seconds at the default spec (Grid)
    #: per method, the combinations it measures here (values as text)
    runs: dict[str, list[list[str]]] = field(default_factory=dict, compare=False)
    headline: int = 0  # of ``measured``, the headline combinations, measured first
    combination_s: float = 0.0  # what a combination is planned to cost, on average (Grid)
    start_s: float = 0.0  # the class process's start before its first combination
    headline_s: float = 0.0  # what its headline combinations are planned to cost, together
    rest_s: float = 0.0  # what the rest of its combinations are planned to cost, together

    def cut(self, reason: str) -> dict[str, list[Outcome]]:
        """{benchmark: its Outcomes} for a class the run's budget left out: every combination
        it would have measured, skipped with ``reason``."""
        return {f"{self.full_name}.{method}": [
                    Outcome(tuple(zip(self.param_names, run)), SKIPPED, reason) for run in rows]
                for method, rows in self.runs.items() if rows}

    @property
    def full_name(self) -> str:
        return f"{self.file}.{self.name}"

    def benchmarks(self) -> list[str]:
        return [f"{self.full_name}.{m}" for m in self.methods]

    def selection(self) -> tuple[str, ...]:
        """asv --bench regexes naming, per method, the combinations that run here: asv then
        starts no process for the others and stores them as skipped. A method with none names
        its first combination, which asv records as skipped, so that the method is there."""
        return tuple(
            rf"^{re.escape(self.full_name)}\.{re.escape(method)}\((?:"
            + "|".join(re.escape(", ".join(c)) for c in self.select.get(method, []))
            + r")\)$" for method in self.methods)


def describe_suite(repo: str, env: dict[str, str]) -> list[SuiteClass]:
    """Import the suite in a child process with the run's environment (its probe, sweep and
    quick settings: no torch) and describe every class of its files (benchmarks/bench_*.py)."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks._asv"], cwd=repo, env=env,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise XferbenchError(f"the suite in {repo}/benchmarks does not import: {last}")
    data: list[dict[str, Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    rank = {name: i for i, name in enumerate(PRIORITY)}
    data.sort(key=lambda d: rank.get(d["class"], len(PRIORITY)))  # stable: file order after
    return [SuiteClass(d["file"], d["class"], tuple(d["methods"]), tuple(d["param_names"]),
                       int(d["measured"]), int(d["combinations"]), d["skips"], d["select"],
                       float(d["estimate_s"]), d["runs"], int(d.get("headline", 0)),
                       float(d.get("combination_s", 0.0)), float(d.get("start_s", 0.0)),
                       float(d.get("headline_s", 0.0)), float(d.get("rest_s", 0.0)))
            for d in data]


def skipped_at_discovery(classes: list[SuiteClass]) -> dict[str, list[Outcome]]:
    """{benchmark: its Outcomes} for every combination a method skips on this device."""
    out: dict[str, list[Outcome]] = {}
    for c in classes:
        for method, rows in c.skips.items():
            if rows:
                out[f"{c.full_name}.{method}"] = [
                    Outcome(tuple(zip(c.param_names, row[:-1])), SKIPPED, row[-1])
                    for row in rows]
    return out

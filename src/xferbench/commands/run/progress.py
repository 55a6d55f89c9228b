"""Progress of a run: the suite's classes report each measured combination as a JSON line in
a file (XFERBENCH_PROGRESS); a thread here prints them as they come, with done/total and an
estimate of the time left, and keeps what was skipped or failed at run time, what a
measured combination saw beside its numbers (a behaviour check's words) and how each figure
was read (its clock and event batches)."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import TextIO

from ...results.runrecords import (
    CAPPED,
    FAILED,
    MEASURED,
    SKIPPED,
    Diagnostics,
    Observation,
    Outcome,
    ProgressLine,
)
from ...units import format_seconds, format_value, fraction_text, plural


class Progress:
    """Tails ``path`` while a run is on; ``total`` is the number of combinations to measure."""

    def __init__(self, path: str, total: int, out: TextIO) -> None:
        self.path, self.total, self.out = path, total, out
        self.done = 0
        self.started = time.monotonic()
        self.measuring_s = 0.0  # the combinations' own seconds, as their classes report them
        self.classes_started = 0
        self.outcomes: dict[str, list[Outcome]] = {}  # class -> runtime skips/failures
        #: benchmark -> what its measured combinations saw beside their numbers
        self.observations: dict[str, list[Observation]] = {}
        #: benchmark -> its skips inside measured combinations (one method without a value)
        self.method_outcomes: dict[str, list[Outcome]] = {}
        #: class -> its combinations sampled under a budget cap (--budget --cap)
        self.capped: dict[str, list[Outcome]] = {}
        #: benchmark -> how each of its measured combinations' figure was read
        self.diagnostics: dict[str, list[Diagnostics]] = {}
        self._param_names: dict[str, list[str]] = {}
        self.expect: dict[str, str] = {}
        #: Set when a class's process ran another interpreter or torch than this run's.
        self.mismatch = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        open(path, "a").close()

    def start(self, param_names: dict[str, list[str]],
              expect: dict[str, str] | None = None) -> Progress:
        """Follow the file; ``expect`` is what each class must report it ran ("executable",
        "torch"), or the run is refused."""
        self._param_names = param_names
        self.expect = dict(expect or {})
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _follow(self) -> None:
        with open(self.path, encoding="utf-8") as fh:
            pending = ""
            while True:
                chunk = fh.read()
                if chunk:
                    pending += chunk
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        self._line(line)
                elif self._stop.is_set():
                    return
                else:
                    time.sleep(0.1)

    def _line(self, text: str) -> None:
        try:
            line = ProgressLine.from_dict(json.loads(text))
        except (ValueError, TypeError, AttributeError):
            return
        name = line.class_name
        if line.event == "start":
            for key, want in self.expect.items():
                got = getattr(line, key, None)
                if got is not None and got != want and not self.mismatch:
                    self.mismatch = (f"{name} ran with {key} {got}, not this run's {want}: "
                                     "something else's interpreter answered")
            self.classes_started += 1
            # asv's "Setting up ..." line waits for its "ok": ours go below it
            print(f"\n  {name}: measuring {plural(line.total, 'combination')} in one process",
                  file=self.out, flush=True)
            return
        self.done += 1
        self.measuring_s += line.seconds or 0.0
        names = self._param_names.get(name) or [f"p{i}" for i in range(len(line.params))]
        params = tuple(zip(names, line.params))
        if line.status in (SKIPPED, FAILED):
            self.outcomes.setdefault(name, []).append(Outcome(params, line.status, line.why))
        for method, text in line.texts:
            self.observations.setdefault(f"{name}.{method}", []).append(
                Observation(params, text))
        for method, why in line.skips:
            self.method_outcomes.setdefault(f"{name}.{method}", []).append(
                Outcome(params, SKIPPED, why))
        if line.capped:
            self.capped.setdefault(name, []).append(Outcome(params, CAPPED, line.capped))
        for method, read in line.diagnostics:
            self.diagnostics.setdefault(f"{name}.{method}", []).append(
                Diagnostics.from_dict({**read, "params": dict(params)}))
        print(self.format(line), file=self.out, flush=True)

    def left_s(self, elapsed: float) -> float | None:
        """The time left: each combination to come at the mean of those measured, and each
        class to start at what starting one took so far (a process, torch, a setup cache:
        the first combination's time is mostly that, and an estimate that spread it over
        every combination read several times too long). None before anything is measured."""
        if not 0 < self.done < self.total:
            return None
        starting = max(elapsed - self.measuring_s, 0.0) / max(self.classes_started, 1)
        classes_left = max(len(self._param_names) - self.classes_started, 0)
        return self.measuring_s / self.done * (self.total - self.done) + starting * classes_left

    def format(self, line: ProgressLine) -> str:
        elapsed = time.monotonic() - self.started
        left_s = self.left_s(elapsed)
        left = "" if left_s is None else f", ~{format_seconds(left_s)} left"
        head = f"  [{self.done}/{self.total} {format_seconds(elapsed)}{left}]"
        what = f"{line.class_name.split('.', 1)[-1]}({', '.join(line.params)})"
        if line.status != MEASURED:
            return f"{head} {what}: {line.status}: {line.why}"
        values = "; ".join(
            [", ".join(f"{m.removeprefix('track_')} {_value(m, v)}" for m, v in line.values)]
            * bool(line.values)
            + [f"{m.removeprefix('track_')} skipped: {why}" for m, why in line.skips])
        capped = " [sampled under a budget cap]" if line.capped else ""
        return f"{head} {what}: {values} ({line.seconds:.1f} s){capped}"


def _value(method: str, value: float) -> str:
    if method.endswith("_s"):
        return format_seconds(value)
    if method.endswith("_bytes"):
        return format_value(value, "bytes")
    if method.endswith(("_fraction", "_share")):
        return fraction_text(value)
    return f"{value:.3g}"


def progress_path(workdir: str) -> str:
    return os.path.join(workdir, "progress.jsonl")

"""One asv results file read into ``Result`` records, and every check that keeps a number from
being read as what it is not: a file cut short or a value no clock could give (a negative time,
a median outside its own quartiles) is damaged; a label the sidecar contradicts (the torch,
the device, quick) means the file was edited or moved; numbers no recorded run measured come
from a run that failed after asv saved them. Each is one sentence naming the file.

Each benchmark's parameter names are the file's own: those its sidecar recorded (schema 3),
else benchmarks.json's where they fit its values, else the declared parameters whose values
hold them (a suite that gained a parameter since), so an old file is never read under new
names. How each figure was read (its clock, its event batches, the SM clock per sample) comes
from the sidecar (schema 4)."""

from __future__ import annotations

import ast
import calendar
import itertools
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import XferbenchError
from .asvfiles import ASV_FORMAT_VERSION
from .machines import torch_label
from .result import Result
from .runrecords import ISO_FORMAT, RunRecord
from .safefiles import load_json
from .series import mode_of, text
from .sidecar import Sidecar

#: Units whose values are durations: never below zero.
TIMES = ("seconds",)
#: Slack (seconds) between a run's recorded start and end and asv's per-benchmark start time.
CLOCK_SLACK_S = 2
RESTORE = "restore it from git or delete it"
#: How a label is named in a sentence.
LABEL_NAMES = {"torch": "PyTorch", "cuda": "CUDA"}
#: How far (relative) a median may sit outside its quartiles: asv rounds the quartiles it
#: stores of a time_ benchmark to a few digits.
QUARTILE_TOLERANCE = 1e-3


def literal(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def parse_results_file(path: str, benchmarks: dict[str, dict[str, Any]],
                       side: Sidecar | None = None) -> list[Result]:
    """Every result in one asv results file, its labels checked against ``side``."""
    data = load_json(path, "results file")
    date = data.get("date") if isinstance(data, dict) else None
    if date is not None and (isinstance(date, bool) or not isinstance(date, (int, float))):
        raise XferbenchError(f"results file {path} has date {date!r}, not asv's milliseconds "
                             "since 1970: it was edited or damaged; restore it from git")
    try:
        columns, params = data["result_columns"], data.get("params", {})
        commit, date_ms = str(data["commit_hash"]), int(data.get("date") or 0)
        entries = data["results"]
        if not (isinstance(columns, list) and isinstance(params, dict)
                and isinstance(entries, dict)):
            raise TypeError
    except (KeyError, TypeError, ValueError, AttributeError):
        raise XferbenchError(
            f"results file {path} is not an asv results file (no result_columns/results)"
        ) from None
    if data.get("version", ASV_FORMAT_VERSION) != ASV_FORMAT_VERSION:
        raise XferbenchError(
            f"results file {path} has asv format version {data.get('version')!r}: "
            f"this xferbench reads version {ASV_FORMAT_VERSION} (asv 0.6)")
    requirements = data.get("requirements") or {}
    folder = os.path.basename(os.path.dirname(path))
    if str(params.get("machine", folder)) != folder:
        raise XferbenchError(
            f"results file {path} says machine {params['machine']} but is filed under machine "
            f"folder {folder}: it was moved (its series would join another machine's); move "
            f"it back, or {RESTORE}")
    check_labels(path, params, side)
    common: dict[str, Any] = dict(
        machine=folder,
        commit=commit, date_ms=date_ms,
        torch=str(params.get("torch") or requirements.get("torch") or "unknown"),
        cuda=str(params.get("cuda", "unknown")),
        python=str(params.get("python", data.get("python", "unknown"))),
        env_name=str(data.get("env_name", "")), path=path,
        device=str(params.get("device") or (side.metadata.device if side and side.metadata
                                            else None) or "unknown"))
    out: list[Result] = []
    try:
        for name, row in entries.items():
            if not isinstance(row, list):
                continue
            cols = dict(zip(columns, row))
            check_recorded(path, name, cols, side, common["device"])
            fallback = run_mode(run_of(side, name)) if side else {}
            out += rows(name, cols, benchmarks.get(name, {}),
                        recorded_names(side, name),
                        mode=mode_of(params, requirements, fallback), **common)
    except (TypeError, ValueError, AttributeError) as exc:
        raise XferbenchError(f"results file {path} holds a malformed result ({exc}): "
                             f"{RESTORE}") from None
    return with_diagnostics(out, side)


def with_diagnostics(results: list[Result], side: Sidecar | None) -> list[Result]:
    """``results`` with how each figure was read, where its sidecar says (schema 4): its
    ``diagnostics``, and its SM clock per sample (``sm_mhz``) where that list holds one
    reading per sample (any other length is ignored: it would pair clocks with the wrong
    samples)."""
    if side is None or not side.diagnostics:
        return results
    def key(name: str, params: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
        return name, tuple(sorted((str(k), str(v)) for k, v in params))  # any order

    read = {key(name, d.params): d for name, rows in side.diagnostics.items() for d in rows}
    out = []
    for r in results:
        d = read.get(key(r.benchmark, r.params))
        if d is not None:
            fits = d.sm_mhz and r.samples and len(d.sm_mhz) == len(r.samples)
            r = replace(r, diagnostics=d, sm_mhz=d.sm_mhz if fits else None)
        out.append(r)
    return out


def rows(name: str, cols: dict[str, Any], info: dict[str, Any],
         recorded: Sequence[str] | None, **common: Any) -> list[Result]:
    """One record per parameter combination of benchmark ``name``'s row."""
    path = common["path"]
    values_per_param = [[literal(v) for v in values] for values in (cols.get("params") or [])]
    names = param_names(values_per_param, info, recorded)
    combos = list(itertools.product(*values_per_param)) if values_per_param else [()]
    values = cols.get("result")
    if values is None:
        values = [None] * len(combos)
    if not isinstance(values, list) or len(values) != len(combos):
        raise XferbenchError(
            f"results file {path} holds {len(values) if isinstance(values, list) else 'no'} "
            f"values for the {len(combos)} parameter combinations of {name}: it was cut short "
            f"or edited; {RESTORE}")
    started = cols.get("started_at")
    unit = str(info.get("unit", "unknown"))
    out = []
    for i, combo in enumerate(combos):
        column = _column_reader(cols, i)
        v = values[i]
        samples = column("samples")
        ci_a, ci_b = column("stats_ci_99_a"), column("stats_ci_99_b")
        out.append(Result(
            benchmark=name, params=tuple(zip(names, combo)),
            value=None if v is None else float(v), unit=unit, **common,
            samples=tuple(float(x) for x in samples) if samples else None,
            q25=column("stats_q_25"), q75=column("stats_q_75"),
            ci_99=_interval(ci_a, ci_b),
            number=column("stats_number"), repeat=column("stats_repeat"),
            started_ms=started if isinstance(started, int) else None))
        check_value(path, out[-1])
    return out


def _interval(low: Any, high: Any) -> tuple[float, float] | None:
    """asv's 99% interval of the median, its lower end at least 0: no figure of the suite
    (a time, a count, a fraction, bytes, a ratio) can be negative, while asv's interval of a
    few spread samples can reach below 0, which a reader would take for a negative time."""
    if low is None or high is None:
        return None
    return max(float(low), 0.0), float(high)


def _column_reader(cols: dict[str, Any], i: int) -> Any:
    """column(key): entry ``i`` of asv's per-combination column ``key``, or None."""
    def column(key: str) -> Any:
        col = cols.get(key)
        return col[i] if isinstance(col, list) and i < len(col) else None

    return column


def param_names(values: list[list[Any]], info: dict[str, Any],
                recorded: Sequence[str] | None) -> list[str]:
    """The names of a row's parameters (``values``, one list per parameter)."""
    count = len(values)
    if recorded is not None and len(recorded) == count:
        return list(recorded)
    declared = list(info.get("param_names", []))
    given = [[str(v) for v in vs] for vs in info.get("params", [])]
    if len(declared) == count and all(_fits(vs, given[j]) for j, vs in enumerate(values)
                                      if j < len(given)):
        return declared
    # an older version of the benchmark: each position is the declared parameter, in order,
    # whose declared values hold all of its values
    names: list[str] = []
    start = 0
    for vs in values:
        hit = next((j for j in range(start, len(declared)) if j < len(given)
                    and _fits(vs, given[j])), None)
        if hit is None:
            return declared if len(declared) == count else [f"p{j}" for j in range(count)]
        names.append(declared[hit])
        start = hit + 1
    return names


def _fits(values: list[Any], declared: list[str]) -> bool:
    return all(repr(v) in declared or str(v) in declared for v in values)


def check_value(path: str, r: Result) -> None:
    """A value no measurement gives (a negative time, a median outside its quartiles) is a
    damaged file."""
    if r.value is None or not math.isfinite(r.value):
        return
    where = f"{r.label()} = {r.value!r}"
    if r.unit in TIMES and (r.value < 0 or any(x < 0 for x in r.samples or ())):
        raise XferbenchError(f"results file {path} holds a negative time ({where}): no clock "
                             f"gives one, so the file was edited or damaged; {RESTORE}")
    if r.q25 is not None and r.q75 is not None:
        tol = QUARTILE_TOLERANCE * max(abs(r.q25), abs(r.q75), abs(r.value))
        if not (r.q25 - tol <= r.value <= r.q75 + tol):
            raise XferbenchError(
                f"results file {path} holds a median outside its own quartiles ({where}, IQR "
                f"{r.q25!r} to {r.q75!r}): the file was edited or damaged; {RESTORE}")


def check_labels(path: str, params: Mapping[str, Any], side: Sidecar | None) -> None:
    """A results file whose labels (torch, CUDA, the device, quick, the sweep) disagree with
    what its sidecar recorded was edited, or moved beside another file's sidecar: it would be
    cited as what it is not."""
    if side is None:
        return
    recorded: dict[str, str | None] = {}
    if side.metadata:
        torch, cuda = torch_label(side.metadata)
        recorded.update(torch=side.metadata.torch and torch, device=side.metadata.device,
                        cuda=side.metadata.torch and cuda)
    if side.run:
        recorded.update(quick=text(side.run.quick), sweep=side.run.sweep)
    for key, want in recorded.items():
        have = params.get(key)
        if want in (None, "", "unknown") or have in (None, "", "unknown"):
            continue
        if str(have) != str(want):
            what = LABEL_NAMES.get(key, key)
            raise XferbenchError(
                f"results file {path} says {what} {have} but its sidecar recorded {what} "
                f"{want}: the file was edited or moved; {RESTORE}")


def recorded_names(side: Sidecar | None, benchmark: str) -> Sequence[str] | None:
    """The parameter names ``benchmark`` had when the file's run measured it (schema 3)."""
    return side.param_names.get(benchmark) if side else None


def run_of(side: Sidecar | None, benchmark: str) -> RunRecord | None:
    """The run that measured ``benchmark`` last, as the sidecar records it (the newest run
    where it does not say)."""
    if side is None:
        return None
    started = side.benchmarks.get(benchmark)
    found = [r for r in side.runs if started is not None and r.started_at == started]
    return found[-1] if found else side.run


def run_mode(run: RunRecord | None) -> dict[str, Any]:
    """What a run record says of how it measured, for files whose params do not say."""
    if run is None:
        return {}
    out: dict[str, Any] = {"quick": run.quick}
    if run.sweep:
        out["sweep"] = run.sweep
    if run.budget_s is not None:
        out["budget"] = f"{run.budget_s:g}"
    return out


def _iso_ms(value: str | None) -> int | None:
    try:
        return calendar.timegm(time.strptime(str(value), ISO_FORMAT)) * 1000
    except (ValueError, OverflowError):
        return None


def check_recorded(path: str, name: str, cols: dict[str, Any], side: Sidecar | None,
                   device: str = "unknown") -> None:
    """Numbers of ``name`` that no run of the sidecar measured (asv saved them, then the run
    failed before it recorded itself: a full disk) are not what the sidecar describes; nor
    are numbers a run on another device than the file's label measured (two devices' runs
    filed into one file)."""
    if side is None or not side.benchmarks:  # schema 1: which run measured what not recorded
        return
    values = cols.get("result") or []
    if not any(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values):
        return
    started = cols.get("started_at")
    run = next((r for r in side.runs if r.started_at == side.benchmarks.get(name)), None)
    why = None
    cause = ": a run failed after asv saved them (a full disk?)"
    if name not in side.benchmarks:
        why = "no run its sidecar records measured it"
    elif run is not None and isinstance(started, int):
        begin, end = _iso_ms(run.started_at), _iso_ms(run.finished_at)
        slack = CLOCK_SLACK_S * 1000
        if (begin is not None and started < begin - slack) or (
                end is not None and started > end + slack):
            why = (f"it was measured at {time.strftime(ISO_FORMAT, time.gmtime(started / 1000))}"
                   f", outside the run its sidecar says measured it ({run.started_at} to "
                   f"{run.finished_at or 'unfinished'}): the system clock stepped during that "
                   "run, or a later run failed after asv saved them")
            cause = ""
    if why is None and run is not None and run.device and device != "unknown" \
            and run.device != device:
        raise XferbenchError(
            f"results file {path} is labelled device {device} but its sidecar says the run "
            f"of {run.started_at} measured {name} on {run.device}: two devices' runs share the "
            f"file; {RESTORE}")
    if why:
        raise XferbenchError(
            f"results file {path} holds numbers of {name} that its sidecar does not describe "
            f"({why}){cause}; {RESTORE}")

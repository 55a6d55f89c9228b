"""Shared asv plumbing: the device under test and its capability probe, skip lists, and the
grid runner that measures every combination of a benchmark class in one process.

One process per class, not per combination: asv runs each parameter combination in a process
of its own, and each would import torch and initialise the device, which on a GPU takes
seconds per process, longer than most measurements. So each class measures its whole grid in
``setup_cache``, which asv runs once per class and environment, in one process, and returns
plain numbers keyed by parameters. The ``track_*`` methods, which asv still runs per
combination (forked from a server that never imported torch), only look their number up. asv
stays the runner and the store: the same results files, raw samples included, and
``asv run -b``, ``asv publish`` and ``xferbench run`` work as before. A combination that fails
or does not fit is recorded as that combination's failure or skip (``Grid.setup`` raises for
it alone), never the class's.

Nothing here imports torch at import time: the probe comes from XFERBENCH_PROBE (set by
``xferbench run``), else from a file cached per interpreter and torch installation, else from
a child process that imports torch once and fills that cache.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import importlib.util
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from asv_runner.benchmarks.mark import SkipNotImplemented, skip_for_params

from xferbench.device_memory import DoesNotFit, memory_allocated, release_memory
from xferbench.devices import Capabilities, resolve_device
from xferbench.practices import quick
from xferbench.results.runrecords import FAILED, MEASURED, SKIPPED, ProgressLine
from xferbench.spec import DEFAULT_SPEC, MeasureSpec
from xferbench.timing import measuring_s
from xferbench.units import parse_size

from . import _budget

#: A combination that takes longer than this (seconds) is recorded as failed; the class goes on.
COMBINATION_TIMEOUT_S = 150
#: The longest one combination may take in a class timeout's arithmetic (build, warm-up,
#: measurement, release) beyond its measure() budget.
COMBINATION_ALLOWANCE_S = 15

_PROBE_CODE = (
    "import json, sys; from xferbench.devices import capabilities, resolve_device; "
    "d = resolve_device(sys.argv[1]); "
    "print(json.dumps({'device': d.name, 'capabilities': capabilities(d).to_dict()}))"
)


def _probe_cache_path(spec: str) -> str:
    """A cache file named after everything that changes the probe's answer: the interpreter,
    its torch installation, the device asked for, the visible devices, this boot, what loads
    a PrivateUse1 backend at start-up (tests/emu's autoload: XFERBENCH_EMU, PYTHONPATH), and
    the probe's own fields (a checkout with other fields would misread the file)."""
    torch_spec = importlib.util.find_spec("torch")
    torch_dir = os.path.dirname(torch_spec.origin) if torch_spec and torch_spec.origin else ""
    try:
        torch_stamp = str(os.stat(torch_dir).st_mtime_ns) if torch_dir else ""
        with open("/proc/sys/kernel/random/boot_id") as fh:
            boot = fh.read().strip()
    except OSError:
        boot = torch_stamp = ""
    fields = ",".join(f.name for f in dataclasses.fields(Capabilities))
    key = "\0".join([os.path.abspath(sys.executable), torch_dir, torch_stamp, spec, boot, fields,
                     *(os.environ.get(v, "") for v in (
                         "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                         "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "XFERBENCH_EMU",
                         "XFERBENCH_EMU_DEVICES",
                         "PYTHONPATH"))])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"xferbench-{os.getuid()}",
                        f"probe-{digest}.json")


def _probe_in_child(spec: str, path: str) -> str:
    """The probe's JSON, from a child process that imports torch once; cached at ``path``.
    This process (asv's discovery or its fork server) must never import torch, let alone
    initialise a device that the children it forks then use."""
    proc = subprocess.run([sys.executable, "-c", _PROBE_CODE, spec], text=True,
                          capture_output=True, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"xferbench: the device probe failed: {last}")
    raw = proc.stdout.strip().splitlines()[-1]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(raw)
    os.replace(tmp, path)
    return raw


def _probe() -> tuple[str, Capabilities]:
    raw = os.environ.get("XFERBENCH_PROBE")
    if not raw:
        spec = os.environ.get("XFERBENCH_DEVICE", "auto")
        path = _probe_cache_path(spec)
        try:
            with open(path, encoding="utf-8") as fh:
                raw = fh.read()
            json.loads(raw)
        except (OSError, ValueError):
            raw = None
        raw = raw or _probe_in_child(spec, path)
    data = json.loads(raw)
    return data["device"], Capabilities(**data["capabilities"])


#: The device every benchmark runs on (XFERBENCH_DEVICE, default "auto") and what it can do.
DEVICE, CAPS = _probe()
#: Quick mode (`xferbench run --quick`), resolved once for this process at its edge: every
#: benchmark hands its practice ``spec(...)``, and nothing below reads the environment for it.
QUICK = quick()


#: This class process's share of `xferbench run --budget` (_budget.py): each combination at
#: its default spec or cut, or (--cap) its sampling capped at its share of what is left.
BUDGET = _budget.Budget()
#: Grid.measure's key for text beside its numbers, {track method: one line}: the sidecar's
#: ``observations`` keep it (asv stores numbers only).
TEXTS = "_texts"
#: A value's key for how its figure was read (``Measurement.diagnostics``): Grid moves it
#: out of the value asv gets, into the sidecar's ``diagnostics``.
DIAGNOSTICS = "_diagnostics"


def spec(base: MeasureSpec = DEFAULT_SPEC) -> MeasureSpec:
    """``base`` as this process measures it: scaled down in quick mode, and under ``--budget
    --cap`` its sampling capped at the current combination's share of the class's time."""
    return BUDGET.spec(base.for_quick() if QUICK else base)


def skipped(params: Sequence[Sequence[Any]], reason: Callable[..., str | None]) -> list[tuple]:
    """The parameter combinations for which ``reason(*combo)`` gives a reason to skip."""
    return [combo for combo in itertools.product(*params) if reason(*combo)]


def skip_when(params: Sequence[Sequence[Any]], reason: Callable[..., str | None]) -> Callable:
    """asv's ``skip_for_params`` for every combination ``reason(*combo)`` names, the reason
    kept on the method: ``xferbench run`` records each skipped combination with its reason,
    and ``Grid`` measures only what some method will report. (asv's ``skip_benchmark_if``
    would drop the benchmark from the results without a word.)"""
    def decorate(func: Callable) -> Callable:
        func = skip_for_params(skipped(params, reason))(func)
        func.xferbench_skip_reason = reason
        return func

    return decorate


class NoSamples(RuntimeError):
    """A value with no samples: the combination fails with this reason (asv would store an
    empty sample list as a null that reads as measured)."""


def asv_samples(samples: Sequence[float], number: int = 1, what: str = "value") -> dict[str, Any]:
    """A track_ value asv stores like a timing: median, quartiles and, with
    --record-samples, the samples themselves (asv parses {"samples", "number"} this way).
    No samples is no value: NoSamples, naming ``what``."""
    if not samples:
        raise NoSamples(f"{what}: no samples were taken")
    return {"samples": [float(x) for x in samples], "number": int(number)}


def measured(m: Any, clock: str | None = None) -> dict[str, Any]:
    """A Measurement's samples of ``clock`` (its own clock by default) as asv_samples, with
    how they were read (DIAGNOSTICS, for the sidecar)."""
    clock = clock or m.primary_clock
    value = asv_samples(m.samples(clock), m.calls_per_sample_of(clock),
                        f"{m.spec.label or 'the measurement'} on {clock} (stopped: {m.stop})")
    return {**value, DIAGNOSTICS: m.diagnostics(clock)}


class NoFigure(Exception):
    """Raised by a class's measure(): the combination ran but gives no figure, for the reason
    given (asv records it as skipped, the sidecar says why)."""


class Skip:
    """A value that one method of a combination does not have, with the reason: the other
    methods keep theirs, and asv records this one as skipped (``Grid.setup``)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def device_time(m: Any) -> dict[str, Any] | Skip:
    """``m``'s device-time samples, or a Skip saying why there are none where the device's
    clock could not be read (a call that could not be held: the measurement fell back to the
    completion clock, whose figure another method reports): the machine's answer, not a
    failure of the suite."""
    why = m.extra.get("device_clock_unavailable")
    if not m.device_s and why:
        return Skip(f"no device time here: {why}")
    return measured(m, "device_s")


class _Values(dict):
    """A combination's values; a method skipped for it raises asv's skip, with the reason."""

    def __init__(self, values: dict[str, Any], skips: dict[str, str]) -> None:
        super().__init__(values)
        self.skips = skips

    def __missing__(self, key: str) -> Any:
        if key in self.skips:
            # raised by a track method: asv skips it (NaN) for SkipNotImplemented only; a
            # plain NotImplementedError is a skip in setup() alone, here a failure
            raise SkipNotImplemented(self.skips[key])
        raise KeyError(key)


def grid_timeout(params: Sequence[Sequence[Any]], reason: Callable[..., str | None],
                 budget_s: float) -> float:
    """asv's timeout for a class's setup_cache: every combination that runs, each allowed its
    measure() budget (``budget_s``) and COMBINATION_ALLOWANCE_S besides."""
    runs = sum(1 for combo in itertools.product(*params) if not reason(*combo))
    return 60 + runs * (budget_s + COMBINATION_ALLOWANCE_S)


class _CombinationTimeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _CombinationTimeout


class Grid:
    """Base of a benchmark class measured as a whole grid in one process.

    A subclass declares ``params``/``param_names`` and ``measure(*combo)``, which returns
    ``{track method name: value}`` for one combination, marks each ``track_*`` method with
    ``skip_when`` where combinations are skipped at discovery (only the capability probe, no
    torch), returns ``self.measure_grid()`` from its ``setup_cache`` (asv keys a cache by the
    function's source line, so each class writes its own) and ``self.values[name]`` from each
    ``track_*`` method.
    """

    params: tuple = ()
    param_names: list[str] = []
    processes = 1  # one asv round: the grid is measured once
    timeout = 60  # a track_ call only looks its value up
    #: How many measure() calls one combination makes: its budget share is split among them.
    measurements = 1
    #: The spec those measurements use by default (DEFAULT_SPEC, or the practices' BENCH_SPEC).
    base_spec = DEFAULT_SPEC
    #: The headline combinations, measured first, as {parameter: value} patterns (a
    #: combination matches a pattern where it has each value the pattern names; {} matches
    #: every one): those the claims and the headlines read, which
    #: tests/test_budget_plan.py holds against both lists. A class they do not read names the
    #: figures it is about.
    first: tuple[dict[str, str], ...] = ()

    @classmethod
    def headline(cls, combo: Sequence[Any]) -> bool:
        """Whether ``combo`` is one of the class's headline combinations (``first``)."""
        named = dict(zip(cls.param_names, (str(v) for v in combo)))
        return any(all(named.get(k) == str(v) for k, v in p.items()) for p in cls.first)

    @classmethod
    def measurements_of(cls, combo: Sequence[Any]) -> int:
        """How many measure() calls ``combo`` makes (``measurements`` unless a class says)."""
        return cls.measurements

    @classmethod
    def data_s(cls, combo: Sequence[Any]) -> float:
        """What building and checking ``combo``'s data costs beside its sampling: by the
        bytes of its size parameter (``_budget.data_s``; none where it has no size)."""
        names = list(cls.param_names)
        size = str(combo[names.index("size")]) if "size" in names else ""
        return _budget.data_s(parse_size(size) if size[:1].isdigit() else 0)

    @classmethod
    def combination_s(cls, combo: Sequence[Any]) -> float:
        """What ``combo`` is planned to cost at its default spec: the worst case of its
        sampling budgets, or what scripts/grid-time measured where that is more (costs.json),
        plus its data (``data_s``). ``xferbench run --budget`` plans with these, and a class
        cuts a combination that no longer fits before its deadline."""
        spec = cls.base_spec.for_quick() if QUICK else cls.base_spec
        sampling = _budget.sampling_s(spec, cls.measurements_of(combo))
        return sampling + _budget.work_s(cls.__name__, sampling) + cls.data_s(combo)

    def measure(self, *combo: Any) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def methods(cls) -> dict[str, Callable[..., str | None] | None]:
        """{track method name: its skip reason function, or None}."""
        return {name: getattr(getattr(cls, name), "xferbench_skip_reason", None)
                for name in sorted(dir(cls)) if name.startswith("track_")}

    @classmethod
    def reasons(cls, combo: Sequence[Any]) -> dict[str, str | None]:
        """{track method name: why ``combo`` is skipped for it, or None where it runs}."""
        return {name: (reason(*combo) if reason else None)
                for name, reason in cls.methods().items()}

    @classmethod
    def combinations(cls) -> list[tuple]:
        """The combinations measured here: those some track method reports."""
        return [c for c in itertools.product(*cls.params)
                if any(r is None for r in cls.reasons(c).values())]

    def measure_grid(self) -> dict[tuple, dict[str, Any]]:
        """Every combination that runs here, measured in turn, the headline ones first.

        Returns {combo: {"values": {...}, "skips": {method: reason}, "capped": reason,
        "diagnostics": {method: how its figure was read}}}, or
        {combo: {"skip": reason}} (does not fit, or cut by the run's budget), or
        {combo: {"error": text}}; progress goes to XFERBENCH_PROGRESS."""
        # "bench_copies.Copy", as asv names it (without the benchmarks package)
        name = f"{type(self).__module__.split('.', 1)[-1]}.{type(self).__name__}"
        combos = self.combinations()
        combos = _budget.headline_first(combos, [self.headline(c) for c in combos])
        out: dict[tuple, dict[str, Any]] = {}
        if not combos:
            return out  # nothing to measure: no torch import, no device initialisation
        import torch  # this class's one torch import: its whole grid is measured here

        device = resolve_device(DEVICE)
        baseline = memory_allocated(device)  # what the device held before the first case
        progress = _Progress(name, len(combos), executable=sys.executable,
                             torch=torch.__version__)
        previous = signal.signal(signal.SIGALRM, _alarm)
        try:
            for i, combo in enumerate(combos):
                started, measuring = time.monotonic(), measuring_s()
                # a class with no number yet keeps trying past its time, within MAX_OVERRUNS
                unsaved = not any(e.get("values") for e in out.values())
                cut = BUDGET.before(self.combination_s(combo), len(combos) - i,
                                    self.measurements_of(combo), first=unsaved)
                out[combo] = {"skip": cut} if cut else self._measure_one(combo)
                if not cut:
                    release_memory(device)
                    if (memory_allocated(device) or 0) > (baseline or 0):
                        release_memory(device, thorough=True)  # a cycle held a tensor
                progress.report(combo, out[combo], time.monotonic() - started,
                                measuring_s() - measuring)
        finally:
            signal.signal(signal.SIGALRM, previous)
            progress.close()
        return out

    def _measure_one(self, combo: tuple) -> dict[str, Any]:
        """One combination's entry: its values (a Skip moved to "skips"), and its cap."""
        signal.setitimer(signal.ITIMER_REAL, COMBINATION_TIMEOUT_S)
        try:
            values = self.measure(*combo)
            entry: dict[str, Any] = {
                "values": {k: v for k, v in values.items() if not isinstance(v, Skip)}}
            skips = {k: v.reason for k, v in values.items() if isinstance(v, Skip)}
            if skips:
                entry["skips"] = skips
            read = {k: v.pop(DIAGNOSTICS) for k, v in entry["values"].items()
                    if isinstance(v, dict) and DIAGNOSTICS in v}
            if read:
                entry["diagnostics"] = read  # asv gets the samples alone
            if BUDGET.capped:
                entry["capped"] = BUDGET.capped
            return entry
        except (DoesNotFit, _budget.Cut, NoFigure) as exc:
            return {"skip": str(exc)}
        except _CombinationTimeout:
            return {"error": f"timed out after {COMBINATION_TIMEOUT_S} s"}
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def setup(self, cache: dict[tuple, dict[str, Any]], *combo: Any) -> None:
        entry = cache.get(tuple(combo))
        if entry is None:
            raise NotImplementedError("not measured in this run")
        if "skip" in entry:
            raise NotImplementedError(entry["skip"])  # asv's skip: stored as NaN
        if "error" in entry:
            raise RuntimeError(entry["error"])  # this combination's failure, not the class's
        self.values = _Values(entry["values"], entry.get("skips") or {})


class _Progress:
    """One ProgressLine per measured combination into XFERBENCH_PROGRESS (``xferbench run``
    prints them as they come); nothing when it is unset."""

    def __init__(self, name: str, total: int, *, executable: str, torch: str) -> None:
        self.name, self.total, self.done = name, total, 0
        path = os.environ.get("XFERBENCH_PROGRESS")
        self.fh = open(path, "a", encoding="utf-8", buffering=1) if path else None
        # the interpreter and torch that measure: xferbench run checks them against its own
        self._write(ProgressLine("start", name, 0, total, executable=executable, torch=torch))

    def report(self, combo: tuple, entry: dict[str, Any], seconds: float,
               measuring: float = 0.0) -> None:
        """One combination: its status, seconds (``measuring`` of them inside measure()),
        values, the methods it skipped and its cap, each with the reason."""
        self.done += 1
        status = SKIPPED if "skip" in entry else FAILED if "error" in entry else MEASURED
        why = (entry.get("skip") or entry.get("error") or "").splitlines()[:1]
        texts = entry.get("values", {}).get(TEXTS) or {}
        self._write(ProgressLine(
            "combination", self.name, self.done, self.total,
            params=tuple(str(p) for p in combo), status=status, seconds=round(seconds, 3),
            why="".join(why), values=tuple(_summary(entry.get("values", {})).items()),
            texts=tuple(sorted((str(k), str(v)) for k, v in texts.items())),
            skips=tuple(sorted((entry.get("skips") or {}).items())),
            capped=entry.get("capped", ""), measuring_s=round(measuring, 3),
            diagnostics=tuple(sorted((entry.get("diagnostics") or {}).items()))))

    def _write(self, line: ProgressLine) -> None:
        if self.fh is not None:
            self.fh.write(json.dumps(line.to_dict()) + "\n")

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def _summary(values: dict[str, Any]) -> dict[str, float]:
    """The median of each value (samples or a number), for the progress line."""
    out = {}
    for name, value in values.items():
        if isinstance(value, dict) and value.get("samples"):  # TEXTS' dict has none
            xs = sorted(value["samples"])
            out[name] = xs[len(xs) // 2]
        elif isinstance(value, (int, float)):
            out[name] = float(value)
    return out


def describe(files: Sequence[str]) -> list[dict[str, Any]]:
    """Each Grid class of ``files`` (module names under benchmarks/), in file and definition
    order: its track methods, how many combinations it measures here, every combination
    skipped at discovery with its reason, and per method the combinations to select in asv
    (those that run; for a method with none, its first, which asv then records as skipped).
    ``xferbench run`` reads this (``python -m benchmarks._asv FILE...``) to run the suite class
    by class, select what runs, count progress and record why each skipped combination has no
    number; what its combinations are planned to cost (``Grid.combination_s``: the headline
    ones' sum, the rest's, their mean), how many are headline ones, the class's measured
    start (costs.json), per method the
    combinations it measures, as text, for a run's budget to cut, and its values and units
    (for a claims table). Needs no torch: the probe is the environment's."""
    out = []
    # run as __main__, this module is not the benchmarks._asv that the suite imports
    base = importlib.import_module(f"{__package__}._asv").Grid
    real_accelerator = CAPS.device != "cpu" and not CAPS.emulated  # it initialises a device
    for file in files:
        module = importlib.import_module(f"{__package__}.{file}")
        for name, cls in vars(module).items():
            if not (isinstance(cls, type) and issubclass(cls, base) and cls is not base
                    and cls.__module__ == module.__name__):
                continue
            skips: dict[str, list[list[str]]] = {m: [] for m in cls.methods()}
            select: dict[str, list[list[str]]] = {m: [] for m in cls.methods()}
            runs: dict[str, list[list[str]]] = {m: [] for m in cls.methods()}
            combos = list(itertools.product(*cls.params))
            for combo in combos:
                for method, why in cls.reasons(combo).items():
                    if why:
                        skips[method].append([*(str(p) for p in combo), why])
                    else:  # as asv names a combination: repr of each value
                        select[method].append([repr(p) for p in combo])
                        runs[method].append([str(p) for p in combo])
            for chosen in select.values():
                if not chosen and combos:
                    chosen.append([repr(p) for p in combos[0]])
            measured = cls.combinations()
            first = [cls.headline(c) for c in measured]
            costs = [cls.combination_s(c) for c in measured]
            out.append({"file": file, "class": name, "param_names": list(cls.param_names),
                        "params": [[str(v) for v in values] for values in cls.params],
                        "units": {m: getattr(getattr(cls, m), "unit", getattr(cls, "unit", "?"))
                                  for m in cls.methods()},
                        "methods": list(cls.methods()), "measured": len(measured),
                        "headline": sum(first),
                        "headline_s": sum(s for s, yes in zip(costs, first) if yes),
                        "rest_s": sum(s for s, yes in zip(costs, first) if not yes),
                        "combination_s": sum(costs) / len(costs) if costs else 0.0,
                        "estimate_s": sum(costs),
                        "start_s": _budget.start_s(name, real_accelerator), "runs": runs,
                        "combinations": len(list(itertools.product(*cls.params))),
                        "skips": skips, "select": select})
    return out


def bench_files() -> list[str]:
    """The suite's files, by name: every ``bench_*.py`` beside this module."""
    here = os.path.dirname(os.path.abspath(__file__))
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(here, "bench_*.py")))


if __name__ == "__main__":  # python -m benchmarks._asv [FILE...]: every file by default
    print(json.dumps(describe(sys.argv[1:] or bench_files())))

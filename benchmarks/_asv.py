"""Shared asv plumbing: the device under test and its capability probe, skip lists, and the
grid runner that measures every combination of a benchmark class in one process.

One process per class, not per combination: asv runs each parameter combination in a process
of its own, and each would import torch and initialise the device (2.5-4 s on a GPU machine,
the most of the suite's time). So each class measures its whole grid in ``setup_cache``, which
asv runs once per class and environment, in one process, and returns plain numbers keyed by
parameters; the ``track_*`` methods, which asv still runs per combination (forked from a
server that never imported torch), only look their number up. asv stays the runner and the
store: the same results files, raw samples included, and ``asv run -b``, ``asv publish`` and
``xferbench run`` work as before. A combination that fails or does not fit is recorded as that
combination's failure or skip (``Grid.setup`` raises for it alone), never the class's.

Nothing here imports torch at import time: the probe comes from XFERBENCH_PROBE (set by
``xferbench run``), else from a file cached per interpreter and torch installation, else from
a child process that imports torch once and fills that cache.
"""

from __future__ import annotations

import dataclasses
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

from asv_runner.benchmarks.mark import skip_for_params

from xferbench.device_memory import DoesNotFit, memory_allocated, release_memory
from xferbench.devices import Capabilities, resolve_device
from xferbench.practices import quick
from xferbench.results.runrecords import FAILED, MEASURED, SKIPPED, ProgressLine
from xferbench.spec import DEFAULT_SPEC, QUICK_SCALE, MeasureSpec

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


#: The moment (time.time()) this class must be done by, from `xferbench run --budget`
#: (XFERBENCH_DEADLINE): the grid then caps each combination's sampling at its share of what
#: is left and cuts, with a reason, the combinations it can no longer fit, so that the class
#: ends in time and asv saves every number it finished (a killed class saves none).
DEADLINE = float(os.environ.get("XFERBENCH_DEADLINE") or 0) or None
#: Of a combination's share of the time left, this much goes to sampling (measure()'s
#: max_time_s over the class's measurements per combination); building, warming up and
#: verifying take the rest.
SAMPLING_SHARE = 0.6
#: Below this many seconds left for a combination it is cut, not measured.
MIN_COMBINATION_S = 1.0
#: The sampling cap of the combination being measured (set by Grid.measure_grid).
_CAP: dict[str, float] = {}
#: Grid.measure's key for text beside its numbers, {track method: one line}: the sidecar's
#: ``observations`` keep it (asv stores numbers only).
TEXTS = "_texts"


def spec(base: MeasureSpec = DEFAULT_SPEC) -> MeasureSpec:
    """``base`` as this process measures it: scaled down in quick mode, and its sampling
    capped at the current combination's share of the class's budget (``DEADLINE``)."""
    out = base.for_quick() if QUICK else base
    cap = _CAP.get("max_time_s")
    if cap is not None and cap < out.max_time_s:
        out = out.replace(max_time_s=cap, min_time_s=min(out.min_time_s, cap),
                          warmup_s=min(out.warmup_s, cap / 4))
    return out


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


def asv_samples(samples: Sequence[float], number: int = 1) -> dict[str, Any]:
    """A track_ value asv stores like a timing: median, quartiles and, with
    --record-samples, the samples themselves (asv parses {"samples", "number"} this way)."""
    return {"samples": [float(x) for x in samples], "number": int(number)}


def measured(m: Any, clock: str | None = None) -> dict[str, Any]:
    """A Measurement's samples of ``clock`` (its own clock by default) as asv_samples."""
    return asv_samples(m.samples(clock), m.calls_per_sample)


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
    #: Seconds one combination takes on an NVIDIA H200 at the default budgets (build, warm-up,
    #: sampling, verification): an estimate from reading the class, not a measurement.
    #: ``xferbench run --budget`` shares its time among the classes by these.
    seconds_per_combination = 1.0

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
        """Every combination that runs here, measured in turn: {combo: {"values": {...}}, or
        {"skip": reason} (does not fit), or {"error": text}}; progress to XFERBENCH_PROGRESS."""
        # "bench_copies.Copy", as asv names it (without the benchmarks package)
        name = f"{type(self).__module__.split('.', 1)[-1]}.{type(self).__name__}"
        combos = self.combinations()
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
                started = time.monotonic()
                cut = self._cap(len(combos) - i)
                if cut:
                    out[combo] = {"skip": cut}
                    progress.report(combo, out[combo], 0.0)
                    continue
                signal.setitimer(signal.ITIMER_REAL, COMBINATION_TIMEOUT_S)
                try:
                    out[combo] = {"values": self.measure(*combo)}
                except DoesNotFit as exc:
                    out[combo] = {"skip": str(exc)}
                except _CombinationTimeout:
                    out[combo] = {"error": f"timed out after {COMBINATION_TIMEOUT_S} s"}
                except Exception as exc:
                    out[combo] = {"error": f"{type(exc).__name__}: {exc}\n"
                                           f"{traceback.format_exc()}"}
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                release_memory(device)
                if (memory_allocated(device) or 0) > (baseline or 0):
                    release_memory(device, thorough=True)  # a cycle held a tensor: collect it
                progress.report(combo, out[combo], time.monotonic() - started)
        finally:
            signal.signal(signal.SIGALRM, previous)
            progress.close()
        return out

    def _cap(self, remaining: int) -> str | None:
        """Under a deadline: set the next combination's sampling cap from the time left, or
        say why it is cut (no time left for it). Without one: no cap, no cut."""
        _CAP.clear()
        if DEADLINE is None:
            return None
        left = DEADLINE - time.time()
        if left < MIN_COMBINATION_S:
            return (f"cut: the run's budget (--budget) left {max(left, 0):.0f} s for this class "
                    f"and its {remaining} remaining combination(s)")
        _CAP["max_time_s"] = max(0.01, left / remaining * SAMPLING_SHARE / self.measurements)
        return None

    def setup(self, cache: dict[tuple, dict[str, Any]], *combo: Any) -> None:
        entry = cache.get(tuple(combo))
        if entry is None:
            raise NotImplementedError("not measured in this run")
        if "skip" in entry:
            raise NotImplementedError(entry["skip"])  # asv's skip: stored as NaN
        if "error" in entry:
            raise RuntimeError(entry["error"])  # this combination's failure, not the class's
        self.values = entry["values"]


class _Progress:
    """One ProgressLine per measured combination into XFERBENCH_PROGRESS (``xferbench run``
    prints them as they come); nothing when it is unset."""

    def __init__(self, name: str, total: int, *, executable: str, torch: str) -> None:
        self.name, self.total, self.done = name, total, 0
        path = os.environ.get("XFERBENCH_PROGRESS")
        self.fh = open(path, "a", encoding="utf-8", buffering=1) if path else None
        # the interpreter and torch that measure: xferbench run checks them against its own
        self._write(ProgressLine("start", name, 0, total, executable=executable, torch=torch))

    def report(self, combo: tuple, entry: dict[str, Any], seconds: float) -> None:
        self.done += 1
        status = SKIPPED if "skip" in entry else FAILED if "error" in entry else MEASURED
        why = (entry.get("skip") or entry.get("error") or "").splitlines()[:1]
        texts = entry.get("values", {}).get(TEXTS) or {}
        self._write(ProgressLine(
            "combination", self.name, self.done, self.total,
            params=tuple(str(p) for p in combo), status=status, seconds=round(seconds, 3),
            why="".join(why), values=tuple(_summary(entry.get("values", {})).items()),
            texts=tuple(sorted((str(k), str(v)) for k, v in texts.items()))))

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
    number; its estimated seconds (``Grid.seconds_per_combination``, quick-scaled), per method
    what it measures (for a budget to cut), its values and units (for a claims table). Needs no
    torch: the probe is the environment's."""
    out = []
    # run as __main__, this module is not the benchmarks._asv that the suite imports
    base = importlib.import_module(f"{__package__}._asv").Grid
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
            scale = QUICK_SCALE if QUICK else 1.0
            out.append({"file": file, "class": name, "param_names": list(cls.param_names),
                        "params": [[str(v) for v in values] for values in cls.params],
                        "units": {m: getattr(getattr(cls, m), "unit", getattr(cls, "unit", "?"))
                                  for m in cls.methods()},
                        "methods": list(cls.methods()), "measured": len(measured),
                        "estimate_s": len(measured) * cls.seconds_per_combination * scale,
                        "runs": runs,
                        "combinations": len(list(itertools.product(*cls.params))),
                        "skips": skips, "select": select})
    return out


if __name__ == "__main__":
    print(json.dumps(describe(sys.argv[1:])))

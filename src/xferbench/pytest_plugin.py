"""pytest plugin: the ``xfer_benchmark`` fixture times a call with ``measure()`` (device events
on an accelerator, the host clock on a CPU) and files the samples as a pytest-benchmark result,
so that ``--benchmark-json``, ``-autosave``, ``-compare`` and ``-compare-fail`` work unchanged.
The ``xfer_audit`` fixture audits the test (``xferbench.audit()`` on ``--xfer-device``), so a
test can budget what a step copies and waits for: ``assert xfer_audit.per_step.syncs <= 1``.

pytest loads this module in every run of an environment where xferbench is installed (entry
point ``pytest11``). Loading it registers options and a marker and nothing else: torch loads
only when a test uses the fixture or ``--xfer-device`` names a device (which is then checked
before any test runs), pytest-benchmark only when a result is filed.
"""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from .auditing.auditor import Audit
from .devices import Device, resolve_device
from .errors import XferbenchError
from .flags import env_flag
from .measurement import CLOCKS, Measurement, Stats
from .metadata import collect
from .spec import DEFAULT_SPEC, MeasureSpec
from .timing import measure

if TYPE_CHECKING:
    import torch

# pytest-benchmark loads inside the functions that file a result: it is a test extra, and
# this module loads in every pytest run of an environment that has xferbench.

#: Budgets of one benchmark, in seconds: the package's one set of defaults (DEFAULT_SPEC):
#: measure()'s stop rule samples for at least MIN_TIME_S and at most MAX_TIME_S
#: (pytest-benchmark's own --benchmark-max-time is 1 s too).
MIN_TIME_S = DEFAULT_SPEC.min_time_s
MAX_TIME_S = DEFAULT_SPEC.max_time_s

#: What the ``xfer_benchmark`` marker and the fixture's attributes may set.
MARKER_KEYS = ("nbytes", "clock", "min_time", "max_time")

#: The ``clock`` recorded in extra_info, by the Measurement field the samples come from. On a
#: CPU every clock is the host's (the call is synchronous), named "host".
CLOCK_NAMES = {
    "device_s": "device_events",
    "completion_s": "host_completion",
    "enqueue_s": "host_enqueue",
}
HOST_CLOCK = "host"

#: How the clock is described in the terminal summary.
CLOCK_TEXT = {
    "device_events": "device timing events around each call",
    "host_completion": "host clock from the call to the end of its device work (synchronised)",
    "host_enqueue": "host clock for how long the call holds the Python thread",
    HOST_CLOCK: "host clock (time.perf_counter_ns) over blocks of calls",
}

#: How a group's ``{clock}`` reads (``@pytest.mark.benchmark(group="... {clock}")``): the
#: clock the samples were read on, so that a CPU's group never says "device time".
CLOCK_IN_GROUP = {
    "device_events": "device time",
    "host_completion": "host clock until done",
    "host_enqueue": "host clock until the call returns",
    HOST_CLOCK: "host clock (no device)",
}


def _seconds(text: str) -> float:
    """argparse type of the budget options: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: give a finite number of seconds above 0, e.g. 0.5")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xferbench", "xferbench: the xfer_benchmark fixture")
    group.addoption(
        "--xfer-device", metavar="DEVICE", default="auto",
        help="device xfer_benchmark times on: auto (the accelerator PyTorch reports, else the "
             "CPU), cpu, cuda, cuda:N, xpu, mps, or the name of a registered PrivateUse1 backend "
             "(e.g. emu). Default: auto",
    )
    group.addoption(
        "--xfer-min-time", metavar="SECONDS", type=_seconds, default=MIN_TIME_S,
        help=f"least sampling time per xfer_benchmark; sampling stops after it once the "
             f"median is stable (IQR 3%% of the median). Default: {MIN_TIME_S}",
    )
    group.addoption(
        "--xfer-max-time", metavar="SECONDS", type=_seconds, default=MAX_TIME_S,
        help=f"most sampling time per xfer_benchmark (warm-up not counted). Default: {MAX_TIME_S}",
    )


@dataclass
class Settings:
    """The session's options, the device resolved on first use, and what was timed."""

    device_spec: str
    min_time_s: float
    max_time_s: float
    #: XFERBENCH_QUICK, read once when the session starts: budgets scaled down for a smoke run.
    quick: bool = False
    _device: Device | None = None
    _software: dict[str, Any] | None = None
    #: (node id, extra_info) of every benchmark filed, for the terminal summary.
    filed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def device(self) -> Device:
        if self._device is None:
            self._device = resolve_device(self.device_spec)
        return self._device

    def software(self) -> dict[str, Any]:
        """torch, CUDA/HIP, driver and GPU of this run, collected once per session."""
        if self._software is None:
            meta = collect(self.device()).to_dict()
            keys = ("xferbench", "torch", "cuda", "hip", "driver", "gpu_name", "torch_threads",
                    "emulated")
            self._software = {k: meta.get(k) for k in keys}
        return self._software


_SETTINGS = pytest.StashKey[Settings]()
_AUDIT = pytest.StashKey[Audit]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "xfer_benchmark(nbytes=None, clock=None, min_time=None, max_time=None): settings of "
        "the xfer_benchmark fixture in this test (bytes moved per call, measure() clock, "
        "budgets in seconds)",
    )
    try:
        quick = env_flag("XFERBENCH_QUICK")
    except XferbenchError as exc:
        raise pytest.UsageError(str(exc)) from None
    settings = Settings(
        device_spec=config.getoption("xfer_device"),
        min_time_s=config.getoption("xfer_min_time"),
        max_time_s=config.getoption("xfer_max_time"),
        quick=quick,
    )
    if settings.min_time_s > settings.max_time_s:
        raise pytest.UsageError(
            f"--xfer-min-time {settings.min_time_s} is above --xfer-max-time "
            f"{settings.max_time_s}: the least sampling time must fit in the most"
        )
    if settings.device_spec.strip().lower() != "auto":
        # A device named on the command line is checked now (this imports torch), so that an
        # absent one is a usage error before any test runs; "auto" always exists.
        try:
            settings.device()
        except XferbenchError as exc:
            raise pytest.UsageError(f"--xfer-device: {exc}") from None
    config.stash[_SETTINGS] = settings


def pytest_terminal_summary(terminalreporter: Any) -> None:
    settings = terminalreporter.config.stash.get(_SETTINGS, None)
    if settings is None or not settings.filed:
        return
    terminalreporter.section("xferbench", sep="-")
    clocks = sorted({info["clock"] for _, info in settings.filed})
    device = settings.device().name
    for clock in clocks:
        terminalreporter.write_line(
            f"xfer_benchmark on {device}: {CLOCK_TEXT.get(clock, clock)} "
            f"(extra_info clock={clock}); times are seconds per call"
        )
    for nodeid, info in settings.filed:
        for warning in info.get("warnings", ()):
            terminalreporter.write_line(f"WARNING: {nodeid}: {warning}", yellow=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Checked before any fixture is set up, as pytest-benchmark checks its own marker.
    marker = item.get_closest_marker("xfer_benchmark")
    if marker is None:
        return
    unknown = [name for name in marker.kwargs if name not in MARKER_KEYS]
    if marker.args or unknown:
        what = f"option {unknown[0]!r}" if unknown else "positional arguments"
        raise XferbenchError(
            f"xfer_benchmark marker has no {what}: use {', '.join(MARKER_KEYS)} as keywords"
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    report = yield
    audit = item.stash.get(_AUDIT, None)
    if report.when == "call" and report.failed and audit is not None:
        # a broken budget shows what the audit saw, line by line
        try:
            text = str(audit)
        except Exception as exc:  # the report must never hide the test's own failure
            text = f"the audit's report could not be made: {type(exc).__name__}: {exc}"
        report.sections.append(("xferbench audit", text))
    if report.when == "call" and report.failed:
        # A test that fails after timing (a copy that verifies wrong) keeps its number out
        # of pytest-benchmark's JSON and saved runs, as a call that raised does.
        fixture = getattr(item, "funcargs", {}).get("xfer_benchmark")
        if isinstance(fixture, XferBenchmark):
            fixture._benchmark.has_error = True
    return report


@pytest.fixture
def xfer_benchmark(request: pytest.FixtureRequest, benchmark: Any) -> XferBenchmark:
    """``xfer_benchmark(fn, *args, **kwargs)`` times ``fn`` with xferbench's ``measure()`` on
    ``--xfer-device`` and returns ``fn``'s result; the samples become this test's
    pytest-benchmark result. Declare the bytes a call moves with ``xfer_benchmark.nbytes = n``
    (or the ``xfer_benchmark`` marker) to get GB/s in extra_info.

    It builds on pytest-benchmark's ``benchmark`` fixture, so ``--benchmark-skip``, ``-only``
    and ``-disable``, ``@pytest.mark.benchmark(group=...)``, ``extra_info`` and the rule that
    a test benchmarks once behave as they do there.
    """
    settings = request.config.stash[_SETTINGS]
    marker = request.node.get_closest_marker("xfer_benchmark")
    return XferBenchmark(benchmark, settings, dict(marker.kwargs) if marker else {})


@pytest.fixture
def xfer_audit(request: pytest.FixtureRequest) -> Iterator[Audit]:
    """``xferbench.audit()`` running for the whole test, on ``--xfer-device``: a step ends at
    each optimizer step (or at ``xfer_audit.step()``). Budget what the test's steps copy and
    wait for: ``assert xfer_audit.per_step.syncs <= 1``,
    ``assert xfer_audit.per_step.h2d_pageable_bytes == 0``; ``xfer_audit.reset()`` forgets
    the test's setup. A failing test's report carries the audit's report.
    """
    settings = request.config.stash[_SETTINGS]
    # no sync debug cross-check: pytest owns the warnings of the test's call (it records
    # them), so the debug mode's warnings could not be counted there
    with Audit(device=settings.device(), sync_debug=False) as audit:
        request.node.stash[_AUDIT] = audit
        yield audit


class XferBenchmark:
    """The ``xfer_benchmark`` fixture's value; see the fixture for how it is used.

    ``nbytes``: bytes one call moves (GB/s = nbytes / median seconds, 10^9 bytes/s).
    ``clock``: the Measurement clock to read on an accelerator, "device_s" (the default),
    "completion_s" or "enqueue_s"; on a CPU the only clock is the host's and this is ignored.
    ``min_time`` / ``max_time``: this test's budgets in seconds (default: the options).
    ``measurement``: the Measurement of the call, once timed.

    Beyond pytest-benchmark's documented API this uses the fixture's ``_mode``, ``has_error``,
    ``disabled``, ``_add_stats`` and ``stats``, and ``pytest_benchmark.stats.Metadata(fixture,
    iterations, options)``: all present since pytest-benchmark 3.2, tested with 5.3.1.
    """

    def __init__(self, benchmark: Any, settings: Settings, marked: dict[str, Any]) -> None:
        self._benchmark = benchmark
        self._settings = settings
        self.nbytes: int | None = marked.get("nbytes")
        self.clock: str | None = marked.get("clock")
        self.min_time: float = marked.get("min_time", settings.min_time_s)
        self.max_time: float = marked.get("max_time", settings.max_time_s)
        self.measurement: Measurement | None = None

    @property
    def device(self) -> torch.device:
        """The ``torch.device`` calls are timed on (``--xfer-device``, resolved)."""
        return self._settings.device().torch()

    @property
    def extra_info(self) -> dict[str, Any]:
        """pytest-benchmark's ``extra_info`` of this test: add your own keys here."""
        return self._benchmark.extra_info

    @property
    def enabled(self) -> bool:
        """False under ``--benchmark-disable``: calls then run once, untimed."""
        return not self._benchmark.disabled

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        bench = self._benchmark
        if bench._mode:
            # Used before in this test (here or through `benchmark`): pytest-benchmark's own
            # FixtureAlreadyUsed, raised by its fixture, which also marks the result as failed.
            return bench(fn, *args, **kwargs)
        bench._mode = "xfer_benchmark(...)"
        try:
            return self._run(fn, args, kwargs)
        except Exception:
            # pytest-benchmark leaves a result whose fixture has_error out of every report.
            bench.has_error = True
            raise

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
        if self._benchmark.disabled:
            return fn(*args, **kwargs)
        dev = self._settings.device()
        call = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
        m = measure(call, self.spec(dev.is_accelerator), device=dev)
        # One more call, untimed, for the result (as pytest-benchmark does): the timed calls
        # drop theirs, so a caller's memory holds one result at a time.
        result = fn(*args, **kwargs)
        self.measurement = m
        self._file(m)
        return result

    def spec(self, accelerator: bool) -> MeasureSpec:
        """What this test's measurement is: its bytes, clock and budgets (quick-scaled when
        the session is quick)."""
        spec = DEFAULT_SPEC.replace(
            nbytes=self.nbytes, min_time_s=self.min_time, max_time_s=self.max_time,
            clock=self.clock if accelerator else None, label=self._benchmark.name,
        )
        return spec.for_quick() if self._settings.quick else spec

    def _file(self, m: Measurement) -> None:
        """Hand ``m`` to pytest-benchmark as this test's result: its samples, per call, are
        the data its statistics (min, median, iqr, ops, ...) and comparisons are made from."""
        from pytest_benchmark.stats import Metadata

        bench = self._benchmark
        info = result_info(m, self._settings.software())
        bench.extra_info.update(info)
        if bench.group and "{clock}" in bench.group:  # the group says what it was read on
            bench.group = bench.group.replace("{clock}", CLOCK_IN_GROUP[info["clock"]])
        options = result_options(m)
        meta = Metadata(bench, iterations=m.calls_per_sample_of(), options=options)
        for seconds in m.samples():
            meta.stats.update(seconds)
        # The session's list of results (what `benchmark` itself appends to), then the same
        # attribute pytest-benchmark sets on a fixture that has run.
        bench._add_stats(meta)
        bench.stats = meta
        self._settings.filed.append((bench.fullname, info))


def clock_name(m: Measurement) -> str:
    """The clock ``m``'s samples were read from, as recorded in extra_info."""
    if not m.device_s and not m.enqueue_s:  # the CPU: synchronous calls, one clock
        return HOST_CLOCK
    return CLOCK_NAMES[m.primary_clock]


def result_info(m: Measurement, software: dict[str, Any]) -> dict[str, Any]:
    """What goes into pytest-benchmark's extra_info for ``m``: clock, device, bytes and GB/s,
    the software it ran on, and the noise warnings."""
    info: dict[str, Any] = {
        "clock": clock_name(m),
        "clock_field": m.primary_clock,
        "device": m.device,
        "calls_per_sample": m.calls_per_sample_of(),
        "nbytes": m.nbytes,
        "gbps": m.gbps,
        "stop": m.stop,
        "warnings": list(m.warnings),
    }
    if m.device_s:
        # Every clock's median, so a figure read on one can be set beside the others.
        info["medians_s"] = {c: Stats.of(m.samples(c)).median for c in CLOCKS if m.samples(c)}
        info["stream_hold"] = m.extra.get("stream_hold")
    info.update(software)
    return info


def result_options(m: Measurement) -> dict[str, Any]:
    """pytest-benchmark's ``options`` of the result: how measure() was run (its spec)."""
    return {
        "timer": f"xferbench.measure:{m.primary_clock}",
        "min_time_s": m.spec.min_time_s,
        "max_time_s": m.spec.max_time_s,
        "target_iqr": m.target_iqr,
        "warmup_s": m.warmup_s,
        "quick": m.spec.quick,
    }

"""The whole input pipeline: a DataLoader (pin_memory off/on, 0 or 2 workers), the batch moved
blocking, non_blocking or prefetched on a side stream, and a small training step (fp32 or
autocast, eager or compiled), at two model sizes: ``small`` is input-bound on a GPU (the host
builds a batch more slowly than the device trains on it) and ``large`` is compute-bound.

Figures: seconds per step (samples/s = batch / seconds), the input-starvation share (the part
of each step in which the device waits for its batch: ``starvation_share``), the compile time
on its own, and seconds per step with ``model.to(device)`` called every step although the
model is already there ("move the model once").

Verified: every batch the step consumed is bit-identical to its host source, rebuilt in the
main process (``PipelineWorkload.verify`` captures them on the compute stream, right after the
step, so it checks what the step saw); and the parameters after one call equal those of a
reference call that moves canonical batches blocking, so every variant of one configuration
ends on the same parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..device_memory import DoesNotFit, check_fits
from ..devices import (
    Capabilities,
    Device,
    autocast_dtype,
    capabilities,
    new_stream,
    resolve_device,
    synchronize,
)
from ..errors import XferbenchError
from ..measurement import Measurement
from ..spec import DEFAULT_SPEC, MIN_SAMPLES, MeasureSpec
from ..timing import measure
from . import VerificationError, sweep
from .pipeline_data import (
    CLASSES,
    IMAGE_SHAPE,
    VOCAB,
    Direct,
    Prefetcher,
    SyntheticImages,
    expected_batch,
    open_loader,
)
from .pipeline_step import (
    ModelSize,
    Stamps,
    build_model,
    compile_first_step,
    starvation_share,
)

# torch loads inside the functions that need it: `import xferbench` stays free of it.

HOST_MEMORY = ("pageable", "pinned")  # the DataLoader's pin_memory=False / True
WORKERS = (0, 2)
MOVES = ("blocking", "non_blocking", "prefetch")
PRECISIONS = ("fp32", "amp")  # amp: autocast in devices.autocast_dtype's dtype
COMPILES = ("eager", "compiled")
#: Two sizes: ``small`` (a 128-wide MLP, about 0.4M parameters) is launch-bound on a GPU, so
#: the host's batches are what it waits for; ``large`` (8192 wide, 6 layers, about 360M
#: parameters, 70 GFLOP and about 7 GB of optimizer traffic per step) keeps a GPU busy for
#: milliseconds per step, longer than the host takes to build a batch.
MODEL_SIZES = {"small": ModelSize(width=128, depth=2), "large": ModelSize(width=8192, depth=6)}
#: Where the headline is quoted: the input-bound size.
INPUT_BOUND = "small"
BATCH = 32
STEPS = 8  # steps per timed call; the dataset holds exactly STEPS batches
SEED = 1234
#: Instrumented calls that give the starvation share, one sample each.
STARVATION_CALLS = 5
#: Steps per second are read on the host clock, one synchronise after each call.
PIPELINE_CLOCK = "completion_s"


def precisions() -> tuple[str, ...]:
    return PRECISIONS if sweep() == "full" else ("amp",)


def compiles() -> tuple[str, ...]:
    return COMPILES if sweep() == "full" else ("eager",)


@dataclass(frozen=True)
class PipelineCase:
    size: str  # a key of MODEL_SIZES
    host_memory: str = "pageable"
    workers: int = 0
    move: str = "blocking"
    precision: str = "amp"
    compile: str = "eager"
    batch: int = BATCH
    steps: int = STEPS

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("size", self.size, tuple(MODEL_SIZES)), ("host_memory", self.host_memory,
                                                      HOST_MEMORY),
            ("move", self.move, MOVES), ("precision", self.precision, PRECISIONS),
            ("compile", self.compile, COMPILES),
        ):
            if value not in allowed:
                raise XferbenchError(f"{name} {value!r} is not one of {', '.join(allowed)}")
        for name in ("workers", "batch", "steps"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (0 if name == "workers" else 1):
                raise XferbenchError(f"{name} {value!r} is not valid: give a whole number"
                                     f"{' >= 0' if name == 'workers' else ' > 0'}")

    @property
    def label(self) -> str:
        return (f"pipeline {self.size} {self.host_memory} workers={self.workers} {self.move} "
                f"{self.precision} {self.compile} b{self.batch}")


def pipeline_skip_reason(case: PipelineCase, caps: Capabilities) -> str | None:
    """Why ``case`` yields no number on a device with ``caps``; the capability probe only."""
    if caps.device == "cpu":
        if case.size == "large":
            return ("the large model is sized to keep an accelerator busy (360M parameters, "
                    "70 GFLOP a step): on the CPU each step takes seconds")
        if case.host_memory == "pinned":
            return "pinned host memory needs an accelerator"
        if case.move == "non_blocking":
            return "non_blocking needs an accelerator: on the CPU the move is a no-op"
        if case.move == "prefetch":
            return "prefetch needs side streams: only an accelerator has them"
        return None
    if case.size == "large" and caps.emulated:
        return (f"the large model is sized to keep an accelerator busy (70 GFLOP a step): on "
                f"{caps.device}, emulated on the host, its kernels run on the CPU for minutes")
    if case.host_memory == "pinned" and not caps.pinned_memory:
        return f"pinned host memory is not available on {caps.device}: {caps.reason}"
    if case.move == "prefetch" and not caps.side_streams:
        return f"prefetch needs side streams, which {caps.device} lacks: {caps.reason}"
    return None


def starvation_skip_reason(case: PipelineCase, caps: Capabilities) -> str | None:
    """The share needs stamps on the compute stream: timing events on an accelerator, the
    host clock on the CPU (where compute is synchronous, so the host's stamps are the
    device's)."""
    if caps.device != "cpu" and not caps.timing_events:
        return f"the starvation share needs timing events, which {caps.device} lacks"
    return pipeline_skip_reason(case, caps)


@dataclass
class PipelineWorkload:
    """A built pipeline. ``run()`` trains ``steps`` steps on the next ``steps`` batches of the
    loader's stream (no final synchronise); ``verify()`` checks a call from the initial
    parameters; ``close()`` ends the loader's workers."""

    case: PipelineCase
    device: Device
    source: Any  # Direct or Prefetcher
    model: Any
    step: Any  # step(batch): forward, loss, backward, optimizer step
    restart: Any  # back to the initial parameters and optimizer state
    params: Any  # the parameters now, as a list
    reference: list[Any]  # parameters after one call on canonical batches, on the host
    expected: list[dict[str, Any]]  # the steps' batches, built on the host
    dataset: Any
    amp_dtype: Any
    compile_s: float | None = None
    model_to_every_step: bool = False

    def run(self, *, stamps: Stamps | None = None, capture: list[Any] | None = None) -> None:
        tdev = self.device.torch()
        if stamps:
            stamps.start()
        for i in range(self.case.steps):
            batch = self.source.next()
            if stamps:
                stamps.ready(i)
            if self.model_to_every_step:
                self.model.to(tdev)  # the advice under test: a no-op move, every step
            self.step(batch)
            if capture is not None:  # queued after the step, on its stream: what it saw
                capture.append({k: v.clone() for k, v in batch.items()})
            if stamps:
                stamps.done(i)
            self.source.after_step()

    def verify(self) -> None:
        """One call from the initial parameters: each batch the steps consumed must equal its
        host source bit for bit, and the parameters must equal the reference call's."""
        import torch

        self.restart()
        seen: list[dict[str, Any]] = []
        self.run(capture=seen)
        synchronize(self.device)
        for j, (got, want) in enumerate(zip(seen, self.expected)):
            for key, host in want.items():
                arrived = got[key].to("cpu")
                if arrived.dtype != host.dtype or not torch.equal(arrived, host):
                    raise VerificationError(f"{self.case.label}: batch {j} '{key}' differs "
                                            "from its host source")
        for i, (p, want) in enumerate(zip(self.params(), self.reference)):
            got = p.detach().to("cpu")
            if not torch.equal(got, want):
                diff = float((got.double() - want.double()).abs().max())
                raise VerificationError(
                    f"{self.case.label}: parameter {i} after {self.case.steps} steps differs "
                    f"from the reference (max |diff| {diff:.3g}): the steps saw other data")

    def close(self) -> None:
        """End the loader's worker processes now, even while a failure's traceback still
        holds the iterator."""
        self.source.close()


def build_pipeline(case: PipelineCase, device: str | Device = "auto", *,
                   dataset: Any = None) -> PipelineWorkload:
    """Dataset, loader (its workers start here), model, optimizer and the reference call, all
    outside any timed region. ``dataset`` replaces the synthetic one (tests: a failing one)."""

    dev = resolve_device(device)
    reason = pipeline_skip_reason(case, capabilities(dev))
    if reason:
        raise XferbenchError(f"{case.label} on {dev}: {reason}")
    size = MODEL_SIZES[case.size]
    why = check_fits(size.parameter_bytes, dev, copies=4, host_copies=2)
    if why:  # parameters, gradients, momentum and autocast's copies
        raise DoesNotFit(f"{case.label}: {why}")
    data = dataset if dataset is not None else SyntheticImages(case.batch * case.steps,
                                                               seed=SEED)
    expected = [expected_batch(data, case.batch, j) for j in range(case.steps)]
    amp_dtype = autocast_dtype(dev) if case.precision == "amp" else None
    model, step, restart, params = build_model(
        size, dev, amp_dtype=amp_dtype, compiled=case.compile == "compiled",
        features=IMAGE_SHAPE, vocab=VOCAB, classes=CLASSES, seed=SEED)

    # The reference: canonical batches moved blocking; the first step compiles (timed alone).
    restart()
    compile_s = None
    for j, host in enumerate(expected):
        batch = {k: v.to(dev.torch()) for k, v in host.items()}
        if j == 0 and case.compile == "compiled":
            compile_s = compile_first_step(step, batch, dev)
        else:
            step(batch)
    synchronize(dev)
    reference = [p.detach().to("cpu", copy=True) for p in params()]

    iterator = open_loader(data, case.batch, case.workers, case.host_memory == "pinned")
    if case.move == "prefetch":
        source: Any = Prefetcher(iterator, dev, new_stream(dev) if dev.is_accelerator else None)
    else:
        source = Direct(iterator, dev, case.move == "non_blocking")
    return PipelineWorkload(case, dev, source, model, step, restart, params, reference,
                            expected, data, amp_dtype, compile_s)


@dataclass(frozen=True)
class PipelineResult:
    """One combination: whole calls timed (completion clock), the starvation share of
    instrumented calls, and optionally calls with ``model.to(device)`` every step."""

    case: PipelineCase
    measurement: Measurement
    starvation: tuple[float, ...]  # one share per instrumented call
    compile_s: float | None = None
    model_to: Measurement | None = None
    amp_dtype: str | None = None

    def step_samples(self, m: Measurement | None = None) -> tuple[float, ...]:
        """Seconds per step, one per sample (a sample's call time divided by ``steps``)."""
        return tuple(s / self.case.steps for s in (m or self.measurement).samples(
            PIPELINE_CLOCK))

    @property
    def step_s(self) -> float:
        return self.measurement.stats(PIPELINE_CLOCK).median / self.case.steps

    @property
    def samples_per_s(self) -> float:
        return self.case.batch / self.step_s


def measure_starvation(work: PipelineWorkload, calls: int) -> tuple[float, ...]:
    """The starvation share of ``calls`` instrumented calls (``starvation_share``), from
    stamps on the compute stream: timing events on an accelerator, the host clock on the CPU."""
    shares = []
    for _ in range(calls):
        stamps = Stamps(work.device, work.case.steps)
        work.run(stamps=stamps)
        start, ready, done = stamps.times()
        shares.append(starvation_share(start, ready, done))
    return tuple(shares)


def run_pipeline(case: PipelineCase, device: str | Device = "auto",
                 spec: MeasureSpec | None = None, *, starvation: bool = True,
                 model_to: bool = False, dataset: Any = None) -> PipelineResult:
    """Verify, time whole calls, and verify again. Then measure the starvation share and,
    with ``model_to``, the same calls with ``model.to(device)`` every step. The loader's
    workers end here, whatever happens.

    Args:
        case: the model size, host memory, workers, move, precision and compile setting.
        device: "auto", a device name or a Device.
        spec: warm-up and sampling budgets; DEFAULT_SPEC where None.
        starvation: also measure the starvation share (``starvation_share``).
        model_to: also time the calls with ``model.to(device)`` every step.
        dataset: replaces the synthetic dataset (the tests pass a failing one).
    """
    work = build_pipeline(case, device, dataset=dataset)
    try:
        spec = spec or DEFAULT_SPEC
        work.verify()  # a wrong first call fails before any number exists
        m = measure(work.run, spec, device=work.device, label=case.label, clock=PIPELINE_CLOCK)
        work.verify()
        shares: tuple[float, ...] = ()
        if starvation and starvation_skip_reason(case, capabilities(work.device)) is None:
            shares = measure_starvation(work, MIN_SAMPLES if spec.quick else STARVATION_CALLS)
        moved = None
        if model_to:
            work.model_to_every_step = True
            moved = measure(work.run, spec, device=work.device, label=f"{case.label} model.to",
                            clock=PIPELINE_CLOCK)
            work.verify()
        dtype = None if work.amp_dtype is None else str(work.amp_dtype).replace("torch.", "")
        return PipelineResult(case, m, shares, work.compile_s, moved, dtype)
    finally:
        work.close()
